/*
 * src/ffi/safe_call.h — the two macros that wrap every C ABI entry point so that no
 * C++ exception crosses it: the body's errors become the thread's raised error and
 * a return code of -1.
 */
#ifndef TILECORE_SRC_FFI_SAFE_CALL_H_
#define TILECORE_SRC_FFI_SAFE_CALL_H_

#include "tilecore/ffi/function.h"

#define TILECORE_FFI_SAFE_CALL_BEGIN() try {
#define TILECORE_FFI_SAFE_CALL_END()                                  \
  return 0;                                                           \
  }                                                                   \
  catch (...) {                                                       \
    return ::tilecore::ffi::details::SetRaisedFromCurrentException(); \
  }

#endif  // TILECORE_SRC_FFI_SAFE_CALL_H_
