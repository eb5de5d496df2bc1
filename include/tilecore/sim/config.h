// include/tilecore/sim/config.h — how a Simulator is set up.
#pragma once

#include <cstdint>
#include <string_view>

#include "tilecore/arch/params.h"

namespace tilecore::sim {

/// What the simulator computes.
///   FunctionalTiming  data and cycles (default)
///   Functional        data only; every cost is 0 (fastest for results)
///   Timing            cycles only; tile commands move no data (scalar code
///                     still runs, so control flow must not depend on tile results)
///   HazardCheck       data and cycles, and every tile command and scalar
///                     access is checked for unsynchronised overlap (hazards())
enum class Mode { FunctionalTiming, Functional, Timing, HazardCheck };

struct SimConfig {
  int cores = arch::tc1::kDefaultCores;  // 1..16
  Mode mode = Mode::FunctionalTiming;
  uint64_t ddr_bytes = arch::tc1::kDefaultDdrBytes;  // up to 4 GiB
  uint64_t l2_bytes = arch::tc1::kL2Bytes;
  uint64_t l1_bytes = arch::tc1::kL1Bytes;
  int queue_depth = 32;  // per tile queue; the front end stalls when full
  uint64_t max_command_elements = arch::tc1::kMaxTileElements;
  /// Cap on the host work of one run: elements moved or computed plus matrix
  /// MACs, summed over tile commands; 0 means no cap. Exceeding it raises
  /// SimError(Budget) — a bound for fuzzing and untrusted programs.
  uint64_t max_work = 0;
  bool trace = false;  // record events for write_trace()

  /// Parses a target string such as "npu -cores=4 -ddr=256MiB"; throws
  /// SimError(Usage) naming the bad option.
  static SimConfig from_target(std::string_view target);
};

std::string_view mode_name(Mode m);
/// "functional+timing" | "functional" | "timing" | "hazard"; throws SimError(Usage).
Mode parse_mode(std::string_view s);

}  // namespace tilecore::sim
