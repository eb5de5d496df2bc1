// src/sim/semantics_tile.h — front-end semantics of tile commands: issue.
//
// The front end validates the command (registers, descriptor, bounds,
// alignment), prices it with arch/cost.h and appends it to its engine's queue;
// the engines perform the work later (dma_engine.cc, vector_engine.cc,
// matrix_engine.cc). A full queue stalls the front end.
#pragma once

#include "semantics.h"

namespace tilecore::sim {

#define TC1_TILE(Id)                                                                      \
  template <>                                                                             \
  struct Semantics<Opcode::Id> {                                                          \
    static Outcome exec(Machine& m, Core& c, const Inst& i) { return m.issue(c, i); }     \
  };
TC1_TILE(DmaIn)
TC1_TILE(DmaOut)
TC1_TILE(Mm)
TC1_TILE(Mma)
TC1_TILE(Tadd)
TC1_TILE(Tsub)
TC1_TILE(Tmul)
TC1_TILE(Tmax)
TC1_TILE(Tmin)
TC1_TILE(Tdiv)
TC1_TILE(Tadds)
TC1_TILE(Tmuls)
TC1_TILE(Tmaxs)
TC1_TILE(Tmins)
TC1_TILE(Texp)
TC1_TILE(Tlog)
TC1_TILE(Trecip)
TC1_TILE(Tsqrt)
TC1_TILE(Trsqrt)
TC1_TILE(Ttanh)
TC1_TILE(Tsigmoid)
TC1_TILE(Trelu)
TC1_TILE(Tcvt)
TC1_TILE(Trequant)
TC1_TILE(Tredsum)
TC1_TILE(Tredmax)
TC1_TILE(Tredmin)
TC1_TILE(Tlut)
#undef TC1_TILE

}  // namespace tilecore::sim
