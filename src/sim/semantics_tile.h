// src/sim/semantics_tile.h — front-end semantics of tile commands: issue.
//
// The front end validates the command (registers, descriptor, bounds,
// alignment), prices it with arch/cost.h and appends it to its engine's queue;
// the engines perform the work later (dma_engine.cc, vector_engine.cc,
// matrix_engine.cc). A full queue stalls the front end.
#pragma once

#include "semantics.h"

namespace tilecore::sim {

#define TC1_TILE(Id)                                                                  \
  template <>                                                                         \
  struct Semantics<Opcode::Id> {                                                      \
    static Outcome exec(Machine& m, Core& c, const Inst& i) { return m.issue(c, i); } \
  };
TC1_TILE(DmaIn)
TC1_TILE(DmaOut)
TC1_TILE(Mm)
TC1_TILE(Mma)
#define TC1_TILE_OP(Id, mn, name, form, types, scalar, c_float, c_int, c_init, summary) TC1_TILE(Id)
#include "tilecore/arch/tile_ops.def"
#undef TC1_TILE_OP
TC1_TILE(Tlut)
#undef TC1_TILE

}  // namespace tilecore::sim
