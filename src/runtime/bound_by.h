// src/runtime/bound_by.h — what bounds a step or a layer group's member that the simulator
// ran (docs/executable.md, "Statistics"): the engine with the most busy cycles on one core;
// "ddr" when the DDR's bandwidth was taken for longer (the DMA engines then wait for it,
// which is not their busy time); "latency" when neither was busy for kLatencyBoundShare of
// its cycles. Such code waited (on the DDR's and L2's latencies, on its commands' chains, on
// other cores) more than anything worked: naming its busiest engine, often the front end
// issuing a few commands, would send its reader to the wrong place.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/sim/stats.h"

namespace tilecore::runtime {

inline constexpr double kLatencyBoundShare = 0.5;

/// `busy`: per core, the busy cycles of each engine (sim::Agent order); `ddr_cycles`: the
/// DDR's bandwidth its DMA commands took; `cycles`: the span they ran in. "sc" when nothing
/// ran.
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
