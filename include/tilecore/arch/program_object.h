// include/tilecore/arch/program_object.h — a TC1 Program as an FFI object.
//
// `arch.Program` is how a Program crosses the FFI: Python's tilecore.arch.Program,
// the simulator's `sim.Load`, and the runtime's npu modules all hold one. The
// object owns its Program by value and never changes it after construction, so
// one object may be shared between threads and simulators.
#pragma once

#include <utility>

#include "tilecore/arch/program.h"
#include "tilecore/ffi/object.h"

namespace tilecore::arch {

class ProgramObj : public ffi::Object {
 public:
  Program program;

  ProgramObj() = default;
  explicit ProgramObj(Program p) : program(std::move(p)) {}

  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("arch.Program", ProgramObj, ffi::Object);
};

class ProgramRef : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(ProgramRef, ffi::ObjectRef, ProgramObj);
  explicit ProgramRef(Program p) : ProgramRef(ffi::make_object<ProgramObj>(std::move(p))) {}
};

}  // namespace tilecore::arch
