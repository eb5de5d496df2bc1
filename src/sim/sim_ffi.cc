// src/sim/sim_ffi.cc — the simulator's functions in the global registry (`sim.*`).
//
// Python's tilecore.sim.Simulator is a thin layer over these; the runtime's npu
// device uses the same object. Host data crosses as NDArrays on the CPU (zero copy
// from numpy), so `write`/`read` cost one memcpy into or out of simulated memory.
// Every SimError becomes an FFI error of kind "SimError" (sim/sim_ffi.h).
#include "tilecore/sim/sim_ffi.h"

#include <string>

#include "tilecore/arch/disassembler.h"
#include "tilecore/arch/isa.h"
#include "tilecore/arch/program_object.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/string.h"

namespace tilecore::sim {
namespace {
// Core and register indices arrive as int64; one that does not fit an int is refused
// here instead of being narrowed to a different, valid index.
int Narrow(int64_t v, const char* what) {
  if (v < INT32_MIN || v > INT32_MAX)
    TILECORE_THROW(ValueError) << what << " index " << v << " is out of range";
  return static_cast<int>(v);
}

using ffi::Any;
using ffi::Array;
using ffi::Map;
using ffi::NDArray;
using ffi::String;

const char* KindName(SimError::Kind k) {
  switch (k) {
    case SimError::Kind::IllegalInstruction:
      return "IllegalInstruction";
    case SimError::Kind::MemoryFault:
      return "MemoryFault";
    case SimError::Kind::BadDescriptor:
      return "BadDescriptor";
    case SimError::Kind::Deadlock:
      return "Deadlock";
    case SimError::Kind::Budget:
      return "Budget";
    case SimError::Kind::PcOutOfRange:
      return "PcOutOfRange";
    case SimError::Kind::Usage:
      return "Usage";
  }
  return "Unknown";
}

// The most recent SimError translated on this thread (for sim.LastFault).
thread_local Map<String, Any>* t_last_fault = nullptr;

Map<String, Any>& LastFaultSlot() {
  thread_local Map<String, Any> slot;
  t_last_fault = &slot;
  return slot;
}

arch::Space ParseSpace(const std::string& s) {
  auto space = arch::parse_space(s);
  if (!space) TILECORE_THROW(ValueError) << "unknown memory space '" << s << "' (ddr, l2, l1)";
  return *space;
}

std::span<uint8_t> HostBytes(const NDArray& a, const char* what) {
  const DLTensor& t = a.tensor();
  if (t.device.device_type != kDLCPU) {
    TILECORE_THROW(ValueError) << what << ": the array must be on the host (cpu), not device type "
                               << t.device.device_type;
  }
  if (!a.IsContiguous()) TILECORE_THROW(ValueError) << what << ": the array must be contiguous";
  return {a.data<uint8_t>(), a.NumBytes()};
}

SimulatorRef Create(const std::string& target, const std::string& mode, bool trace) {
  return TranslateSimError([&] {
    SimConfig cfg = SimConfig::from_target(target.empty() ? "npu" : target);
    if (!mode.empty()) cfg.mode = parse_mode(mode);
    cfg.trace = cfg.trace || trace;
    return SimulatorRef(ffi::make_object<SimulatorObj>(cfg));
  });
}

Map<String, Any> ConfigOf(const SimulatorRef& s) {
  const SimConfig& c = s->sim.config();
  Map<String, Any> m;
  m.Set("cores", Any(int64_t{c.cores}));
  m.Set("mode", Any(String(std::string(mode_name(c.mode)))));
  m.Set("ddr_bytes", Any(static_cast<int64_t>(c.ddr_bytes)));
  m.Set("l2_bytes", Any(static_cast<int64_t>(c.l2_bytes)));
  m.Set("l1_bytes", Any(static_cast<int64_t>(c.l1_bytes)));
  m.Set("queue_depth", Any(int64_t{c.queue_depth}));
  m.Set("trace", Any(c.trace));
  return m;
}

Array<Any> HazardsOf(const SimulatorRef& s) {
  Array<Any> out;
  for (const Hazard& h : s->sim.hazards()) {
    Map<String, Any> m;
    m.Set("kind", Any(String(h.kind)));
    m.Set("space", Any(String(h.space)));
    m.Set("lo", Any(static_cast<int64_t>(h.lo)));
    m.Set("hi", Any(static_cast<int64_t>(h.hi)));
    m.Set("first_core", Any(int64_t{h.first_core}));
    m.Set("second_core", Any(int64_t{h.second_core}));
    m.Set("first_agent", Any(String(h.first_agent)));
    m.Set("second_agent", Any(String(h.second_agent)));
    m.Set("first_pc", Any(h.first_pc));
    m.Set("second_pc", Any(h.second_pc));
    m.Set("first_inst", Any(String(h.first_inst)));
    m.Set("second_inst", Any(String(h.second_inst)));
    m.Set("message", Any(String(h.to_string())));
    out.push_back(Any(m));
  }
  return out;
}

// Calls `f(sim)` under the simulator's lock with SimError translated.
template <typename F>
decltype(auto) With(const SimulatorRef& s, F&& f) {
  SimulatorObj* obj = s.mut();
  std::lock_guard<std::mutex> lock(obj->mu);
  return TranslateSimError([&]() -> decltype(auto) { return f(obj->sim); });
}

}  // namespace

void ThrowAsFFIError(const SimError& e) {
  Map<String, Any> m;
  m.Set("kind", Any(String(KindName(e.kind()))));
  m.Set("core", Any(int64_t{e.core()}));
  m.Set("pc", Any(e.pc()));
  m.Set("line", Any(int64_t{e.line()}));
  m.Set("instruction", Any(String(e.instruction())));
  m.Set("reason", Any(String(e.reason())));
  m.Set("message", Any(String(std::string(e.what()))));
  LastFaultSlot() = m;
  TILECORE_THROW(SimError) << e.what();
}

TILECORE_REGISTER_GLOBAL("sim.Create").set_body_typed(Create);
TILECORE_REGISTER_GLOBAL("sim.Config").set_body_typed(ConfigOf);
TILECORE_REGISTER_GLOBAL("sim.Load").set_body_typed([](SimulatorRef s, arch::ProgramRef p) {
  With(s, [&](Simulator& sim) { sim.load(p->program); });
});
TILECORE_REGISTER_GLOBAL("sim.Write")
    .set_body_typed([](SimulatorRef s, std::string space, int64_t addr, NDArray data,
                       int64_t core) {
      std::span<uint8_t> bytes = HostBytes(data, "Simulator.write");
      if (addr < 0) TILECORE_THROW(ValueError) << "Simulator.write: negative address " << addr;
      With(s, [&](Simulator& sim) {
        sim.write(ParseSpace(space), uint64_t(addr), bytes, Narrow(core, "core"));
      });
    });
TILECORE_REGISTER_GLOBAL("sim.ReadInto")
    .set_body_typed([](SimulatorRef s, std::string space, int64_t addr, NDArray out, int64_t core) {
      std::span<uint8_t> bytes = HostBytes(out, "Simulator.read");
      if (addr < 0) TILECORE_THROW(ValueError) << "Simulator.read: negative address " << addr;
      With(s, [&](Simulator& sim) {
        sim.read_into(ParseSpace(space), uint64_t(addr), bytes, Narrow(core, "core"));
      });
    });
TILECORE_REGISTER_GLOBAL("sim.Run")
    .set_body_typed([](SimulatorRef s, int64_t max_instructions) {
      uint64_t budget =
          max_instructions <= 0 ? Simulator::kDefaultBudget : uint64_t(max_instructions);
      With(s, [&](Simulator& sim) { sim.run(budget); });
    })
    .release_gil();
TILECORE_REGISTER_GLOBAL("sim.Step")
    .set_body_typed([](SimulatorRef s, int64_t n) {
      if (n < 0) TILECORE_THROW(ValueError) << "Simulator.step: n must be >= 0, got " << n;
      return static_cast<int64_t>(With(s, [&](Simulator& sim) { return sim.step(uint64_t(n)); }));
    })
    .release_gil();
TILECORE_REGISTER_GLOBAL("sim.Finished").set_body_typed([](SimulatorRef s) {
  return With(s, [](Simulator& sim) { return sim.finished(); });
});
TILECORE_REGISTER_GLOBAL("sim.StatsJSON").set_body_typed([](SimulatorRef s) {
  return With(s, [](Simulator& sim) {
    Stats st = sim.stats();
    std::string j = st.to_json();
    // Append the figure to_json() leaves out.
    j.pop_back();
    return String(j + ", \"mac_efficiency\": " + std::to_string(st.mac_efficiency()) + "}");
  });
});
TILECORE_REGISTER_GLOBAL("sim.StatsText").set_body_typed([](SimulatorRef s) {
  return With(s, [](Simulator& sim) { return String(sim.stats().to_string()); });
});
TILECORE_REGISTER_GLOBAL("sim.TraceJSON").set_body_typed([](SimulatorRef s) {
  return With(s, [](Simulator& sim) { return String(sim.trace_json()); });
});
TILECORE_REGISTER_GLOBAL("sim.WriteTrace").set_body_typed([](SimulatorRef s, std::string path) {
  With(s, [&](Simulator& sim) { sim.write_trace(path); });
});
TILECORE_REGISTER_GLOBAL("sim.Hazards").set_body_typed(HazardsOf);
TILECORE_REGISTER_GLOBAL("sim.XReg").set_body_typed([](SimulatorRef s, int64_t core, int64_t r) {
  return static_cast<int64_t>(With(
      s, [&](Simulator& sim) { return sim.xreg(Narrow(core, "core"), Narrow(r, "register")); }));
});
TILECORE_REGISTER_GLOBAL("sim.SetXReg")
    .set_body_typed([](SimulatorRef s, int64_t core, int64_t r, int64_t v) {
      With(s, [&](Simulator& sim) {
        sim.set_xreg(Narrow(core, "core"), Narrow(r, "register"), uint32_t(v));
      });
    });
TILECORE_REGISTER_GLOBAL("sim.VReg").set_body_typed([](SimulatorRef s, int64_t core, int64_t r) {
  auto v = With(
      s, [&](Simulator& sim) { return sim.vreg(Narrow(core, "core"), Narrow(r, "register")); });
  return ffi::Bytes(std::string(v.begin(), v.end()));
});
TILECORE_REGISTER_GLOBAL("sim.PReg").set_body_typed([](SimulatorRef s, int64_t core, int64_t r) {
  return static_cast<int64_t>(With(
      s, [&](Simulator& sim) { return sim.preg(Narrow(core, "core"), Narrow(r, "register")); }));
});
TILECORE_REGISTER_GLOBAL("sim.PC").set_body_typed([](SimulatorRef s, int64_t core) {
  return With(s, [&](Simulator& sim) { return sim.pc(Narrow(core, "core")); });
});
TILECORE_REGISTER_GLOBAL("sim.Halted").set_body_typed([](SimulatorRef s, int64_t core) {
  return With(s, [&](Simulator& sim) { return sim.halted(Narrow(core, "core")); });
});
TILECORE_REGISTER_GLOBAL("sim.Cycle").set_body_typed([](SimulatorRef s) {
  return static_cast<int64_t>(With(s, [](Simulator& sim) { return sim.cycle(); }));
});
TILECORE_REGISTER_GLOBAL("sim.InstructionAt")
    .set_body_typed([](SimulatorRef s, int64_t core, int64_t pc) {
      return String(
          With(s, [&](Simulator& sim) { return sim.instruction_at(Narrow(core, "core"), pc); }));
    });
TILECORE_REGISTER_GLOBAL("sim.SourceLine")
    .set_body_typed([](SimulatorRef s, int64_t core, int64_t pc) {
      return static_cast<int64_t>(
          With(s, [&](Simulator& sim) { return sim.source_line(Narrow(core, "core"), pc); }));
    });
TILECORE_REGISTER_GLOBAL("sim.LastFault").set_body([](ffi::PackedArgs, Any* rv) {
  if (t_last_fault != nullptr) *rv = Any(*t_last_fault);
});

}  // namespace tilecore::sim
