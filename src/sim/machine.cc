// src/sim/machine.cc — loading, the event scheduler, and the front end's
// interaction with queues, counters, barriers and memory.
//
// Scheduling: every agent has a local clock. The agent with the smallest
// (clock, id) acts next, so every engine command starts in global time order;
// that is what lets the shared-bandwidth model (ddr_free_, l2_free_) be a simple
// running "drained-at" time and keeps runs deterministic. A front end keeps
// executing without touching the heap while it remains the earliest agent.
#include "machine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "dispatch.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::sim {

using arch::Engine;

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string size_text(uint64_t n) {
  if (n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n % (1 << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

std::string space_text(Space s, int core) {
  std::string t(arch::space_name(s));
  if (s == Space::L1) t += "[" + std::to_string(core) + "]";
  return t;
}

/// Element extent [lo, hi] of a strided tensor; false when it has no elements.
bool extent(const std::array<uint32_t, 4>& shape, const std::array<int32_t, 4>& stride, int rank,
            int64_t& lo, int64_t& hi) {
  lo = hi = 0;
  for (int i = 0; i < rank; ++i) {
    if (shape[size_t(i)] == 0) return false;
    int64_t span = int64_t(shape[size_t(i)] - 1) * stride[size_t(i)];
    if (span < 0) lo += span;
    else hi += span;
  }
  return true;
}

uint64_t elements_of(const std::array<uint32_t, 4>& shape, int rank) {
  uint64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[size_t(i)];
  return n;
}

}  // namespace

// ---- Memory -----------------------------------------------------------------------------------

void Memory::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Memory::Memory(const SimConfig& cfg)
    : ddr_(static_cast<uint8_t*>(std::calloc(size_t(cfg.ddr_bytes ? cfg.ddr_bytes : 1), 1))),
      ddr_size_(cfg.ddr_bytes),
      l2_(size_t(cfg.l2_bytes)),
      l1_(size_t(cfg.cores), std::vector<uint8_t>(size_t(cfg.l1_bytes))),
      l1_size_(cfg.l1_bytes) {
  if (!ddr_) throw SimError(SimError::Kind::Usage, -1, 0, "", "cannot allocate " + size_text(cfg.ddr_bytes) + " of DDR");
}

void Memory::clear() {
  std::memset(ddr_.get(), 0, size_t(ddr_size_));
  std::fill(l2_.begin(), l2_.end(), 0);
  for (auto& l : l1_) std::fill(l.begin(), l.end(), 0);
}

// ---- Machine ----------------------------------------------------------------------------------

Machine::Machine(SimConfig c) : cfg(c), mem(c) {
  cores.resize(size_t(cfg.cores));
  for (int i = 0; i < cfg.cores; ++i) cores[size_t(i)].id = i;
  slots_.resize(size_t(cfg.cores * kNumAgents));
  for (auto& s : slots_) s.state = AgentState::Done;
  barrier_arrival_.assign(size_t(cfg.cores), 0);
  at_barrier_.assign(size_t(cfg.cores), false);
  if (hazard_mode()) hz_init();
}

void Machine::load(const arch::Program& p) {
  heap_.clear();
  trace.clear();
  hazards.clear();
  instructions = commands = 0;
  ddr_read = ddr_written = l2_read = l2_written = l1_read = l1_written = 0;
  ddr_free_ = l2_free_ = makespan_ = 0;
  std::fill(at_barrier_.begin(), at_barrier_.end(), false);
  for (const auto& d : p.data) {
    for (int core = 0; core < cfg.cores; ++core) {
      if (d.space == Space::L1 && !(d.core_mask >> core & 1)) continue;
      if (!mem.in_bounds(d.space, d.addr, d.bytes.size()))
        throw SimError(SimError::Kind::Usage, -1, 0, "",
                       "data segment " + space_text(d.space, core) + ":" + hex(d.addr) + " (" + std::to_string(d.bytes.size()) +
                           " bytes) does not fit the " + size_text(mem.size(d.space)) + " memory");
      std::memcpy(mem.base(d.space, core) + d.addr, d.bytes.data(), d.bytes.size());
      if (d.space != Space::L1) break;
    }
  }
  for (auto& c : cores) {
    int id = c.id;
    c = Core{};
    c.id = id;
    if (const arch::TextSection* t = p.text_for_core(id)) c.words = t->words;
    c.active = !c.words.empty();
    {
      c.code.resize(c.words.size());
      c.decode_error.resize(c.words.size());
      for (size_t k = 0; k < c.words.size(); ++k) {
        std::string why;
        auto inst = arch::decode(c.words[k], &why);
        if (inst) c.code[k] = *inst;
        else c.decode_error[k] = why.empty() ? "illegal instruction" : why;
      }
    }
    for (int a = 0; a < kNumAgents; ++a) {
      AgentSlot& s = slot(id, Agent(a));
      s = AgentSlot{};
      if (a == int(Agent::Scalar)) {
        s.state = c.active ? AgentState::Ready : AgentState::Done;
        if (!c.active) c.halted = true;
      } else {
        s.state = AgentState::Blocked;
        s.why = BlockReason::EmptyQueue;
      }
    }
    if (c.active) schedule(id * kNumAgents);
  }
  if (hazard_mode()) hz_init();
}

void Machine::schedule(int agent) {
  AgentSlot& s = slots_[size_t(agent)];
  s.state = AgentState::Ready;
  s.why = BlockReason::None;
  ++s.gen;
  heap_.push_back({s.t, uint32_t(agent), s.gen});
  std::push_heap(heap_.begin(), heap_.end(), [](const HeapEntry& a, const HeapEntry& b) {
    return a.t != b.t ? a.t > b.t : a.id > b.id;
  });
}

void Machine::wake(int agent, uint64_t at) {
  AgentSlot& s = slots_[size_t(agent)];
  if (s.why != BlockReason::EmptyQueue) s.stats.stalled_dep += at > s.blocked_at ? at - s.blocked_at : 0;
  s.t = std::max(s.t, at);
  schedule(agent);
}

bool Machine::finished() const {
  for (const auto& c : cores) {
    if (!c.halted) return false;
    for (const auto& e : c.eng)
      if (!e.queue.empty()) return false;
  }
  return true;
}

std::string Machine::inst_text(const Core& c, uint32_t pc) const {
  if (pc >= c.code.size()) return "";
  if (!c.decode_error[pc].empty()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, ".inst 0x%016llx", static_cast<unsigned long long>(c.words[pc]));
    return buf;
  }
  return arch::format_instruction(c.code[pc], pc);
}

void Machine::fault(SimError::Kind kind, const Core& c, uint32_t pc, const std::string& reason) const {
  throw SimError(kind, c.id, pc, inst_text(c, pc), reason);
}

void Machine::count_bytes(Space s, uint64_t n, bool write) {
  switch (s) {
    case Space::DDR: (write ? ddr_written : ddr_read) += n; break;
    case Space::L2: (write ? l2_written : l2_read) += n; break;
    case Space::L1: (write ? l1_written : l1_read) += n; break;
  }
}

uint8_t* Machine::access(Core& c, Space s, uint64_t addr, uint64_t n, uint64_t align, bool write) {
  if (!mem.in_bounds(s, addr, n))
    fault(SimError::Kind::MemoryFault, c, c.pc,
          "out-of-bounds " + std::string(write ? "store to " : "load from ") + space_text(s, c.id) + " [" + hex(addr) +
              ", " + hex(addr + n) + "): the memory is " + size_text(mem.size(s)));
  if (addr % align)
    fault(SimError::Kind::MemoryFault, c, c.pc,
          "misaligned " + std::string(write ? "store" : "load") + ": address " + hex(addr) + " is not " +
              std::to_string(align) + "-byte aligned");
  count_bytes(s, n, write);
  if (hazard_mode()) hz_access(c.id * kNumAgents, Range{s, c.id, addr, addr + n, write}, c, c.pc);
  return mem.base(s, c.id) + addr;
}

uint32_t Machine::csr(Core& c, arch::Csr which) {
  uint64_t t = now(c);
  auto count = [&](Engine e) {
    const auto& dt = c.eng[size_t(e)].done_time;
    return uint32_t(std::upper_bound(dt.begin(), dt.end(), t) - dt.begin());
  };
  switch (which) {
    case arch::Csr::CoreId: return uint32_t(c.id);
    case arch::Csr::NCores: return uint32_t(cfg.cores);
    case arch::Csr::Cycle: return uint32_t(t);
    case arch::Csr::Instret: return uint32_t(c.instret);
    case arch::Csr::CntDin: return count(Engine::DmaIn);
    case arch::Csr::CntDout: return count(Engine::DmaOut);
    case arch::Csr::CntMm: return count(Engine::Matrix);
    case arch::Csr::CntVec: return count(Engine::Vector);
  }
  return 0;
}

// ---- issue: validation and pricing of tile commands ------------------------------------------

Outcome Machine::issue(Core& c, const Inst& i) {
  const arch::InstrInfo& row = arch::info(i.op);
  Engine e = *arch::unit_engine(row.unit);
  EngineState& es = c.eng[size_t(e)];
  AgentSlot& sc = slot(c.id, Agent::Scalar);
  if (int(es.queue.size()) >= cfg.queue_depth) {
    sc.why = BlockReason::QueueFull;
    sc.on_engine = e;
    return {Outcome::Block};
  }
  auto bad = [&](const std::string& why) { fault(SimError::Kind::BadDescriptor, c, c.pc, why); };
  auto mem_fault = [&](const std::string& why) { fault(SimError::Kind::MemoryFault, c, c.pc, why); };

  Command cmd;
  cmd.inst = i;
  cmd.pc = c.pc;
  cmd.issue_time = now(c);

  // Descriptor: local L1, 4-byte aligned, snapshotted now.
  uint8_t desc_reg = row.format == arch::Format::Dma ? i.c : i.d;
  uint64_t daddr = uint32_t(c.x[desc_reg] + uint32_t(i.imm));
  size_t dbytes = row.format == arch::Format::Dma ? arch::DmaDesc::kBytes
                  : row.unit == arch::Unit::Matrix ? arch::MmDesc::kBytes
                                                   : arch::VecDesc::kBytes;
  if (!mem.in_bounds(Space::L1, daddr, dbytes))
    mem_fault("descriptor at l1[" + std::to_string(c.id) + "]:" + hex(daddr) + " (" + std::to_string(dbytes) +
              " bytes) is outside local L1");
  if (daddr % 4) mem_fault("descriptor address " + hex(daddr) + " is not 4-byte aligned");
  std::span<const uint8_t> db(mem.base(Space::L1, c.id) + daddr, dbytes);
  std::string why;

  auto add_range = [&](Space s, uint64_t base, int64_t lo, int64_t hi, int es_bytes, bool write, const char* what) {
    int64_t blo = int64_t(base) + lo * es_bytes, bhi = int64_t(base) + (hi + 1) * es_bytes;
    if (blo < 0 || !mem.in_bounds(s, uint64_t(blo), uint64_t(bhi - blo)))
      mem_fault(std::string(what) + " tensor spans " + space_text(s, c.id) + " [" + (blo < 0 ? "-" + hex(uint64_t(-blo)) : hex(uint64_t(blo))) +
                ", " + hex(uint64_t(bhi)) + "), outside the " + size_text(mem.size(s)) + " memory");
    if (base % uint64_t(es_bytes))
      mem_fault(std::string(what) + " address " + hex(base) + " is not aligned to its " + std::to_string(es_bytes) + "-byte elements");
    if (cmd.nranges < 4) cmd.ranges[size_t(cmd.nranges++)] = Range{s, c.id, uint64_t(blo), uint64_t(bhi), write};
  };

  if (row.format == arch::Format::Dma) {
    auto d = arch::DmaDesc::parse(db, &why);
    if (!d) bad(why);
    cmd.dst_space = Space(i.d & 3);
    cmd.src_space = Space(i.d >> 2 & 3);
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    uint64_t n = elements_of(d->shape, d->rank);
    if (n > cfg.max_command_elements)
      bad("DMA of " + std::to_string(n) + " elements exceeds the limit of " + std::to_string(cfg.max_command_elements));
    int64_t lo, hi;
    if (extent(d->shape, d->dst_stride, d->rank, lo, hi))
      add_range(cmd.dst_space, cmd.addr[0], lo, hi, arch::dtype_size(d->dst_dtype), true, "DMA destination");
    if (!d->fill()) {
      std::array<uint32_t, 4> src_shape = d->shape;
      for (int k = 0; k < d->rank; ++k) src_shape[size_t(k)] -= d->pad_lo[size_t(k)] + d->pad_hi[size_t(k)];
      if (extent(src_shape, d->src_stride, d->rank, lo, hi))
        add_range(cmd.src_space, cmd.addr[1], lo, hi, arch::dtype_size(d->src_dtype), false, "DMA source");
    }
    arch::cost::DmaCost k = arch::cost::dma(*d, cmd.dst_space, cmd.src_space);
    cmd.cycles = k.beats;
    cmd.latency = k.latency;
    cmd.occ_ddr = k.occupancy(Space::DDR, cmd.dst_space, cmd.src_space, d->fill());
    cmd.occ_l2 = k.occupancy(Space::L2, cmd.dst_space, cmd.src_space, d->fill());
    cmd.bytes_read = k.bytes_read;
    cmd.bytes_written = k.bytes_written;
    cmd.desc = *d;
  } else if (row.unit == arch::Unit::Matrix) {
    auto d = arch::MmDesc::parse(db, &why);
    if (!d) bad(why);
    DType in = i.dtype();
    DType acc = in == DType::I8 ? DType::I32 : DType::F32;
    int ies = arch::dtype_size(in);
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    cmd.addr[2] = c.x[i.c];
    add_range(Space::L1, cmd.addr[1], 0, int64_t(d->m - 1) * d->lda + d->k - 1, ies, false, "matrix A");
    add_range(Space::L1, cmd.addr[2], 0, int64_t(d->k - 1) * d->ldb + d->n - 1, ies, false, "matrix B");
    bool acc_flag = i.op == Opcode::Mma;
    if (d->epilogue()) {
      if (acc_flag) add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldc + d->n - 1, 4, false, "matrix C");
      add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldo + d->n - 1, arch::dtype_size(d->out_dtype), true, "matrix output");
      if (d->bias()) add_range(Space::L1, d->bias_addr, 0, d->n - 1, 4, false, "matrix bias");
    } else {
      add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldc + d->n - 1, arch::dtype_size(acc), true, "matrix C");
    }
    bool conflict = arch::cost::l1_bank(cmd.addr[1]) == arch::cost::l1_bank(cmd.addr[2]);
    arch::cost::MmCost k = arch::cost::matrix(in, *d, conflict);
    cmd.cycles = k.cycles;
    cmd.macs = k.macs;
    cmd.issued_macs = k.issued_macs;
    auto b = arch::cost::mm_block(in);
    cmd.peak_macs_per_cycle = uint64_t(b.m * b.n * b.k);
    cmd.bytes_read = (uint64_t(d->m) * d->k + uint64_t(d->k) * d->n) * uint64_t(ies);
    cmd.bytes_written = uint64_t(d->m) * d->n * 4;
    cmd.desc = *d;
  } else {
    auto d = arch::VecDesc::parse(db, &why);
    if (!d) bad(why);
    DType dt = i.dtype();
    DType at = (row.format == arch::Format::TileCvt) ? i.src_dtype() : (i.op == Opcode::Tlut ? DType::U8 : dt);
    bool reduce = i.op == Opcode::Tredsum || i.op == Opcode::Tredmax || i.op == Opcode::Tredmin;
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    cmd.addr[2] = row.format == arch::Format::Tile3 ? c.x[i.c] : 0;
    uint64_t n = elements_of(d->shape, d->rank);
    if (n > cfg.max_command_elements)
      bad("vector command of " + std::to_string(n) + " elements exceeds the limit of " + std::to_string(cfg.max_command_elements));
    int64_t lo, hi;
    std::array<int32_t, 4> dstr = d->d_stride;
    if (reduce) dstr[size_t(d->rank - 1)] = 0;
    if (extent(d->shape, d->a_stride, d->rank, lo, hi))
      add_range(Space::L1, cmd.addr[1], lo, hi, arch::dtype_size(at), false, "vector source a");
    if (row.format == arch::Format::Tile3) {
      if (i.op == Opcode::Tlut) add_range(Space::L1, cmd.addr[2], 0, 255, arch::dtype_size(dt), false, "lookup table");
      else if (extent(d->shape, d->b_stride, d->rank, lo, hi))
        add_range(Space::L1, cmd.addr[2], lo, hi, arch::dtype_size(dt), false, "vector source b");
    }
    if (extent(d->shape, dstr, d->rank, lo, hi))
      add_range(Space::L1, cmd.addr[0], lo, hi, arch::dtype_size(dt), true, "vector destination");
    bool conflict = row.format == arch::Format::Tile3 && i.op != Opcode::Tlut &&
                    arch::cost::l1_bank(cmd.addr[1]) == arch::cost::l1_bank(cmd.addr[2]);
    cmd.cycles = arch::cost::vector(i.op, dt, at, n, conflict);
    cmd.bytes_read = n * uint64_t(arch::dtype_size(at)) * (row.format == arch::Format::Tile3 ? 2 : 1);
    cmd.bytes_written = n * uint64_t(arch::dtype_size(dt));
    cmd.desc = *d;
  }
  if (hazard_mode()) {
    hz_tick(c.id * kNumAgents);
    cmd.vc = hz_snapshot(c.id * kNumAgents);
  }
  es.queue.push_back(std::move(cmd));
  AgentSlot& eng = slot(c.id, Agent(int(e) + 1));
  if (eng.state == AgentState::Blocked && eng.why == BlockReason::EmptyQueue) wake(c.id * kNumAgents + int(e) + 1, now(c));
  return {};
}

// ---- synchronisation --------------------------------------------------------------------------

Outcome Machine::wait_instruction(Core& c, const Inst& i) {
  Engine on = Engine(i.b);
  uint32_t count = c.x[i.c] + uint32_t(i.imm);
  if (i.a == 0) {  // the front end itself waits
    const EngineState& es = c.eng[size_t(on)];
    if (es.done >= count) {
      uint64_t dep = count == 0 ? 0 : es.done_time[count - 1];
      int64_t stall = dep > now(c) ? int64_t(dep - now(c)) : 0;
      if (hazard_mode() && count > 0) hz_join(c.id * kNumAgents, es.done_vc[count - 1]);
      return {Outcome::Next, 0, 1 + stall, stall};
    }
    AgentSlot& s = slot(c.id, Agent::Scalar);
    s.why = BlockReason::Counter;
    s.on_engine = on;
    s.on_count = count;
    return {Outcome::Block};
  }
  Engine q = Engine(i.a - 1);
  EngineState& es = c.eng[size_t(q)];
  if (int(es.queue.size()) >= cfg.queue_depth) {
    AgentSlot& s = slot(c.id, Agent::Scalar);
    s.why = BlockReason::QueueFull;
    s.on_engine = q;
    return {Outcome::Block};
  }
  Command cmd;
  cmd.inst = i;
  cmd.pc = c.pc;
  cmd.issue_time = now(c);
  cmd.marker = true;
  cmd.wait_engine = on;
  cmd.wait_count = count;
  if (hazard_mode()) {
    hz_tick(c.id * kNumAgents);
    cmd.vc = hz_snapshot(c.id * kNumAgents);
  }
  es.queue.push_back(std::move(cmd));
  AgentSlot& eng = slot(c.id, Agent(int(q) + 1));
  if (eng.state == AgentState::Blocked && eng.why == BlockReason::EmptyQueue) wake(c.id * kNumAgents + int(q) + 1, now(c));
  return {};
}

Outcome Machine::barrier(Core& c) {
  if (c.barrier_released) {
    c.barrier_released = false;
    return {};
  }
  at_barrier_[size_t(c.id)] = true;
  barrier_arrival_[size_t(c.id)] = now(c);
  uint64_t release = 0;
  for (const auto& o : cores) {
    if (!o.active) continue;
    if (!at_barrier_[size_t(o.id)]) {
      AgentSlot& s = slot(c.id, Agent::Scalar);
      s.why = BlockReason::Barrier;
      return {Outcome::Block};
    }
    release = std::max(release, barrier_arrival_[size_t(o.id)]);
  }
  if (timed()) release += arch::tc1::kBarrierLatency;
  std::vector<int> members;
  for (const auto& o : cores)
    if (o.active) members.push_back(o.id);
  if (hazard_mode()) hz_barrier(members);
  for (int id : members) {
    at_barrier_[size_t(id)] = false;
    if (id == c.id) continue;
    cores[size_t(id)].barrier_released = true;
    wake(id * kNumAgents, release);
  }
  int64_t stall = int64_t(release - now(c));
  return {Outcome::Next, 0, 1 + stall, stall};
}

Outcome Machine::fence(Core& c) {
  uint64_t last = 0;
  for (int e = 0; e < arch::kNumEngines; ++e) {
    if (!c.eng[size_t(e)].queue.empty()) {
      AgentSlot& s = slot(c.id, Agent::Scalar);
      s.why = BlockReason::Fence;
      return {Outcome::Block};
    }
    last = std::max(last, slot(c.id, Agent(e + 1)).t);
    if (hazard_mode() && c.eng[size_t(e)].done > 0) hz_join(c.id * kNumAgents, c.eng[size_t(e)].done_vc.back());
  }
  int64_t stall = last > now(c) ? int64_t(last - now(c)) : 0;
  return {Outcome::Next, 0, 1 + stall, stall};
}

void Machine::check_waiters(Core& c) {
  for (int a = 0; a < kNumAgents; ++a) {
    AgentSlot& s = slot(c.id, Agent(a));
    if (s.state != AgentState::Blocked) continue;
    int id = c.id * kNumAgents + a;
    switch (s.why) {
      case BlockReason::Counter: {
        const EngineState& es = c.eng[size_t(s.on_engine)];
        if (es.done >= s.on_count) wake(id, s.on_count ? es.done_time[s.on_count - 1] : 0);
        break;
      }
      case BlockReason::QueueFull:
        if (int(c.eng[size_t(s.on_engine)].queue.size()) < cfg.queue_depth) wake(id, c.eng[size_t(s.on_engine)].last_pop);
        break;
      case BlockReason::Fence: {
        bool empty = true;
        uint64_t last = 0;
        for (int e = 0; e < arch::kNumEngines; ++e) {
          empty &= c.eng[size_t(e)].queue.empty();
          last = std::max(last, slot(c.id, Agent(e + 1)).t);
        }
        if (empty) wake(id, last);
        break;
      }
      default: break;
    }
  }
}

// ---- stepping ---------------------------------------------------------------------------------

bool Machine::step_scalar(Core& c, AgentSlot& s) {
  if (c.pc >= c.code.size())
    fault(SimError::Kind::PcOutOfRange, c, c.pc,
          "pc " + std::to_string(c.pc) + " is outside the program (" + std::to_string(c.code.size()) +
              " instructions); every core must end with halt");
  if (!c.decode_error[c.pc].empty())
    fault(SimError::Kind::IllegalInstruction, c, c.pc, "illegal instruction: " + c.decode_error[c.pc]);
  const Inst& inst = c.code[c.pc];
  Outcome o = kDispatch[size_t(inst.op)](*this, c, inst);
  if (o.kind == Outcome::Block) {
    s.state = AgentState::Blocked;
    s.blocked_at = s.t;
    return false;
  }
  int64_t cost = timed() ? o.cost : 0, stall = timed() ? o.stall : 0;
  if (cfg.trace && stall > 0) trace.push_back({c.id, 0, s.t, uint64_t(stall), inst.op, c.pc});
  s.t += uint64_t(cost);
  s.stats.busy += uint64_t(cost - stall);
  s.stats.stalled_dep += uint64_t(stall);
  ++s.stats.commands;
  ++c.instret;
  ++instructions;
  if (hazard_mode()) hz_tick(c.id * kNumAgents);
  switch (o.kind) {
    case Outcome::Next: ++c.pc; break;
    case Outcome::Jump: c.pc = o.target; break;
    case Outcome::Halt:
      c.halted = true;
      s.state = AgentState::Done;
      break;
    default: break;
  }
  makespan_ = std::max(makespan_, s.t);
  return true;
}

void Machine::step_engine(Core& c, int e, AgentSlot& s) {
  EngineState& es = c.eng[size_t(e)];
  if (es.queue.empty()) {
    s.state = AgentState::Blocked;
    s.why = BlockReason::EmptyQueue;
    s.blocked_at = s.t;
    return;
  }
  Command& cmd = es.queue.front();
  if (cmd.issue_time > s.t) {  // cannot start before it was issued
    s.t = cmd.issue_time;
    return;  // re-queue at the new time
  }
  int agent = c.id * kNumAgents + e + 1;
  if (cmd.marker) {
    const EngineState& on = c.eng[size_t(cmd.wait_engine)];
    if (on.done < cmd.wait_count) {
      s.state = AgentState::Blocked;
      s.why = BlockReason::Counter;
      s.on_engine = cmd.wait_engine;
      s.on_count = cmd.wait_count;
      s.blocked_at = s.t;
      return;
    }
    uint64_t dep = cmd.wait_count ? on.done_time[cmd.wait_count - 1] : 0;
    if (dep > s.t) {
      s.stats.stalled_dep += dep - s.t;
      s.t = dep;
    }
    if (hazard_mode()) {
      hz_join(agent, cmd.vc);
      if (cmd.wait_count) hz_join(agent, on.done_vc[cmd.wait_count - 1]);
    }
    es.last_pop = s.t;
    es.queue.pop_front();
    check_waiters(c);
    return;
  }
  uint64_t start = s.t;
  if (hazard_mode()) {
    hz_join(agent, cmd.vc);
    hz_tick(agent);
    for (int k = 0; k < cmd.nranges; ++k) hz_access(agent, cmd.ranges[size_t(k)], c, cmd.pc);
  }
  if (functional()) {
    switch (arch::info(cmd.inst.op).unit) {
      case arch::Unit::DmaIn: case arch::Unit::DmaOut: execute_dma(c, cmd); break;
      case arch::Unit::Matrix: execute_matrix(c, cmd); break;
      default: execute_vector(c, cmd); break;
    }
  }
  uint64_t end = start, stall_bw = 0;
  if (timed()) {
    uint64_t data_end = start + uint64_t(cmd.cycles);
    uint64_t drained = data_end;
    if (cmd.occ_ddr) {
      ddr_free_ = std::max(ddr_free_, start) + uint64_t(cmd.occ_ddr);
      drained = std::max(drained, ddr_free_);
    }
    if (cmd.occ_l2) {
      l2_free_ = std::max(l2_free_, start) + uint64_t(cmd.occ_l2);
      drained = std::max(drained, l2_free_);
    }
    stall_bw = drained - data_end;
    end = drained + uint64_t(cmd.latency);
  }
  s.stats.busy += end - start - stall_bw;
  s.stats.stalled_bw += stall_bw;
  ++s.stats.commands;
  ++commands;
  c.counters.macs += cmd.macs;
  c.counters.issued_macs += cmd.issued_macs;
  c.counters.peak_macs += cmd.peak_macs_per_cycle * uint64_t(cmd.cycles);
  if (cmd.nranges) {
    if (arch::info(cmd.inst.op).format == arch::Format::Dma) {
      if (!std::get<arch::DmaDesc>(cmd.desc).fill()) count_bytes(cmd.src_space, cmd.bytes_read, false);
      count_bytes(cmd.dst_space, cmd.bytes_written, true);
    } else {
      count_bytes(Space::L1, cmd.bytes_read, false);
      count_bytes(Space::L1, cmd.bytes_written, true);
    }
  }
  if (cfg.trace) trace.push_back({c.id, e + 1, start, end - start, cmd.inst.op, cmd.pc});
  ++es.done;
  es.done_time.push_back(end);
  if (hazard_mode()) es.done_vc.push_back(hz_snapshot(agent));
  s.t = end;
  makespan_ = std::max(makespan_, end);
  es.last_pop = start;  // the entry is freed when its command starts
  es.queue.pop_front();
  check_waiters(c);
}

std::string Machine::describe_wait(const Core& c) const {
  std::string s = "core " + std::to_string(c.id) + ": ";
  const AgentSlot& sc = slot(c.id, Agent::Scalar);
  if (c.halted) s += "halted";
  else if (sc.state == AgentState::Blocked) {
    s += "front end at pc " + std::to_string(c.pc) + " (`" + inst_text(c, c.pc) + "`) ";
    switch (sc.why) {
      case BlockReason::Counter:
        s += "waits for " + std::string(arch::engine_name(sc.on_engine)) + " counter >= " + std::to_string(sc.on_count) +
             " (it is " + std::to_string(c.eng[size_t(sc.on_engine)].done) + ")";
        break;
      case BlockReason::Barrier: s += "waits at the barrier"; break;
      case BlockReason::QueueFull: s += "waits for room in the " + std::string(arch::engine_name(sc.on_engine)) + " queue"; break;
      case BlockReason::Fence: s += "waits for its queues to drain"; break;
      default: s += "is blocked"; break;
    }
  } else {
    s += "running";
  }
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const AgentSlot& es = slot(c.id, Agent(e + 1));
    if (es.state == AgentState::Blocked && es.why == BlockReason::Counter) {
      const Command& head = c.eng[size_t(e)].queue.front();
      s += "; " + std::string(arch::engine_name(Engine(e))) + " queue (wait from pc " + std::to_string(head.pc) +
           ") waits for " + std::string(arch::engine_name(es.on_engine)) + " counter >= " + std::to_string(es.on_count) +
           " (it is " + std::to_string(c.eng[size_t(es.on_engine)].done) + ")";
    }
  }
  return s;
}

void Machine::deadlock() const {
  std::string msg = "deadlock: no agent can make progress";
  for (const auto& c : cores)
    if (c.active) msg += "\n  " + describe_wait(c);
  throw SimError(SimError::Kind::Deadlock, -1, 0, "", msg);
}

void Machine::run(uint64_t budget, bool throw_on_budget, uint64_t* executed) {
  uint64_t done = 0;
  auto later = [](const HeapEntry& a, const HeapEntry& b) { return a.t != b.t ? a.t > b.t : a.id > b.id; };
  while (true) {
    if (heap_.empty()) {
      if (executed) *executed = done;
      if (finished()) return;
      deadlock();
    }
    std::pop_heap(heap_.begin(), heap_.end(), later);
    HeapEntry top = heap_.back();
    heap_.pop_back();
    AgentSlot& s = slots_[top.id];
    if (top.gen != s.gen || s.state != AgentState::Ready) continue;
    int core = int(top.id) / kNumAgents, a = int(top.id) % kNumAgents;
    Core& c = cores[size_t(core)];
    if (a == int(Agent::Scalar)) {
      for (;;) {
        if (done >= budget) {
          ++s.gen;
          schedule(int(top.id));
          if (executed) *executed = done;
          if (throw_on_budget)
            fault(SimError::Kind::Budget, c, c.pc,
                  "instruction budget of " + std::to_string(budget) + " exhausted before the program finished (runaway loop?)");
          return;
        }
        if (step_scalar(c, s)) ++done;
        if (s.state != AgentState::Ready) break;
        // Keep going while this front end is still the earliest agent.
        while (!heap_.empty()) {
          const HeapEntry& h = heap_.front();
          if (h.gen == slots_[h.id].gen && slots_[h.id].state == AgentState::Ready) break;
          std::pop_heap(heap_.begin(), heap_.end(), later);
          heap_.pop_back();
        }
        if (!heap_.empty() && later(HeapEntry{s.t, top.id, 0}, heap_.front())) {
          schedule(int(top.id));
          break;
        }
      }
    } else {
      step_engine(c, a - 1, s);
      if (s.state == AgentState::Ready) schedule(int(top.id));
    }
  }
}

Stats Machine::stats() const {
  Stats st;
  st.cycles = makespan_;
  st.instructions = instructions;
  st.commands = commands;
  st.ddr_read = ddr_read; st.ddr_written = ddr_written;
  st.l2_read = l2_read; st.l2_written = l2_written;
  st.l1_read = l1_read; st.l1_written = l1_written;
  for (const auto& c : cores) {
    CoreStats cs = c.counters;
    for (int a = 0; a < kNumAgents; ++a) {
      EngineStats e = slot(c.id, Agent(a)).stats;
      uint64_t used = e.busy + e.stalled_dep + e.stalled_bw;
      e.idle = makespan_ > used ? makespan_ - used : 0;
      cs.agents[size_t(a)] = e;
    }
    st.cores.push_back(cs);
  }
  return st;
}

}  // namespace tilecore::sim
