// src/runtime/bound_by.h — what bounds a step or a layer group's member that the simulator
// ran (docs/executable.md, "Statistics"): the engine with the most busy cycles on one core
// (a DMA's busy cycles include its level's latency); "ddr" when the DDR's bandwidth was
// taken for longer (the DMA engines then wait for it, which is not their busy time);
// "latency" when neither reaches kLatencyBoundShare of its cycles. Such code mostly waited:
// each engine on the others (a command's inputs, a queue, a barrier) or on the L2's
// bandwidth. Naming its busiest engine, often the front end issuing a few commands, would
// send its reader to the wrong place.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/sim/stats.h"

namespace tilecore::runtime {

/// Rationale: an engine busy for half the time is where at least half of it goes; below
/// that, the waits between engines take the larger part and no engine's speed decides it.
inline constexpr double kLatencyBoundShare = 0.5;

/// `busy`: per core, the busy cycles of each engine (sim::Agent order); `ddr_cycles`: the
/// DDR's bandwidth its DMA commands took; `cycles`: the span they ran in. (With no cycles,
/// nothing ran: "sc", the front end's, as the bound of empty code.)
inline std::string BoundBy(const std::vector<std::array<uint64_t, sim::kNumAgents>>& busy,
                           uint64_t ddr_cycles, uint64_t cycles) {
  std::string bound = "sc";
  uint64_t most = 0;
  for (const auto& core : busy)
    for (int a = 0; a < sim::kNumAgents; ++a)
      if (core[size_t(a)] > most) most = core[size_t(a)], bound = sim::agent_name(sim::Agent(a));
  if (ddr_cycles > most) most = ddr_cycles, bound = "ddr";
  if (cycles > 0 && double(most) < kLatencyBoundShare * double(cycles)) return "latency";
  return bound;
}

}  // namespace tilecore::runtime
