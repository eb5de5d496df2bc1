// include/tilecore/codegen/npu/registers.h — register pools and spill slots of the npu code
// generator.
//
// A RegisterPool hands out the registers of one class (x, v or p) in a range the
// code generator reserves for values (the rest are fixed scratch and counters,
// see npu/emitter.h); the ranges come from arch::tc1 (kNumXRegs, kNumVRegs,
// kNumPRegs), never from literals. Allocation takes the lowest free register, so
// the generated code is deterministic.
//
// SpillSlots recycles L1 words (4 bytes) and vector slots (32 bytes, aligned)
// that hold values the pools could not keep: variables bound when registers are
// short, and temporaries held across the evaluation of a deep sibling expression.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace tilecore::codegen::npu {

class RegisterPool {
 public:
  /// Registers first..last (inclusive) are allocatable.
  RegisterPool(int first, int last) : first_(first), free_(size_t(last + 1), false) {
    for (int r = first; r <= last; ++r) free_[size_t(r)] = true;
  }
  /// The lowest free register, or nullopt when the pool is empty.
  std::optional<int> Alloc() {
    for (int r = first_; r < int(free_.size()); ++r) {
      if (free_[size_t(r)]) {
        free_[size_t(r)] = false;
        return r;
      }
    }
    return std::nullopt;
  }
  /// Returns `r` to the pool; registers outside the pool are ignored (fixed registers).
  void Free(int r) {
    if (r >= first_ && r < int(free_.size())) free_[size_t(r)] = true;
  }
  bool IsFree(int r) const { return r >= first_ && r < int(free_.size()) && free_[size_t(r)]; }
  /// Takes `r` out of the pool for good (a register kept for one value); false when it is
  /// not free.
  bool Take(int r) {
    if (!IsFree(r)) return false;
    free_[size_t(r)] = false;
    return true;
  }
  int FreeCount() const {
    int n = 0;
    for (int r = first_; r < int(free_.size()); ++r) n += free_[size_t(r)];
    return n;
  }
  int Size() const { return int(free_.size()) - first_; }

 private:
  int first_;
  std::vector<bool> free_;
};

/// Recycled L1 slots of one size; `make` allocates a new one in the data segment.
class SpillSlots {
 public:
  explicit SpillSlots(std::function<int64_t()> make) : make_(std::move(make)) {}
  int64_t Take() {
    if (free_.empty()) {
      ++made_;
      return make_();
    }
    int64_t a = free_.back();
    free_.pop_back();
    return a;
  }
  void Give(int64_t addr) { free_.push_back(addr); }
  /// Slots created so far (the high-water mark of simultaneous spills).
  int made() const { return made_; }

 private:
  std::function<int64_t()> make_;
  std::vector<int64_t> free_;
  int made_ = 0;
};

}  // namespace tilecore::codegen::npu
