// include/tilecore/runtime/kernel.h — what a compiled kernel expects from its caller.
//
// Both kinds of kernel modules (npu, c) describe each function's parameters the
// same way, so the runtime can check a call (count, kinds, dtypes) and move host
// and device arrays where the code needs them before it runs.
#pragma once

#include <string>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/runtime/module.h"

namespace tilecore::runtime {

struct KernelParam {
  std::string name;
  std::string kind;   // "buffer", "int" or "float"
  std::string dtype;  // element dtype of a buffer; the scalar's dtype otherwise
  bool written = true;  // a buffer the kernel may write (copied back after a staged call)
  int64_t elements = -1;  // elements of a buffer the kernel addresses; -1 if not known (symbolic shape)
};

/// "name(a: buffer[int8], n: int)" for messages.
std::string KernelSignature(const std::string& name, const std::vector<KernelParam>& params);
/// The kernel-call convention's check, run by every kind of kernel module before a call:
/// count and kinds (TypeError), each array's dtype (TypeError), its size against the
/// buffer's elements and, for a buffer the kernel writes, that it is writable (ValueError).
void CheckKernelArgs(const std::string& name, const std::vector<KernelParam>& params, ffi::PackedArgs args);
void WriteParams(ByteWriter* w, const std::vector<KernelParam>& params);
std::vector<KernelParam> ReadParams(ByteReader* r);
ffi::Array<ffi::Any> ParamsToArray(const std::vector<KernelParam>& params);
/// Parses the `params` list of a kernel description (Array of Maps name/kind/dtype/written).
std::vector<KernelParam> ParamsFromArray(const ffi::Array<ffi::Any>& arr);

/// A C kernel module: C source and the shared library built from it (loaded with
/// dlopen). Function `name` calls the symbol `tc_<name>(void** args)`: a buffer's
/// args[i] is its data pointer; a scalar's points to an int64_t or a double.
Module CModuleCreate(std::string source, std::string shared_library, std::vector<std::string> names,
                     std::vector<std::vector<KernelParam>> params);

}  // namespace tilecore::runtime
