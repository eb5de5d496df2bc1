// src/runtime/c_runtime_api.cc — the C API of include/tilecore/runtime/c_runtime_api.h over
// runtime::Executable: handles, positional inputs and outputs, status codes from error kinds,
// and a thread-local last error. Every entry point catches everything: nothing but a status
// crosses the C boundary.
#include "tilecore/runtime/c_runtime_api.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "sha256.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/runtime/executable.h"
#if TILECORE_ENABLE_NPU
#include "tilecore/runtime/npu_device.h"
#endif

struct TCRExecutable {
  tilecore::runtime::Executable exe;
  struct Tensor {
    std::string name;
    DLDataType dtype;
    std::vector<int64_t> shape;
    uint64_t num_bytes;
  };
  std::vector<Tensor> inputs, outputs;  // bucket 0's (the only one of most executables)
  std::vector<std::vector<Tensor>> bucket_inputs, bucket_outputs;  // every bucket's
};

namespace {

using tilecore::ffi::Error;
using tilecore::runtime::ExecBuffer;
using tilecore::runtime::Executable;
using tilecore::runtime::ExecutableSpec;

thread_local std::string last_error;

TCRStatus Fail(TCRStatus status, std::string message) {
  last_error = std::move(message);
  return status;
}

// A failure's message without the C++ backtrace the FFI appends for Python.
std::string Message(const Error& e) {
  return std::string(e.kind()) + ": " + std::string(e.message());
}

// Runs `body`, turning what it throws into a status: `classify` maps an FFI error's kind.
template <typename Body, typename Classify>
TCRStatus Guard(Body&& body, Classify&& classify) {
  try {
    return body();
  } catch (const Error& e) {
    return Fail(classify(e), Message(e));
  } catch (const std::bad_alloc&) {
    return Fail(kTCROutOfMemory, "MemoryError: out of host memory");
  } catch (const std::exception& e) {
    return Fail(kTCRInternalError, std::string("InternalError: ") + e.what());
  } catch (...) {
    return Fail(kTCRInternalError, "InternalError: an unknown exception");
  }
}

TCRStatus LoadStatus(const Error& e) {
  if (e.kind() == tilecore::runtime::kLoadRefusedKind) return kTCRRefused;
  if (e.kind() == "OSError") return kTCRIOError;
  if (e.kind() == "MemoryError") return kTCROutOfMemory;
  if (e.kind() == "InternalError") return kTCRInternalError;
  return kTCRFormatError;
}

tilecore::runtime::ExecutableLoadOptions LoadOptions(const TCRLoadOptions* options) {
  tilecore::runtime::ExecutableLoadOptions o;
  if (options == nullptr) return o;
  if (options->struct_size < sizeof(uint32_t) + sizeof(int32_t)) {
    TILECORE_THROW(ValueError) << "TCRLoadOptions.struct_size is " << options->struct_size
                               << ": initialise the options with TCRLoadOptionsInit";
  }
  o.allow_host_code = options->refuse_host_code == 0;
  if (options->struct_size >= offsetof(TCRLoadOptions, expected_sha256) + sizeof(const char*) &&
      options->expected_sha256 != nullptr) {
    o.expected_sha256 = options->expected_sha256;
    tilecore::runtime::CheckSha256Digits(o.expected_sha256, "TCRLoadOptions.expected_sha256");
  }
  return o;
}

TCRExecutable* Wrap(Executable exe) {
  auto* h = new TCRExecutable{std::move(exe), {}, {}, {}, {}};
  for (size_t k = 0; k < h->exe->num_buckets(); ++k) {
    const ExecutableSpec& s = h->exe->bucket(k);
    h->bucket_inputs.emplace_back();
    h->bucket_outputs.emplace_back();
    for (auto [ios, out] : {std::pair{&s.inputs, &h->bucket_inputs.back()},
                            std::pair{&s.outputs, &h->bucket_outputs.back()}}) {
      for (const auto& io : *ios) {
        const ExecBuffer& b = s.buffers[io.buffer];
        out->push_back({io.name, tilecore::ffi::StringToDLDataType(b.dtype), b.shape, b.size});
      }
    }
  }
  h->inputs = h->bucket_inputs[0];
  h->outputs = h->bucket_outputs[0];
  return h;
}

TCRStatus LoadWith(const TCRLoadOptions* options, TCRExecutable** out,
                   Executable (*load)(const void*, const tilecore::runtime::ExecutableLoadOptions&),
                   const void* what) {
  if (out == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `out` is NULL");
  return Guard(
      [&] {
        tilecore::runtime::ExecutableLoadOptions o;
        try {
          o = LoadOptions(options);
        } catch (const Error& e) {
          return Fail(kTCRInvalidArgument, Message(e));
        }
        *out = Wrap(load(what, o));
        return kTCROk;
      },
      LoadStatus);
}

struct MemoryView {
  const void* data;
  size_t size;
};

TCRStatus CheckHandle(const TCRExecutable* exe) {
  return exe == nullptr ? Fail(kTCRInvalidArgument, "ValueError: the executable is NULL") : kTCROk;
}

TCRStatus Info(const TCRExecutable* exe, int32_t index, TCRTensorInfo* out, bool input,
               int32_t bucket = 0) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (out == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `out` is NULL");
  if (bucket < 0 || size_t(bucket) >= exe->bucket_inputs.size()) {
    return Fail(kTCRInvalidArgument, "IndexError: bucket " + std::to_string(bucket) +
                                         " out of range: the executable has " +
                                         std::to_string(exe->bucket_inputs.size()));
  }
  const auto& list = (input ? exe->bucket_inputs : exe->bucket_outputs)[size_t(bucket)];
  if (index < 0 || size_t(index) >= list.size()) {
    return Fail(kTCRInvalidArgument, std::string("IndexError: ") + (input ? "input" : "output") +
                                         " index " + std::to_string(index) + " out of range: the " +
                                         "executable has " + std::to_string(list.size()));
  }
  const auto& t = list[size_t(index)];
  out->name = t.name.c_str();
  out->dtype = t.dtype;
  out->ndim = int32_t(t.shape.size());
  out->shape = t.shape.data();
  out->num_bytes = t.num_bytes;
  return kTCROk;
}

TCRStatus Find(const TCRExecutable* exe, const char* name, int32_t* out, bool input) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (name == nullptr || out == nullptr)
    return Fail(kTCRInvalidArgument, "ValueError: `name` or `out` is NULL");
  const auto& list = input ? exe->inputs : exe->outputs;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name == name) {
      *out = int32_t(i);
      return kTCROk;
    }
  }
  return Fail(kTCRInvalidArgument, std::string("KeyError: no ") + (input ? "input" : "output") +
                                       " named `" + name + "`; the executable has " +
                                       tilecore::runtime::DescribeSignature(exe->exe->spec, input));
}

// Host memory as an NDArray without a copy: the caller owns it for the call's duration.
tilecore::ffi::NDArray Borrow(void* data, const TCRExecutable::Tensor& t) {
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = data;
  m->dl_tensor.device = DLDevice{kDLCPU, 0};
  m->dl_tensor.ndim = int32_t(t.shape.size());
  m->dl_tensor.shape = const_cast<int64_t*>(t.shape.data());
  m->dl_tensor.dtype = t.dtype;
  m->deleter = [](DLManagedTensor* self) { delete self; };
  return tilecore::ffi::NDArray::FromDLPack(m);
}

std::string Describe(const TCRExecutable::Tensor& t) {
  std::string s = tilecore::ffi::DLDataTypeToString(t.dtype) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

// The run shared by both entry points, on checked pointers to tensors of the run's signature
// (`in_sig`, `out_sig`: bucket 0's, or the bucket a DLTensor run's shapes take; `arena` its).
TCRStatus RunChecked(TCRExecutable* exe, const std::vector<void*>& in,
                     const std::vector<void*>& out, const TCRRunOptions* options,
                     TCRRunStats* stats, const std::vector<TCRExecutable::Tensor>& in_sig,
                     const std::vector<TCRExecutable::Tensor>& out_sig, uint64_t arena) {
  int32_t device = 0;
  if (options != nullptr) {
    if (options->struct_size < sizeof(TCRRunOptions))
      return Fail(kTCRInvalidArgument, "ValueError: TCRRunOptions.struct_size is " +
                                           std::to_string(options->struct_size) +
                                           ": initialise the options with TCRRunOptionsInit");
    device = options->device;
  }
  if (stats != nullptr && stats->struct_size < sizeof(TCRRunStats))
    return Fail(kTCRInvalidArgument, "ValueError: TCRRunStats.struct_size is " +
                                         std::to_string(stats->struct_size) +
                                         ": initialise the stats with TCRRunStatsInit");
  bool arena_fits = true;
  return Guard(
      [&] {
#if TILECORE_ENABLE_NPU
        try {
          int id = tilecore::runtime::NpuDeviceId(device);
          tilecore::runtime::NpuDevice& dev = tilecore::runtime::GetNpuDevice(id);
          uint64_t ddr = dev.capacity();
          arena_fits = arena <= ddr - std::min<uint64_t>(ddr, tilecore::runtime::kNpuHeapBase);
        } catch (const Error& e) {
          return Fail(kTCRInvalidArgument, Message(e));
        }
#endif
        std::map<std::string, tilecore::ffi::NDArray> inputs;
        for (size_t i = 0; i < in.size(); ++i)
          inputs.emplace(in_sig[i].name, Borrow(in[i], in_sig[i]));
        tilecore::runtime::RunSummary summary;
        std::map<std::string, tilecore::ffi::NDArray> outputs =
            exe->exe.Run(inputs, device, nullptr, nullptr, &summary);
        for (size_t i = 0; i < out.size(); ++i) {
          const tilecore::ffi::NDArray& a = outputs.at(out_sig[i].name);
          std::memcpy(out[i], a.data<const char>(), out_sig[i].num_bytes);
        }
        if (stats != nullptr) {
          stats->cycles = summary.cycles;
          stats->macs = summary.macs;
          stats->mac_utilisation = summary.mac_utilisation;
          stats->wall_seconds = summary.wall_seconds;
          stats->steps = int32_t(summary.steps);
        }
        return kTCROk;
      },
      [&](const Error& e) {
        if (e.kind() == "MemoryError" || !arena_fits) return kTCROutOfMemory;
        if (e.kind() == "InternalError") return kTCRInternalError;
        return kTCRRunError;
      });
}

}  // namespace

extern "C" {

void TCRLoadOptionsInit(TCRLoadOptions* options) {
  if (options == nullptr) return;
  *options = TCRLoadOptions{};
  options->struct_size = sizeof(TCRLoadOptions);
}

void TCRRunOptionsInit(TCRRunOptions* options) {
  if (options == nullptr) return;
  *options = TCRRunOptions{};
  options->struct_size = sizeof(TCRRunOptions);
}

void TCRRunStatsInit(TCRRunStats* stats) {
  if (stats == nullptr) return;
  *stats = TCRRunStats{};
  stats->struct_size = sizeof(TCRRunStats);
}

TCRStatus TCRExecutableLoadFile(const char* path, const TCRLoadOptions* options,
                                TCRExecutable** out) {
  if (path == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `path` is NULL");
  return LoadWith(
      options, out,
      [](const void* p, const tilecore::runtime::ExecutableLoadOptions& o) {
        return Executable::LoadFromFile(static_cast<const char*>(p), o);
      },
      path);
}

TCRStatus TCRExecutableLoadMemory(const void* data, size_t size, const TCRLoadOptions* options,
                                  TCRExecutable** out) {
  if (data == nullptr && size != 0) return Fail(kTCRInvalidArgument, "ValueError: `data` is NULL");
  MemoryView view{data, size};
  return LoadWith(
      options, out,
      [](const void* p, const tilecore::runtime::ExecutableLoadOptions& o) {
        const auto* v = static_cast<const MemoryView*>(p);
        return Executable::LoadFromBytes(
            std::string_view(static_cast<const char*>(v->data), v->size), o);
      },
      &view);
}

void TCRExecutableFree(TCRExecutable* exe) {
  try {
    delete exe;
  } catch (...) {  // a destructor that throws must not cross the C boundary
  }
}

TCRStatus TCRExecutableNumInputs(const TCRExecutable* exe, int32_t* out) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (out == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `out` is NULL");
  *out = int32_t(exe->inputs.size());
  return kTCROk;
}

TCRStatus TCRExecutableNumOutputs(const TCRExecutable* exe, int32_t* out) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (out == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `out` is NULL");
  *out = int32_t(exe->outputs.size());
  return kTCROk;
}

TCRStatus TCRExecutableInputInfo(const TCRExecutable* exe, int32_t index, TCRTensorInfo* out) {
  return Info(exe, index, out, true);
}

TCRStatus TCRExecutableOutputInfo(const TCRExecutable* exe, int32_t index, TCRTensorInfo* out) {
  return Info(exe, index, out, false);
}

TCRStatus TCRExecutableNumBuckets(const TCRExecutable* exe, int32_t* out) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (out == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `out` is NULL");
  *out = int32_t(exe->bucket_inputs.size());
  return kTCROk;
}

TCRStatus TCRExecutableBucketInputInfo(const TCRExecutable* exe, int32_t bucket, int32_t index,
                                       TCRTensorInfo* out) {
  return Info(exe, index, out, true, bucket);
}

TCRStatus TCRExecutableBucketOutputInfo(const TCRExecutable* exe, int32_t bucket, int32_t index,
                                        TCRTensorInfo* out) {
  return Info(exe, index, out, false, bucket);
}

TCRStatus TCRExecutableFindInput(const TCRExecutable* exe, const char* name, int32_t* out) {
  return Find(exe, name, out, true);
}

TCRStatus TCRExecutableFindOutput(const TCRExecutable* exe, const char* name, int32_t* out) {
  return Find(exe, name, out, false);
}

TCRStatus TCRExecutableRun(TCRExecutable* exe, const void* const* inputs, void* const* outputs,
                           const TCRRunOptions* options, TCRRunStats* stats) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if ((inputs == nullptr && !exe->inputs.empty()) || (outputs == nullptr && !exe->outputs.empty()))
    return Fail(kTCRInvalidArgument, "ValueError: `inputs` or `outputs` is NULL");
  std::vector<void*> in, out;
  for (size_t i = 0; i < exe->inputs.size(); ++i) {
    if (inputs[i] == nullptr && exe->inputs[i].num_bytes != 0)
      return Fail(kTCRInvalidArgument, "ValueError: input " + std::to_string(i) + " `" +
                                           exe->inputs[i].name + "` is NULL");
    in.push_back(const_cast<void*>(inputs[i]));
  }
  for (size_t i = 0; i < exe->outputs.size(); ++i) {
    if (outputs[i] == nullptr && exe->outputs[i].num_bytes != 0)
      return Fail(kTCRInvalidArgument, "ValueError: output " + std::to_string(i) + " `" +
                                           exe->outputs[i].name + "` is NULL");
    out.push_back(outputs[i]);
  }
  return RunChecked(exe, in, out, options, stats, exe->inputs, exe->outputs,
                    exe->exe->spec.arena_size);
}

TCRStatus TCRExecutableRunDLTensors(TCRExecutable* exe, const DLTensor* const* inputs,
                                    int32_t num_inputs, const DLTensor* const* outputs,
                                    int32_t num_outputs, const TCRRunOptions* options,
                                    TCRRunStats* stats) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (num_inputs < 0 || size_t(num_inputs) != exe->inputs.size() || num_outputs < 0 ||
      size_t(num_outputs) != exe->outputs.size()) {
    return Fail(kTCRInvalidArgument, "ValueError: " + std::to_string(num_inputs) + " inputs and " +
                                         std::to_string(num_outputs) +
                                         " outputs given; the executable has " +
                                         std::to_string(exe->inputs.size()) + " and " +
                                         std::to_string(exe->outputs.size()));
  }
  if ((inputs == nullptr && num_inputs > 0) || (outputs == nullptr && num_outputs > 0))
    return Fail(kTCRInvalidArgument, "ValueError: `inputs` or `outputs` is NULL");
  // The run's signature: bucket 0's, or (an executable with buckets) the one the shapes take.
  std::vector<TCRExecutable::Tensor> in_sig = exe->inputs, out_sig = exe->outputs;
  uint64_t arena = exe->exe->spec.arena_size;
  if (exe->exe->num_buckets() > 1) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (int32_t i = 0; i < num_inputs; ++i) {
      if (inputs[i] == nullptr || inputs[i]->ndim < 0 || (inputs[i]->ndim > 0 && !inputs[i]->shape))
        continue;  // refused below
      shapes[exe->inputs[size_t(i)].name] =
          std::vector<int64_t>(inputs[i]->shape, inputs[i]->shape + inputs[i]->ndim);
    }
    if (shapes.size() == exe->inputs.size()) {
      TCRStatus chosen = Guard(
          [&] {
            tilecore::runtime::BucketChoice c =
                tilecore::runtime::ChooseBucket(*exe->exe.get(), shapes);
            const ExecutableSpec& b = exe->exe->bucket(c.bucket);
            arena = b.arena_size;
            for (auto [ios, sig] :
                 {std::pair{&b.inputs, &in_sig}, std::pair{&b.outputs, &out_sig}}) {
              for (size_t i = 0; i < ios->size(); ++i) {
                const ExecBuffer& buf = b.buffers[(*ios)[i].buffer];
                TCRExecutable::Tensor& t = (*sig)[i];
                t.shape = buf.shape;
                t.num_bytes = buf.size;
                if (c.padded_from >= 0) {  // the run's batch: inputs as given, outputs cropped
                  size_t axis = size_t(exe->exe->policy.batch_axes.at(t.name));
                  t.num_bytes = t.num_bytes / uint64_t(t.shape[axis]) * uint64_t(c.padded_from);
                  t.shape[axis] = c.padded_from;
                }
              }
            }
            return kTCROk;
          },
          [](const Error&) { return kTCRInvalidArgument; });
      if (chosen != kTCROk) return chosen;
    }
  }
  std::vector<void*> in, out;
  for (int32_t k = 0; k < num_inputs + num_outputs; ++k) {
    bool is_input = k < num_inputs;
    size_t i = size_t(is_input ? k : k - num_inputs);
    const DLTensor* t = is_input ? inputs[i] : outputs[i];
    const TCRExecutable::Tensor& want = is_input ? in_sig[i] : out_sig[i];
    std::string what =
        std::string(is_input ? "input " : "output ") + std::to_string(i) + " `" + want.name + "`";
    if (t == nullptr) return Fail(kTCRInvalidArgument, "ValueError: " + what + " is NULL");
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost)
      return Fail(kTCRInvalidArgument, "ValueError: " + what + " is not in host memory");
    std::vector<int64_t> shape(t->shape, t->shape + std::max(t->ndim, 0));
    bool same = t->dtype.code == want.dtype.code && t->dtype.bits == want.dtype.bits &&
                t->dtype.lanes == want.dtype.lanes && shape == want.shape;
    if (!same || t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) {
      TCRExecutable::Tensor got{want.name, t->dtype, shape, 0};
      return Fail(kTCRInvalidArgument, "ValueError: " + what + " is " + Describe(got) +
                                           "; the executable expects " + Describe(want));
    }
    if (!tilecore::ffi::DLTensorIsContiguous(*t))
      return Fail(kTCRInvalidArgument, "ValueError: " + what + " is not compact row-major");
    if (t->data == nullptr && want.num_bytes != 0)
      return Fail(kTCRInvalidArgument, "ValueError: " + what + " has no data");
    (is_input ? in : out).push_back(static_cast<char*>(t->data) + t->byte_offset);
  }
  return RunChecked(exe, in, out, options, stats, in_sig, out_sig, arena);
}

TCRStatus TCRExecutableStatsJSON(const TCRExecutable* exe, char* buffer, size_t capacity,
                                 size_t* length) {
  if (TCRStatus st = CheckHandle(exe); st != kTCROk) return st;
  if (length == nullptr || (buffer == nullptr && capacity != 0))
    return Fail(kTCRInvalidArgument, "ValueError: `length` is NULL, or `buffer` with a capacity");
  return Guard(
      [&] {
        std::string json = exe->exe->last_stats();
        if (json.empty())
          return Fail(kTCRInvalidArgument, "ValueError: the executable has not run yet");
        *length = json.size();
        if (capacity > 0) {
          size_t n = std::min(capacity - 1, json.size());
          std::memcpy(buffer, json.data(), n);
          buffer[n] = '\0';
        }
        return kTCROk;
      },
      [](const Error&) { return kTCRInternalError; });
}

TCRStatus TCRDeviceConfigure(int32_t device, const char* target) {
  if (target == nullptr) return Fail(kTCRInvalidArgument, "ValueError: `target` is NULL");
#if TILECORE_ENABLE_NPU
  return Guard(
      [&] {
        tilecore::runtime::GetNpuDevice(tilecore::runtime::NpuDeviceId(device)).configure(target);
        return kTCROk;
      },
      [](const Error& e) {
        return e.kind() == "InternalError" ? kTCRInternalError : kTCRInvalidArgument;
      });
#else
  (void)device;
  return Fail(kTCRInvalidArgument, "RuntimeError: tilecore was built without the npu device");
#endif
}

const char* TCRGetLastError(void) { return last_error.c_str(); }

const char* TCRStatusName(TCRStatus status) {
  // A C caller may pass any int. In C++ a value outside the enumerators' range is not a
  // TCRStatus, so the code is read as the int it is stored as.
  static_assert(sizeof(TCRStatus) == sizeof(int));
  int code = 0;
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
    case int{kTCROk}:
      return "kTCROk";
    case int{kTCRInvalidArgument}:
      return "kTCRInvalidArgument";
    case int{kTCRIOError}:
      return "kTCRIOError";
    case int{kTCRFormatError}:
      return "kTCRFormatError";
    case int{kTCRRefused}:
      return "kTCRRefused";
    case int{kTCRRunError}:
      return "kTCRRunError";
    case int{kTCROutOfMemory}:
      return "kTCROutOfMemory";
    case int{kTCRInternalError}:
      return "kTCRInternalError";
  }
  return "unknown status";
}

const char* TCRVersion(void) { return TILECORE_VERSION; }

}  // extern "C"
