// src/sim/stats.cc — rendering of statistics and hazards.
#include "tilecore/sim/stats.h"

#include <cstdio>

#include "tilecore/arch/params.h"

namespace tilecore::sim {

const char* agent_name(Agent a) {
  static const char* names[] = {"sc", "din", "dout", "mm", "vec"};
  return unsigned(a) < 5 ? names[unsigned(a)] : "?";
}

double Stats::mac_utilisation() const {
  uint64_t macs = 0;
  for (const auto& c : cores) macs += c.macs;
  double peak =
      double(arch::tc1::kMmBlockI8.m * arch::tc1::kMmBlockI8.n * arch::tc1::kMmBlockI8.k) *
      double(cycles) * double(cores.size());
  return peak > 0 ? double(macs) / peak : 0.0;
}

double Stats::mac_efficiency() const {
  uint64_t macs = 0, peak = 0;
  for (const auto& c : cores) {
    macs += c.macs;
    peak += c.peak_macs;
  }
  return peak ? double(macs) / double(peak) : 0.0;
}

std::string Stats::to_string() const {
  std::string s;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "cycles %llu, instructions %llu, tile commands %llu, MAC utilisation %.1f%% "
                "(matrix busy efficiency %.1f%%)\n",
                (unsigned long long)cycles, (unsigned long long)instructions,
                (unsigned long long)commands, 100.0 * mac_utilisation(), 100.0 * mac_efficiency());
  s += buf;
  std::snprintf(buf, sizeof buf, "bytes: ddr r %llu w %llu | l2 r %llu w %llu | l1 r %llu w %llu\n",
                (unsigned long long)ddr_read, (unsigned long long)ddr_written,
                (unsigned long long)l2_read, (unsigned long long)l2_written,
                (unsigned long long)l1_read, (unsigned long long)l1_written);
  s += buf;
  for (size_t c = 0; c < cores.size(); ++c) {
    for (int a = 0; a < kNumAgents; ++a) {
      const EngineStats& e = cores[c].agents[size_t(a)];
      std::snprintf(buf, sizeof buf,
                    "core %zu %-4s: %8llu cmds  busy %10llu  stall-dep %10llu  stall-bw %10llu  "
                    "idle %10llu\n",
                    c, agent_name(Agent(a)), (unsigned long long)e.commands,
                    (unsigned long long)e.busy, (unsigned long long)e.stalled_dep,
                    (unsigned long long)e.stalled_bw, (unsigned long long)e.idle);
      s += buf;
    }
  }
  return s;
}

std::string Stats::to_json() const {
  std::string s = "{\"cycles\": " + std::to_string(cycles) +
                  ", \"instructions\": " + std::to_string(instructions) +
                  ", \"commands\": " + std::to_string(commands) +
                  ", \"mac_utilisation\": " + std::to_string(mac_utilisation()) +
                  ", \"bytes\": {\"ddr_read\": " + std::to_string(ddr_read) +
                  ", \"ddr_written\": " + std::to_string(ddr_written) +
                  ", \"l2_read\": " + std::to_string(l2_read) +
                  ", \"l2_written\": " + std::to_string(l2_written) +
                  ", \"l1_read\": " + std::to_string(l1_read) +
                  ", \"l1_written\": " + std::to_string(l1_written) + "}, \"cores\": [";
  for (size_t c = 0; c < cores.size(); ++c) {
    s += c ? ", {" : "{";
    s += "\"macs\": " + std::to_string(cores[c].macs) +
         ", \"issued_macs\": " + std::to_string(cores[c].issued_macs) +
         ", \"ddr_cycles\": " + std::to_string(cores[c].ddr_cycles);
    for (int a = 0; a < kNumAgents; ++a) {
      const EngineStats& e = cores[c].agents[size_t(a)];
      s += ", \"" + std::string(agent_name(Agent(a))) +
           "\": {\"commands\": " + std::to_string(e.commands) +
           ", \"busy\": " + std::to_string(e.busy) +
           ", \"stalled_dep\": " + std::to_string(e.stalled_dep) +
           ", \"stalled_bw\": " + std::to_string(e.stalled_bw) +
           ", \"idle\": " + std::to_string(e.idle) + "}";
    }
    s += "}";
  }
  return s + "]}";
}

std::string Hazard::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s hazard on %s [0x%llx, 0x%llx): ", kind.c_str(), space.c_str(),
                (unsigned long long)lo, (unsigned long long)hi);
  auto where = [](int core, const std::string& agent, int64_t pc, int line,
                  const std::string& inst) {
    return "core " + std::to_string(core) + " " + agent + " pc " + std::to_string(pc) +
           (line > 0 ? " line " + std::to_string(line) : std::string()) + " (`" + inst + "`)";
  };
  return std::string(buf) + where(first_core, first_agent, first_pc, first_line, first_inst) +
         " and " + where(second_core, second_agent, second_pc, second_line, second_inst) +
         " are not ordered by any wait or barrier";
}

}  // namespace tilecore::sim
