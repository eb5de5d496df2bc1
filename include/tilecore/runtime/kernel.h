// include/tilecore/runtime/kernel.h — what a compiled kernel expects from its caller.
//
// Both kinds of kernel modules (npu, c) describe each function's parameters the
// same way, so the runtime can check a call (count, kinds, dtypes) and move host
// and device arrays where the code needs them before it runs.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/runtime/module.h"

namespace tilecore::sim {
class Simulator;
}  // namespace tilecore::sim

namespace tilecore::runtime {

struct KernelParam {
  std::string name;
  std::string kind;     // "buffer", "int" or "float"
  std::string dtype;    // element dtype of a buffer; the scalar's dtype otherwise
  bool written = true;  // a buffer the kernel may write (copied back after a staged call)
  int64_t elements =
      -1;  // elements of a buffer the kernel addresses; -1 if not known (symbolic shape)
};

/// "name(a: buffer[int8], n: int)" for messages.
std::string KernelSignature(const std::string& name, const std::vector<KernelParam>& params);
/// The kernel-call convention's check, run by every kind of kernel module before a call:
/// count and kinds (TypeError), each array's dtype (TypeError), its size against the
/// buffer's elements and, for a buffer the kernel writes, that it is writable (ValueError).
/// With `int64_words` (npu kernels: TC1 has no 64-bit types) an int64 array may go to an
/// int32 buffer parameter, which then addresses it as two words per element.
void CheckKernelArgs(const std::string& name, const std::vector<KernelParam>& params,
                     ffi::PackedArgs args, bool int64_words = false);
void WriteParams(ByteWriter* w, const std::vector<KernelParam>& params);
std::vector<KernelParam> ReadParams(ByteReader* r);
ffi::Array<ffi::Any> ParamsToArray(const std::vector<KernelParam>& params);
/// Parses the `params` list of a kernel description (Array of Maps name/kind/dtype/written).
std::vector<KernelParam> ParamsFromArray(const ffi::Array<ffi::Any>& arr);

// [TCHostArg.begin]
/// One argument of a call from compiled code to a registered global function
/// (`tir.call_packed`). The c target passes an array of these to the module's host
/// call; the npu target writes them to memory and traps to the simulator's host.
/// Plain C layout (104 bytes); the generated C source repeats it as `tc_host_arg`.
struct TCHostArg {
  int32_t kind;      // 0 int (`i`), 1 float (`f`), 2 tensor (`data`, dtype, ndim, shape, strides)
  int32_t dtype;     // tensor element type, TC1 code (i8=0 u8 i16 u16 i32 u32 f16 bf16 f32 bool=9)
  int32_t ndim;      // tensor rank, 1..4
  int32_t reserved;  // zero
  int64_t i;         // int value
  double f;          // float value
  void* data;        // tensor: address of its first element (host memory)
  int64_t shape[4];  // tensor: extents, outermost first
  int64_t strides[4];  // tensor: strides in elements
};
// [TCHostArg.end]
static_assert(sizeof(TCHostArg) == 104, "TCHostArg layout");

/// Calls the global function `name` with `args` converted: ints, floats and tensors as
/// NDArray views on the CPU of the memory they describe, valid during the call only.
/// Returns 0; on an error (unknown function, bad argument, an exception of the
/// function) stores it in `*error` and returns -1. Never throws.
int32_t HostCallPacked(const char* name, int32_t n, const TCHostArg* args,
                       std::exception_ptr* error) noexcept;

/// Services the `hcall` instruction of `s` (docs/tc1.md, "Host calls") with
/// HostCallPacked: tensors are copied out of simulator memory for the call and back
/// after it. The npu module installs it for every launch. Only with the npu device.
void InstallHostCalls(sim::Simulator& s);

/// A C kernel module: C source and the shared library built from it (loaded with
/// dlopen). Function `name` calls the symbol `tc_<name>(void** args)`: a buffer's
/// args[i] is its data pointer; a scalar's points to an int64_t or a double; args[n]
/// (n parameters) points to n int64_t, each array's element count (0 for a scalar),
/// against which the code checks accesses to buffers of symbolic size (`tc__oob`).
Module CModuleCreate(std::string source, std::string shared_library, std::vector<std::string> names,
                     std::vector<std::vector<KernelParam>> params);

}  // namespace tilecore::runtime
