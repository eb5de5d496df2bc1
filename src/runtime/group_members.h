// src/runtime/group_members.h — a layer group's members in an executable's run: the code of
// each (the step's debug entry `group`) and what the simulator measured of it.
//
// The compiler records, per member of a layer group, the pc ranges of its instructions on
// each core (docs/executable.md, "What the compiler driver supplies"). Executable::Run hands
// them to the simulator as pc regions (Simulator::set_pc_regions) for the group's call and
// reports each member's measured cycles beside the cost model's estimate.
#pragma once
#if TILECORE_ENABLE_NPU
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilecore/ffi/container/map.h"
#include "tilecore/runtime/executable.h"
#include "tilecore/sim/simulator.h"
#include "tilecore/sim/stats.h"

namespace tilecore::runtime {

/// One member of a layer group: what the step's debug entry `group` says of it.
struct GroupMember {
  std::string node, op, bound_by;
  int64_t est_cycles = 0, macs = 0;
  std::optional<double> roofline_cycles;  // its roofline bound (compiler/roofline.h), if recorded
  std::vector<sim::PcRegion> code;        // region = the member's index
};

/// The `cycles` of a roofline entry as the compiler records it in a step's debug info
/// ({"cycles": N, ...}, parsed: ExecStep::roofline_entry); nullopt when absent or malformed
/// (the run then reports none).
std::optional<double> RooflineCycles(const ffi::Any& entry);

/// Busy cycles keyed by engine name (sc, din, dout, mm, vec), as the statistics report them.
ffi::Map<ffi::String, ffi::Any> BusyByEngine(const std::array<uint64_t, sim::kNumAgents>& busy);

/// The members of `step` with their code on a simulator of `cores` cores; empty when the
/// step is no layer group, or when its entry lacks a member's `pc` or holds one that is
/// malformed (a run then measures none of its members rather than some; the tools that show
/// the entry refuse it by name, python/tilecore/tdb/debug_info.py).
std::vector<GroupMember> ReadGroupMembers(const ExecStep& step, int cores);

/// Sets `op`'s `members` (per member: node, op, cycles measured, est_cycles, error, busy,
/// start and end) and the group's `members_cycles`, `members_overlap` and `outside_members`
/// from `stats`, the simulator's figures for the step; the identity
/// members_cycles - members_overlap + outside_members == stats.cycles holds exactly.
void SetMemberStats(ffi::Map<ffi::String, ffi::Any>& op, const std::vector<GroupMember>& members,
                    const sim::Stats& stats);

}  // namespace tilecore::runtime
#endif  // TILECORE_ENABLE_NPU
