// src/sim/hazard.cc — HazardCheck mode: unsynchronised overlapping accesses.
//
// Happens-before is tracked with vector clocks, one component per agent
// (core x {sc, din, dout, mm, vec}). Edges: program order of each agent; the
// front end's clock travels with every command it issues; a completed command's
// clock is published with its counter value and acquired by whoever waits for
// that value (wait, queue wait markers, fence); a barrier joins every
// participant. Two accesses to overlapping bytes by different agents, at least
// one a write, neither ordered before the other, form a hazard. The check is
// independent of timing: it reports races that happened to resolve benignly in
// this run too. Only the most recent kWindow accesses to each memory (each core's L1, L2,
// the DDR) are kept for comparison.
#include <algorithm>
#include <set>
#include <tuple>

#include "machine.h"

namespace tilecore::sim {

namespace {
constexpr size_t kWindow = 4096;
constexpr size_t kMaxHazards = 100;
// an access may extend one of its agent's this many most recent records (a loop's loads and
// stores at a few pcs)
constexpr size_t kMergeDepth = 4;
}  // namespace

void Machine::hz_init() {
  hz = std::make_unique<HazardState>();
  hz->n = cfg.cores * kNumAgents;
  hz->vc.assign(size_t(hz->n), std::vector<uint32_t>(size_t(hz->n), 0));
  for (int a = 0; a < hz->n; ++a) hz->vc[size_t(a)][size_t(a)] = 1;
}

void Machine::hz_tick(int agent) { ++hz->vc[size_t(agent)][size_t(agent)]; }

uint32_t Machine::hz_snapshot(int agent) {
  hz->snaps.push_back(hz->vc[size_t(agent)]);
  return uint32_t(hz->snaps.size() - 1);
}

void Machine::hz_join(int agent, uint32_t snapshot) {
  auto& v = hz->vc[size_t(agent)];
  const auto& s = hz->snaps[snapshot];
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::max(v[i], s[i]);
}

void Machine::hz_barrier(const std::vector<int>& members) {
  std::vector<uint32_t> j(size_t(hz->n), 0);
  for (int c : members)
    for (size_t i = 0; i < j.size(); ++i) j[i] = std::max(j[i], hz->vc[size_t(c * kNumAgents)][i]);
  for (int c : members) hz->vc[size_t(c * kNumAgents)] = j;
}

namespace {
// patterns of more elements than this are compared by their bounding ranges
constexpr uint64_t kMaxPatternElements = uint64_t(1) << 20;

using Runs = std::vector<std::pair<uint64_t, uint64_t>>;

/*! \brief The bytes of `r` as sorted disjoint runs: its pattern's elements, merged. */
Runs RunsOf(const Range& r, const AccessPattern& p) {
  uint64_t n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.shape[size_t(d)];
  if (!p.valid || n == 0 || n > kMaxPatternElements) return {{r.lo, r.hi}};
  Runs runs;
  runs.reserve(size_t(n));
  std::array<uint32_t, 4> i{0, 0, 0, 0};
  for (uint64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int d = 0; d < p.rank; ++d) off += int64_t(i[size_t(d)]) * p.stride[size_t(d)];
    const uint64_t lo = uint64_t(int64_t(p.base) + off * p.es);
    runs.emplace_back(lo, lo + uint64_t(p.es));
    for (int d = p.rank - 1; d >= 0; --d) {  // the next index, innermost first
      if (++i[size_t(d)] < p.shape[size_t(d)]) break;
      i[size_t(d)] = 0;
    }
  }
  std::sort(runs.begin(), runs.end());
  Runs merged;
  for (const auto& x : runs) {
    if (!merged.empty() && x.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, x.second);
    else
      merged.push_back(x);
  }
  return merged;
}

bool RunsOverlap(const Runs& a, const Runs& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].second <= b[j].first)
      ++i;
    else if (b[j].second <= a[i].first)
      ++j;
    else
      return true;
  }
  return false;
}
}  // namespace

void Machine::hz_access(int agent, const Range& r, const Core& c, uint32_t pc,
                        const AccessPattern& pattern) {
  const auto& mine = hz->vc[size_t(agent)];
  // one ring per memory (L1: per core; the shared memories after the cores') and agent
  const size_t memory = r.space == Space::L1 ? size_t(r.core) : size_t(cfg.cores) + size_t(r.space);
  const size_t agents = size_t(hz->n);
  if (hz->logs.size() < (size_t(cfg.cores) + arch::kNumSpaces) * agents)
    hz->logs.resize((size_t(cfg.cores) + arch::kNumSpaces) * agents);
  Runs runs;  // this access's bytes, made when a bounding-range overlap needs them
  // (a core's L1 is accessed by that core's agents only)
  const size_t from = r.space == Space::L1 ? size_t(r.core) * kNumAgents : 0;
  const size_t to = r.space == Space::L1 ? from + kNumAgents : agents;
  for (size_t other = from; other < to; ++other) {
    if (int(other) == agent) continue;
    HazardState::Log& theirs = hz->logs[memory * agents + other];
    const size_t count = theirs.recs.size();
    // newest first: an agent's epochs grow in program order, so once one of its accesses
    // happens-before this one, all its older ones do
    size_t at = theirs.next == 0 ? count : theirs.next;
    for (size_t k = 0; k < count; ++k) {
      at = at == 0 ? count - 1 : at - 1;
      auto& rec = theirs.recs[at];
      if (mine[other] >= rec.epoch) break;
      if (!(rec.r.write || r.write)) continue;
      if (rec.r.hi <= r.lo || r.hi <= rec.r.lo) continue;
      if (pattern.valid || rec.pattern.valid) {
        if (runs.empty()) runs = RunsOf(r, pattern);
        if (rec.runs.empty()) rec.runs = RunsOf(rec.r, rec.pattern);
        if (!RunsOverlap(runs, rec.runs)) continue;
      }
      hz_report(rec, agent, r, c, pc);
    }
  }
  HazardState::Log& log = hz->logs[memory * agents + size_t(agent)];
  // A scalar loop's load or store at one pc walks its array element by element: one record
  // grows while the accesses stay contiguous and unordered alike (same epoch), so that a
  // later access compares with the array once, not with every element.
  if (!pattern.valid) {
    size_t at = log.next == 0 ? log.recs.size() : log.next;
    for (size_t k = 0; k < std::min<size_t>(kMergeDepth, log.recs.size()); ++k) {
      at = at == 0 ? log.recs.size() - 1 : at - 1;
      HazardState::Rec& last = log.recs[at];
      if (last.pc != pc || last.epoch != mine[size_t(agent)] || last.r.write != r.write ||
          last.pattern.valid || last.r.lo > r.hi || r.lo > last.r.hi)
        continue;
      last.r.lo = std::min(last.r.lo, r.lo);
      last.r.hi = std::max(last.r.hi, r.hi);
      return;
    }
  }
  HazardState::Rec rec{r, agent, mine[size_t(agent)], pc, c.id, pattern, std::move(runs)};
  if (log.recs.size() < kWindow) {
    log.recs.push_back(std::move(rec));
    log.next = log.recs.size() % kWindow;
  } else {
    log.recs[log.next] = std::move(rec);
    log.next = (log.next + 1) % kWindow;
  }
}

void Machine::hz_report(const HazardState::Rec& rec, int agent, const Range& r, const Core& c,
                        uint32_t pc) {
  auto key = std::make_tuple(rec.agent, rec.pc, agent, pc);
  if (hz->seen.count(key) || hazards.size() >= kMaxHazards) return;
  hz->seen.insert(key);
  Hazard h;
  h.kind = rec.r.write ? (r.write ? "WAW" : "RAW") : "WAR";
  h.space = std::string(arch::space_name(r.space)) +
            (r.space == Space::L1 ? "[" + std::to_string(r.core) + "]" : "");
  h.lo = std::max(rec.r.lo, r.lo);
  h.hi = std::min(rec.r.hi, r.hi);
  h.first_core = rec.core;
  h.second_core = c.id;
  h.first_agent = agent_name(Agent(rec.agent % kNumAgents));
  h.second_agent = agent_name(Agent(agent % kNumAgents));
  h.first_pc = rec.pc;
  h.second_pc = pc;
  h.first_inst = inst_text(cores[size_t(rec.core)], rec.pc);
  const auto& fl = cores[size_t(rec.core)].lines;
  h.first_line = rec.pc < fl.size() ? fl[rec.pc] : 0;
  h.second_line = pc < c.lines.size() ? c.lines[pc] : 0;
  h.second_inst = inst_text(c, pc);
  hazards.push_back(std::move(h));
}

}  // namespace tilecore::sim
