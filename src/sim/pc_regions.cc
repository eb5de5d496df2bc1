// src/sim/pc_regions.cc — what the code of each pc region costs (Simulator::set_pc_regions).
//
// A region is a set of pc ranges per core (a layer group's member: the instructions of its
// `cores` loops). Each core keeps a table from pc to region, built when the regions are set
// and at every load(), so the cost of measuring is one lookup per retired instruction and
// per tile command (Machine::note_region) and none without regions.
#include <algorithm>
#include <string>

#include "machine.h"

namespace tilecore::sim {

RegionStats::Span RegionStats::span() const {
  Span all;
  for (const Span& s : cores) {
    if (s.empty()) continue;
    all.first = std::min(all.first, s.first);
    all.last = std::max(all.last, s.last);
  }
  return all;
}

void Machine::set_pc_regions(std::vector<PcRegion> regions) {
  for (const PcRegion& r : regions) {
    std::string bad;
    if (r.core < 0 || r.core >= cfg.cores)
      bad = "core " + std::to_string(r.core) + " (the simulator has " + std::to_string(cfg.cores) +
            ")";
    else if (r.begin > r.end)
      bad = "begin " + std::to_string(r.begin) + " > end " + std::to_string(r.end);
    else if (r.region < 0 || r.region >= Simulator::kMaxPcRegions)
      bad = "region " + std::to_string(r.region) + " (0.." +
            std::to_string(Simulator::kMaxPcRegions - 1) + ")";
    if (!bad.empty()) throw SimError(SimError::Kind::Usage, -1, 0, "", "pc region with " + bad);
  }
  pc_regions_ = std::move(regions);
  index_pc_regions();
}

void Machine::index_pc_regions() {
  int count = 0;
  for (const PcRegion& r : pc_regions_) count = std::max(count, r.region + 1);
  region_stats_.assign(size_t(count), RegionStats{});
  for (RegionStats& r : region_stats_) {
    r.cores.resize(cores.size());
    r.core_busy.resize(cores.size());
  }
  for (Core& c : cores) c.region.clear();
  for (const PcRegion& r : pc_regions_) {
    Core& c = cores[size_t(r.core)];
    if (c.region.empty()) c.region.assign(c.code.size(), -1);
    uint32_t end = std::min<uint32_t>(r.end, uint32_t(c.code.size()));
    for (uint32_t pc = r.begin; pc < end; ++pc) c.region[pc] = r.region;
  }
}

}  // namespace tilecore::sim
