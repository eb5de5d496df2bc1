// src/sim/dispatch.cc — the front end's dispatch table, generated from isa.def.
//
// The static_assert below is the build-time guarantee that every instruction in
// the table has semantics: add a row to isa.def without a Semantics<>
// specialisation and this file stops compiling, naming the opcode.
#include "dispatch.h"

#include "semantics_scalar.h"
#include "semantics_simd.h"
#include "semantics_tile.h"

namespace tilecore::sim {

#define TC1_INST(Id, mn, fmt, unit, dts, cost, summary)                \
  static_assert(HasExec<Semantics<Opcode::Id>>, "isa.def row '" mn     \
                                                "' has no semantics: " \
                                                "specialise Semantics<Opcode::" #Id ">");
#include "tilecore/arch/isa.def"
#undef TC1_INST

const std::array<ExecFn, arch::kNumOpcodes> kDispatch = {
#define TC1_INST(Id, mn, fmt, unit, dts, cost, summary) &Semantics<Opcode::Id>::exec,
#include "tilecore/arch/isa.def"
#undef TC1_INST
};

}  // namespace tilecore::sim
