// src/debug/debug_ffi.cc — the debugging engine in the global registry (`debug.*`).
//
// Python's tilecore.tdb drives an Engine through these. A `debug.Engine` object
// holds its simulator (so the simulator outlives it) and takes the simulator's
// lock for every call, like the `sim.*` functions do.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "tilecore/debug/engine.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/string.h"
#include "tilecore/sim/sim_ffi.h"

namespace tilecore::debug {

class EngineObj : public ffi::Object {
 public:
  explicit EngineObj(sim::SimulatorRef s) : sim(std::move(s)), engine(&sim.mut()->sim) {}
  sim::SimulatorRef sim;
  Engine engine;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("debug.Engine", EngineObj, ffi::Object);
};

class EngineRef : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(EngineRef, ffi::ObjectRef, EngineObj);
  EngineObj* mut() const { return const_cast<EngineObj*>(get()); }
};

namespace {

using ffi::Any;
using ffi::Array;
using ffi::Map;
using ffi::String;

template <typename F>
decltype(auto) With(const EngineRef& e, F&& f) {
  EngineObj* obj = e.mut();
  std::lock_guard<std::mutex> lock(obj->sim.mut()->mu);
  return sim::TranslateSimError([&]() -> decltype(auto) {
    try {
      return f(obj->engine, obj->sim.mut()->sim);
    } catch (const std::invalid_argument& err) {
      TILECORE_THROW(ValueError) << err.what();
    }
  });
}

arch::Space ParseSpace(const std::string& s) {
  auto space = arch::parse_space(s);
  if (!space) TILECORE_THROW(ValueError) << "unknown memory space '" << s << "' (ddr, l2, l1)";
  return *space;
}

const char* KindName(StopKind k) {
  switch (k) {
    case StopKind::Mnemonic:
      return "mnemonic";
    case StopKind::Pc:
      return "pc";
    case StopKind::Command:
      return "command";
    case StopKind::Watch:
      return "watch";
  }
  return "?";
}

const char* AgentName(int a) {
  static const char* names[] = {"sc", "din", "dout", "mm", "vec"};
  return a >= 0 && a < 5 ? names[a] : "host";
}

Map<String, Any> HitToMap(const Hit& h) {
  Map<String, Any> m;
  m.Set("id", Any(int64_t{h.id}));
  m.Set("core", Any(int64_t{h.core}));
  m.Set("pc", Any(int64_t{h.pc}));
  m.Set("agent", Any(String(AgentName(h.agent))));
  m.Set("op", Any(String(std::string(arch::info(h.op).mnemonic))));
  m.Set("write", Any(h.write));
  m.Set("space", Any(String(std::string(arch::space_name(h.space)))));
  m.Set("lo", Any(static_cast<int64_t>(h.lo)));
  m.Set("hi", Any(static_cast<int64_t>(h.hi)));
  m.Set("position", Any(static_cast<int64_t>(h.position)));
  return m;
}

Map<String, Any> ReportToMap(const StopReport& r) {
  static const char* reasons[] = {"step",      "breakpoint", "watchpoint",
                                  "transient", "finished",   "history-start"};
  Map<String, Any> m;
  m.Set("reason", Any(String(reasons[r.reason])));
  m.Set("executed", Any(static_cast<int64_t>(r.executed)));
  Array<Any> hits;
  for (const Hit& h : r.hits) hits.push_back(Any(HitToMap(h)));
  m.Set("hits", Any(hits));
  return m;
}

Map<String, Any> StopToMap(const Stop& s) {
  Map<String, Any> m;
  m.Set("id", Any(int64_t{s.id}));
  m.Set("kind", Any(String(KindName(s.kind))));
  m.Set("enabled", Any(s.enabled));
  m.Set("core", Any(int64_t{s.core}));
  m.Set("hits", Any(static_cast<int64_t>(s.hits)));
  m.Set("ignore", Any(static_cast<int64_t>(s.ignore)));
  return m;
}

int64_t AddStop(EngineRef e, std::string kind, int64_t core, std::string op, int64_t pc,
                std::string engine, int64_t command, std::string space, int64_t lo, int64_t hi,
                std::string mode) {
  Stop s;
  s.core = int(core);
  if (kind == "mnemonic") {
    auto o = arch::find_opcode(op);
    if (!o) TILECORE_THROW(ValueError) << "unknown instruction mnemonic '" << op << "'";
    s.kind = StopKind::Mnemonic;
    s.op = *o;
  } else if (kind == "pc") {
    if (pc < 0 || pc > int64_t(UINT32_MAX))
      TILECORE_THROW(ValueError) << "pc " << pc << " is out of range";
    s.kind = StopKind::Pc;
    s.pc = uint32_t(pc);
  } else if (kind == "command") {
    auto en = arch::parse_engine(engine);
    if (!en) TILECORE_THROW(ValueError) << "unknown engine '" << engine << "' (din, dout, mm, vec)";
    if (command < 0) TILECORE_THROW(ValueError) << "command id must be >= 0, got " << command;
    s.kind = StopKind::Command;
    s.engine = *en;
    s.command = uint64_t(command);
  } else if (kind == "watch") {
    s.kind = StopKind::Watch;
    s.space = ParseSpace(space);
    if (lo < 0 || hi <= lo)
      TILECORE_THROW(ValueError) << "watch range [" << lo << ", " << hi << ") is empty or negative";
    s.lo = uint64_t(lo);
    s.hi = uint64_t(hi);
    if (mode == "read")
      s.mode = kWatchRead;
    else if (mode == "write")
      s.mode = kWatchWrite;
    else if (mode == "access")
      s.mode = kWatchAccess;
    else
      TILECORE_THROW(ValueError) << "watch mode must be read, write or access, got '" << mode
                                 << "'";
  } else {
    TILECORE_THROW(ValueError) << "unknown stop kind '" << kind << "'";
  }
  return With(e, [&](Engine& eng, sim::Simulator& sm) {
    if (s.core >= sm.cores())
      TILECORE_THROW(ValueError) << "core " << s.core << " does not exist (cores 0.."
                                 << sm.cores() - 1 << ")";
    return int64_t{eng.add_stop(s)};
  });
}

Map<String, Any> Resume(EngineRef e, int64_t max_instructions, int64_t unit_mask, Array<Any> pcs) {
  Transient t;
  t.unit_mask = uint32_t(unit_mask);
  for (const Any& core_pcs : pcs) {
    std::vector<uint8_t> flags;
    for (const Any& p : core_pcs.cast<Array<Any>>()) {
      int64_t pc = p.cast<int64_t>();
      if (pc < 0 || pc > (int64_t(1) << 28)) continue;
      if (flags.size() <= size_t(pc)) flags.resize(size_t(pc) + 1, 0);
      flags[size_t(pc)] = 1;
    }
    t.pcs.push_back(std::move(flags));
  }
  uint64_t budget = max_instructions <= 0 ? UINT64_MAX : uint64_t(max_instructions);
  return With(e, [&](Engine& eng, sim::Simulator&) { return ReportToMap(eng.resume(budget, t)); });
}

Map<String, Any> EngineStatus(EngineRef e, int64_t core) {
  return With(e, [&](Engine&, sim::Simulator& sm) {
    Map<String, Any> m;
    for (int k = 0; k < arch::kNumEngines; ++k) {
      auto en = arch::Engine(k);
      Map<String, Any> one;
      one.Set("issued", Any(static_cast<int64_t>(sm.issued(int(core), en))));
      one.Set("completed", Any(static_cast<int64_t>(sm.completed(int(core), en))));
      one.Set("queued", Any(static_cast<int64_t>(sm.queued(int(core), en))));
      m.Set(String(std::string(arch::engine_name(en))), Any(one));
    }
    m.Set("state", Any(String(sm.describe_core(int(core)))));
    return m;
  });
}

}  // namespace

TILECORE_REGISTER_GLOBAL("debug.Create").set_body_typed([](sim::SimulatorRef s) {
  std::lock_guard<std::mutex> lock(s.mut()->mu);
  return EngineRef(ffi::make_object<EngineObj>(s));
});
TILECORE_REGISTER_GLOBAL("debug.Begin").set_body_typed([](EngineRef e) {
  With(e, [](Engine& eng, sim::Simulator&) { eng.begin(); });
});
TILECORE_REGISTER_GLOBAL("debug.AddStop").set_body_typed(AddStop);
TILECORE_REGISTER_GLOBAL("debug.RemoveStop").set_body_typed([](EngineRef e, int64_t id) {
  With(e, [&](Engine& eng, sim::Simulator&) { eng.remove_stop(int(id)); });
});
// debug.SetStop(engine, id, enabled (-1 keeps it), ignore (-1 keeps it))
TILECORE_REGISTER_GLOBAL("debug.SetStop")
    .set_body_typed([](EngineRef e, int64_t id, int64_t enabled, int64_t ignore) {
      With(e, [&](Engine& eng, sim::Simulator&) {
        Stop& s = eng.stop_ref(int(id));
        if (enabled >= 0) s.enabled = enabled != 0;
        if (ignore >= 0) s.ignore = uint64_t(ignore);
        eng.stops_changed();
      });
    });
TILECORE_REGISTER_GLOBAL("debug.Stops").set_body_typed([](EngineRef e) {
  return With(e, [](Engine& eng, sim::Simulator&) {
    Array<Any> out;
    for (const Stop& s : eng.stops()) out.push_back(Any(StopToMap(s)));
    return out;
  });
});
TILECORE_REGISTER_GLOBAL("debug.Resume").set_body_typed(Resume).release_gil();
TILECORE_REGISTER_GLOBAL("debug.ReverseTo")
    .set_body_typed([](EngineRef e, int64_t position) {
      if (position < 0) TILECORE_THROW(ValueError) << "position must be >= 0, got " << position;
      return With(e, [&](Engine& eng, sim::Simulator&) {
        return ReportToMap(eng.reverse_to(uint64_t(position)));
      });
    })
    .release_gil();
TILECORE_REGISTER_GLOBAL("debug.ReverseContinue")
    .set_body_typed([](EngineRef e) {
      return With(e,
                  [](Engine& eng, sim::Simulator&) { return ReportToMap(eng.reverse_continue()); });
    })
    .release_gil();
TILECORE_REGISTER_GLOBAL("debug.Position").set_body_typed([](EngineRef e) {
  return With(e, [](Engine& eng, sim::Simulator&) { return static_cast<int64_t>(eng.position()); });
});
TILECORE_REGISTER_GLOBAL("debug.History").set_body_typed([](EngineRef e) {
  return With(e, [](Engine& eng, sim::Simulator&) {
    Map<String, Any> m;
    m.Set("recording", Any(eng.recording()));
    m.Set("start", Any(static_cast<int64_t>(eng.history_start())));
    m.Set("snapshots", Any(static_cast<int64_t>(eng.snapshot_count())));
    m.Set("writes", Any(static_cast<int64_t>(eng.log_size())));
    m.Set("undo_bytes", Any(static_cast<int64_t>(eng.log_bytes())));
    return m;
  });
});
TILECORE_REGISTER_GLOBAL("debug.SetRecording").set_body_typed([](EngineRef e, bool on) {
  With(e, [&](Engine& eng, sim::Simulator&) { eng.set_recording(on); });
});
TILECORE_REGISTER_GLOBAL("debug.LastWrite")
    .set_body_typed([](EngineRef e, std::string space, int64_t core, int64_t addr) {
      arch::Space sp = ParseSpace(space);
      return With(e, [&](Engine& eng, sim::Simulator&) {
        Map<String, Any> m;
        WriteRecord r;
        bool found = addr >= 0 && eng.last_write(sp, int(core), uint64_t(addr), &r);
        m.Set("found", Any(found));
        if (found) {
          m.Set("position", Any(static_cast<int64_t>(r.position)));
          m.Set("core", Any(int64_t{r.core}));
          m.Set("agent", Any(String(AgentName(r.agent))));
          m.Set("pc", Any(int64_t{r.pc}));
          m.Set("op", Any(String(r.agent < 0 ? std::string("set")
                                             : std::string(arch::info(r.op).mnemonic))));
          m.Set("lo", Any(static_cast<int64_t>(r.lo)));
          m.Set("hi", Any(static_cast<int64_t>(r.hi)));
        }
        return m;
      });
    });
TILECORE_REGISTER_GLOBAL("debug.HostWrite")
    .set_body_typed([](EngineRef e, std::string space, int64_t core, int64_t addr,
                       ffi::NDArray data) {
      arch::Space sp = ParseSpace(space);
      if (addr < 0) TILECORE_THROW(ValueError) << "negative address " << addr;
      With(e, [&](Engine& eng, sim::Simulator&) {
        eng.host_write(sp, int(core), uint64_t(addr), data.data<uint8_t>(), data.NumBytes());
      });
    });
TILECORE_REGISTER_GLOBAL("debug.EngineStatus").set_body_typed(EngineStatus);
// debug.WrittenRanges(engine): [[space, core, lo, hi], ...], the byte ranges the
// write log holds, merged per memory (what a restart must clear).
TILECORE_REGISTER_GLOBAL("debug.WrittenRanges").set_body_typed([](EngineRef e) {
  return With(e, [](Engine& eng, sim::Simulator&) {
    std::vector<std::tuple<int, int, uint64_t, uint64_t>> r;
    for (const WriteRecord& w : eng.write_log())
      r.emplace_back(int(w.space), w.space == arch::Space::L1 ? w.mem_core : 0, w.lo, w.hi);
    std::sort(r.begin(), r.end());
    Array<Any> out;
    for (size_t k = 0; k < r.size();) {
      auto [space, core, lo, hi] = r[k];
      size_t j = k + 1;
      for (; j < r.size() && std::get<0>(r[j]) == space && std::get<1>(r[j]) == core &&
             std::get<2>(r[j]) <= hi;
           ++j)
        hi = std::max(hi, std::get<3>(r[j]));
      out.push_back(Any(Array<Any>{Any(String(std::string(arch::space_name(arch::Space(space))))),
                                   Any(int64_t{core}), Any(static_cast<int64_t>(lo)),
                                   Any(static_cast<int64_t>(hi))}));
      k = j;
    }
    return out;
  });
});
// debug.Mnemonics(): [[mnemonic, unit], ...] from the instruction table, for
// breakpoint names and completion (unit: scalar simd din dout mm vec).
TILECORE_REGISTER_GLOBAL("debug.Mnemonics").set_body_typed([]() {
  static const char* units[] = {"scalar", "simd", "din", "dout", "mm", "vec"};
  Array<Any> out;
  for (int k = 0; k < arch::kNumOpcodes; ++k) {
    const arch::InstrInfo& i = arch::info(arch::Opcode(k));
    out.push_back(
        Any(Array<Any>{Any(String(std::string(i.mnemonic))), Any(String(units[int(i.unit)]))}));
  }
  return out;
});

}  // namespace tilecore::debug
