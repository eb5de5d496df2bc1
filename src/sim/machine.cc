// src/sim/machine.cc — loading, the event scheduler, stepping of agents,
// front-end memory access, deadlock reports and statistics.
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
#include <new>

#include "dispatch.h"
#include "fault_text.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::sim {

namespace {

/// Instructions that read and write only their front end's registers and pc (arithmetic,
/// branches, SIMD register operations): no other agent observes them and they observe no
/// other, so a front end runs them when it reaches them, not only while it is the earliest
/// agent; the results and every time are the same as in time order (run_loop).
constexpr bool RegistersOnly(arch::Opcode op) {
  using arch::Opcode;
  switch (op) {
    case Opcode::Nop:
    case Opcode::Add:
    case Opcode::Sub:
    case Opcode::Mul:
    case Opcode::Mulh:
    case Opcode::Mulhu:
    case Opcode::Div:
    case Opcode::Divu:
    case Opcode::Rem:
    case Opcode::Remu:
    case Opcode::And:
    case Opcode::Or:
    case Opcode::Xor:
    case Opcode::Sll:
    case Opcode::Srl:
    case Opcode::Sra:
    case Opcode::Slt:
    case Opcode::Sltu:
    case Opcode::Min:
    case Opcode::Max:
    case Opcode::Minu:
    case Opcode::Maxu:
    case Opcode::Addi:
    case Opcode::Andi:
    case Opcode::Ori:
    case Opcode::Xori:
    case Opcode::Slli:
    case Opcode::Srli:
    case Opcode::Srai:
    case Opcode::Slti:
    case Opcode::Sltiu:
    case Opcode::Muli:
    case Opcode::Li:
    case Opcode::Beq:
    case Opcode::Bne:
    case Opcode::Blt:
    case Opcode::Bge:
    case Opcode::Bltu:
    case Opcode::Bgeu:
    case Opcode::Jal:
    case Opcode::Jalr:
    case Opcode::Vadd:
    case Opcode::Vsub:
    case Opcode::Vmul:
    case Opcode::Vmin:
    case Opcode::Vmax:
    case Opcode::Vand:
    case Opcode::Vor:
    case Opcode::Vxor:
    case Opcode::Vadds:
    case Opcode::Vsubs:
    case Opcode::Vsplat:
    case Opcode::Vcmpeq:
    case Opcode::Vcmplt:
    case Opcode::Vcmple:
    case Opcode::Vsel:
    case Opcode::Vredsum:
    case Opcode::Vredmax:
    case Opcode::Vredmin:
    case Opcode::Vext:
    case Opcode::Vcvt:
    case Opcode::Pwhile:
    case Opcode::Pand:
    case Opcode::Por:
    case Opcode::Pxor:
    case Opcode::Pnot:
      return true;
    default:
      return false;
  }
}

/// Instructions whose effects and inputs stay within their core: an L1 load or store (no
/// other core's agent touches this core's L1), a tile command's issue (its descriptor in
/// L1, its queue this core's), a wait, a fence and a csr read (this core's engines). Such an
/// instruction must follow this core's engines in time order, not the other cores' agents
/// (run_loop).
bool CoreLocal(const Inst& i) {
  using arch::Opcode;
  switch (i.op) {
    case Opcode::Lb:
    case Opcode::Lbu:
    case Opcode::Lh:
    case Opcode::Lhu:
    case Opcode::Lw:
    case Opcode::Sb:
    case Opcode::Sh:
    case Opcode::Sw:
      return Space(i.e) == Space::L1;
    case Opcode::Vld:
    case Opcode::Vst:
      return Space(i.c) == Space::L1;
    case Opcode::Wait:
    case Opcode::Fence:
    case Opcode::Csrr:
      return true;
    default: {
      const arch::Unit u = arch::info(i.op).unit;
      return u == arch::Unit::DmaIn || u == arch::Unit::DmaOut || u == arch::Unit::Matrix ||
             u == arch::Unit::Vector;
    }
  }
}

}  // namespace

using arch::Engine;

// ---- Memory -----------------------------------------------------------------------------------

void Memory::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

// A memory that cannot be had is a usage error naming what was asked for (each size is
// capped, but cores x L1 together may still exceed the host).
Memory::Memory(const SimConfig& cfg) try
    : ddr_(static_cast<uint8_t*>(std::calloc(size_t(cfg.ddr_bytes ? cfg.ddr_bytes : 1), 1))),
      ddr_size_(cfg.ddr_bytes),
      l2_(size_t(cfg.l2_bytes)),
      l1_(size_t(cfg.cores), std::vector<uint8_t>(size_t(cfg.l1_bytes))),
      l1_size_(cfg.l1_bytes) {
  if (!ddr_)
    throw SimError(SimError::Kind::Usage, -1, 0, "",
                   "cannot allocate " + size_text(cfg.ddr_bytes) + " of DDR");
} catch (const std::bad_alloc&) {
  throw SimError(SimError::Kind::Usage, -1, 0, "",
                 "cannot allocate " + size_text(cfg.l2_bytes) + " of L2 and " +
                     std::to_string(cfg.cores) + " x " + size_text(cfg.l1_bytes) + " of L1 (" +
                     std::to_string(cfg.cores) + " cores)");
}

void Memory::clear() {
  std::memset(ddr_.get(), 0, size_t(ddr_size_));
  std::fill(l2_.begin(), l2_.end(), 0);
  for (auto& l : l1_) std::fill(l.begin(), l.end(), 0);
}

// ---- Machine ----------------------------------------------------------------------------------

Machine::Machine(SimConfig c) : cfg(c), mem(c) {
  cores.resize(size_t(cfg.cores));
  for (int i = 0; i < cfg.cores; ++i) {
    cores[size_t(i)].id = i;
    cores[size_t(i)].halted = true;  // nothing to run until load()
  }
  slots_.resize(size_t(cfg.cores * kNumAgents));
  for (auto& s : slots_) s.state = AgentState::Done;
  barrier_arrival_.assign(size_t(cfg.cores), 0);
  at_barrier_.assign(size_t(cfg.cores), false);
  if (hazard_mode()) hz_init();
}

void Machine::load(const arch::Program& p) {
  // Everything is validated before anything is written, so a refused program leaves the
  // memories as they were.
  const uint32_t present = cfg.cores >= 32 ? ~0u : ((1u << cfg.cores) - 1u);
  auto first_core = [](uint32_t mask) {
    int c = 0;
    while (c < 32 && !(mask >> c & 1u)) ++c;
    return c;
  };
  for (const auto& t : p.text) {
    if (t.core_mask == 0)
      throw SimError(SimError::Kind::Usage, -1, 0, "",
                     "program has a text section for no core (core mask 0)");
    if (!t.words.empty() && (t.core_mask & present) == 0) {
      throw SimError(SimError::Kind::Usage, -1, 0, "",
                     "program has code for core " + std::to_string(first_core(t.core_mask)) +
                         "; the simulator has " + std::to_string(cfg.cores) + " cores");
    }
  }
  for (const auto& d : p.data) {
    if (d.space == Space::L1 && !d.bytes.empty() && (d.core_mask & present) == 0) {
      throw SimError(SimError::Kind::Usage, -1, 0, "",
                     "program has L1 data for core " + std::to_string(first_core(d.core_mask)) +
                         "; the simulator has " + std::to_string(cfg.cores) + " cores");
    }
    if (!mem.in_bounds(d.space, d.addr, d.bytes.size())) {
      int core = d.space == Space::L1 ? first_core(d.core_mask & present) : 0;
      throw SimError(SimError::Kind::Usage, -1, 0, "",
                     "data segment " + space_text(d.space, core) + ":" + hex(d.addr) + " (" +
                         std::to_string(d.bytes.size()) + " bytes) does not fit the " +
                         size_text(mem.size(d.space)) + " memory");
    }
  }
  heap_.clear();
  trace.clear();
  hazards.clear();
  ddr_arrays_.clear();
  last_ddr_array_ = 0;
  ddr_limited_ = false;
  ddr_segments_.clear();
  for (const auto& d : p.data) {
    if (d.space == Space::DDR && !d.bytes.empty())
      ddr_segments_.push_back(DdrArray{d.addr, d.bytes.size(), "", 1});
  }
  instructions = commands = work = 0;
  ddr_read = ddr_written = l2_read = l2_written = l1_read = l1_written = 0;
  ddr_free_ = l2_free_ = makespan_ = 0;
  std::fill(at_barrier_.begin(), at_barrier_.end(), false);
  for (const auto& d : p.data) {
    for (int core = 0; core < cfg.cores; ++core) {
      if (d.space == Space::L1 && !(d.core_mask >> core & 1)) continue;
      if (!mem.in_bounds(d.space, d.addr, d.bytes.size()))
        throw SimError(SimError::Kind::Usage, -1, 0, "",
                       "data segment " + space_text(d.space, core) + ":" + hex(d.addr) + " (" +
                           std::to_string(d.bytes.size()) + " bytes) does not fit the " +
                           size_text(mem.size(d.space)) + " memory");
      if (!d.bytes.empty())  // an empty segment's data() may be null: memcpy's UB
        std::memcpy(mem.base(d.space, core) + d.addr, d.bytes.data(), d.bytes.size());
      if (d.space != Space::L1) break;
    }
  }
  for (auto& c : cores) {
    int id = c.id;
    c = Core{};
    c.id = id;
    static const std::vector<uint64_t> kNoWords;
    static const std::vector<int> kNoLines;
    const arch::TextSection* t = p.text_for_core(id);
    const std::vector<uint64_t>& words = t ? t->words : kNoWords;
    const std::vector<int>& lines = t && t->lines.size() == t->words.size() ? t->lines : kNoLines;
    auto known = std::find_if(decoded_.begin(), decoded_.end(), [&](const auto& d) {
      return d->words == words && d->lines == lines;
    });
    if (known != decoded_.end()) {
      c.text = *known;
    } else {
      auto text = std::make_shared<DecodedText>();
      text->words = words;
      text->lines = lines;
      text->code.resize(words.size());
      text->decode_error.resize(words.size());
      text->illegal.assign(words.size(), 0);
      for (size_t k = 0; k < words.size(); ++k) {
        std::string why;
        auto inst = arch::decode(words[k], &why);
        if (inst) {
          text->code[k] = *inst;
        } else {
          text->decode_error[k] = why.empty() ? "illegal instruction" : why;
          text->illegal[k] = 1;
        }
      }
      if (decoded_.size() == kDecodedTexts) decoded_.erase(decoded_.begin());
      decoded_.push_back(text);
      c.text = std::move(text);
    }
    c.words = c.text->words;
    c.lines = c.text->lines;
    c.code = c.text->code;
    c.decode_error = c.text->decode_error;
    c.illegal = c.text->illegal;
    c.active = !c.words.empty();
    for (auto& e : c.eng) e.queue.reset(cfg.queue_depth);
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
  index_pc_regions();
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
  if (s.why != BlockReason::EmptyQueue)
    s.stats.stalled_dep += at > s.blocked_at ? at - s.blocked_at : 0;
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

void Machine::fault(SimError::Kind kind, const Core& c, uint32_t pc,
                    const std::string& reason) const {
  int line = pc < c.lines.size() ? c.lines[pc] : 0;
  throw SimError(kind, c.id, pc, inst_text(c, pc), reason, line);
}

void Machine::count_bytes(Space s, uint64_t n, bool write) {
  switch (s) {
    case Space::DDR:
      (write ? ddr_written : ddr_read) += n;
      break;
    case Space::L2:
      (write ? l2_written : l2_read) += n;
      break;
    case Space::L1:
      (write ? l1_written : l1_read) += n;
      break;
  }
}

void Machine::set_ddr_arrays(std::vector<DdrArray> arrays) {
  ddr_arrays_ = std::move(arrays);
  last_ddr_array_ = 0;
  ddr_limited_ = true;
  ddr_arrays_.insert(ddr_arrays_.end(), ddr_segments_.begin(), ddr_segments_.end());
}

bool Machine::find_ddr_array(uint64_t addr, uint64_t n, bool write) {
  for (size_t k = 0; k < ddr_arrays_.size(); ++k) {
    const DdrArray& a = ddr_arrays_[k];
    if (addr >= a.addr && addr - a.addr <= a.bytes && n <= a.bytes - (addr - a.addr) &&
        (!write || a.writable)) {
      last_ddr_array_ = k;
      return true;
    }
  }
  return false;
}

std::string Machine::outside_ddr_arrays(uint64_t lo, uint64_t hi) const {
  std::string text = "ddr [" + hex(lo) + ", " + hex(hi) + ") is outside the arrays of the call";
  // Name the argument array nearest to the access: the one it ran past (or before).
  const DdrArray* near = nullptr;
  uint64_t best = 0;
  for (const DdrArray& a : ddr_arrays_) {
    if (a.name.empty()) continue;  // a data segment of the program
    uint64_t d = lo >= a.addr ? (lo - a.addr >= a.bytes ? lo - a.addr - a.bytes : 0) : a.addr - lo;
    if (near == nullptr || d < best) near = &a, best = d;
  }
  if (near == nullptr) return text;
  int64_t eb = near->elem_bytes > 0 ? near->elem_bytes : 1;
  int64_t off = int64_t(lo) - int64_t(near->addr);
  int64_t elem = off >= 0 ? off / eb : -((-off + eb - 1) / eb);
  return text + ": element " + std::to_string(elem) + " of `" + near->name + "`, which has " +
         std::to_string(int64_t(near->bytes) / eb) + " elements (ddr [" + hex(near->addr) + ", " +
         hex(near->addr + near->bytes) + "))";
}

std::string Machine::unwritable_ddr(uint64_t lo, uint64_t hi) const {
  for (const DdrArray& a : ddr_arrays_) {
    if (!a.writable && lo >= a.addr && hi <= a.addr + a.bytes)
      return "ddr [" + hex(lo) + ", " + hex(hi) + ") in `" + a.name +
             "`, an argument the kernel only reads (its parameter is not written)";
  }
  return outside_ddr_arrays(lo, hi);
}

uint8_t* Machine::access(Core& c, Space s, uint64_t addr, uint64_t n, uint64_t align, bool write,
                         uint64_t lo, uint64_t len) {
  if (!mem.in_bounds(s, addr, n))
    fault(SimError::Kind::MemoryFault, c, c.pc,
          "out-of-bounds " + std::string(write ? "store to " : "load from ") + space_text(s, c.id) +
              " [" + hex(addr) + ", " + hex(addr + n) + "): the memory is " +
              size_text(mem.size(s)));
  // A load needs only its first byte in an array: a vld reads 32 bytes, and one that begins
  // in the last elements of an array is how masked tail loops read (the lanes past the end
  // are masked off later; reading them changes nothing). The bytes a store writes (its
  // active lanes) must lie wholly inside one.
  if (s == Space::DDR && ddr_limited()) {
    uint64_t from = write ? addr + lo : addr, bytes = write ? std::min(len, n - lo) : 1;
    if (bytes != 0 && !in_ddr_arrays(from, bytes, write))
      fault(SimError::Kind::MemoryFault, c, c.pc,
            write ? "store to " + unwritable_ddr(from, from + bytes)
                  : "load from " + outside_ddr_arrays(from, from + bytes));
  }
  if (addr % align)
    fault(SimError::Kind::MemoryFault, c, c.pc,
          "misaligned " + std::string(write ? "store" : "load") + ": address " + hex(addr) +
              " is not " + std::to_string(align) + "-byte aligned");
  count_bytes(s, n, write);
  if (hazard_mode()) hz_access(c.id * kNumAgents, Range{s, c.id, addr, addr + n, write}, c, c.pc);
  if (dbg && (write ? dbg->want_writes : dbg->want_reads))
    dbg->on_access(MemAccess{s, c.id, addr, addr + n, write, c.id, 0, c.pc, c.code[c.pc].op,
                             mem.base(s, c.id) + addr});
  return mem.base(s, c.id) + addr;
}

uint32_t Machine::csr(Core& c, arch::Csr which) {
  uint64_t t = now(c);
  auto count = [&](Engine e) {
    const auto& dt = c.eng[size_t(e)].done_time;
    return uint32_t(std::upper_bound(dt.begin(), dt.end(), t) - dt.begin());
  };
  switch (which) {
    case arch::Csr::CoreId:
      return uint32_t(c.id);
    case arch::Csr::NCores:
      return uint32_t(cfg.cores);
    case arch::Csr::Cycle:
      return uint32_t(t);
    case arch::Csr::Instret:
      return uint32_t(c.instret);
    case arch::Csr::CntDin:
      return count(Engine::DmaIn);
    case arch::Csr::CntDout:
      return count(Engine::DmaOut);
    case arch::Csr::CntMm:
      return count(Engine::Matrix);
    case arch::Csr::CntVec:
      return count(Engine::Vector);
  }
  return 0;
}

// ---- stepping ---------------------------------------------------------------------------------

bool Machine::step_scalar(Core& c, AgentSlot& s) {
  if (c.pc >= c.code.size())
    fault(SimError::Kind::PcOutOfRange, c, c.pc,
          "pc " + std::to_string(c.pc) + " is outside the program (" +
              std::to_string(c.code.size()) + " instructions); every core must end with halt");
  if (c.illegal[c.pc])
    fault(SimError::Kind::IllegalInstruction, c, c.pc,
          "illegal instruction: " + c.decode_error[c.pc]);
  const Inst& inst = c.code[c.pc];
  Outcome o = kDispatch[size_t(inst.op)](*this, c, inst);
  if (o.kind == Outcome::Block) {
    s.state = AgentState::Blocked;
    s.blocked_at = s.t;
    return false;
  }
  int64_t cost = timed() ? o.cost : 0, stall = timed() ? o.stall : 0;
  if (cfg.trace && stall > 0) trace.push_back({c.id, 0, s.t, uint64_t(stall), inst.op, c.pc});
  note_region(c, c.pc, Agent::Scalar, s.t, s.t + uint64_t(cost), uint64_t(cost - stall));
  s.t += uint64_t(cost);
  s.stats.busy += uint64_t(cost - stall);
  s.stats.stalled_dep += uint64_t(stall);
  ++s.stats.commands;
  ++c.instret;
  ++instructions;
  if (hazard_mode()) hz_tick(c.id * kNumAgents);
  switch (o.kind) {
    case Outcome::Next:
      ++c.pc;
      break;
    case Outcome::Jump:
      c.pc = o.target;
      break;
    case Outcome::Halt:
      c.halted = true;
      s.state = AgentState::Done;
      break;
    default:
      break;
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
    // each operand by the bytes its strides touch: two cores' interleaved rows of one
    // tensor, or a loader's columns beside an mm reading the others, share a bounding
    // range, not a byte
    for (int k = 0; k < cmd.nranges; ++k)
      hz_access(agent, cmd.ranges[size_t(k)], c, cmd.pc,
                size_t(k) < cmd.patterns.size() ? cmd.patterns[size_t(k)] : AccessPattern{});
  }
  work += cmd.work;
  if (cfg.max_work && work > cfg.max_work)
    fault(SimError::Kind::Budget, c, cmd.pc,
          "work budget of " + std::to_string(cfg.max_work) +
              " element operations exhausted by this command");
  if (dbg) {
    for (int k = 0; k < cmd.nranges; ++k) {
      const Range& r = cmd.ranges[size_t(k)];
      if (!(r.write ? dbg->want_writes : dbg->want_reads)) continue;
      dbg->on_access(MemAccess{r.space, r.core, r.lo, r.hi, r.write, c.id, e + 1, cmd.pc,
                               cmd.inst.op,
                               functional() ? mem.base(r.space, r.core) + r.lo : nullptr});
    }
  }
  if (functional()) {
    switch (arch::info(cmd.inst.op).unit) {
      case arch::Unit::DmaIn:
      case arch::Unit::DmaOut:
        execute_dma(c, cmd);
        break;
      case arch::Unit::Matrix:
        execute_matrix(c, cmd);
        break;
      default:
        execute_vector(c, cmd);
        break;
    }
  }
  uint64_t end = start, stall_bw = 0;
  if (timed()) {
    uint64_t data_end = start + uint64_t(cmd.cycles);
    uint64_t drained = data_end;
    if (cmd.occ_ddr) {
      ddr_free_ = std::max(ddr_free_, start) + uint64_t(cmd.occ_ddr);
      drained = std::max(drained, ddr_free_);
      c.counters.ddr_cycles += uint64_t(cmd.occ_ddr);
    }
    if (cmd.occ_l2) {
      l2_free_ = std::max(l2_free_, start) + uint64_t(cmd.occ_l2);
      drained = std::max(drained, l2_free_);
    }
    stall_bw = drained - data_end;
    end = drained + uint64_t(cmd.latency);
  }
  note_region(c, cmd.pc, Agent(e + 1), start, end, end - start - stall_bw,
              timed() ? uint64_t(cmd.occ_ddr) : 0);
  s.stats.busy += end - start - stall_bw;
  s.stats.stalled_bw += stall_bw;
  ++s.stats.commands;
  ++commands;
  c.counters.macs += cmd.macs;
  c.counters.issued_macs += cmd.issued_macs;
  c.counters.peak_macs += cmd.peak_macs_per_cycle * uint64_t(cmd.cycles);
  if (cmd.nranges) {
    if (arch::info(cmd.inst.op).format == arch::Format::Dma) {
      if (!std::get<arch::DmaDesc>(cmd.desc).fill())
        count_bytes(cmd.src_space, cmd.bytes_read, false);
      count_bytes(cmd.dst_space, cmd.bytes_written, true);
    } else {
      count_bytes(Space::L1, cmd.bytes_read, false);
      count_bytes(Space::L1, cmd.bytes_written, true);
    }
  }
  if (cfg.trace)
    trace.push_back(
        {c.id, e + 1, start, end - start, cmd.inst.op, cmd.pc, cmd.occ_ddr, cmd.occ_l2});
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
  if (c.halted)
    s += "halted";
  else if (sc.state == AgentState::Blocked) {
    s += "front end at pc " + std::to_string(c.pc) + " (`" + inst_text(c, c.pc) + "`) ";
    switch (sc.why) {
      case BlockReason::Counter:
        s += "waits for " + std::string(arch::engine_name(sc.on_engine)) +
             " counter >= " + std::to_string(sc.on_count) + " (it is " +
             std::to_string(c.eng[size_t(sc.on_engine)].done) + ")";
        break;
      case BlockReason::Barrier:
        s += "waits at the barrier";
        break;
      case BlockReason::QueueFull:
        s += "waits for room in the " + std::string(arch::engine_name(sc.on_engine)) + " queue";
        break;
      case BlockReason::Fence:
        s += "waits for its queues to drain";
        break;
      default:
        s += "is blocked";
        break;
    }
  } else {
    s += "running";
  }
  for (int e = 0; e < arch::kNumEngines; ++e) {
    const AgentSlot& es = slot(c.id, Agent(e + 1));
    if (es.state == AgentState::Blocked && es.why == BlockReason::Counter) {
      const Command& head = c.eng[size_t(e)].queue.front();
      s += "; " + std::string(arch::engine_name(Engine(e))) + " queue (wait from pc " +
           std::to_string(head.pc) + ") waits for " + std::string(arch::engine_name(es.on_engine)) +
           " counter >= " + std::to_string(es.on_count) + " (it is " +
           std::to_string(c.eng[size_t(es.on_engine)].done) + ")";
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
  // Two instances of one loop: without a debugger the checks are compiled out.
  if (dbg)
    run_loop<true>(budget, throw_on_budget, executed);
  else
    run_loop<false>(budget, throw_on_budget, executed);
}

template <bool kDebug>
void Machine::run_loop(uint64_t budget, bool throw_on_budget, uint64_t* executed) {
  uint64_t done = 0;
  auto later = [](const HeapEntry& a, const HeapEntry& b) {
    return a.t != b.t ? a.t > b.t : a.id > b.id;
  };
  // Whether the agent `id` at time `t` would be the next the heap pops (its stale entries
  // dropped first): then it runs on without the push and the pop.
  auto earliest = [&](uint64_t t, uint32_t id) {
    while (!heap_.empty()) {
      const HeapEntry& h = heap_.front();
      if (h.gen == slots_[h.id].gen && slots_[h.id].state == AgentState::Ready) break;
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
    }
    return heap_.empty() || !later(HeapEntry{t, id, 0}, heap_.front());
  };
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
                  "instruction budget of " + std::to_string(budget) +
                      " exhausted before the program finished (runaway loop?)");
          return;
        }
        if constexpr (kDebug) {
          if (dbg->want_instructions) {
            const Inst* inst =
                c.pc < c.code.size() && c.decode_error[c.pc].empty() ? &c.code[c.pc] : nullptr;
            if (dbg->before_instruction(c.id, c.pc, inst, instructions)) {
              dbg->stop = true;  // stop before this instruction
              schedule(int(top.id));
              if (executed) *executed = done;
              return;
            }
          }
        }
        if (step_scalar(c, s)) ++done;
        if (kDebug && dbg->stop) {  // an access asked to stop: end after this instruction
          if (s.state == AgentState::Ready) schedule(int(top.id));
          if (executed) *executed = done;
          return;
        }
        if (s.state != AgentState::Ready) break;
        if constexpr (!kDebug) {
          // (not with a trace or the hazard check, which record in the order agents run)
          if (c.pc < c.code.size() && !cfg.trace && !hazard_mode()) {
            const Inst& next = c.code[c.pc];
            if (RegistersOnly(next.op)) continue;
            // A core-local instruction waits only for this core's engines that are earlier
            // (the front end goes first at an equal time: its id is the core's lowest).
            if (CoreLocal(next)) {
              bool engine_earlier = false;
              for (int e = 1; e < kNumAgents; ++e) {
                const AgentSlot& es = slots_[top.id + uint32_t(e)];
                engine_earlier = engine_earlier || (es.state == AgentState::Ready && es.t < s.t);
              }
              if (!engine_earlier) continue;
            }
          }
        }
        // Keep going while this front end is still the earliest agent.
        if (!earliest(s.t, top.id)) {
          schedule(int(top.id));
          break;
        }
      }
    } else {
      for (;;) {
        step_engine(c, a - 1, s);
        if (kDebug && dbg->stop) {
          if (s.state == AgentState::Ready) schedule(int(top.id));
          if (executed) *executed = done;
          return;
        }
        if (s.state != AgentState::Ready) break;
        // Keep going while this engine is still the earliest agent, as the front end does.
        if (!earliest(s.t, top.id)) {
          schedule(int(top.id));
          break;
        }
      }
    }
  }
}

Stats Machine::stats() const {
  Stats st;
  st.cycles = makespan_;
  st.instructions = instructions;
  st.commands = commands;
  st.ddr_read = ddr_read;
  st.ddr_written = ddr_written;
  st.l2_read = l2_read;
  st.l2_written = l2_written;
  st.l1_read = l1_read;
  st.l1_written = l1_written;
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
  st.regions = region_stats_;
  return st;
}

}  // namespace tilecore::sim
