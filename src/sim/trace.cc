// src/sim/trace.cc — Chrome / Perfetto trace export (JSON "traceEvents").
//
// One process per core, one thread per agent (sc, din, dout, mm, vec); each
// tile command is a complete ("X") event. Timestamps are microseconds at the
// 1 GHz TC1 clock (1 cycle = 0.001 us), so Perfetto shows cycles as ns.
// A DMA's event also says what it took of the shared levels' bandwidth
// (args "ddr_cycles", "l2_cycles"), which is where a DMA-bound stretch goes.
#include <cstdio>

#include "machine.h"

namespace tilecore::sim {

std::string Machine::trace_json() const {
  std::string s = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  char buf[256];
  bool first = true;
  for (const auto& c : cores) {
    std::snprintf(buf, sizeof buf,
                  "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": "
                  "\"core %d\"}}",
                  first ? "" : ",\n", c.id, c.id);
    s += buf;
    first = false;
    for (int a = 0; a < kNumAgents; ++a) {
      std::snprintf(buf, sizeof buf,
                    ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                    "\"args\": {\"name\": \"%s\"}}",
                    c.id, a, agent_name(Agent(a)));
      s += buf;
    }
  }
  for (const sim::TraceEvent& e : trace_events()) AppendTraceEvent(&s, e);
  return s + "\n]}\n";
}

std::vector<sim::TraceEvent> Machine::trace_events() const {
  std::vector<sim::TraceEvent> out;
  out.reserve(trace.size());
  for (const auto& e : trace)
    out.push_back({e.core, e.agent, e.start, e.dur, std::string(arch::info(e.op).mnemonic), e.pc,
                   e.occ_ddr, e.occ_l2});
  return out;
}

void AppendTraceEvent(std::string* json, const TraceEvent& e, uint64_t offset) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ",\n{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                "\"dur\": %.3f, \"args\": {\"pc\": %u",
                e.mnemonic.c_str(), e.core, e.agent, double(offset + e.start) / 1000.0,
                double(e.cycles) / 1000.0, e.pc);
  *json += buf;
  // A DMA's share of the shared levels: what its bytes cost the DDR and the L2 bus.
  if (e.ddr_cycles || e.l2_cycles) {
    std::snprintf(buf, sizeof buf, ", \"ddr_cycles\": %lld, \"l2_cycles\": %lld",
                  (long long)e.ddr_cycles, (long long)e.l2_cycles);
    *json += buf;
  }
  *json += "}}";
}

}  // namespace tilecore::sim
