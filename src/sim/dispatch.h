// src/sim/dispatch.h — opcode -> front-end semantics function.
#pragma once

#include <array>

#include "machine.h"

namespace tilecore::sim {

using ExecFn = Outcome (*)(Machine&, Core&, const Inst&);
extern const std::array<ExecFn, arch::kNumOpcodes> kDispatch;

}  // namespace tilecore::sim
