// include/tilecore/sim/simulator.h — the TC1 simulator (the "cmodel").
//
// Runs a Program on 1..16 cores: each core's front end executes scalar and SIMD
// instructions and issues tile commands into four in-order queues (DMA-in,
// DMA-out, matrix, vector), which run in parallel and synchronise through
// completion counters and the cluster barrier. Timing is event-driven: every
// agent (front end or engine) has a local clock and the agent with the earliest
// clock acts next (ties: lower core, then sc, din, dout, mm, vec), so results and
// cycle counts are deterministic. Costs come from arch/cost.h.
//
// Typical use:
//   Simulator sim(SimConfig{.cores = 4});
//   sim.load(arch::assemble(text));
//   sim.write(Space::DDR, 0x1000, bytes);
//   sim.run();                       // throws SimError on any fault
//   auto out = sim.read(Space::DDR, 0x2000, n);
//   std::cout << sim.stats().to_string();
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tilecore/arch/program.h"
#include "tilecore/sim/config.h"
#include "tilecore/sim/debug_hook.h"
#include "tilecore/sim/sim_error.h"
#include "tilecore/sim/stats.h"

namespace tilecore::sim {

class Machine;

/// One array a call hands to a program (Simulator::set_ddr_arrays).
struct DdrArray {
  uint64_t addr = 0;
  uint64_t bytes = 0;
  std::string name;      // the parameter, for messages
  int elem_bytes = 1;    // to name the element an access reaches
  bool writable = true;  // false: a store or DMA into it faults (an argument the kernel only reads)
};

/// One event of the trace (config.trace): a tile command on its engine, or a stall of a core's
/// front end (agent 0, sc: the instruction it waited at), from the last load().
struct TraceEvent {
  int core = 0;
  int agent = 0;  // Agent: sc, din, dout, mm, vec
  uint64_t start = 0, cycles = 0;
  std::string mnemonic;
  uint32_t pc = 0;
  int64_t ddr_cycles = 0, l2_cycles = 0;  // a DMA's: what it took of the shared levels
};

/// Appends `e` to `json` as a Chrome/Perfetto complete event (",\n{...}": its mnemonic on
/// its core's agent track, its pc, a DMA's DDR and L2 cycles), `offset` cycles later than it
/// ran (Simulator::trace_json's events; a run's trace, where each step starts later).
void AppendTraceEvent(std::string* json, const TraceEvent& e, uint64_t offset = 0);

/// Instructions [begin, end) of `core`'s text make up region `region` (Simulator::set_pc_regions).
struct PcRegion {
  int core = 0;
  uint32_t begin = 0, end = 0;
  int region = 0;  // 0 .. kMaxPcRegions - 1
};

class Simulator {
 public:
  static constexpr uint64_t kDefaultBudget = 1'000'000'000;

  explicit Simulator(SimConfig config = {});
  ~Simulator();
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;

  const SimConfig& config() const;

  /// Loads a program: resets every core (registers, pc 0, queues, counters,
  /// clocks, statistics) and writes its data segments. Memory contents outside
  /// those segments are kept, so inputs may be written before or after load().
  /// Throws SimError(Usage) if a data segment does not fit its memory.
  void load(const arch::Program& program);

  /// Host access to memory. `core` selects the L1 for Space::L1. Throws
  /// SimError(Usage) naming the range when it is out of bounds.
  void write(arch::Space space, uint64_t addr, std::span<const uint8_t> bytes, int core = 0);
  /// Counts the calls that may change DDR: write() to DDR, load(), run() and step(). Equal
  /// values at two moments mean DDR holds the same bytes (a runtime keeps an executable's
  /// constants in place between its runs when nothing else ran or wrote in between).
  uint64_t ddr_epoch() const;
  /// While a thread owns DDR (own_ddr(true) on it, until own_ddr(false)), those calls made by
  /// any other thread are also counted in foreign_ddr_changes(): a runtime run owns it to
  /// know that only its own steps changed DDR while it ran.
  void own_ddr(bool on);
  uint64_t foreign_ddr_changes() const;
  /// Whether the current call may write DDR [addr, addr + n): no limit set, or the range lies
  /// in an array the call writes (set_ddr_arrays).
  bool ddr_writable(uint64_t addr, uint64_t n);
  std::vector<uint8_t> read(arch::Space space, uint64_t addr, uint64_t nbytes, int core = 0) const;
  void read_into(arch::Space space, uint64_t addr, std::span<uint8_t> out, int core = 0) const;

  /// Limits the program's DDR accesses to `arrays` (and its own DDR data segments) until
  /// the next load(): a scalar or SIMD load or store, or a DMA, that touches DDR outside
  /// them faults (SimError, MemoryFault) naming the array it ran past and the element
  /// (a scalar or SIMD load needs only to begin in an array: a full-width vld of a masked
  /// tail reads past the end without effect).
  /// The runtime sets the arrays of each kernel call, so a kernel that indexes past the
  /// end of an argument cannot write into another array. load() lifts the limit.
  void set_ddr_arrays(std::vector<DdrArray> arrays);

  /// Measures what the code of each region costs: from now until the next call, every
  /// front-end instruction and tile command whose pc lies in a region adds its busy cycles
  /// (per core), the DDR cycles of a DMA command and its start and end to that
  /// region's RegionStats (stats().regions, counted from the
  /// last load(); a pc in no region counts toward none, a pc in several toward the last
  /// listed). The regions outlast load(), so they can be set before a runtime call loads
  /// its kernel; an empty list ends the measurement. A lookup per instruction and command.
  /// Throws SimError(Usage) for a core outside the simulator, begin > end or a region
  /// outside 0 .. kMaxPcRegions - 1. restore_state() leaves the regions' figures as they are.
  static constexpr int kMaxPcRegions = 1 << 16;
  void set_pc_regions(std::vector<PcRegion> regions);

  /// Runs until every core has halted and every queue has drained. Throws
  /// SimError on a fault, on deadlock and when more than `max_instructions`
  /// front-end instructions (all cores together) execute in this call.
  void run(uint64_t max_instructions = kDefaultBudget);

  /// Executes up to `n` front-end instructions (all cores together, in
  /// simulation order) and the engine work that precedes them; returns how many
  /// ran (fewer when the program finishes).
  uint64_t step(uint64_t n = 1);

  /// True when every core has halted and all queues are empty.
  bool finished() const;

  /// Statistics so far (idle cycles are computed against the current makespan).
  Stats stats() const;
  /// Hazards found so far (HazardCheck mode only).
  const std::vector<Hazard>& hazards() const;

  /// Chrome / Perfetto trace of the tile commands (config.trace must be on).
  std::string trace_json() const;
  /// The same events (empty when config.trace is off).
  std::vector<TraceEvent> trace_events() const;
  void write_trace(const std::string& path) const;

  // ---- state for debuggers ----------------------------------------------------------------
  int cores() const;
  uint32_t xreg(int core, int r) const;
  void set_xreg(int core, int r, uint32_t value);
  std::array<uint8_t, 32> vreg(int core, int r) const;
  uint32_t preg(int core, int r) const;
  int64_t pc(int core) const;
  /// Text of the instruction at `pc` of `core` ("" past the end) and its
  /// assembly source line (0 when unknown).
  std::string instruction_at(int core, int64_t pc) const;
  int source_line(int core, int64_t pc) const;
  bool halted(int core) const;
  uint64_t cycle() const;  // the current simulation time

  /// Services `hcall`: `fn(core, block)` runs in the front end of `core` with the
  /// L1 address of the call block (docs/tc1.md, "Host calls"); it may read and write
  /// simulator memory. An exception it throws ends the run and reaches the caller of
  /// run()/step(). Without a handler, hcall faults.
  void set_host_call(std::function<void(int core, uint32_t block)> fn);

  // ---- for the debug layer (src/sim/debug_state.cc) ---------------------------------------
  /// Attaches `hook` (nullptr detaches); it is called from run() and step(), see debug_hook.h.
  void set_debug_hook(DebugHook* hook);
  /// Everything but memory contents; restore_state() accepts only states of the
  /// current load() (throws SimError(Usage) otherwise) and does not touch memory.
  SimState save_state() const;
  void restore_state(const SimState& s);
  uint64_t instructions() const;  // front-end instructions executed since load(), all cores
  uint64_t issued(int core, arch::Engine e) const;     // tile commands issued to an engine
  uint64_t completed(int core, arch::Engine e) const;  // its completion counter
  size_t queued(int core, arch::Engine e) const;       // queue entries, wait markers included
  std::string describe_core(int core) const;           // what the core and its queues wait for

 private:
  std::unique_ptr<Machine> m_;
};

}  // namespace tilecore::sim
