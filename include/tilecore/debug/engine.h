// include/tilecore/debug/engine.h — the debugging engine under tdb.
//
// An Engine attaches to a sim::Simulator as its DebugHook and owns:
//   - stop conditions evaluated inside the simulator's run loop: breakpoints on
//     an instruction mnemonic, a pc (per core or any core), a tile command id
//     per engine, and watchpoints on memory ranges (read, write or access), each
//     with an ignore count and a hit count;
//   - transient stops for one resume (the next command of an engine, a set of
//     pcs), which is how `next dma`, `until` and `finish` run at full speed;
//   - history for reverse execution: the state without memory saved every few
//     thousand instructions (sim::SimState) and a log of every memory write with
//     the bytes it overwrote. Going back restores memory from the log and the
//     rest from the nearest earlier state, then replays forward to the exact
//     instruction count; the simulator is deterministic, so this is exact.
//     The log also answers "which instruction last wrote this address".
//
// Positions count front-end instructions executed since the program was loaded
// (all cores). A stop before an instruction and the end of step(n) leave the
// machine at a canonical point for that position; a watchpoint stops just after
// the access. Conditions, temporary breakpoints and display belong to the
// front end (python/tilecore/tdb), which sees a stop only when one happens.
// Depends on sim and arch only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilecore/sim/debug_hook.h"
#include "tilecore/sim/simulator.h"

namespace tilecore::debug {

enum class StopKind : uint8_t { Mnemonic, Pc, Command, Watch };
enum WatchMode : uint8_t { kWatchRead = 1, kWatchWrite = 2, kWatchAccess = 3 };

/// A breakpoint or watchpoint. `core` -1 means any core.
struct Stop {
  int id = 0;
  StopKind kind = StopKind::Pc;
  bool enabled = true;
  int core = -1;
  arch::Opcode op{};  // Mnemonic
  uint32_t pc = 0;    // Pc
  arch::Engine engine =
      arch::Engine::DmaIn;  // Command: the `command`-th (from 0) issued to `engine`
  uint64_t command = 0;
  arch::Space space =
      arch::Space::DDR;  // Watch: [lo, hi) in `space` (L1 of `core`, or of any core)
  uint64_t lo = 0, hi = 0;
  uint8_t mode = kWatchWrite;
  uint64_t ignore = 0;  // hits still to pass over
  uint64_t hits = 0;    // every hit, ignored ones included
};

/// One stop that fired.
struct Hit {
  int id = 0;  // the Stop, or 0 for a transient stop
  int core = 0;
  uint32_t pc = 0;  // the instruction (or the command's issuing instruction)
  int agent = 0;    // 0 front end, 1 din, 2 dout, 3 mm, 4 vec
  arch::Opcode op{};
  bool write = false;  // watchpoints: the access
  arch::Space space = arch::Space::DDR;
  uint64_t lo = 0, hi = 0;
  uint64_t position = 0;
};

/// A logged memory write.
struct WriteRecord {
  uint64_t position = 0;    // instructions executed before it
  int core = 0, agent = 0;  // agent -1: the host (a debugger's `set`)
  uint32_t pc = 0;
  arch::Opcode op{};
  arch::Space space = arch::Space::DDR;
  int mem_core = 0;
  uint64_t lo = 0, hi = 0;
  uint64_t undo = 0;       // offset of the old bytes in the undo pool
  bool has_bytes = false;  // false when no data moved (timing mode)
};

struct StopReport {
  enum Reason : uint8_t { Step, Breakpoint, Watchpoint, Transient, Finished, HistoryStart };
  Reason reason = Step;
  uint64_t executed = 0;
  std::vector<Hit> hits;
};

/// Transient stops for one resume: before any instruction of the units in
/// `unit_mask` (bit = arch::Unit), or before any pc flagged in `pcs[core]`.
struct Transient {
  uint32_t unit_mask = 0;
  std::vector<std::vector<uint8_t>> pcs;
};

class Engine final : public sim::DebugHook {
 public:
  explicit Engine(sim::Simulator* sim);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Call after load() and writing the inputs: clears the history and starts it here.
  void begin();

  int add_stop(Stop s);      // returns the id (s.id if nonzero)
  void remove_stop(int id);  // throws std::invalid_argument for an unknown id
  Stop& stop_ref(int id);
  const std::vector<Stop>& stops() const { return stops_; }
  void stops_changed();  // after editing a Stop through stop_ref

  /// Runs until a stop fires, `max_instructions` have executed, or the program
  /// finishes. Throws sim::SimError on a fault.
  StopReport resume(uint64_t max_instructions, const Transient& t = {});
  /// Goes back to `position` (>= history_start()); Step report.
  StopReport reverse_to(uint64_t position);
  /// Back to the latest breakpoint or watchpoint hit before the current position.
  StopReport reverse_continue();
  uint64_t position() const { return sim_->instructions(); }
  uint64_t history_start() const;

  /// The last logged write that covers `addr` (L1 of `mem_core` for Space::L1); false if none.
  bool last_write(arch::Space space, int mem_core, uint64_t addr, WriteRecord* out) const;
  /// A host write that reverse execution can undo.
  void host_write(arch::Space space, int mem_core, uint64_t addr, const uint8_t* data, uint64_t n);

  void set_recording(bool on);
  bool recording() const { return recording_; }
  size_t snapshot_count() const { return snaps_.size(); }
  uint64_t log_bytes() const { return pool_.size(); }
  size_t log_size() const { return log_.size(); }
  const std::vector<WriteRecord>& write_log() const { return log_; }

  // sim::DebugHook
  bool before_instruction(int core, uint32_t pc, const arch::Inst* inst,
                          uint64_t position) override;
  void on_access(const sim::MemAccess& a) override;

 private:
  struct Snapshot {
    uint64_t position;
    size_t log_size, pool_size;
    sim::SimState state;
  };
  bool match_instruction(int core, uint32_t pc, const arch::Inst* inst, std::vector<Hit>* out,
                         bool count);
  void take_snapshot();
  void restore(const Snapshot& s);
  void replay_to(uint64_t position, std::vector<Hit>* hits);
  void trim_history();
  void update_wants();  // the DebugHook want_* flags from the stops and the mode

  sim::Simulator* sim_;
  std::vector<Stop> stops_;
  int next_id_ = 1;
  // Fast filters, rebuilt by stops_changed().
  std::array<uint8_t, 256> op_stop_{};         // 1 = some enabled Mnemonic stop
  std::array<uint8_t, 256> op_is_tile_{};      // 1 = the opcode issues a tile command
  std::vector<std::vector<uint8_t>> pc_stop_;  // per core, 1 = some enabled Pc stop
  bool any_pc_stop_any_core_ = false, any_command_stop_ = false, any_watch_ = false;
  // Current resume.
  const Transient* transient_ = nullptr;
  std::vector<Hit> hits_;
  bool transient_hit_ = false;
  uint64_t skip_position_ = UINT64_MAX;  // step over a breakpoint at the position resumed from
  bool fresh_ = true;
  // Replay: stops are collected (not counted) into collect_, nothing stops.
  bool replaying_ = false;
  std::vector<Hit>* collect_ = nullptr;
  // History.
  bool recording_ = true;
  std::vector<Snapshot> snaps_;
  uint64_t interval_ = 4096;
  std::vector<WriteRecord> log_;
  std::vector<uint8_t> pool_;
  uint64_t pool_limit_ = uint64_t(256) << 20;
};

}  // namespace tilecore::debug
