/*
 * src/ir/reference_arrays.h — what the reference implementations in C++ (reference_*.cc)
 * take: contiguous float32 arrays in host memory, the arrays numpy hands over by DLPack; and
 * how their vectorised loops are built.
 */
#ifndef TILECORE_SRC_IR_REFERENCE_ARRAYS_H_
#define TILECORE_SRC_IR_REFERENCE_ARRAYS_H_

#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

/*! \brief On a function whose loops the compiler vectorises: built for the widest vectors the
 * host has, GCC's clones of x86-64 chosen when the library loads (an ifunc: ELF and glibc);
 * elsewhere for the target's own. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    defined(__GLIBC__)
#define TILECORE_REFERENCE_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TILECORE_REFERENCE_CLONES
#endif

/*! \brief Whether `a` is a contiguous float32 array in host memory. */
inline bool IsFloat32Host(const ffi::NDArray& a) {
  return a.dtype().code == kDLFloat && a.dtype().bits == 32 && a.dtype().lanes == 1 &&
         a.device().device_type == kDLCPU && a.IsContiguous();
}

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_SRC_IR_REFERENCE_ARRAYS_H_
