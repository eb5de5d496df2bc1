/*
 * src/ir/reference_arrays.h — what the reference implementations in C++ (reference_*.cc)
 * take: contiguous float32 arrays in host memory, the arrays numpy hands over by DLPack.
 */
#ifndef TILECORE_SRC_IR_REFERENCE_ARRAYS_H_
#define TILECORE_SRC_IR_REFERENCE_ARRAYS_H_

#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

/*! \brief Whether `a` is a contiguous float32 array in host memory. */
inline bool IsFloat32Host(const ffi::NDArray& a) {
  return a.dtype().code == kDLFloat && a.dtype().bits == 32 && a.dtype().lanes == 1 &&
         a.device().device_type == kDLCPU && a.IsContiguous();
}

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_SRC_IR_REFERENCE_ARRAYS_H_
