// src/runtime/executable_buckets.cc — executables with buckets: one program per input shape
// over one copy of the constants, and the choice of a bucket for a run (docs/executable.md,
// "Buckets").
#include <algorithm>
#include <set>

#include "tilecore/ffi/error.h"
#include "tilecore/runtime/executable.h"

namespace tilecore::runtime {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const ExecBuffer& IOBuffer(const ExecutableSpec& s, const ExecIO& io) {
  return s.buffers[io.buffer];
}

/*! \brief The bucket's batch (the size along its batch axes), or -1 without a policy. */
int64_t BucketBatch(const ExecutableSpec& s, const BucketPolicy& policy) {
  for (const ExecIO& io : s.inputs) {
    auto it = policy.batch_axes.find(io.name);
    if (it != policy.batch_axes.end()) return IOBuffer(s, io).shape[size_t(it->second)];
  }
  return -1;
}

}  // namespace

void ValidateBuckets(const std::vector<ExecutableSpec>& buckets, const BucketPolicy& policy) {
  auto fail = [](const std::string& m) { TILECORE_THROW(ValueError) << "invalid buckets: " << m; };
  if (buckets.empty()) fail("none");
  const ExecutableSpec& first = buckets[0];
  std::set<std::string> seen_shapes;
  for (size_t k = 0; k < buckets.size(); ++k) {
    const ExecutableSpec& s = buckets[k];
    std::string name = "bucket " + std::to_string(k);
    if (s.precision != first.precision)
      fail(name + " is " + s.precision + ", bucket 0 " + first.precision);
    for (int io = 0; io < 2; ++io) {
      const auto& list = io == 0 ? s.inputs : s.outputs;
      const auto& list0 = io == 0 ? first.inputs : first.outputs;
      const char* what = io == 0 ? "inputs" : "outputs";
      if (list.size() != list0.size())
        fail(name + " has " + std::to_string(list.size()) + " " + what + ", bucket 0 " +
             std::to_string(list0.size()));
      for (size_t i = 0; i < list.size(); ++i) {
        const ExecBuffer& b = IOBuffer(s, list[i]);
        const ExecBuffer& b0 = IOBuffer(first, list0[i]);
        if (list[i].name != list0[i].name || b.dtype != b0.dtype ||
            b.shape.size() != b0.shape.size()) {
          fail(name + ": " + what + " " + std::to_string(i) + " is " + list[i].name + ": " +
               b.dtype + ShapeText(b.shape) + ", in bucket 0 " + list0[i].name + ": " + b0.dtype +
               ShapeText(b0.shape));
        }
      }
    }
    std::string key = DescribeSignature(s, true);
    if (!seen_shapes.insert(key).second) fail(name + " repeats the input shapes " + key);
    if (policy.batch_axes.empty()) continue;
    int64_t batch = -1;
    for (int io = 0; io < 2; ++io) {
      for (const ExecIO& e : io == 0 ? s.inputs : s.outputs) {
        auto it = policy.batch_axes.find(e.name);
        const ExecBuffer& b = IOBuffer(s, e);
        if (it == policy.batch_axes.end()) fail("`" + e.name + "` has no batch axis");
        if (it->second < 0 || size_t(it->second) >= b.shape.size())
          fail("`" + e.name + "`: batch axis " + std::to_string(it->second) + " of rank " +
               std::to_string(b.shape.size()));
        int64_t here = b.shape[size_t(it->second)];
        if (batch >= 0 && here != batch)
          fail(name + ": `" + e.name + "` has batch " + std::to_string(here) +
               ", its first input " + std::to_string(batch));
        batch = here;
      }
    }
  }
  for (const auto& [value, axis] : policy.batch_axes) {
    bool known = false;
    for (const ExecIO& e : first.inputs) known = known || e.name == value;
    for (const ExecIO& e : first.outputs) known = known || e.name == value;
    if (!known) fail("batch axis of `" + value + "`, which is no input or output");
  }
}

Executable Executable::BuildBuckets(std::vector<ExecutableSpec> buckets, BucketPolicy policy) {
  for (size_t k = 0; k < buckets.size(); ++k) {
    try {
      ValidateExecutable(buckets[k]);
    } catch (const ffi::Error& e) {
      if (e.kind() != "ValueError") throw;
      TILECORE_THROW(ValueError) << "bucket " << k << ": " << e.message();
    }
  }
  ValidateBuckets(buckets, policy);
  // Equal constant bytes are held once (weights do not depend on the input shape).
  std::map<std::string_view, std::shared_ptr<const std::string>> by_bytes;
  for (ExecutableSpec& s : buckets) {
    for (ExecConstant& c : s.constants) {
      auto [it, fresh] = by_bytes.emplace(c.data(), c.bytes);
      if (!fresh) c.bytes = it->second;
    }
  }
  auto obj = ffi::make_object<ExecutableObj>();
  obj->spec = std::move(buckets[0]);
  for (size_t k = 1; k < buckets.size(); ++k) obj->more_buckets.push_back(std::move(buckets[k]));
  obj->policy = std::move(policy);
  return Executable(std::move(obj));
}

Executable Executable::Bucket(size_t i) const {
  if (i >= get()->num_buckets()) {
    TILECORE_THROW(IndexError) << "bucket " << i << " of an executable with "
                               << get()->num_buckets();
  }
  auto obj = ffi::make_object<ExecutableObj>();
  obj->spec = get()->bucket(i);
  return Executable(std::move(obj));
}

BucketChoice ChooseBucket(const ExecutableObj& exe,
                          const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  auto shape_of = [&](const ExecIO& io) -> const std::vector<int64_t>* {
    auto it = input_shapes.find(io.name);
    return it == input_shapes.end() ? nullptr : &it->second;
  };
  for (size_t k = 0; k < exe.num_buckets(); ++k) {
    const ExecutableSpec& s = exe.bucket(k);
    bool same = true;
    for (const ExecIO& io : s.inputs) {
      const auto* got = shape_of(io);
      same = same && got && *got == IOBuffer(s, io).shape;
    }
    if (same) return {k, -1};
  }
  // A smaller batch: the smallest bucket that holds it, every other dimension equal.
  BucketChoice best{0, -1};
  int64_t best_batch = -1;
  if (!exe.policy.batch_axes.empty()) {
    for (size_t k = 0; k < exe.num_buckets(); ++k) {
      const ExecutableSpec& s = exe.bucket(k);
      int64_t batch = BucketBatch(s, exe.policy), wanted = -1;
      bool fits = true;
      for (const ExecIO& io : s.inputs) {
        const auto* got = shape_of(io);
        const auto& want = IOBuffer(s, io).shape;
        size_t axis = size_t(exe.policy.batch_axes.at(io.name));
        if (!got || got->size() != want.size()) {
          fits = false;
          break;
        }
        for (size_t d = 0; d < want.size(); ++d) fits = fits && (d == axis || (*got)[d] == want[d]);
        int64_t b = (*got)[axis];
        fits = fits && b >= 1 && b < batch && (wanted < 0 || b == wanted);
        wanted = b;
      }
      if (fits && (best_batch < 0 || batch < best_batch)) best = {k, wanted}, best_batch = batch;
    }
  }
  if (best_batch >= 0) return best;
  std::string list;
  for (size_t k = 0; k < exe.num_buckets(); ++k)
    list += "\n  bucket " + std::to_string(k) + ": " + DescribeSignature(exe.bucket(k), true);
  std::string got;
  for (const auto& [name, shape] : input_shapes)
    got += (got.empty() ? "" : ", ") + name + ": " + ShapeText(shape);
  TILECORE_THROW(ValueError) << "no bucket of the executable takes the inputs " << got
                             << (exe.policy.batch_axes.empty()
                                     ? " (it runs exact shapes only)"
                                     : " (a smaller batch runs in a larger bucket; every other "
                                       "dimension must be a bucket's)")
                             << "; its buckets:" << list;
}

}  // namespace tilecore::runtime
