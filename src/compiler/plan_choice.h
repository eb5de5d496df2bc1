/*
 * src/compiler/plan_choice.h — how a strategy picks among its candidate lowerings: the
 * fastest by the cost model (Fastest), and the choice kept per PlanKey (ChosenBefore /
 * Choose), since the blocks of one model share a few layer shapes, each block with its own
 * scales, and pricing every candidate is most of a compile's time.
 */
#ifndef TILECORE_SRC_COMPILER_PLAN_CHOICE_H_
#define TILECORE_SRC_COMPILER_PLAN_CHOICE_H_

#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "tilecore/compiler/cost_model.h"
#include "tilecore/compiler/strategy.h"
#include "tilecore/ffi/error.h"

namespace tilecore {
namespace compiler {
namespace detail {

/*! \brief The fastest of the lowerings offered, by the cost model; one whose buffers do not
 * fit L1 once placed in banks is passed over, its error kept in `why`. */
struct Fastest {
  Fastest(const OpCall& call, std::string why) : call(call), why(std::move(why)) {}
  const OpCall& call;
  std::string why;
  ir::PrimFunc best;
  int64_t cycles = std::numeric_limits<int64_t>::max();
  /*! \brief Prices `f`; whether it is the fastest so far. */
  bool Offer(const ir::PrimFunc& f) {
    int64_t c = 0;
    try {
      c = EstimateStrategy(f, call.l1_bytes, static_cast<int>(call.cores)).cycles;
    } catch (const ffi::Error& e) {
      why = e.what();
      return false;
    }
    if (c >= cycles) return false;
    best = f, cycles = c;
    return true;
  }
};

/*! \brief The choices made, by key (a strategy's prefix and the PlanKey). */
inline std::unordered_map<std::string, size_t>& ChosenPlans(std::mutex** mu) {
  static std::mutex m;
  static std::unordered_map<std::string, size_t> plans;
  *mu = &m;
  return plans;
}

/*! \brief The plan (its index among the candidates, which depend on the call only) chosen
 * before for `key`. */
inline std::optional<size_t> ChosenBefore(const std::string& key) {
  std::mutex* mu = nullptr;
  auto& plans = ChosenPlans(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  auto it = plans.find(key);
  if (it == plans.end()) return std::nullopt;
  return it->second;
}

inline void Choose(const std::string& key, size_t index) {
  std::mutex* mu = nullptr;
  auto& plans = ChosenPlans(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  plans.emplace(key, index);
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_SRC_COMPILER_PLAN_CHOICE_H_
