// tests/cpp/runtime/test_executable_buckets.cc — executables with buckets (executable.h:
// BucketPolicy, BuildBuckets, Bucket, ValidateBuckets, ChooseBucket; file format version 3).
// Every diagnostic of ValidateBuckets and ChooseBucket on signatures written by hand; with the
// npu, buckets of an assembled TC1 kernel (y[r][j] = x[r][j] + w[j] at 1, 2 and 4 rows) run and
// checked against values computed by hand, their constants held once, saved as version 3 and
// loaded back, a smaller batch padded with zeros and cropped, and damaged version 3 files
// (truncated, a constant's bytes out of range, a module announcing a deflate bomb) named.
// The C API over buckets: runs on DLTensors take the bucket their shapes take.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "tilecore/ffi/error.h"
#include "tilecore/runtime/c_runtime_api.h"
#include "tilecore/runtime/executable.h"

namespace {

using namespace tilecore;  // NOLINT(*)
using runtime::BucketPolicy;
using runtime::ExecBuffer;
using runtime::ExecutableObj;
using runtime::ExecutableSpec;

std::string Message(const std::function<void()>& f) {
  try {
    f();
  } catch (const ffi::Error& e) {
    return std::string(e.kind()) + ": " + std::string(e.message());
  }
  return "no error";
}

// ---- signatures alone (no code): what ValidateBuckets and ChooseBucket look at -----------------

struct IOSpec {
  std::string name, dtype;
  std::vector<int64_t> shape;
};

/*! A program of buffers and I/O only (ValidateBuckets and ChooseBucket read nothing else). */
ExecutableSpec Signature(const std::vector<IOSpec>& inputs, const std::vector<IOSpec>& outputs,
                         const std::string& precision = "int8") {
  ExecutableSpec s;
  s.precision = precision;
  for (int io = 0; io < 2; ++io) {
    for (const IOSpec& v : io == 0 ? inputs : outputs) {
      (io == 0 ? s.inputs : s.outputs).push_back({v.name, uint32_t(s.buffers.size())});
      s.buffers.push_back(ExecBuffer{v.name, 0, 0, v.dtype, v.shape});
    }
  }
  return s;
}

/*! x: int32[rows, 4] -> y: int32[rows, 4]. */
ExecutableSpec Rows(int64_t rows) {
  return Signature({{"x", "int32", {rows, 4}}}, {{"y", "int32", {rows, 4}}});
}

std::string ValidateMessage(const std::vector<ExecutableSpec>& buckets,
                            const std::map<std::string, int64_t>& axes = {}) {
  return Message([&] { runtime::ValidateBuckets(buckets, BucketPolicy{axes}); });
}

TEST(ValidateBuckets, AcceptsOneModelAtSeveralShapes) {
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2), Rows(4)}), "no error");
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2), Rows(4)}, {{"x", 0}, {"y", 0}}), "no error");
}

TEST(ValidateBuckets, NamesEachDisagreement) {
  EXPECT_EQ(ValidateMessage({}), "ValueError: invalid buckets: none");
  EXPECT_EQ(
      ValidateMessage({Rows(1), Signature({{"u", "int32", {2, 4}}}, {{"y", "int32", {2, 4}}})}),
      "ValueError: invalid buckets: bucket 1: inputs 0 is u: int32[2, 4], in bucket 0 x: "
      "int32[1, 4]");
  EXPECT_EQ(
      ValidateMessage({Rows(1), Signature({{"x", "float32", {2, 4}}}, {{"y", "int32", {2, 4}}})}),
      "ValueError: invalid buckets: bucket 1: inputs 0 is x: float32[2, 4], in bucket 0 x: "
      "int32[1, 4]");
  EXPECT_EQ(ValidateMessage({Rows(1), Signature({{"x", "int32", {8}}}, {{"y", "int32", {8}}})}),
            "ValueError: invalid buckets: bucket 1: inputs 0 is x: int32[8], in bucket 0 x: "
            "int32[1, 4]");
  EXPECT_EQ(
      ValidateMessage({Rows(1), Signature({{"x", "int32", {2, 4}}}, {{"z", "int32", {2, 4}}})}),
      "ValueError: invalid buckets: bucket 1: outputs 0 is z: int32[2, 4], in bucket 0 y: "
      "int32[1, 4]");
  EXPECT_EQ(ValidateMessage({Rows(1), Signature({{"x", "int32", {2, 4}}, {"x2", "int32", {2, 4}}},
                                                {{"y", "int32", {2, 4}}})}),
            "ValueError: invalid buckets: bucket 1 has 2 inputs, bucket 0 1");
  EXPECT_EQ(ValidateMessage(
                {Rows(1), Signature({{"x", "int32", {2, 4}}}, {{"y", "int32", {2, 4}}}, "f32")}),
            "ValueError: invalid buckets: bucket 1 is f32, bucket 0 int8");
}

TEST(ValidateBuckets, RepeatedShapesAreRefused) {
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2), Rows(1)}),
            "ValueError: invalid buckets: bucket 2 repeats the input shapes x: int32[1, 4]");
  // Equal inputs and different outputs are still one shape to choose by.
  ExecutableSpec other = Signature({{"x", "int32", {2, 4}}}, {{"y", "int32", {2, 8}}});
  EXPECT_EQ(ValidateMessage({Rows(2), other}),
            "ValueError: invalid buckets: bucket 1 repeats the input shapes x: int32[2, 4]");
}

TEST(ValidateBuckets, BatchAxesOfThePolicy) {
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"x", 2}, {"y", 0}}),
            "ValueError: invalid buckets: `x`: batch axis 2 of rank 2");
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"x", -1}, {"y", 0}}),
            "ValueError: invalid buckets: `x`: batch axis -1 of rank 2");
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"x", 0}, {"y", 5}}),
            "ValueError: invalid buckets: `y`: batch axis 5 of rank 2");
  // Every input and output needs one when there is a policy.
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"y", 0}}),
            "ValueError: invalid buckets: `x` has no batch axis");
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"x", 0}}),
            "ValueError: invalid buckets: `y` has no batch axis");
  EXPECT_EQ(ValidateMessage({Rows(1), Rows(2)}, {{"x", 0}, {"y", 0}, {"q", 1}}),
            "ValueError: invalid buckets: batch axis of `q`, which is no input or output");
  // One batch size per bucket along all the batch axes: x2 has 4 rows where x has 2.
  auto two = [](int64_t a, int64_t b, int64_t out) {
    return Signature({{"x", "int32", {a, 4}}, {"x2", "int32", {3, b}}}, {{"y", "int32", {out, 4}}});
  };
  std::map<std::string, int64_t> axes{{"x", 0}, {"x2", 1}, {"y", 0}};
  EXPECT_EQ(ValidateMessage({two(1, 1, 1), two(2, 2, 2)}, axes), "no error");
  EXPECT_EQ(ValidateMessage({two(1, 1, 1), two(2, 4, 2)}, axes),
            "ValueError: invalid buckets: bucket 1: `x2` has batch 4, its first input 2");
  EXPECT_EQ(ValidateMessage({two(1, 1, 1), two(2, 2, 3)}, axes),
            "ValueError: invalid buckets: bucket 1: `y` has batch 3, its first input 2");
}

/*! An executable object over `buckets` and `axes`, unvalidated: only ChooseBucket reads it. */
ffi::ObjectPtr<ExecutableObj> Buckets(std::vector<ExecutableSpec> buckets,
                                      std::map<std::string, int64_t> axes = {}) {
  auto obj = ffi::make_object<ExecutableObj>();
  obj->spec = buckets[0];
  for (size_t k = 1; k < buckets.size(); ++k) obj->more_buckets.push_back(buckets[k]);
  obj->policy.batch_axes = std::move(axes);
  return obj;
}

std::string ChooseMessage(const ExecutableObj& exe,
                          const std::map<std::string, std::vector<int64_t>>& shapes) {
  return Message([&] { runtime::ChooseBucket(exe, shapes); });
}

TEST(ChooseBucket, ExactShapesTakeTheirBucket) {
  auto exe = Buckets({Rows(4), Rows(1), Rows(8), Rows(2)});
  for (auto [rows, index] :
       std::vector<std::pair<int64_t, size_t>>{{4, 0}, {1, 1}, {8, 2}, {2, 3}}) {
    runtime::BucketChoice c = runtime::ChooseBucket(*exe, {{"x", {rows, 4}}});
    EXPECT_EQ(c.bucket, index) << rows;
    EXPECT_EQ(c.padded_from, -1) << rows;
  }
  // An exact match wins over padding also with a policy.
  auto batched = Buckets({Rows(4), Rows(1), Rows(8), Rows(2)}, {{"x", 0}, {"y", 0}});
  EXPECT_EQ(runtime::ChooseBucket(*batched, {{"x", {2, 4}}}).bucket, 3u);
  EXPECT_EQ(runtime::ChooseBucket(*batched, {{"x", {2, 4}}}).padded_from, -1);
}

TEST(ChooseBucket, SmallerBatchPadsIntoTheSmallestLargerBucket) {
  // Buckets out of order: 4, 1, 8, 2 rows.
  auto exe = Buckets({Rows(4), Rows(1), Rows(8), Rows(2)}, {{"x", 0}, {"y", 0}});
  for (auto [rows, index] : std::vector<std::pair<int64_t, size_t>>{{3, 0}, {5, 2}, {7, 2}}) {
    runtime::BucketChoice c = runtime::ChooseBucket(*exe, {{"x", {rows, 4}}});
    EXPECT_EQ(c.bucket, index) << rows;
    EXPECT_EQ(c.padded_from, rows) << rows;
  }
  // Batch axis 1, and two inputs that must agree on the batch.
  auto two = [](int64_t b) {
    return Signature({{"a", "float32", {3, b}}, {"m", "float32", {b, 2, 2}}},
                     {{"o", "float32", {b, 3}}});
  };
  auto multi = Buckets({two(2), two(6)}, {{"a", 1}, {"m", 0}, {"o", 0}});
  runtime::BucketChoice c = runtime::ChooseBucket(*multi, {{"a", {3, 5}}, {"m", {5, 2, 2}}});
  EXPECT_EQ(c.bucket, 1u);
  EXPECT_EQ(c.padded_from, 5);
  c = runtime::ChooseBucket(*multi, {{"a", {3, 1}}, {"m", {1, 2, 2}}});
  EXPECT_EQ(c.bucket, 0u);
  EXPECT_EQ(c.padded_from, 1);
  // Batches that disagree fit no bucket.
  EXPECT_NE(ChooseMessage(*multi, {{"a", {3, 1}}, {"m", {2, 2, 2}}}).find("no bucket"),
            std::string::npos);
}

TEST(ChooseBucket, NoBucketListsTheBuckets) {
  auto exact = Buckets({Rows(1), Rows(2), Rows(4)});
  EXPECT_EQ(ChooseMessage(*exact, {{"x", {3, 4}}}),
            "ValueError: no bucket of the executable takes the inputs x: [3, 4] (it runs exact "
            "shapes only); its buckets:\n"
            "  bucket 0: x: int32[1, 4]\n"
            "  bucket 1: x: int32[2, 4]\n"
            "  bucket 2: x: int32[4, 4]");
  auto batched = Buckets({Rows(1), Rows(2), Rows(4)}, {{"x", 0}, {"y", 0}});
  const std::string tail =
      " (a smaller batch runs in a larger bucket; every other dimension must be a bucket's); its "
      "buckets:\n"
      "  bucket 0: x: int32[1, 4]\n"
      "  bucket 1: x: int32[2, 4]\n"
      "  bucket 2: x: int32[4, 4]";
  // Larger than every bucket; another dimension not a bucket's; an empty batch; another rank.
  EXPECT_EQ(ChooseMessage(*batched, {{"x", {5, 4}}}),
            "ValueError: no bucket of the executable takes the inputs x: [5, 4]" + tail);
  EXPECT_EQ(ChooseMessage(*batched, {{"x", {3, 5}}}),
            "ValueError: no bucket of the executable takes the inputs x: [3, 5]" + tail);
  EXPECT_EQ(ChooseMessage(*batched, {{"x", {0, 4}}}),
            "ValueError: no bucket of the executable takes the inputs x: [0, 4]" + tail);
  EXPECT_EQ(ChooseMessage(*batched, {{"x", {3, 4, 1}}}),
            "ValueError: no bucket of the executable takes the inputs x: [3, 4, 1]" + tail);
}

}  // namespace

// ---- programs that run (the npu) -------------------------------------------------------------
#if TILECORE_ENABLE_NPU
#include "../../fuzz/seal_executable.h"
#include "increment_executable.h"
#include "tilecore/arch/assembler.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/json.h"
#include "tilecore/runtime/npu_module.h"

namespace {

using runtime::ExecStep;
using runtime::Executable;

constexpr int32_t kW[4] = {100, -200, 300, -400};
constexpr int32_t kK[4] = {7, 0, -7, 70};

// y[r][j] = x[r][j] + w[j] for ROWS rows of 4 int32 (arguments A = x, W = w, B = y; core 0).
constexpr const char* kAddRows = R"(
    .core 0
    li x9, 0xFFC00
    lw x1, [l1: x9 + 0]
    lw x2, [l1: x9 + 4]
    lw x3, [l1: x9 + 8]
    li x4, 0
    li x5, ROWS
    li x11, 4
  row:
    li x6, 0
    addi x7, x2, 0
  col:
    lw x8, [ddr: x1 + 0]
    lw x10, [ddr: x7 + 0]
    add x8, x8, x10
    sw x8, [ddr: x3 + 0]
    addi x1, x1, 4
    addi x3, x3, 4
    addi x7, x7, 4
    addi x6, x6, 1
    blt x6, x11, col
    addi x4, x4, 1
    blt x4, x5, row
    halt
)";

/*! The kernel above for `rows` rows. */
runtime::Module AddRowsModule(int64_t rows) {
  std::string text = kAddRows;
  text.replace(text.find("ROWS"), 4, std::to_string(rows));
  runtime::NpuKernel k;
  k.name = "add_rows";
  k.program = arch::assemble(text);
  k.assembly = text;
  k.params = {{"A", "buffer", "int32", false},
              {"W", "buffer", "int32", false},
              {"B", "buffer", "int32", true}};
  return runtime::NpuModuleCreate({k});
}

std::string Int32Bytes(const int32_t* v, size_t n) {
  return std::string(reinterpret_cast<const char*>(v), n * 4);
}

/*! x: int32[rows, 4] -> y = x + w (w a constant int32[4]); with `with_z` also z = k + 1 (k a
 * constant int32[4], the fixture's increment kernel): an output without a batch axis. */
ExecutableSpec Program(int64_t rows, bool with_z, const int32_t* w = kW) {
  ExecutableSpec s;
  s.precision = "int8";
  s.modules = {AddRowsModule(rows)};
  uint64_t end = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    uint64_t size = 4;
    for (int64_t d : shape) size *= uint64_t(d);
    s.buffers.push_back(ExecBuffer{name, end, size, "int32", shape});
    end = (end + size + 63) / 64 * 64;
    return uint32_t(s.buffers.size() - 1);
  };
  uint32_t x = add("x", {rows, 4}), wb = add("w", {4}), y = add("y", {rows, 4});
  runtime::ExecConstant wc;
  wc.buffer = wb;
  wc.set(Int32Bytes(w, 4));
  s.constants.push_back(wc);
  s.inputs = {{"x", x}};
  s.outputs = {{"y", y}};
  ExecStep a;
  a.module = 0, a.function = "add_rows", a.args = {x, wb, y}, a.node = "add", a.op_type = "Add";
  s.steps = {a};
  if (with_z) {
    s.modules.push_back(test_fixtures::IncrementModule());
    uint32_t kb = add("k", {4}), z = add("z", {4});
    runtime::ExecConstant kc;
    kc.buffer = kb;
    kc.set(Int32Bytes(kK, 4));
    s.constants.push_back(kc);
    s.outputs.push_back({"z", z});
    ExecStep b;
    b.module = 1, b.function = "inc", b.args = {kb, z}, b.node = "inc", b.op_type = "Add";
    s.steps.push_back(b);
  }
  s.arena_size = end;
  return s;
}

std::vector<ExecutableSpec> Programs(std::vector<int64_t> rows, bool with_z) {
  std::vector<ExecutableSpec> out;
  for (int64_t r : rows) out.push_back(Program(r, with_z));
  return out;
}

Executable Batched() {
  return Executable::BuildBuckets(Programs({1, 2, 4}, false), BucketPolicy{{{"x", 0}, {"y", 0}}});
}

/*! x[r][j] = 10 r + j - 5 + seed: rows x 4 values. */
std::vector<int32_t> XValues(int64_t rows, int32_t seed = 0) {
  std::vector<int32_t> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int32_t j = 0; j < 4; ++j) v.push_back(int32_t(10 * r) + j - 5 + seed);
  return v;
}

std::vector<int32_t> Plus(std::vector<int32_t> x, const int32_t* w) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += w[i % 4];
  return x;
}

ffi::NDArray Host(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  ffi::NDArray a =
      ffi::NDArray::Empty(shape, ffi::StringToDLDataType("int32"), DLDevice{kDLCPU, 0});
  std::memcpy(a.data<int32_t>(), v.data(), v.size() * 4);
  return a;
}

std::vector<int32_t> Values(const ffi::NDArray& a) {
  const int32_t* p = a.data<int32_t>();
  int64_t n = 1;
  for (int64_t d : a.shape()) n *= d;
  return std::vector<int32_t>(p, p + n);
}

using JMap = ffi::Map<ffi::String, ffi::Any>;

/*! The `bucket` entry of the last run's statistics. */
JMap BucketStats(const Executable& e) {
  JMap st = ffi::json::Parse(e->last_stats()).cast<JMap>();
  return st.at("bucket").cast<JMap>();
}

uint32_t U32At(const std::string& b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t U64At(const std::string& b, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
void PutU32(std::string& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void PutU64(std::string& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

/*! A version 3 file again after its payload was edited: the header's size and checksum. */
std::string Reseal(const std::string& file) {
  return fuzz::SealExecutable(std::string_view(file).substr(32),
                              runtime::kExecutableBucketsVersion);
}

/*! Where the fields of a version 3 file are (byte offsets), read by hand after the layout in
 * docs/executable.md: precision; modules (u64 raw size, deflated bytes); constant bytes;
 * buckets (arena, buffers, constants as buffer + blob index, inputs, outputs, steps); batch
 * axes. */
struct Layout {
  std::vector<size_t> module_raw;      // each module's raw size field
  std::vector<size_t> module_bytes;    // its deflated bytes (after their length)
  std::vector<size_t> constant_index;  // every bucket's constants' blob index fields, in order
  std::vector<size_t> program;         // each program's first byte
  size_t blobs = 0, buckets = 0, policy = 0;
  size_t end = 0;  // after the last batch axis: the file's size
};

Layout ParseLayout(const std::string& f) {
  Layout l;
  size_t p = 32;
  auto u32 = [&] {
    uint32_t v = U32At(f, p);
    p += 4;
    return v;
  };
  auto str = [&] { p += u32(); };
  str();  // precision
  for (uint32_t m = 0, n = u32(); m < n; ++m) {
    l.module_raw.push_back(p);
    p += 8;
    l.module_bytes.push_back(p + 4);
    str();
  }
  l.blobs = p;
  for (uint32_t b = 0, n = u32(); b < n; ++b) str();
  l.buckets = p;
  for (uint32_t k = 0, n = u32(); k < n; ++k) {
    l.program.push_back(p);
    p += 8;                                          // arena
    for (uint32_t i = 0, nb = u32(); i < nb; ++i) {  // buffers
      str();
      p += 16;
      str();
      p += 8 * u32();
    }
    for (uint32_t i = 0, nc = u32(); i < nc; ++i) {  // constants
      p += 4;
      l.constant_index.push_back(p);
      p += 4;
    }
    for (int io = 0; io < 2; ++io) {
      for (uint32_t i = 0, ni = u32(); i < ni; ++i) str(), p += 4;
    }
    for (uint32_t i = 0, ns = u32(); i < ns; ++i) {  // steps
      p += 8;
      str();
      p += 4 * u32();
      str(), str();
      p += 8;
      str();
      for (uint32_t d = 0, nd = u32(); d < nd; ++d) str(), str();
    }
  }
  l.policy = p;
  for (uint32_t i = 0, na = u32(); i < na; ++i) str(), p += 4;
  l.end = p;
  return l;
}

TEST(ExecutableBuckets, EachBucketRunsItsShape) {
  Executable e = Executable::BuildBuckets(Programs({1, 2, 4}, true), {});
  ASSERT_EQ(e->num_buckets(), 3u);
  for (auto [rows, index] : std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {4, 2}, {1, 0}}) {
    std::vector<int32_t> x = XValues(rows, int32_t(rows));
    auto out = e.Run({{"x", Host(x, {rows, 4})}});
    EXPECT_EQ(out.at("y").shape(), (std::vector<int64_t>{rows, 4}));
    EXPECT_EQ(Values(out.at("y")), Plus(x, kW)) << rows;
    EXPECT_EQ(Values(out.at("z")), (std::vector<int32_t>{8, 1, -6, 71})) << rows;
    JMap b = BucketStats(e);
    EXPECT_EQ(b.at("index").cast<int64_t>(), index);
    EXPECT_EQ(b.at("buckets").cast<int64_t>(), 3);
    EXPECT_EQ(b.at("inputs").cast<std::string>(), "x: int32[" + std::to_string(rows) + ", 4]");
    EXPECT_EQ(b.count("padded_from"), 0u);
  }
  // A plain executable's statistics have no bucket entry.
  Executable one = Executable::Build(Program(2, true));
  one.Run({{"x", Host(XValues(2), {2, 4})}});
  EXPECT_EQ(one->last_stats().find("\"bucket\""), std::string::npos);
}

TEST(ExecutableBuckets, EqualConstantsAreHeldOnce) {
  std::vector<ExecutableSpec> specs = Programs({1, 2, 4}, true);
  ASSERT_NE(specs[0].constants[0].bytes.get(), specs[1].constants[0].bytes.get());
  Executable e = Executable::BuildBuckets(specs, {});
  const std::string* w = e->bucket(0).constants[0].bytes.get();
  const std::string* k = e->bucket(0).constants[1].bytes.get();
  EXPECT_NE(w, k);
  for (size_t b = 1; b < 3; ++b) {
    EXPECT_EQ(e->bucket(b).constants[0].bytes.get(), w) << b;
    EXPECT_EQ(e->bucket(b).constants[1].bytes.get(), k) << b;
  }
  // Bucket(i) alone shares them too.
  EXPECT_EQ(e.Bucket(2)->spec.constants[0].bytes.get(), w);
  // Different bytes stay apart (and each bucket runs with its own).
  const int32_t w2[4] = {1, 2, 3, 4};
  specs[1] = Program(2, true, w2);
  Executable mixed = Executable::BuildBuckets(specs, {});
  EXPECT_EQ(mixed->bucket(2).constants[0].bytes.get(), mixed->bucket(0).constants[0].bytes.get());
  EXPECT_NE(mixed->bucket(1).constants[0].bytes.get(), mixed->bucket(0).constants[0].bytes.get());
  EXPECT_EQ(mixed->bucket(1).constants[1].bytes.get(), mixed->bucket(0).constants[1].bytes.get());
  std::vector<int32_t> x = XValues(2);
  EXPECT_EQ(Values(mixed.Run({{"x", Host(x, {2, 4})}}).at("y")), Plus(x, w2));
  EXPECT_EQ(Values(mixed.Run({{"x", Host(XValues(4), {4, 4})}}).at("y")), Plus(XValues(4), kW));
}

TEST(ExecutableBuckets, BucketValidationNamesTheBucket) {
  std::vector<ExecutableSpec> specs = Programs({1, 2}, false);
  specs[1].buffers[2].offset = specs[1].buffers[0].offset;  // y on x's bytes while both live
  std::string m = Message([&] { Executable::BuildBuckets(specs, {}); });
  EXPECT_EQ(m.rfind("ValueError: bucket 1: ", 0), 0u) << m;
  EXPECT_NE(m.find("overlap while both are live"), std::string::npos) << m;
  EXPECT_EQ(Message([&] {
              Executable::BuildBuckets(Programs({1, 2, 1}, false), {});
            }),
            "ValueError: invalid buckets: bucket 2 repeats the input shapes x: int32[1, 4]");
  EXPECT_EQ(Message([&] { Executable::BuildBuckets({}, {}); }),
            "ValueError: invalid buckets: none");
  EXPECT_EQ(Message([&] {
              Executable::BuildBuckets(Programs({1, 2}, false), {}).Bucket(2);
            }),
            "IndexError: bucket 2 of an executable with 2");
}

TEST(ExecutableBuckets, SavesVersion3AndLoadsBack) {
  Executable e = Executable::BuildBuckets(Programs({1, 2, 4}, true), {});
  std::string bytes = e.SaveToBytes();
  EXPECT_EQ(bytes.substr(0, 8), std::string(runtime::kExecutableMagic, 8));
  EXPECT_EQ(U32At(bytes, 8), 3u);
  Executable again = Executable::LoadFromBytes(bytes);
  ASSERT_EQ(again->num_buckets(), 3u);
  EXPECT_TRUE(again->policy.batch_axes.empty());
  EXPECT_EQ(ParseLayout(bytes).end, bytes.size());
  // Three kernels of their own and one increment kernel the buckets share: four modules.
  EXPECT_EQ(ParseLayout(bytes).module_raw.size(), 4u);
  // Each bucket holds the modules its steps call: its own kernel and the shared one.
  EXPECT_EQ(again->bucket(1).modules.size(), 2u);
  EXPECT_EQ(again->bucket(1).modules[1].get(), again->bucket(2).modules[1].get());
  // The constants: w and k once in the file, and once in memory.
  EXPECT_EQ(U32At(bytes, ParseLayout(bytes).blobs), 2u);
  for (size_t b = 1; b < 3; ++b) {
    EXPECT_EQ(again->bucket(b).constants[0].bytes.get(), again->spec.constants[0].bytes.get());
    EXPECT_EQ(again->bucket(b).constants[1].bytes.get(), again->spec.constants[1].bytes.get());
  }
  for (int64_t rows : {1, 2, 4}) {
    std::vector<int32_t> x = XValues(rows, -3);
    auto out = again.Run({{"x", Host(x, {rows, 4})}});
    EXPECT_EQ(Values(out.at("y")), Plus(x, kW)) << rows;
    EXPECT_EQ(Values(out.at("z")), (std::vector<int32_t>{8, 1, -6, 71})) << rows;
  }
  EXPECT_EQ(again.SaveToBytes(), bytes);
  // The policy too.
  std::string batched = Batched().SaveToBytes();
  EXPECT_EQ(ParseLayout(batched).end, batched.size());
  Executable b = Executable::LoadFromBytes(batched);
  EXPECT_EQ(b->policy.batch_axes, (std::map<std::string, int64_t>{{"x", 0}, {"y", 0}}));
  EXPECT_EQ(b.SaveToBytes(), batched);
}

TEST(ExecutableBuckets, OneBucketIsAVersion2File) {
  Executable one = Executable::BuildBuckets(Programs({2}, true), {});
  EXPECT_EQ(one->num_buckets(), 1u);
  std::string bytes = one.SaveToBytes();
  EXPECT_EQ(U32At(bytes, 8), 2u);
  EXPECT_EQ(bytes, Executable::Build(Program(2, true)).SaveToBytes());
  EXPECT_EQ(Executable::LoadFromBytes(bytes)->num_buckets(), 1u);
  // A bucket taken out of a loaded version 3 file is a version 2 file of its own.
  Executable loaded = Executable::LoadFromBytes(
      Executable::BuildBuckets(Programs({1, 2, 4}, true), {}).SaveToBytes());
  std::string alone = loaded.Bucket(1).SaveToBytes();
  EXPECT_EQ(U32At(alone, 8), 2u);
  Executable back = Executable::LoadFromBytes(alone);
  EXPECT_EQ(back->num_buckets(), 1u);
  std::vector<int32_t> x = XValues(2, 9);
  EXPECT_EQ(Values(back.Run({{"x", Host(x, {2, 4})}}).at("y")), Plus(x, kW));
}

TEST(ExecutableBuckets, SmallerBatchRunsPaddedAndCropped) {
  Executable e = Batched();
  std::vector<int32_t> x = XValues(3, 1);
  // The step's x in the 4-row bucket, seen after the step: the fourth row is zeros.
  std::vector<int32_t> seen_x;
  ffi::Function observe = ffi::Function::FromTyped([&](int64_t, ffi::Array<ffi::NDArray> args) {
    seen_x = Values(args[0].CopyTo(DLDevice{kDLCPU, 0}));
  });
  // A full batch of other values first: nothing of it may show in the padding.
  e.Run({{"x", Host(XValues(4, 1000), {4, 4})}});
  auto out = e.Run({{"x", Host(x, {3, 4})}}, 0, nullptr, &observe);
  EXPECT_EQ(out.at("y").shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Values(out.at("y")), Plus(x, kW));
  std::vector<int32_t> padded = x;
  padded.resize(16, 0);
  EXPECT_EQ(seen_x, padded);
  JMap b = BucketStats(e);
  EXPECT_EQ(b.at("index").cast<int64_t>(), 2);
  EXPECT_EQ(b.at("padded_from").cast<int64_t>(), 3);
  EXPECT_EQ(b.at("inputs").cast<std::string>(), "x: int32[4, 4]");
  // Row by row in the 1-row bucket: the same rows.
  std::vector<int32_t> padded_y = Values(out.at("y"));
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<int32_t> row(x.begin() + 4 * r, x.begin() + 4 * r + 4);
    auto one = e.Run({{"x", Host(row, {1, 4})}});
    EXPECT_EQ(BucketStats(e).at("index").cast<int64_t>(), 0);
    EXPECT_EQ(Values(one.at("y")),
              std::vector<int32_t>(padded_y.begin() + 4 * r, padded_y.begin() + 4 * r + 4));
  }
  // Larger than every bucket; no policy: a smaller batch is refused.
  EXPECT_NE(Message([&] {
              e.Run({{"x", Host(XValues(5), {5, 4})}});
            }).find("no bucket of the executable takes the inputs x: [5, 4]"),
            std::string::npos);
  Executable exact = Executable::BuildBuckets(Programs({1, 2, 4}, false), {});
  EXPECT_EQ(Message([&] {
              exact.Run({{"x", Host(x, {3, 4})}});
            }),
            "ValueError: no bucket of the executable takes the inputs x: [3, 4] (it runs exact "
            "shapes only); its buckets:\n  bucket 0: x: int32[1, 4]\n  bucket 1: x: int32[2, 4]\n"
            "  bucket 2: x: int32[4, 4]");
  // A padded input of the wrong dtype is named like any other.
  ffi::NDArray f =
      ffi::NDArray::Empty({3, 4}, ffi::StringToDLDataType("float32"), DLDevice{kDLCPU, 0});
  EXPECT_EQ(Message([&] {
              e.Run({{"x", f}});
            }),
            "ValueError: input `x` is float32; the executable expects x: int32[4, 4]");
  EXPECT_EQ(Message([&] { e.Run({}); }),
            "ValueError: missing input `x`; the executable expects x: int32[1, 4]");
}

// ---- damaged version 3 files -------------------------------------------------------------------

TEST(ExecutableBucketsFile, EveryTruncationIsNamed) {
  std::string bytes = Batched().SaveToBytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string m =
        Message([&] { Executable::LoadFromBytes(std::string_view(bytes).substr(0, n)); });
    ASSERT_EQ(m.rfind("ValueError: ", 0), 0u) << n << ": " << m;
    ASSERT_NE(m.find(n < 8 ? "magic" : "byte"), std::string::npos) << n << ": " << m;
  }
  // Cut inside a field and resealed: the parser meets the end of the bytes.
  Layout l = ParseLayout(bytes);
  for (size_t cut : {l.module_raw[1] + 3, l.blobs + 2, l.program[1] + 20, l.policy + 6}) {
    std::string m = Message([&] { Executable::LoadFromBytes(Reseal(bytes.substr(0, cut))); });
    EXPECT_EQ(m.rfind("ValueError: executable, byte ", 0), 0u) << cut << ": " << m;
  }
}

TEST(ExecutableBucketsFile, ConstantBytesOutOfRange) {
  std::string bytes = Executable::BuildBuckets(Programs({1, 2}, true), {}).SaveToBytes();
  Layout l = ParseLayout(bytes);
  ASSERT_EQ(U32At(bytes, l.blobs), 2u);
  ASSERT_EQ(l.constant_index.size(), 4u);  // w and k of each bucket
  EXPECT_EQ(U32At(bytes, l.constant_index[0]), 0u);
  EXPECT_EQ(U32At(bytes, l.constant_index[3]), 1u);
  std::string bad = bytes;
  PutU32(bad, l.constant_index[3], 2);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(bad)); }),
            "ValueError: executable, byte " + std::to_string(l.constant_index[3]) +
                ": constant bytes 2 of 2");
  PutU32(bad, l.constant_index[3], 0xFFFFFFFFu);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(bad)); }),
            "ValueError: executable, byte " + std::to_string(l.constant_index[3]) +
                ": constant bytes 4294967295 of 2");
  // In range, but bytes of another size than the buffer's: blob 0 (w) cut to 12 bytes.
  std::string edited = bytes;
  PutU32(edited, l.blobs + 4, 12);  // blob 0's length
  edited.erase(l.blobs + 8 + 12, 4);
  std::string m = Message([&] { Executable::LoadFromBytes(Reseal(edited)); });
  EXPECT_EQ(m.rfind("ValueError: executable: bucket 0: ", 0), 0u) << m;
  EXPECT_NE(m.find("constant 0: 12 bytes for buffer 1 `w` of 16"), std::string::npos) << m;
}

TEST(ExecutableBucketsFile, DeflateBombIsRefusedBeforeAllocating) {
  std::string bytes = Batched().SaveToBytes();
  Layout l = ParseLayout(bytes);
  size_t at = l.module_raw[0];
  uint32_t deflated = U32At(bytes, at + 8);
  // The module's file, announced as more than 1032 times its deflated bytes (deflate's limit).
  for (uint64_t raw : {uint64_t(deflated) * 1032 + 65, uint64_t{1} << 40, ~uint64_t{0}}) {
    std::string bad = bytes;
    PutU64(bad, at, raw);
    EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(bad)); }),
              "ValueError: executable, byte " + std::to_string(at) +
                  ": module 0: " + std::to_string(deflated) + " deflated bytes cannot hold the " +
                  std::to_string(raw) + " bytes announced");
  }
  // Sizes deflate could produce, but not these bytes' size.
  uint64_t raw = U64At(bytes, at);
  for (uint64_t wrong : {raw + 1, uint64_t(deflated) * 1032 + 64}) {
    std::string bad = bytes;
    PutU64(bad, at, wrong);
    EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(bad)); }),
              "ValueError: executable, byte " + std::to_string(at) +
                  ": module 0: the deflated bytes inflate to " + std::to_string(raw) +
                  " bytes, not the " + std::to_string(wrong) + " announced");
  }
  for (uint64_t wrong : {raw - 1, uint64_t{0}}) {
    std::string bad = bytes;
    PutU64(bad, at, wrong);
    std::string m = Message([&] { Executable::LoadFromBytes(Reseal(bad)); });
    EXPECT_EQ(m.rfind("ValueError: executable, byte " + std::to_string(at) + ": module 0: ", 0), 0u)
        << wrong << ": " << m;
  }
  // Damaged deflate data (the stream's Adler-32 no longer matches, or the codes are broken).
  std::string bad = bytes;
  size_t mid = l.module_bytes[0] + deflated / 2;
  bad[mid] = char(bad[mid] ^ 0x5A);
  std::string m = Message([&] { Executable::LoadFromBytes(Reseal(bad)); });
  EXPECT_EQ(m.rfind("ValueError: executable, byte " + std::to_string(at) + ": module 0: ", 0), 0u)
      << m;
}

// A file may hold a constant's bytes twice (another writer): it loads with them once in memory
// and is saved with them once (the fuzz target's round trip for version 3).
TEST(ExecutableBucketsFile, BytesHeldTwiceAreSavedOnce) {
  Executable e = Executable::BuildBuckets(Programs({1, 2}, true), {});
  std::string bytes = e.SaveToBytes();
  Layout l = ParseLayout(bytes);
  ASSERT_EQ(U32At(bytes, l.blobs), 2u);
  // A third blob, a copy of blob 0 (w), at the end of the table; bucket 1's w refers to it.
  size_t blob0 = l.blobs + 4, blob1 = blob0 + 4 + U32At(bytes, blob0);
  size_t end = blob1 + 4 + U32At(bytes, blob1);
  std::string copy = bytes.substr(blob0, 4 + U32At(bytes, blob0));
  std::string twice = bytes.substr(0, end) + copy + bytes.substr(end);
  PutU32(twice, l.blobs, 3);
  PutU32(twice, l.constant_index[2] + copy.size(), 2);
  Executable loaded = Executable::LoadFromBytes(Reseal(twice));
  EXPECT_EQ(loaded->bucket(1).constants[0].bytes.get(), loaded->spec.constants[0].bytes.get());
  EXPECT_EQ(loaded.SaveToBytes(), bytes);
  std::vector<int32_t> x = XValues(2, 2);
  EXPECT_EQ(Values(loaded.Run({{"x", Host(x, {2, 4})}}).at("y")), Plus(x, kW));
}

TEST(ExecutableBucketsFile, StructureErrorsAreNamed) {
  std::string bytes = Batched().SaveToBytes();
  Layout l = ParseLayout(bytes);
  // One bucket in a version 3 file: the second program and the count cut out.
  std::string one = bytes.substr(0, l.program[1]) + bytes.substr(l.policy);
  PutU32(one, l.buckets, 1);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(one)); }),
            "ValueError: executable: a version 3 file holds 1 bucket(s); it needs at least 2");
  // A byte after the batch axes.
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(bytes + "!")); }),
            "ValueError: executable, byte " + std::to_string(bytes.size()) +
                ": trailing bytes after the batch axes");
  // A policy the buckets break: y's batch axis out of its rank (axes are stored as u32).
  std::string axis = bytes;
  ASSERT_EQ(U32At(axis, l.policy), 2u);
  size_t y_axis = l.policy + 4 + 4 + 1 + 4 + 4 + 1;  // "x" then "y" with their axes
  ASSERT_EQ(axis.substr(l.policy + 4 + 4 + 1 + 4 + 4, 1), "y");
  PutU32(axis, y_axis, 7);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(Reseal(axis)); }),
            "ValueError: executable: invalid buckets: `y`: batch axis 7 of rank 2");
  // A version 2 file's payload under version 3's number, and the other way round.
  std::string v2 = Executable::Build(Program(2, false)).SaveToBytes();
  PutU32(v2, 8, 3);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(v2); }).rfind("ValueError: executable", 0), 0u);
  std::string v3 = bytes;
  PutU32(v3, 8, 2);
  EXPECT_EQ(Message([&] { Executable::LoadFromBytes(v3); }).rfind("ValueError: executable", 0), 0u);
}

TEST(ExecutableBucketsFile, ResealedCorruptionNeverCrashes) {
  std::string good = Executable::BuildBuckets(Programs({1, 2}, true), {}).SaveToBytes();
  std::mt19937 rng(5);
  int errors = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string b = good;
    size_t at = 32 + rng() % (b.size() - 32);
    b[at] = char(b[at] ^ (1 << (rng() % 8)));
    std::string m = Message([&] { Executable::LoadFromBytes(Reseal(b)); });
    if (m != "no error") {
      ASSERT_EQ(m.rfind("ValueError: ", 0), 0u) << at << ": " << m;
      ++errors;
    }
  }
  EXPECT_GT(errors, 500);
}

// ---- the version 3 seed of the .tcx fuzz corpus ----------------------------------------------

// tests/fuzz/corpus_tcx/two_buckets: the payload (the file without its 32-byte header, as the
// fuzz targets take it) of a 2-bucket executable: y = x + w at 1 and 2 rows, batch axes x and y.
// TILECORE_WRITE_FUZZ_SEEDS=1 writes it again (after a change of the format).
TEST(ExecutableBucketsFile, FuzzSeedIsAVersion3Payload) {
  const std::string path = std::string(TILECORE_SOURCE_DIR) + "/tests/fuzz/corpus_tcx/two_buckets";
  Executable e =
      Executable::BuildBuckets(Programs({1, 2}, false), BucketPolicy{{{"x", 0}, {"y", 0}}});
  std::string file = e.SaveToBytes();
  const char* write = std::getenv("TILECORE_WRITE_FUZZ_SEEDS");
  if (write && std::string(write) == "1") {
    std::ofstream(path, std::ios::binary) << file.substr(32);
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing (TILECORE_WRITE_FUZZ_SEEDS=1 writes it)";
  std::stringstream seed;
  seed << in.rdbuf();
  ASSERT_LT(seed.str().size(),
            65536u);  // scripts/fuzz.sh runs the .tcx targets with -max_len=65536
  std::string sealed = fuzz::SealExecutable(seed.str(), runtime::kExecutableBucketsVersion);
  Executable loaded = Executable::LoadFromBytes(sealed);
  ASSERT_EQ(loaded->num_buckets(), 2u);
  EXPECT_EQ(loaded->policy.batch_axes, (std::map<std::string, int64_t>{{"x", 0}, {"y", 0}}));
  std::vector<int32_t> x = XValues(2, 4);
  EXPECT_EQ(Values(loaded.Run({{"x", Host(x, {2, 4})}}).at("y")), Plus(x, kW));
  EXPECT_EQ(loaded.SaveToBytes(), sealed);
}

// The C API: a run on DLTensors takes the bucket its shapes take, a smaller batch padded and
// its output cropped; a raw-buffer run and the signature are bucket 0's.
TEST(ExecutableBucketsCApi, DLTensorRunsChooseTheBucket) {
  std::string bytes = Batched().SaveToBytes();
  TCRExecutable* exe = nullptr;
  ASSERT_EQ(TCRExecutableLoadMemory(bytes.data(), bytes.size(), nullptr, &exe), kTCROk);
  TCRTensorInfo info;
  ASSERT_EQ(TCRExecutableInputInfo(exe, 0, &info), kTCROk);
  EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.ndim), (std::vector<int64_t>{1, 4}));
  int32_t buckets = 0;
  ASSERT_EQ(TCRExecutableNumBuckets(exe, &buckets), kTCROk);
  EXPECT_EQ(buckets, 3);
  ASSERT_EQ(TCRExecutableBucketOutputInfo(exe, 2, 0, &info), kTCROk);
  EXPECT_EQ(std::string(info.name), "y");
  EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.ndim), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(info.num_bytes, 64u);
  EXPECT_EQ(TCRExecutableBucketInputInfo(exe, 3, 0, &info), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("bucket 3 out of range: the executable has 3"),
            std::string::npos);
  auto tensor = [](std::vector<int32_t>& v, std::vector<int64_t>& shape) {
    DLTensor t{};
    t.data = v.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = int32_t(shape.size());
    t.dtype = DLDataType{kDLInt, 32, 1};
    t.shape = shape.data();
    return t;
  };
  for (int64_t rows : {2, 3, 4}) {
    std::vector<int32_t> x = XValues(rows, int32_t(7 * rows)), y(size_t(4 * rows), -1);
    std::vector<int64_t> shape{rows, 4};
    DLTensor tx = tensor(x, shape), ty = tensor(y, shape);
    const DLTensor* in[] = {&tx};
    const DLTensor* out[] = {&ty};
    ASSERT_EQ(TCRExecutableRunDLTensors(exe, in, 1, out, 1, nullptr, nullptr), kTCROk)
        << TCRGetLastError();
    EXPECT_EQ(y, Plus(x, kW)) << rows << " rows";
  }
  // An output tensor of the bucket's batch, not the run's: named.
  std::vector<int32_t> x = XValues(3), y(16);
  std::vector<int64_t> xs{3, 4}, ys{4, 4};
  DLTensor tx = tensor(x, xs), ty = tensor(y, ys);
  const DLTensor* in[] = {&tx};
  const DLTensor* out[] = {&ty};
  EXPECT_EQ(TCRExecutableRunDLTensors(exe, in, 1, out, 1, nullptr, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError())
                .find("output 0 `y` is int32[4, 4]; the executable expects "
                      "int32[3, 4]"),
            std::string::npos)
      << TCRGetLastError();
  // No bucket for 5 rows: the buckets listed.
  std::vector<int32_t> x5 = XValues(5), y5(20);
  std::vector<int64_t> s5{5, 4};
  DLTensor t5 = tensor(x5, s5), u5 = tensor(y5, s5);
  const DLTensor* in5[] = {&t5};
  const DLTensor* out5[] = {&u5};
  EXPECT_EQ(TCRExecutableRunDLTensors(exe, in5, 1, out5, 1, nullptr, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("bucket 2: x: int32[4, 4]"), std::string::npos)
      << TCRGetLastError();
  // Raw buffers: bucket 0's signature.
  std::vector<int32_t> x1 = XValues(1, 3), y1(4);
  const void* raw_in[] = {x1.data()};
  void* raw_out[] = {y1.data()};
  ASSERT_EQ(TCRExecutableRun(exe, raw_in, raw_out, nullptr, nullptr), kTCROk) << TCRGetLastError();
  EXPECT_EQ(y1, Plus(x1, kW));
  TCRExecutableFree(exe);
}

}  // namespace
#endif  // TILECORE_ENABLE_NPU
