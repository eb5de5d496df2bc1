// include/tilecore/sim/sim_error.h — a fault raised by a simulated program.
//
// Every way a program can go wrong (illegal instruction, out-of-bounds or
// misaligned access, bad descriptor, deadlock, exhausted instruction budget)
// ends the run with a SimError; none crashes the host. A fault tied to one
// instruction names its core, pc and text; a deadlock names no instruction and
// lists what every core is waiting for.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tilecore::sim {

class SimError : public std::runtime_error {
 public:
  enum class Kind {
    IllegalInstruction,
    MemoryFault,
    BadDescriptor,
    Deadlock,
    Budget,
    PcOutOfRange,
    Usage
  };

  /// `core` < 0 when the fault is not tied to one core (deadlock, usage);
  /// `line` is the assembly source line of the instruction, 0 when unknown.
  SimError(Kind kind, int core, int64_t pc, std::string instruction, std::string reason,
           int line = 0)
      : std::runtime_error(render(core, pc, instruction, reason, line)),
        kind_(kind),
        core_(core),
        pc_(pc),
        line_(line),
        instruction_(std::move(instruction)),
        reason_(std::move(reason)) {}

  Kind kind() const { return kind_; }
  int core() const { return core_; }
  int64_t pc() const { return pc_; }
  int line() const { return line_; }
  const std::string& instruction() const { return instruction_; }
  const std::string& reason() const { return reason_; }

 private:
  static std::string render(int core, int64_t pc, const std::string& inst,
                            const std::string& reason, int line) {
    std::string s;
    if (core >= 0) {
      s = "core " + std::to_string(core) + ", pc " + std::to_string(pc);
      if (line > 0) s += ", line " + std::to_string(line);
      if (!inst.empty()) s += " (`" + inst + "`)";
      s += ": ";
    }
    return s + reason;
  }
  Kind kind_;
  int core_;
  int64_t pc_;
  int line_;
  std::string instruction_, reason_;
};

}  // namespace tilecore::sim
