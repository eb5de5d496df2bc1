// src/runtime/executable.cc — the `.tcx` file: validation, save and load (docs/executable.md).
#include "tilecore/runtime/executable.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <functional>
#include <set>

#include "deflate.h"
#include "sha256.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/file.h"
#include "tilecore/ffi/json.h"
#include "tilecore/runtime/kernel.h"

namespace tilecore::runtime {

void ParseDebugEntries(ExecStep* step) {
  for (auto [key, into] :
       {std::pair{"group", &step->group_entry}, std::pair{"roofline", &step->roofline_entry}}) {
    *into = ffi::Any();
    auto it = step->debug.find(key);
    if (it == step->debug.end()) continue;
    try {
      *into = ffi::json::Parse(it->second);
    } catch (const ffi::Error&) {  // malformed: the run reports none (group_members.h)
    }
  }
}

namespace {

constexpr size_t kHeaderBytes = 32;  // magic, version, flags, payload size, checksum
constexpr uint32_t kMaxRank = 8;

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

/*! \brief FNV-1a, 64 bit: the payload checksum of a file without kExecutableWordChecksum
 * (one multiply chain through every byte: about 4 cycles a byte). */
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = kFnvBasis;
  for (char c : s) {
    h ^= uint8_t(c);
    h *= kFnvPrime;
  }
  return h;
}

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/*! \brief Bytes of dtype x shape, or nullopt on a bad dtype, a negative dim or overflow. */
std::optional<uint64_t> ByteSize(const std::string& dtype, const std::vector<int64_t>& shape,
                                 std::string* why) {
  DLDataType t;
  try {
    t = ffi::StringToDLDataType(dtype);
  } catch (const ffi::Error&) {
    *why = "unknown dtype `" + dtype + "`";
    return std::nullopt;
  }
  if (t.bits % 8 != 0 || t.lanes != 1) {
    *why = "dtype `" + dtype + "` is not a whole number of bytes";
    return std::nullopt;
  }
  uint64_t n = ffi::DataTypeBytes(t);
  for (int64_t d : shape) {
    if (d < 0) {
      *why = "negative dimension in shape " + ShapeStr(shape);
      return std::nullopt;
    }
    if (d != 0 && n > kExecutableMaxArena / uint64_t(d)) {
      *why = "shape " + ShapeStr(shape) + " is larger than 4 GiB";
      return std::nullopt;
    }
    n *= uint64_t(d);
  }
  return n;
}

std::string BufName(const ExecutableSpec& s, uint32_t b) {
  return "buffer " + std::to_string(b) + " `" + s.buffers[b].name + "`";
}

/*! \brief Parameters of function `name` of module `m` (from its Info), or nullopt. */
std::optional<std::vector<KernelParam>> FunctionParams(const Module& m, const std::string& name) {
  ffi::Map<ffi::String, ffi::Any> info = m.node()->Info();
  if (!info.count("functions")) return std::nullopt;
  for (const ffi::Any& f : info["functions"].cast<ffi::Array<ffi::Any>>()) {
    auto fm = f.cast<ffi::Map<ffi::String, ffi::Any>>();
    if (fm["name"].cast<std::string>() == name)
      return ParamsFromArray(fm["params"].cast<ffi::Array<ffi::Any>>());
  }
  return std::nullopt;
}

}  // namespace

uint64_t PeakMacsPerCycle(const std::string& precision) {
  if (precision == "int8" || precision == "i8") return 2048;
  if (precision == "f16" || precision == "bf16" || precision == "float16" ||
      precision == "bfloat16")
    return 1024;
  return 256;
}

std::string DescribeSignature(const ExecutableSpec& spec, bool inputs) {
  std::string s;
  for (const ExecIO& io : inputs ? spec.inputs : spec.outputs) {
    if (io.buffer >= spec.buffers.size()) continue;
    const ExecBuffer& b = spec.buffers[io.buffer];
    s += (s.empty() ? "" : ", ") + io.name + ": " + b.dtype + ShapeStr(b.shape);
  }
  return s.empty() ? "(none)" : s;
}

bool ConstantsStayPut(const ExecutableSpec& s) {
  std::set<uint32_t> constant_bufs;
  for (const ExecConstant& k : s.constants) constant_bufs.insert(k.buffer);
  for (const ExecStep& st : s.steps) {
    if (st.module >= s.modules.size()) return false;
    auto params = FunctionParams(s.modules[st.module], st.function);
    if (!params || params->size() != st.args.size()) return false;
    for (size_t a = 0; a < st.args.size(); ++a)
      if ((*params)[a].written && constant_bufs.count(st.args[a])) return false;
  }
  return true;
}

void ValidateExecutable(const ExecutableSpec& s) {
  auto fail = [](const std::string& m) {
    TILECORE_THROW(ValueError) << "invalid executable: " << m;
  };
  // Version 1 marked every buffer parameter written: those files cannot tell a reader.
  const bool exact_version = s.format_version >= 2;
  if (s.precision != "f32" && s.precision != "f16" && s.precision != "bf16" &&
      s.precision != "int8") {
    fail("precision `" + s.precision + "` (expected f32, f16, bf16 or int8)");
  }
  if (s.arena_size > kExecutableMaxArena)
    fail("arena of " + std::to_string(s.arena_size) + " bytes exceeds 4 GiB");
  const uint32_t nb = uint32_t(s.buffers.size());
  for (uint32_t i = 0; i < nb; ++i) {
    const ExecBuffer& b = s.buffers[i];
    std::string why;
    auto size = ByteSize(b.dtype, b.shape, &why);
    if (!size) fail(BufName(s, i) + ": " + why);
    if (*size != b.size) {
      fail(BufName(s, i) + ": size " + std::to_string(b.size) + " but " + b.dtype +
           ShapeStr(b.shape) + " needs " + std::to_string(*size));
    }
    if (b.offset % kExecutableAlign != 0)
      fail(BufName(s, i) + ": offset " + std::to_string(b.offset) + " is not 64-byte aligned");
    if (b.offset > s.arena_size || b.size > s.arena_size - b.offset) {
      fail(BufName(s, i) + ": bytes [" + std::to_string(b.offset) + ", " +
           std::to_string(b.offset + b.size) + ") exceed the arena of " +
           std::to_string(s.arena_size));
    }
  }
  // Live ranges: [first, last] step index; -1 = before the first step, n = after the last.
  const int n = int(s.steps.size());
  std::vector<int> first(nb, n + 1), last(nb, -2);
  auto use = [&](uint32_t b, int t) {
    first[b] = std::min(first[b], t);
    last[b] = std::max(last[b], t);
  };
  std::set<uint32_t> constant_bufs;
  for (size_t c = 0; c < s.constants.size(); ++c) {
    const ExecConstant& k = s.constants[c];
    if (k.buffer >= nb)
      fail("constant " + std::to_string(c) + ": buffer index " + std::to_string(k.buffer) +
           " out of range");
    if (!constant_bufs.insert(k.buffer).second)
      fail("constant " + std::to_string(c) + ": " + BufName(s, k.buffer) + " has two constants");
    if (k.data().size() != s.buffers[k.buffer].size) {
      fail("constant " + std::to_string(c) + ": " + std::to_string(k.data().size()) +
           " bytes for " + BufName(s, k.buffer) + " of " +
           std::to_string(s.buffers[k.buffer].size));
    }
    use(k.buffer, -1);
    use(k.buffer, n);
  }
  for (int io = 0; io < 2; ++io) {
    const auto& list = io == 0 ? s.inputs : s.outputs;
    const char* what = io == 0 ? "input" : "output";
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      const ExecIO& e = list[i];
      if (e.name.empty()) fail(std::string(what) + " " + std::to_string(i) + " has no name");
      if (!names.insert(e.name).second) fail(std::string(what) + " `" + e.name + "` appears twice");
      if (e.buffer >= nb)
        fail(std::string(what) + " `" + e.name + "`: buffer index " + std::to_string(e.buffer) +
             " out of range");
      if (io == 0 && constant_bufs.count(e.buffer))
        fail(std::string("input `") + e.name + "` is a constant's " + BufName(s, e.buffer));
      if (io == 0) {
        // Two inputs in one buffer: loading the second would overwrite the first.
        for (size_t j = 0; j < i; ++j) {
          if (list[j].buffer == e.buffer)
            fail("inputs `" + list[j].name + "` and `" + e.name + "` share " +
                 BufName(s, e.buffer));
        }
      }
      use(e.buffer, io == 0 ? -1 : n);
    }
  }
  // Data flow: a buffer holds data once an input, a constant or a step that writes it has
  // filled it. A step may read only such a buffer, and every output must be one, so no
  // run can return bytes an earlier run (or another executable) left in device memory.
  std::vector<bool> filled(nb, false);
  for (uint32_t i = 0; i < nb; ++i) filled[i] = s.buffers[i].size == 0;  // nothing to fill
  for (const ExecConstant& k : s.constants) filled[k.buffer] = true;
  for (const ExecIO& e : s.inputs) filled[e.buffer] = true;
  if (s.outputs.empty()) fail("no outputs");
  for (int t = 0; t < n; ++t) {
    const ExecStep& st = s.steps[size_t(t)];
    std::string name = "step " + std::to_string(t) + " `" + st.node + "`";
    if (st.kind != ExecStep::kNpu && st.kind != ExecStep::kHost)
      fail(name + ": kind " + std::to_string(st.kind));
    if (st.module >= s.modules.size())
      fail(name + ": module index " + std::to_string(st.module) + " out of range");
    const Module& m = s.modules[st.module];
    std::string kind = m.node()->kind();
    if ((st.kind == ExecStep::kNpu) != (kind == "npu")) {
      fail(name + ": a " + (st.kind == ExecStep::kNpu ? "npu" : "host") + " step calls a `" + kind +
           "` module");
    }
    auto params = FunctionParams(m, st.function);
    // Host kernels hand their buffers to registered functions (tir.call_packed), which may
    // write any of them: their flags are conservative, so only npu steps' are exact.
    const bool exact_written = exact_version && st.kind == ExecStep::kNpu;
    if (!params)
      fail(name + ": module " + std::to_string(st.module) + " (" + kind + ") has no function `" +
           st.function + "`");
    if (params->size() != st.args.size()) {
      fail(name + ": " + std::to_string(st.args.size()) + " arguments for " +
           KernelSignature(st.function, *params));
    }
    for (size_t a = 0; a < st.args.size(); ++a) {
      uint32_t b = st.args[a];
      const KernelParam& p = (*params)[a];
      if (b >= nb)
        fail(name + ": argument " + std::to_string(a) + ": buffer index " + std::to_string(b) +
             " out of range");
      if (p.kind != "buffer")
        fail(name + ": parameter `" + p.name + "` of " + KernelSignature(st.function, *params) +
             " is not a buffer");
      // an npu kernel takes an int64 buffer as int32 words (TC1 has no 64-bit types)
      bool words = st.kind == ExecStep::kNpu && p.dtype == "int32" && s.buffers[b].dtype == "int64";
      if (p.dtype != s.buffers[b].dtype && !words) {
        fail(name + ": parameter `" + p.name + "` of " + KernelSignature(st.function, *params) +
             " gets " + BufName(s, b) + " of dtype " + s.buffers[b].dtype);
      }
      const ExecBuffer& buf = s.buffers[b];
      uint64_t elements =
          buf.size / std::max<uint64_t>(ffi::StringToDLDataType(buf.dtype).bits / 8, 1);
      if (p.elements >= 0 && elements * (words ? 2 : 1) < uint64_t(p.elements)) {
        fail(name + ": parameter `" + p.name + "` of " + KernelSignature(st.function, *params) +
             " needs " + std::to_string(p.elements) + " elements; " + BufName(s, b) + " has " +
             std::to_string(elements));
      }
      if (!p.written && !filled[b]) {
        fail(name + ": parameter `" + p.name + "` reads " + BufName(s, b) +
             ", which no input, constant or earlier step writes");
      }
      // One buffer as two arguments, one of them written: the kernel's reads and writes of
      // it would race (its tiles are not ordered between the two names).
      for (size_t a2 = 0; a2 < a && exact_written; ++a2) {
        if (st.args[a2] == b && (p.written || (*params)[a2].written)) {
          fail(name + ": " + BufName(s, b) + " is both parameter `" + (*params)[a2].name +
               "` and `" + p.name + "`, and the kernel writes one of them");
        }
      }
      if (exact_written && p.written && constant_bufs.count(b)) {
        fail(name + ": parameter `" + p.name + "` writes the constant in " + BufName(s, b));
      }
      use(b, t);
    }
    for (size_t a = 0; a < st.args.size(); ++a) {
      if ((*params)[a].written) filled[st.args[a]] = true;
    }
  }
  for (const ExecIO& e : s.outputs) {
    if (!filled[e.buffer]) {
      fail("output `" + e.name + "`: no input, constant or step writes " + BufName(s, e.buffer));
    }
  }
  // Buffers alive at the same time must not share bytes.
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < nb; ++i) {
    if (last[i] >= first[i] && s.buffers[i].size > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return s.buffers[a].offset < s.buffers[b].offset; });
  for (size_t x = 0; x < order.size(); ++x) {
    const ExecBuffer& a = s.buffers[order[x]];
    for (size_t y = x + 1; y < order.size(); ++y) {
      const ExecBuffer& b = s.buffers[order[y]];
      if (b.offset >= a.offset + a.size) break;
      if (first[order[x]] <= last[order[y]] && first[order[y]] <= last[order[x]]) {
        fail(BufName(s, order[x]) + " [" + std::to_string(a.offset) + ", " +
             std::to_string(a.offset + a.size) + ") and " + BufName(s, order[y]) + " [" +
             std::to_string(b.offset) + ", " + std::to_string(b.offset + b.size) +
             ") overlap while both are live (steps " +
             std::to_string(std::max(first[order[x]], first[order[y]])) + ".." +
             std::to_string(std::min(last[order[x]], last[order[y]])) + ")");
      }
    }
  }
}

Executable Executable::Build(ExecutableSpec spec) {
  ValidateExecutable(spec);
  auto obj = ffi::make_object<ExecutableObj>();
  obj->spec = std::move(spec);
  return Executable(std::move(obj));
}

// ---- file format ---------------------------------------------------------------------------
namespace {

/*! \brief A program's plan, I/O and steps; `module_index` and `constant` write the references
 * to the modules and the constants' bytes (inline in version 2, shared tables in version 3). */
void WriteProgram(ByteWriter& w, const ExecutableSpec& s,
                  const std::function<uint32_t(uint32_t)>& module_index,
                  const std::function<void(const ExecConstant&)>& constant) {
  w.u64(s.arena_size);
  w.u32(uint32_t(s.buffers.size()));
  for (const ExecBuffer& b : s.buffers) {
    w.str(b.name);
    w.u64(b.offset);
    w.u64(b.size);
    w.str(b.dtype);
    w.u32(uint32_t(b.shape.size()));
    for (int64_t d : b.shape) w.i64(d);
  }
  w.u32(uint32_t(s.constants.size()));
  for (const ExecConstant& c : s.constants) {
    w.u32(c.buffer);
    constant(c);
  }
  for (const auto* list : {&s.inputs, &s.outputs}) {
    w.u32(uint32_t(list->size()));
    for (const ExecIO& e : *list) {
      w.str(e.name);
      w.u32(e.buffer);
    }
  }
  w.u32(uint32_t(s.steps.size()));
  for (const ExecStep& st : s.steps) {
    w.u32(st.kind);
    w.u32(module_index(st.module));
    w.str(st.function);
    w.u32(uint32_t(st.args.size()));
    for (uint32_t a : st.args) w.u32(a);
    w.str(st.node);
    w.str(st.op_type);
    w.u64(st.macs);
    w.str(st.source_node);
    w.u32(uint32_t(st.debug.size()));
    for (const auto& [k, v] : st.debug) {
      w.str(k);
      w.str(v);
    }
  }
}

std::string WithHeader(uint32_t version, const std::string& payload) {
  ByteWriter h;
  h.u32(version);
  h.u32(kExecutableWordChecksum);
  h.u64(payload.size());
  h.u64(ExecutableChecksum(payload));
  return std::string(kExecutableMagic, 8) + h.data() + payload;
}

/*! \brief Version 3: the modules (deflated) and the constants' distinct bytes once, then
 * each bucket's program referring to them by index, then the policy. */
std::string SaveBuckets(const ExecutableObj& e) {
  ByteWriter w;
  w.str(e.spec.precision);
  // Modules: one entry per distinct module file (buckets compiled alike share kernels).
  std::vector<std::string> module_files;
  std::map<std::string, uint32_t> module_of_file;
  std::vector<std::vector<uint32_t>> module_map(e.num_buckets());
  // Constants: one entry per bytes object (BuildBuckets gave equal bytes one object).
  std::map<const std::string*, uint32_t> blob_of_ptr;
  std::vector<std::string_view> blobs;
  for (size_t b = 0; b < e.num_buckets(); ++b) {
    for (const Module& m : e.bucket(b).modules) {
      std::string f = m.SaveToBytes();
      auto [it, fresh] = module_of_file.emplace(f, uint32_t(module_files.size()));
      if (fresh) module_files.push_back(std::move(f));
      module_map[b].push_back(it->second);
    }
    for (const ExecConstant& c : e.bucket(b).constants) {
      if (blob_of_ptr.emplace(c.bytes.get(), uint32_t(blobs.size())).second)
        blobs.push_back(c.data());
    }
  }
  w.u32(uint32_t(module_files.size()));
  for (const std::string& f : module_files) {
    w.u64(f.size());
    w.str(DeflateBytes(f));
  }
  w.u32(uint32_t(blobs.size()));
  for (std::string_view b : blobs) w.str(b);
  w.u32(uint32_t(e.num_buckets()));
  for (size_t b = 0; b < e.num_buckets(); ++b) {
    WriteProgram(
        w, e.bucket(b), [&](uint32_t m) { return module_map[b].at(m); },
        [&](const ExecConstant& c) { w.u32(blob_of_ptr.at(c.bytes.get())); });
  }
  w.u32(uint32_t(e.policy.batch_axes.size()));
  for (const auto& [name, axis] : e.policy.batch_axes) {
    w.str(name);
    w.u32(uint32_t(axis));
  }
  return WithHeader(kExecutableBucketsVersion, w.data());
}

}  // namespace

std::string Executable::SaveToBytes() const {
  if (get()->num_buckets() > 1) return SaveBuckets(*get());
  const ExecutableSpec& s = get()->spec;
  ByteWriter w;
  w.str(s.precision);
  w.u32(uint32_t(s.modules.size()));
  for (const Module& m : s.modules) w.str(m.SaveToBytes());
  WriteProgram(
      w, s, [](uint32_t m) { return m; }, [&](const ExecConstant& c) { w.str(c.data()); });
  // One program is written in version 2's layout, also a bucket taken out of a version 3 file
  // (Bucket(i): its spec says 3); a version 1 file is saved again as version 1.
  return WithHeader(std::min(s.format_version, kExecutableVersion), w.data());
}

namespace {

// Refuses `bytes` unless their SHA-256 is `expected` (64 hexadecimal digits, either case).
void CheckSha256(std::string_view bytes, const std::string& expected) {
  CheckSha256Digits(expected, "expected_sha256");
  std::string want = expected;
  for (char& c : want) c = char(std::tolower(static_cast<unsigned char>(c)));
  std::string got = Sha256Hex(bytes);
  if (got != want) {
    TILECORE_THROW(PermissionError)
        << "the executable's SHA-256 is " << got << ", and the load options expect " << want
        << " (nothing in it was loaded)";
  }
}

}  // namespace

// Four lanes of a word each: independent multiply chains, so about eight times FNV-1a's
// speed (a loaded model's weights were most of its load time). A change within one word
// always changes the sum: xor and the odd multiplier are one-to-one, in the lane and in the
// fold after it.
uint64_t ExecutableChecksum(std::string_view payload) {
  uint64_t lane[4] = {kFnvBasis, kFnvBasis ^ 1, kFnvBasis ^ 2, kFnvBasis ^ 3};
  const size_t blocks = payload.size() / 32;
  const char* p = payload.data();
  for (size_t b = 0; b < blocks; ++b, p += 32) {
    for (int j = 0; j < 4; ++j) {
      uint64_t w;
      std::memcpy(&w, p + 8 * j, 8);
      if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
      lane[j] = (lane[j] ^ w) * kFnvPrime;
    }
  }
  uint64_t h = kFnvBasis;
  for (uint64_t l : lane) h = (h ^ l) * kFnvPrime;
  for (size_t i = blocks * 32; i < payload.size(); ++i) h = (h ^ uint8_t(payload[i])) * kFnvPrime;
  return (h ^ uint64_t(payload.size())) * kFnvPrime;
}

Executable Executable::LoadFromBytes(std::string_view bytes, const ExecutableLoadOptions& options) {
  if (!options.expected_sha256.empty()) CheckSha256(bytes, options.expected_sha256);
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kExecutableMagic, 8) != 0) {
    TILECORE_THROW(ValueError)
        << "not a tilecore executable (the magic \"TCEXEC\" is missing at byte 0)";
  }
  if (bytes.size() < kHeaderBytes) {
    TILECORE_THROW(ValueError) << "executable, byte " << bytes.size() << ": truncated header ("
                               << kHeaderBytes << " bytes needed, " << bytes.size() << " present)";
  }
  ByteReader h(bytes.substr(0, kHeaderBytes), "executable");
  h.u64();  // magic
  uint32_t version = h.u32();
  if (version < kExecutableOldestVersion || version > kExecutableBucketsVersion) {
    TILECORE_THROW(ValueError) << "executable, byte 8: unsupported version " << version
                               << " (this tilecore reads versions " << kExecutableOldestVersion
                               << " to " << kExecutableBucketsVersion << ")";
  }
  uint32_t flags = h.u32();
  if ((flags & ~kExecutableWordChecksum) != 0)
    TILECORE_THROW(ValueError) << "executable, byte 12: unknown flags " << flags;
  uint64_t size = h.u64();
  uint64_t sum = h.u64();
  if (size != bytes.size() - kHeaderBytes) {
    TILECORE_THROW(ValueError) << "executable, byte 16: the header announces a payload of " << size
                               << " bytes but " << bytes.size() - kHeaderBytes
                               << " follow (truncated or padded file)";
  }
  std::string_view payload = bytes.substr(kHeaderBytes);
  if ((flags & kExecutableWordChecksum ? ExecutableChecksum(payload) : Fnv1a(payload)) != sum) {
    TILECORE_THROW(ValueError) << "executable, byte 24: checksum mismatch (the file is corrupted)";
  }
  // Positions below are payload offsets; errors name file bytes (payload + 32).
  ByteReader r(bytes, "executable");
  (void)r.u64(), (void)r.u64(), (void)r.u64(), (void)r.u64();
  auto left = [&] { return uint64_t(bytes.size() - r.pos()); };
  const bool buckets = version == kExecutableBucketsVersion;
  std::string precision = r.str();
  std::vector<Module> modules;
  uint32_t nm = r.count(left() / 4);
  for (uint32_t i = 0; i < nm; ++i) {
    size_t at = r.pos();
    std::string blob;
    if (buckets) {
      uint64_t raw = r.u64();
      std::string deflated = r.str();
      blob =
          InflateBytes(deflated, raw,
                       "executable, byte " + std::to_string(at) + ": module " + std::to_string(i));
    } else {
      blob = r.str();
    }
    try {
      modules.push_back(Module::LoadFromBytes(blob, options.allow_host_code));
    } catch (const ffi::Error& e) {
      // A refusal keeps its kind: the file is not malformed, the options refuse it.
      std::string kind = e.kind() == kLoadRefusedKind ? kLoadRefusedKind : "ValueError";
      throw ffi::Error(kind,
                       "executable, byte " + std::to_string(at) + ": module " + std::to_string(i) +
                           ": " + std::string(e.message()),
                       std::string(e.backtrace()));
    }
  }
  std::vector<std::shared_ptr<const std::string>> blobs;
  if (buckets) {
    blobs.resize(r.count(left() / 4));
    for (auto& b : blobs) b = std::make_shared<const std::string>(r.str());
  }
  // One program: its plan, constants (inline, or indices of `blobs`), I/O and steps.
  auto read_program = [&](ExecutableSpec& s) {
    s.format_version = version;
    s.precision = precision;
    s.arena_size = r.u64();
    if (s.arena_size > kExecutableMaxArena)
      r.fail("arena of " + std::to_string(s.arena_size) + " bytes exceeds 4 GiB");
    s.buffers.resize(r.count(left() / 28));  // a buffer record takes at least 28 bytes
    for (ExecBuffer& b : s.buffers) {
      b.name = r.str();
      b.offset = r.u64();
      b.size = r.u64();
      b.dtype = r.str();
      b.shape.resize(r.count(kMaxRank));
      for (int64_t& d : b.shape) d = r.i64();
    }
    s.constants.resize(r.count(left() / 8));
    for (ExecConstant& c : s.constants) {
      c.buffer = r.u32();
      if (!buckets) {
        c.set(r.str());
        continue;
      }
      size_t at = r.pos();
      uint32_t blob = r.u32();
      if (blob >= blobs.size()) {
        TILECORE_THROW(ValueError)
            << "executable, byte " << at << ": constant bytes " << blob << " of " << blobs.size();
      }
      c.bytes = blobs[blob];
    }
    for (auto* list : {&s.inputs, &s.outputs}) {
      list->resize(r.count(left() / 8));
      for (ExecIO& e : *list) {
        e.name = r.str();
        e.buffer = r.u32();
      }
    }
    s.steps.resize(r.count(left() / 40));  // a step record takes at least 40 bytes
    for (ExecStep& st : s.steps) {
      size_t at = r.pos();
      uint32_t kind = r.u32();
      if (kind > 1) {
        TILECORE_THROW(ValueError)
            << "executable, byte " << at << ": step kind " << kind << " (0 npu, 1 host)";
      }
      st.kind = ExecStep::Kind(kind);
      st.module = r.u32();
      st.function = r.str();
      st.args.resize(r.count(left() / 4));
      for (uint32_t& a : st.args) a = r.u32();
      st.node = r.str();
      st.op_type = r.str();
      st.macs = r.u64();
      st.source_node = r.str();
      uint32_t nd = r.count(left() / 8);
      for (uint32_t i = 0; i < nd; ++i) {
        std::string k = r.str();
        st.debug[k] = r.str();
      }
      ParseDebugEntries(&st);
    }
    // Each program holds the modules its steps call (a bucket taken out alone carries only
    // its own), the steps' indices renumbered.
    std::map<uint32_t, uint32_t> local;
    for (size_t t = 0; buckets && t < s.steps.size(); ++t) {
      ExecStep& st = s.steps[t];
      if (st.module >= modules.size()) {
        TILECORE_THROW(ValueError) << "executable: invalid executable: step " << t << " `"
                                   << st.node << "`: module index " << st.module << " out of range";
      }
      auto [it, fresh] = local.emplace(st.module, uint32_t(s.modules.size()));
      if (fresh) s.modules.push_back(modules[st.module]);
      st.module = it->second;
    }
    if (!buckets) s.modules = modules;
  };
  std::vector<ExecutableSpec> programs(buckets ? r.count(left() / 40) : 1);
  for (ExecutableSpec& s : programs) read_program(s);
  BucketPolicy policy;
  if (buckets) {
    uint32_t na = r.count(left() / 8);
    for (uint32_t i = 0; i < na; ++i) {
      std::string name = r.str();
      policy.batch_axes[name] = r.u32();
    }
  }
  if (!r.at_end())
    r.fail(buckets ? "trailing bytes after the batch axes" : "trailing bytes after the last step");
  try {
    if (buckets) {
      if (programs.size() < 2) {
        TILECORE_THROW(ValueError)
            << "a version 3 file holds " << programs.size() << " bucket(s); it needs at least 2";
      }
      return BuildBuckets(std::move(programs), std::move(policy));
    }
    return Build(std::move(programs[0]));
  } catch (const ffi::Error& e) {
    if (e.kind() != "ValueError") throw;
    TILECORE_THROW(ValueError) << "executable: " << e.message();
  }
}

void Executable::SaveToFile(const std::string& path) const {
  ffi::WriteFileAtomically(path, SaveToBytes());
}

Executable Executable::LoadFromFile(const std::string& path, const ExecutableLoadOptions& options) {
  // The arena and the constants in it are at most 4 GiB; modules come on top.
  std::string bytes = ffi::ReadRegularFile(path, 2 * kExecutableMaxArena, "an executable");
  try {
    return LoadFromBytes(bytes, options);
  } catch (const ffi::Error& e) {
    if (e.kind() != "ValueError" && e.kind() != kLoadRefusedKind) throw;
    throw ffi::Error(std::string(e.kind()), path + ": " + std::string(e.message()),
                     std::string(e.backtrace()));
  }
}

}  // namespace tilecore::runtime
