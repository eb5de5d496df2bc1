// include/tilecore/sim/stats.h — what a run cost: cycles per engine and bytes per level.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tilecore::sim {

/// Agents of a core: the front end (scalar + SIMD) and the four tile engines.
enum class Agent : uint8_t { Scalar = 0, DmaIn = 1, DmaOut = 2, Matrix = 3, Vector = 4 };
inline constexpr int kNumAgents = 5;
const char* agent_name(Agent a);  // "sc" "din" "dout" "mm" "vec"

struct EngineStats {
  uint64_t commands = 0;     // front end: instructions retired
  uint64_t busy = 0;         // cycles executing
  uint64_t stalled_dep = 0;  // waiting on a counter, barrier or full queue
  uint64_t stalled_bw = 0;   // waiting for a shared level's bandwidth (DMA)
  uint64_t idle = 0;         // the rest of the run
};

struct CoreStats {
  std::array<EngineStats, kNumAgents> agents{};
  uint64_t macs = 0;         // useful multiply-accumulates
  uint64_t issued_macs = 0;  // including padding to the native block
  uint64_t peak_macs = 0;    // peak rate x busy matrix cycles (per dtype)
  uint64_t ddr_cycles = 0;   // cycles of the shared DDR's bandwidth its DMA commands took
                             // (timed modes; 0 in Mode::Functional)
};

/// What the front-end instructions and tile commands of one pc region cost
/// (Simulator::set_pc_regions). A command counts toward the region of the pc that issued it.
struct RegionStats {
  /// When the region's instructions and commands ran on one core: the earliest start and the
  /// latest end; first > last when none ran there.
  struct Span {
    uint64_t first = UINT64_MAX, last = 0;
    bool empty() const { return first > last; }
  };
  std::vector<Span> cores;                                  // per core of the simulator
  std::vector<std::array<uint64_t, kNumAgents>> core_busy;  // busy cycles per Agent, per core
  // cycles of the shared DDR's bandwidth its DMA commands took, summed over the cores (timed
  // modes; 0 in Mode::Functional)
  uint64_t ddr_cycles = 0;
  uint64_t instructions = 0, commands = 0;  // front-end instructions retired, tile commands run
  /// Over all cores: from the first start to the last end (empty when nothing ran).
  Span span() const;
  uint64_t cycles() const { return span().empty() ? 0 : span().last - span().first; }
};

struct Stats {
  uint64_t cycles = 0;        // makespan of the run(s) so far
  uint64_t instructions = 0;  // front-end instructions, all cores
  uint64_t commands = 0;      // tile commands, all cores
  std::vector<CoreStats> cores;
  // Bytes moved per level: DMA traffic plus scalar/SIMD accesses.
  uint64_t ddr_read = 0, ddr_written = 0;
  uint64_t l2_read = 0, l2_written = 0;
  uint64_t l1_read = 0, l1_written = 0;
  std::vector<RegionStats> regions;  // per pc region (Simulator::set_pc_regions), by its index

  /// Useful MACs / (2048 x cycles x cores): utilisation of the int8 peak.
  double mac_utilisation() const;
  /// Useful MACs / MACs the busy matrix engines could have done at their dtype's peak.
  double mac_efficiency() const;
  std::string to_string() const;
  std::string to_json() const;
};

/// An unsynchronised pair of overlapping accesses found in HazardCheck mode.
struct Hazard {
  std::string kind;         // "RAW", "WAR" or "WAW" (first access, then second)
  std::string space;        // "ddr", "l2", "l1[core]"
  uint64_t lo = 0, hi = 0;  // overlapping byte range [lo, hi)
  int first_core = 0, second_core = 0;
  std::string first_agent, second_agent;
  int64_t first_pc = 0, second_pc = 0;
  int first_line = 0, second_line = 0;  // assembly source lines, 0 when unknown
  std::string first_inst, second_inst;
  std::string to_string() const;
};

}  // namespace tilecore::sim
