// src/sim/debug_state.cc — the simulator's side of debugging: attaching a
// DebugHook, saving and restoring the state without memory (SimState), and the
// queue/counter queries a debugger shows. Memory contents are the debugger's
// business (a log of old bytes, src/debug/), so a saved state stays small.
#include "machine.h"
#include "tilecore/sim/simulator.h"

namespace tilecore::sim {

namespace {

/// A core without its text (the text does not change after load()).
struct CoreRegs {
  std::array<uint32_t, 32> x{};
  std::array<std::array<uint8_t, 32>, 32> v{};
  std::array<uint32_t, 8> p{};
  uint32_t pc = 0;
  uint64_t instret = 0;
  bool halted = false, barrier_released = false;
  std::array<EngineState, arch::kNumEngines> eng;
  CoreStats counters;
};

}  // namespace

struct SimState::Impl {
  std::vector<CoreRegs> cores;
  std::vector<AgentSlot> slots;
  std::vector<uint64_t> barrier_arrival;
  std::vector<bool> at_barrier;
  struct HeapCopy {
    uint64_t t;
    uint32_t id;
    uint32_t gen;
  };
  std::vector<HeapCopy> heap;
  uint64_t ddr_free = 0, l2_free = 0, makespan = 0;
  uint64_t instructions = 0, commands = 0, work = 0;
  uint64_t ddr_read = 0, ddr_written = 0, l2_read = 0, l2_written = 0, l1_read = 0, l1_written = 0;
  size_t trace_size = 0, hazards_size = 0;
  std::shared_ptr<HazardState> hz;
};

SimState Machine::save_state() const {
  auto st = std::make_shared<SimState::Impl>();
  for (const Core& c : cores)
    st->cores.push_back(
        CoreRegs{c.x, c.v, c.p, c.pc, c.instret, c.halted, c.barrier_released, c.eng, c.counters});
  st->slots = slots_;
  st->barrier_arrival = barrier_arrival_;
  st->at_barrier = at_barrier_;
  for (const HeapEntry& h : heap_) st->heap.push_back({h.t, h.id, h.gen});
  st->ddr_free = ddr_free_;
  st->l2_free = l2_free_;
  st->makespan = makespan_;
  st->instructions = instructions;
  st->commands = commands;
  st->work = work;
  st->ddr_read = ddr_read, st->ddr_written = ddr_written, st->l2_read = l2_read;
  st->l2_written = l2_written, st->l1_read = l1_read, st->l1_written = l1_written;
  st->trace_size = trace.size();
  st->hazards_size = hazards.size();
  if (hz) st->hz = std::make_shared<HazardState>(*hz);
  return SimState{st};
}

void Machine::restore_state(const SimState& saved) {
  const SimState::Impl& st = *saved.impl;
  if (st.cores.size() != cores.size() || st.trace_size > trace.size() ||
      st.hazards_size > hazards.size())
    throw SimError(SimError::Kind::Usage, -1, 0, "",
                   "restore_state: the state was saved from another run");
  for (size_t k = 0; k < cores.size(); ++k) {
    Core& c = cores[k];
    const CoreRegs& r = st.cores[k];
    c.x = r.x, c.v = r.v, c.p = r.p, c.pc = r.pc, c.instret = r.instret;
    c.halted = r.halted, c.barrier_released = r.barrier_released, c.eng = r.eng,
    c.counters = r.counters;
  }
  slots_ = st.slots;
  barrier_arrival_ = st.barrier_arrival;
  at_barrier_ = st.at_barrier;
  heap_.clear();
  for (const auto& h : st.heap) heap_.push_back({h.t, h.id, h.gen});
  ddr_free_ = st.ddr_free;
  l2_free_ = st.l2_free;
  makespan_ = st.makespan;
  instructions = st.instructions;
  commands = st.commands;
  work = st.work;
  ddr_read = st.ddr_read, ddr_written = st.ddr_written, l2_read = st.l2_read;
  l2_written = st.l2_written, l1_read = st.l1_read, l1_written = st.l1_written;
  trace.resize(st.trace_size);
  hazards.resize(st.hazards_size);
  if (st.hz) hz = std::make_unique<HazardState>(*st.hz);
}

void Simulator::set_debug_hook(DebugHook* hook) { m_->dbg = hook; }
SimState Simulator::save_state() const { return m_->save_state(); }
void Simulator::restore_state(const SimState& s) { m_->restore_state(s); }
uint64_t Simulator::instructions() const { return m_->instructions; }

static const Core& checked_core(const Machine& m, int core) {
  if (core < 0 || core >= m.cfg.cores)
    throw SimError(SimError::Kind::Usage, -1, 0, "",
                   "core " + std::to_string(core) + " does not exist");
  return m.cores[size_t(core)];
}

uint64_t Simulator::completed(int core, arch::Engine e) const {
  return checked_core(*m_, core).eng[size_t(e)].done;
}

size_t Simulator::queued(int core, arch::Engine e) const {
  return checked_core(*m_, core).eng[size_t(e)].queue.size();
}

uint64_t Simulator::issued(int core, arch::Engine e) const {
  const EngineState& es = checked_core(*m_, core).eng[size_t(e)];
  uint64_t n = es.done;  // completed, plus the queued entries that are commands, not wait markers
  for (size_t k = 0; k < es.queue.size(); ++k) n += es.queue.at(k).marker ? 0 : 1;
  return n;
}

std::string Simulator::describe_core(int core) const {
  return m_->describe_core(checked_core(*m_, core));
}

}  // namespace tilecore::sim
