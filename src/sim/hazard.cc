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
// this run too. Only the most recent kWindow accesses are kept for comparison.
#include <set>
#include <tuple>

#include "machine.h"

namespace tilecore::sim {

namespace {
constexpr size_t kWindow = 4096;
constexpr size_t kMaxHazards = 100;
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

void Machine::hz_access(int agent, const Range& r, const Core& c, uint32_t pc) {
  const auto& mine = hz->vc[size_t(agent)];
  for (const auto& rec : hz->log) {
    if (rec.agent == agent || rec.r.space != r.space) continue;
    if (r.space == Space::L1 && rec.r.core != r.core) continue;
    if (!(rec.r.write || r.write)) continue;
    if (rec.r.hi <= r.lo || r.hi <= rec.r.lo) continue;
    if (mine[size_t(rec.agent)] >= rec.epoch) continue;  // ordered: rec happens-before this access
    auto key = std::make_tuple(rec.agent, rec.pc, agent, pc);
    if (hz->seen.count(key) || hazards.size() >= kMaxHazards) continue;
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
  HazardState::Rec rec{r, agent, mine[size_t(agent)], pc, c.id};
  if (hz->log.size() < kWindow)
    hz->log.push_back(rec);
  else
    hz->log[hz->next++ % kWindow] = rec;
}

}  // namespace tilecore::sim
