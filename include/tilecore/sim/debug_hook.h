// include/tilecore/sim/debug_hook.h — what a debugger attaches to the simulator.
//
// The simulator calls a DebugHook, when one is attached, at two places only:
// before a front end executes an instruction, and before a memory access takes
// effect (a front-end load or store, or each byte range a tile command reads or
// writes when its engine executes it). The hook may ask the current run() or
// step() call to return, which it does after the agent that is acting finishes
// its step, leaving the machine in a state from which it continues normally.
//
// Rationale: stop conditions are evaluated inside the run loop, so `continue`
// to a breakpoint runs at the simulator's speed; with no hook attached the cost
// is one predictable branch per instruction and per command.
//
// SimState is a copy of everything in the simulator except memory contents
// (registers, pcs, queues, counters, clocks, statistics), for a debugger that
// restores memory itself from a log of the writes (src/debug/).
#pragma once

#include <cstdint>
#include <memory>

#include "tilecore/arch/isa.h"
#include "tilecore/arch/params.h"

namespace tilecore::sim {

/// One memory access about to happen.
struct MemAccess {
  arch::Space space = arch::Space::DDR;
  int mem_core = 0;         // whose L1 (Space::L1)
  uint64_t lo = 0, hi = 0;  // byte range [lo, hi) (a tile command's bounding range)
  bool write = false;
  int core = 0;     // the core whose instruction or command accesses it
  int agent = 0;    // 0 front end, 1 din, 2 dout, 3 mm, 4 vec
  uint32_t pc = 0;  // the instruction (or the command's issuing instruction)
  arch::Opcode op{};
  const uint8_t* data = nullptr;  // host pointer to byte lo; null when no data moves (timing mode)
};

class DebugHook {
 public:
  virtual ~DebugHook() = default;
  /// Before the front end of `core` first attempts the instruction at `pc` (`inst`
  /// is null when the pc is past the text or the word does not decode). `position`
  /// is the number of front-end instructions all cores have executed so far.
  /// Returning true stops before the instruction executes.
  virtual bool before_instruction(int core, uint32_t pc, const arch::Inst* inst,
                                  uint64_t position) = 0;
  /// Before an access takes effect; set `stop` to end the run after this step.
  virtual void on_access(const MemAccess& a) = 0;
  bool stop = false;
  /// Which accesses on_access() wants; the simulator skips the call for the others.
  bool want_reads = true, want_writes = true;
  /// false: before_instruction() would never stop; the simulator skips the call.
  bool want_instructions = true;
};

/// An opaque copy of the simulator's state without memory contents.
class SimState {
 public:
  struct Impl;
  std::shared_ptr<const Impl> impl;
};

}  // namespace tilecore::sim
