/*
 * include/tilecore/ir/identity_table.h — IdentityTable<V>: IR nodes (by identity) to
 * values, in one flat array.
 *
 * The walks' memos (IRVisitor's shared subexpressions, IRMutator's rewrites of them,
 * PostOrderVisit's nodes seen) insert millions of nodes in a compile: a node-based hash
 * table paid an allocation and a free for each. Here an insert is a probe into an
 * open-addressed array kept at most half full, and clear() resets only the slots used, so
 * a memo cleared after every expression keeps its array. Each key is held (a reference),
 * so a node freed during a walk cannot be mistaken for a new node at the same address.
 */
#ifndef TILECORE_IR_IDENTITY_TABLE_H_
#define TILECORE_IR_IDENTITY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tilecore/ffi/object.h"

namespace tilecore {
namespace ir {

/*! \brief The value of a table used as a set. */
struct NoValue {};

template <typename V>
class IdentityTable {
 public:
  /*! \brief The value stored for `key`, or nullptr. */
  V* find(const ffi::Object* key) {
    if (slots_.empty()) return nullptr;
    Slot& s = slots_[Probe(key)];
    return s.key == key ? &s.value : nullptr;
  }
  /*! \brief Stores `value` for `key` unless the key is there; whether it was stored. */
  bool emplace(const ffi::ObjectRef& key, V value) {
    if ((used_.size() + 1) * 2 > slots_.size()) Grow();
    const size_t i = Probe(key.get());
    Slot& s = slots_[i];
    if (s.key == key.get()) return false;
    s.key = key.get();
    s.hold = key;
    s.value = std::move(value);
    used_.push_back(static_cast<uint32_t>(i));
    return true;
  }
  bool empty() const { return used_.empty(); }
  size_t size() const { return used_.size(); }
  void clear() {
    for (uint32_t i : used_) slots_[i] = Slot();
    used_.clear();
  }

 private:
  struct Slot {
    const ffi::Object* key = nullptr;
    ffi::ObjectRef hold;
    V value{};
  };

  // Linear probing from a Fibonacci hash of the address (its top bits): the slot of `key`,
  // or the empty slot where it would go.
  size_t Probe(const ffi::Object* key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(
        reinterpret_cast<uintptr_t>(key) * uint64_t{0x9E3779B97F4A7C15} >> shift_);
    while (slots_[i].key != nullptr && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    std::vector<uint32_t> was = std::move(used_);
    slots_ = std::vector<Slot>(old.empty() ? 16 : 2 * old.size());
    shift_ = 64;
    for (size_t n = slots_.size(); n > 1; n >>= 1) --shift_;
    used_.clear();
    used_.reserve(slots_.size() / 2);
    for (uint32_t k : was) {
      Slot& from = old[k];
      const size_t i = Probe(from.key);
      slots_[i] = std::move(from);
      used_.push_back(static_cast<uint32_t>(i));
    }
  }

  std::vector<Slot> slots_;     // a power of two in size, at most half used
  std::vector<uint32_t> used_;  // the used slots, in insertion order
  int shift_ = 60;              // 64 - log2(slots): the hash's top bits index the array
};

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_IDENTITY_TABLE_H_
