// src/sim/machine.h — internal state of the simulator (not installed).
//
// Machine owns the memories, the per-core state (front end + four engines)
// and the event scheduler. Front-end semantics (semantics_*.h) and the engine
// implementations (*_engine.cc) operate on it. Agents are numbered
// core * 5 + Agent; the scheduler always runs the agent with the smallest
// (clock, id), which is what makes every run deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "tilecore/arch/cost.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/isa.h"
#include "tilecore/arch/program.h"
#include "tilecore/sim/config.h"
#include "tilecore/sim/debug_hook.h"
#include "tilecore/sim/sim_error.h"
#include "tilecore/sim/simulator.h"
#include "tilecore/sim/stats.h"

namespace tilecore::sim {

using arch::DType;
using arch::Inst;
using arch::Opcode;
using arch::Space;

// ---- memories ---------------------------------------------------------------------------------

class Memory {
 public:
  Memory(const SimConfig& cfg);
  uint8_t* base(Space s, int core) {
    return s == Space::DDR ? ddr_.get() : s == Space::L2 ? l2_.data() : l1_[size_t(core)].data();
  }
  const uint8_t* base(Space s, int core) const { return const_cast<Memory*>(this)->base(s, core); }
  uint64_t size(Space s) const {
    return s == Space::DDR ? ddr_size_ : s == Space::L2 ? l2_.size() : l1_size_;
  }
  bool in_bounds(Space s, uint64_t addr, uint64_t n) const {
    return addr <= size(s) && n <= size(s) - addr;
  }
  void clear();

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], FreeDeleter> ddr_;  // calloc'd: pages stay untouched until used
  uint64_t ddr_size_;
  std::vector<uint8_t> l2_;
  std::vector<std::vector<uint8_t>> l1_;
  uint64_t l1_size_;
};

/// A byte range one command or instruction touches (for bounds and hazards).
struct Range {
  Space space = Space::L1;
  int core = 0;  // for L1
  uint64_t lo = 0, hi = 0;
  bool write = false;
};

/// Whether two byte ranges of one memory share a byte (their spaces are the caller's to match).
inline bool Overlap(const Range& a, const Range& b) { return a.lo < b.hi && b.lo < a.hi; }

/// The bytes a strided access touches (an operand of a tile command): element `es` bytes at
/// `base` plus sum(i_k * stride_k) * es over the shape. Without one, an access is its whole
/// range.
struct AccessPattern {
  bool valid = false;
  int rank = 1, es = 1;
  uint64_t base = 0;
  std::array<uint32_t, 4> shape{1, 1, 1, 1};
  std::array<int32_t, 4> stride{0, 0, 0, 0};
};

// ---- tile commands ----------------------------------------------------------------------------

/// A tile command as the front end snapshotted it at issue: registers and the
/// descriptor are read then, so later writes to them do not affect it.
struct Command {
  Inst inst;
  uint32_t pc = 0;
  uint64_t issue_time = 0;
  bool marker = false;  // a `wait <queue>, ...` entry
  arch::Engine wait_engine = arch::Engine::DmaIn;
  uint32_t wait_count = 0;
  uint32_t addr[3] = {0, 0, 0};  // dst, a (DMA: src), b
  Space dst_space = Space::L1, src_space = Space::L1;
  std::variant<std::monostate, arch::DmaDesc, arch::VecDesc, arch::MmDesc> desc;
  int64_t cycles = 0;               // engine cycles without bandwidth stalls
  int64_t latency = 0;              // DMA: added after the data phase
  int64_t occ_ddr = 0, occ_l2 = 0;  // DMA: shared-level occupancy (cycles)
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t macs = 0, issued_macs = 0, peak_macs_per_cycle = 0;
  uint64_t work = 0;              // host work: elements, or MACs for mm
  std::array<Range, 8> ranges{};  // mm with every epilogue input uses 7
  int nranges = 0;
  std::vector<AccessPattern> patterns;  // HazardCheck: ranges[k]'s bytes (empty otherwise)
  uint32_t vc = 0;                      // HazardCheck: index of the issuer's clock snapshot

  /// Every field as a new Command's but the `ranges` past `nranges`, which are never read: a
  /// queue slot reused in place (CommandQueue::stage) rather than a new command of some
  /// 500 bytes built and copied in for each one issued. (A field added above is reset here.)
  void reset() {
    inst = Inst{};
    pc = 0;
    issue_time = 0;
    marker = false;
    wait_engine = arch::Engine::DmaIn;
    wait_count = 0;
    addr[0] = addr[1] = addr[2] = 0;
    dst_space = src_space = Space::L1;
    desc = std::monostate{};
    cycles = latency = occ_ddr = occ_l2 = 0;
    bytes_read = bytes_written = 0;
    macs = issued_macs = peak_macs_per_cycle = 0;
    work = 0;
    nranges = 0;
    patterns.clear();
    vc = 0;
  }
};

// ---- per-core state ---------------------------------------------------------------------------

enum class AgentState : uint8_t { Ready, Blocked, Done };

enum class BlockReason : uint8_t { None, EmptyQueue, Counter, Barrier, QueueFull, Fence };

struct AgentSlot {
  uint64_t t = 0;    // local clock: when this agent can act next
  uint32_t gen = 0;  // heap entries with an older gen are stale
  AgentState state = AgentState::Ready;
  BlockReason why = BlockReason::None;
  arch::Engine on_engine = arch::Engine::DmaIn;  // Counter / QueueFull
  uint32_t on_count = 0;
  uint64_t blocked_at = 0;
  EngineStats stats;
};

/// A bounded FIFO of commands in one allocation. Rationale: the queue depth is
/// fixed by the config, and std::deque allocates per element for types this
/// large, which dominated timing-only simulation.
class CommandQueue {
 public:
  void reset(int capacity) {
    slots_.assign(size_t(capacity), Command{});
    head_ = size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  Command& front() { return slots_[head_]; }
  const Command& front() const { return slots_[head_]; }
  const Command& at(size_t k) const { return slots_[(head_ + k) % slots_.size()]; }
  /// The slot past the last command, reset (Command::reset) for the caller to fill; push()
  /// enters it. A command abandoned before push() (a fault at issue) is not in the queue.
  /// **IMPORTANT**: callers check size() < capacity first (the front end stalls).
  Command& stage() {
    Command& c = slots_[(head_ + size_) % slots_.size()];
    c.reset();
    return c;
  }
  void push() { ++size_; }
  void pop_front() {
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }

 private:
  std::vector<Command> slots_;
  size_t head_ = 0, size_ = 0;
};

/// A text section's words, their source lines and their decoding (Core::text).
struct DecodedText {
  std::vector<uint64_t> words;
  std::vector<int> lines;
  std::vector<Inst> code;
  std::vector<std::string> decode_error;
  std::vector<uint8_t> illegal;  // decode_error[pc] is not empty (a byte the front end checks)
};

struct EngineState {
  CommandQueue queue;
  uint64_t done = 0;                // completion counter
  uint64_t last_pop = 0;            // when the head entry last left the queue (it starts)
  std::vector<uint64_t> done_time;  // done_time[k] = completion time of command k+1
  std::vector<uint32_t> done_vc;    // HazardCheck: clock snapshot at each completion
};

struct Core {
  int id = 0;
  bool active = false;  // has code
  std::array<uint32_t, 32> x{};
  std::array<std::array<uint8_t, 32>, 32> v{};
  std::array<uint32_t, 8> p{};
  uint32_t pc = 0;
  uint64_t instret = 0;
  bool halted = false;
  bool barrier_released = false;
  // The core's text section decoded, shared with the machine's cache of decoded texts (a
  // model launches the same kernels again and again: each load was a copy of all of it)
  std::shared_ptr<const DecodedText> text;
  std::span<const uint64_t> words;            // text->words (the Program may go away)
  std::span<const int> lines;                 // source line per word, when assembled from text
  std::span<const Inst> code;                 // pre-decoded
  std::span<const std::string> decode_error;  // non-empty for words that do not decode
  std::span<const uint8_t> illegal;           // per word: it does not decode
  std::array<EngineState, arch::kNumEngines> eng;
  CoreStats counters;           // macs
  std::vector<int32_t> region;  // pc region of each pc (-1: none); empty without regions
};

/// HazardCheck state (hazard.cc): vector clocks and the recent-access window.
struct HazardState {
  int n = 0;
  std::vector<std::vector<uint32_t>> vc;
  std::vector<std::vector<uint32_t>> snaps;
  struct Rec {
    Range r;
    int agent;
    uint32_t epoch;
    uint32_t pc;
    int core;
    AccessPattern pattern;
    // the pattern's bytes as sorted disjoint [lo, hi) runs, made when first compared
    std::vector<std::pair<uint64_t, uint64_t>> runs;
  };
  // rings of the most recent accesses, one per memory (L1: one per core) and agent, so
  // that an access is compared only with other agents' to the same memory
  struct Log {
    std::vector<Rec> recs;
    size_t next = 0;
  };
  std::vector<Log> logs;
  std::set<std::tuple<int, uint32_t, int, uint32_t>> seen;
};

/// Result of executing one front-end instruction.
struct Outcome {
  enum Kind : uint8_t { Next, Jump, Block, Halt } kind = Next;
  uint32_t target = 0;
  int64_t cost = 1;   // cycles including stall
  int64_t stall = 0;  // part of cost spent waiting (stalled_dep)
};

class Machine {
 public:
  explicit Machine(SimConfig cfg);

  // Public-API helpers.
  void load(const arch::Program& p);
  void run(uint64_t budget, bool throw_on_budget, uint64_t* executed);
  bool finished() const;
  Stats stats() const;
  std::string trace_json() const;
  std::vector<sim::TraceEvent> trace_events() const;  // `trace` as Simulator gives it

  // ---- used by semantics and engines ----
  [[noreturn]] void fault(SimError::Kind kind, const Core& c, uint32_t pc,
                          const std::string& reason) const;
  std::string inst_text(const Core& c, uint32_t pc) const;
  /// Checks a front-end access and returns its host pointer. A masked store writes only
  /// bytes [addr + lo, addr + lo + len) of its n (the part that must lie in a call's array).
  uint8_t* access(Core& c, Space s, uint64_t addr, uint64_t n, uint64_t align, bool write,
                  uint64_t lo = 0, uint64_t len = ~uint64_t(0));
  /// The DDR arrays of the current call (Simulator::set_ddr_arrays); none: all of DDR.
  void set_ddr_arrays(std::vector<DdrArray> arrays);
  bool ddr_limited() const { return ddr_limited_; }
  /// Whether [addr, addr + n) lies inside one array (or DDR data segment) of the call.
  /// A write needs an array the call may write (DdrArray::writable).
  bool in_ddr_arrays(uint64_t addr, uint64_t n, bool write = false) {
    if (ddr_arrays_.empty()) return false;
    const DdrArray& last = ddr_arrays_[last_ddr_array_];  // most accesses hit the last one
    if (addr >= last.addr && addr - last.addr <= last.bytes &&
        n <= last.bytes - (addr - last.addr) && (!write || last.writable))
      return true;
    return find_ddr_array(addr, n, write);
  }
  /// "ddr [lo, hi) is outside the arrays of the call: element 64 of `b`, which has ..."
  std::string outside_ddr_arrays(uint64_t lo, uint64_t hi) const;
  /// The fault text of a write into [lo, hi) that in_ddr_arrays refused: the read-only
  /// argument it lies in, or outside_ddr_arrays.
  std::string unwritable_ddr(uint64_t lo, uint64_t hi) const;
  uint64_t ddr_epoch = 0;     // Simulator::ddr_epoch
  std::thread::id ddr_owner;  // Simulator::own_ddr (none: no owner)
  uint64_t foreign_ddr_changes = 0;
  void note_ddr_change() {
    ++ddr_epoch;
    if (ddr_owner != std::thread::id() && ddr_owner != std::this_thread::get_id())
      ++foreign_ddr_changes;
  }
  /// Issues a tile command (validated, costed) or returns Block when the queue is full.
  Outcome issue(Core& c, const Inst& i);
  Outcome wait_instruction(Core& c, const Inst& i);
  Outcome barrier(Core& c);
  /// hcall: hands the call block's L1 address to the host (Simulator::set_host_call);
  /// a fault when no host services calls. Whatever the host throws propagates.
  void host_call(Core& c, uint32_t block);
  std::function<void(int core, uint32_t block)> host_call_fn;
  Outcome fence(Core& c);
  uint32_t csr(Core& c, arch::Csr which);
  uint64_t now(const Core& c) const { return slot(c.id, Agent::Scalar).t; }

  AgentSlot& slot(int core, Agent a) { return slots_[size_t(core * kNumAgents + int(a))]; }
  const AgentSlot& slot(int core, Agent a) const {
    return slots_[size_t(core * kNumAgents + int(a))];
  }

  SimConfig cfg;
  Memory mem;
  std::vector<Core> cores;
  std::vector<Hazard> hazards;
  bool functional() const { return cfg.mode != Mode::Timing; }
  bool timed() const { return cfg.mode != Mode::Functional; }
  bool hazard_mode() const { return cfg.mode == Mode::HazardCheck; }

  // Bytes per level (front end + DMA).
  uint64_t ddr_read = 0, ddr_written = 0, l2_read = 0, l2_written = 0, l1_read = 0, l1_written = 0;
  void count_bytes(Space s, uint64_t n, bool write);

  // Engine implementations (dma_engine.cc, vector_engine.cc, matrix_engine.cc).
  void execute_dma(Core& c, const Command& cmd);
  void execute_vector(Core& c, const Command& cmd);
  void execute_matrix(Core& c, const Command& cmd);

  // HazardCheck (hazard.cc).
  std::unique_ptr<HazardState> hz;
  void hz_init();
  void hz_tick(int agent);          // a new event of `agent`
  uint32_t hz_snapshot(int agent);  // returns snapshot id
  void hz_join(int agent, uint32_t snapshot);
  void hz_access(int agent, const Range& r, const Core& c, uint32_t pc,
                 const AccessPattern& pattern = AccessPattern{});
  void hz_barrier(const std::vector<int>& cores);
  void hz_report(const HazardState::Rec& rec, int agent, const Range& r, const Core& c,
                 uint32_t pc);  // a hazard between `rec` and this access

  struct TraceEvent {
    int core;
    int agent;
    uint64_t start, dur;
    Opcode op;
    uint32_t pc;
    int64_t occ_ddr = 0, occ_l2 = 0;  // DMA: cycles of the shared levels' bandwidth it took
  };
  std::vector<TraceEvent> trace;

  uint64_t instructions = 0, commands = 0, work = 0;

  // Pc regions (pc_regions.cc, Simulator::set_pc_regions).
  void set_pc_regions(std::vector<PcRegion> regions);
  void index_pc_regions();  // each core's `region` table and zeroed figures (at load)
  /// Adds an instruction or command of `c` at `pc` on `agent`, running [start, end) with
  /// `busy` cycles of it busy and `ddr_cycles` of the DDR's bandwidth taken, to its region's
  /// figures.
  void note_region(const Core& c, uint32_t pc, Agent agent, uint64_t start, uint64_t end,
                   uint64_t busy, uint64_t ddr_cycles = 0) {
    if (pc >= c.region.size() || c.region[pc] < 0) return;
    RegionStats& r = region_stats_[size_t(c.region[pc])];
    RegionStats::Span& span = r.cores[size_t(c.id)];
    span.first = std::min(span.first, start);
    span.last = std::max(span.last, end);
    r.core_busy[size_t(c.id)][size_t(agent)] += busy;
    r.ddr_cycles += ddr_cycles;
    ++(agent == Agent::Scalar ? r.instructions : r.commands);
  }

  // execute_matrix's accumulator tile, kept between commands (not allocated and zeroed for
  // each)
  std::vector<int32_t> mm_acc_i_;
  std::vector<float> mm_acc_f_;

  // Debugging (debug_state.cc). `dbg` is null unless a debugger is attached.
  DebugHook* dbg = nullptr;
  SimState save_state() const;
  void restore_state(const SimState& s);
  std::string describe_core(const Core& c) const { return describe_wait(c); }

 private:
  template <bool kDebug>
  void run_loop(uint64_t budget, bool throw_on_budget, uint64_t* executed);
  void schedule(int agent);
  void wake(int agent, uint64_t at);
  bool step_scalar(Core& c, AgentSlot& s);
  void step_engine(Core& c, int e, AgentSlot& s);
  void after_completion(Core& c, int e, uint64_t end);
  void check_waiters(Core& c);
  [[noreturn]] void deadlock() const;
  std::string describe_wait(const Core& c) const;

  struct HeapEntry {
    uint64_t t;
    uint32_t id;
    uint32_t gen;
  };
  std::vector<HeapEntry> heap_;
  std::vector<AgentSlot> slots_;
  // The decoded text of the programs loaded last (a model launches the same few kernels
  // again and again): found by their words, so a new program with other words decodes
  std::vector<std::shared_ptr<const DecodedText>> decoded_;
  static constexpr size_t kDecodedTexts = 64;
  std::vector<uint64_t> barrier_arrival_;
  std::vector<bool> at_barrier_;
  bool find_ddr_array(uint64_t addr, uint64_t n, bool write);
  std::vector<DdrArray> ddr_arrays_;  // the call's arrays, then the DDR data segments
  size_t last_ddr_array_ = 0;
  bool ddr_limited_ = false;
  std::vector<DdrArray> ddr_segments_;   // of the loaded program
  uint64_t ddr_free_ = 0, l2_free_ = 0;  // fluid bandwidth model: when each shared level drains
  uint64_t makespan_ = 0;
  std::vector<PcRegion> pc_regions_;
  std::vector<RegionStats> region_stats_;
};

}  // namespace tilecore::sim
