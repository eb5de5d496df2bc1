// src/sim/semantics.h — the front-end semantics contract.
//
// Every row of isa.def needs a specialisation Semantics<Opcode::X> with
//   static Outcome exec(Machine&, Core&, const Inst&);
// dispatch.cc builds the dispatch table from isa.def and static_asserts that
// each specialisation exists, so an instruction without semantics does not
// compile. Tile commands' front-end semantics is "issue into the queue"; their
// engine-side work lives in *_engine.cc.
#pragma once

#include <concepts>

#include "machine.h"

namespace tilecore::sim {

template <Opcode Op>
struct Semantics;  // deliberately undefined: each instruction must specialise it

template <typename T>
concept HasExec = requires(Machine& m, Core& c, const Inst& i) {
  { T::exec(m, c, i) } -> std::same_as<Outcome>;
};

inline void set_x(Core& c, unsigned r, uint32_t v) {
  if (r != 0) c.x[r] = v;
}

}  // namespace tilecore::sim
