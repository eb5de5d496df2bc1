// include/tilecore/runtime/executable.h — the executable `.tcx`: a compiled model and its executor.
//
// An Executable is what the model compiler produces and what `tilecore run` runs. It holds
//   - code: runtime Modules (`npu` modules run on the simulator, `c` modules on the CPU),
//     saved with the module file format of module.h;
//   - the DDR memory plan: one arena of `arena_size` bytes and a list of buffers in it
//     (offset, size, dtype, shape). Which buffers share bytes is the compiler's decision;
//     validation checks that no two buffers alive at the same step overlap;
//   - constants (weights): the bytes of some buffers, copied into the arena before a run;
//   - the I/O signature: input and output names (the model's names) and their buffers;
//   - the steps, in order: an npu or host call of one module function on plan buffers,
//     with the graph node it computes, its op type and MAC count, and debug info.
// Every Executable is validated when built and when loaded (Validate below): the file
// format (docs/executable.md) is versioned, carries a whole-file checksum checked before
// anything is parsed, and every count is checked against the bytes left before allocating,
// so a truncated or corrupted file is a ValueError naming the field and the byte, never a crash.
//
// Layering: the runtime knows modules, devices and the simulator; nothing here knows the
// Graph IR or ONNX — node names and op types are plain strings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/object.h"
#include "tilecore/runtime/module.h"

namespace tilecore::runtime {

inline constexpr char kExecutableMagic[8] = {'T', 'C', 'E', 'X', 'E', 'C', '\0', '\0'};
/// Version 2: the kernels' parameters say exactly which buffers they write, which the
/// data-flow validation rests on. Version 1 files (parameters all marked written) still
/// load, without the checks that need the exact flags.
inline constexpr uint32_t kExecutableVersion = 2;
inline constexpr uint32_t kExecutableOldestVersion = 1;
/// Version 3: several buckets (one program per input shape) sharing one copy of the modules
/// and the constants, the modules deflated. Written only for an executable with buckets.
inline constexpr uint32_t kExecutableBucketsVersion = 3;
/// Header flag: the payload's checksum is ExecutableChecksum's (FNV-1a over 64-bit words in
/// four lanes), which tilecore writes; without it, FNV-1a over the bytes (files written
/// before the flag existed), which still load.
inline constexpr uint32_t kExecutableWordChecksum = 1;
/// The payload checksum of a file whose header has kExecutableWordChecksum.
uint64_t ExecutableChecksum(std::string_view payload);
/// Offsets of buffers in the arena are multiples of this (DMA-friendly, any dtype aligned).
inline constexpr uint64_t kExecutableAlign = 64;
/// The arena must fit TC1's 32-bit DDR address space.
inline constexpr uint64_t kExecutableMaxArena = uint64_t{1} << 32;

/// One buffer of the memory plan: bytes [offset, offset + size) of the arena.
struct ExecBuffer {
  std::string name;
  uint64_t offset = 0;
  uint64_t size = 0;  // = product(shape) x dtype bytes
  std::string dtype;  // "int8", "float32", ...
  std::vector<int64_t> shape;
};

/// A named input or output of the model and the buffer it lives in.
struct ExecIO {
  std::string name;
  uint32_t buffer = 0;
};

struct ExecConstant {
  uint32_t buffer = 0;
  /// Exactly the buffer's size. Shared: the buckets of one executable hold the same bytes once.
  std::shared_ptr<const std::string> bytes;
  std::string_view data() const { return bytes ? std::string_view(*bytes) : std::string_view(); }
  void set(std::string data) { bytes = std::make_shared<const std::string>(std::move(data)); }
};

/// One call. `module` indexes Executable::modules; `args` index buffers (the function's
/// parameters in order, all buffers).
struct ExecStep {
  enum Kind : uint32_t { kNpu = 0, kHost = 1 };
  Kind kind = kNpu;
  uint32_t module = 0;
  std::string function;
  std::vector<uint32_t> args;
  std::string node;     // the graph node this step computes
  std::string op_type;  // its op type ("Conv", "MatMul", ...)
  uint64_t macs = 0;    // multiply-accumulates of the op (for statistics)
  // ---- debug info (the module's own line table maps npu instructions to Kernel IR lines)
  std::string source_node;                   // the model's node name (e.g. the ONNX node)
  std::map<std::string, std::string> debug;  // room for more: key -> value
  // debug's entries `group` and `roofline` as JSON values, parsed once when loaded
  // (ParseDebugEntries): a run reads them, and parsing them each run took a tenth of a
  // small model's host time. None when absent or malformed.
  ffi::Any group_entry, roofline_entry;
};

/// Sets `step`'s group_entry and roofline_entry from its debug map.
void ParseDebugEntries(ExecStep* step);

struct ExecutableSpec {
  std::string precision = "f32";  // f32 | f16 | bf16 | int8: the MAC peak statistics use
  std::vector<Module> modules;
  uint64_t arena_size = 0;
  std::vector<ExecBuffer> buffers;
  std::vector<ExecConstant> constants;
  std::vector<ExecIO> inputs, outputs;
  std::vector<ExecStep> steps;
  uint32_t format_version = kExecutableVersion;  // the file's (saved again as it was loaded)
};

/// How an executable with buckets (several programs for several input shapes) chooses one
/// for a run (docs/executable.md, "Buckets"). A bucket whose input shapes equal the run's is
/// taken. With `batch_axes`, a run whose batch is smaller than every bucket's that fits runs
/// in the smallest such bucket, its inputs padded with zeros along their batch axes and its
/// outputs cropped along theirs; the compiler sets them only where it has shown that the
/// rows of a batch do not mix.
struct BucketPolicy {
  /// Every input's and output's batch axis, by name; empty: exact shapes only.
  std::map<std::string, int64_t> batch_axes;
};

/// Whether no step of `s` may write a constant's buffer (its kernels' written flags: exact for
/// npu kernels, conservative for host ones), so a run may find the constants where the last
/// run of the executable left them (docs/executable.md, "Constants in place").
bool ConstantsStayPut(const ExecutableSpec& s);

/// What loading may accept (the C API's TCRLoadOptions; docs/deploy.md, "Security").
struct ExecutableLoadOptions {
  /// False: refuse modules that hold host code (every kind but `npu`: a `c` module is a shared
  /// library that loading dlopens), before any module is loaded.
  bool allow_host_code = true;
  /// Empty, or the file's SHA-256 as 64 hexadecimal digits: other bytes are refused unparsed.
  std::string expected_sha256;
};

/// The figures of one run (all of them are in its statistics JSON, last_stats).
struct RunSummary {
  uint64_t cycles = 0;
  uint64_t macs = 0;
  double mac_utilisation = 0;
  double wall_seconds = 0;
  int64_t steps = 0;
};

/// The executor's state of one executable (executable_run.cc): the last run that finished,
/// whose statistics and trace are built from it when first asked for, and what runs read of
/// the steps once (a layer group's members and their code).
struct RunState;

class ExecutableObj : public ffi::Object {
 public:
  ExecutableSpec spec;  // the program (an executable with buckets: bucket 0)
  /// Buckets 1.. of an executable with buckets (empty otherwise); each is a whole program over
  /// the same input and output names and dtypes, sharing `spec`'s constant bytes where equal.
  std::vector<ExecutableSpec> more_buckets;
  BucketPolicy policy;
  size_t num_buckets() const { return 1 + more_buckets.size(); }
  const ExecutableSpec& bucket(size_t i) const { return i == 0 ? spec : more_buckets.at(i - 1); }
  /// The statistics (JSON) and Chrome trace of the last run that finished; empty before one.
  /// Built when first asked for; runs from several threads replace the run under a mutex.
  std::string last_stats() const;
  std::string last_trace() const;
  RunState& run_state() const;  // (made on first use)
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("runtime.Executable", ExecutableObj, ffi::Object);

 private:
  mutable std::mutex run_state_mu_;
  mutable std::shared_ptr<RunState> run_state_;
};

/// Thrown (kind "PermissionError") when ExecutableLoadOptions refuse an executable.
inline constexpr char kLoadRefusedKind[] = "PermissionError";

class Executable : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Executable, ffi::ObjectRef, ExecutableObj);

  /// Validates `spec` (ValueError naming the first problem) and wraps it.
  static Executable Build(ExecutableSpec spec);
  /// An executable with buckets: each spec validated, and together (ValidateBuckets).
  /// Constant bytes equal across buckets are kept once.
  static Executable BuildBuckets(std::vector<ExecutableSpec> buckets, BucketPolicy policy);
  /// Bucket `i` alone, as a plain executable sharing this one's modules and constants (what
  /// the debugger and the checker work on).
  Executable Bucket(size_t i) const;
  std::string SaveToBytes() const;
  /// Checks the header and checksum, then parses and validates; ValueError naming field and byte.
  static Executable LoadFromBytes(std::string_view bytes,
                                  const ExecutableLoadOptions& options = {});
  void SaveToFile(const std::string& path) const;
  static Executable LoadFromFile(const std::string& path,
                                 const ExecutableLoadOptions& options = {});

  /// Runs on npu:`device_id`: checks `inputs` (name -> array, any device) against the signature,
  /// copies constants and inputs into a fresh arena, runs the steps, returns the outputs on the
  /// host. Statistics and the trace of the run are kept (last_stats, last_trace), and its
  /// figures given to `summary` when not null.
  /// `progress`, when given, is called before each step with (index, count, node name);
  /// `observe`, after each step with (index, the step's arguments as views of the arena on
  /// the device): a checker reads what each step wrote in the program as it ships.
  /// Runs may be called from several threads; runs on one device take turns.
  std::map<std::string, ffi::NDArray> Run(const std::map<std::string, ffi::NDArray>& inputs,
                                          int device_id = 0,
                                          const ffi::Function* progress = nullptr,
                                          const ffi::Function* observe = nullptr,
                                          RunSummary* summary = nullptr) const;
};

/// Checks everything a loader must (indices, sizes, dtypes, kinds, function signatures,
/// overlapping live buffers); the ValueError names the record (buffer 3 `x`, step 2 `conv1`).
/// A buffer is live from its first to its last use by a step; inputs from the start,
/// outputs to the end, constants throughout.
void ValidateExecutable(const ExecutableSpec& spec);

/// Checks what several buckets must share: the precision, the input and output names, dtypes
/// and ranks; distinct input shapes; a policy's batch axes (every input and output has one,
/// in range, and in each bucket one batch size along all of them).
void ValidateBuckets(const std::vector<ExecutableSpec>& buckets, const BucketPolicy& policy);

/// The bucket a run of `inputs` (name -> shape) takes and the batch it pads from (-1: the
/// shapes are the bucket's), or a ValueError listing the buckets.
struct BucketChoice {
  size_t bucket = 0;
  int64_t padded_from = -1;
};
BucketChoice ChooseBucket(const ExecutableObj& exe,
                          const std::map<std::string, std::vector<int64_t>>& input_shapes);

/// "name: int8[1, 3, 224, 224]" lines of the inputs (or outputs), for error messages.
std::string DescribeSignature(const ExecutableSpec& spec, bool inputs);

/// MACs per cycle per core of TC1's matrix engine at a precision ("int8" 2048, "f16"/"bf16" 1024,
/// "f32" 256).
uint64_t PeakMacsPerCycle(const std::string& precision);

}  // namespace tilecore::runtime
