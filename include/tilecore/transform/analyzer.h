/*
 * include/tilecore/transform/analyzer.h — arithmetic facts about index expressions.
 *
 * The Analyzer knows the range of bound variables (loop variables, core ids) and
 * answers two questions passes ask all the time: what is the constant range of
 * this integer expression (ConstIntBound), and what is its simplest form
 * (Simplify). It is good enough for the index math of tiled loops:
 *
 *   (io * 32 + ii) // 32  ->  io        with ii in [0, 32)
 *   (io * 32 + ii) % 32   ->  ii
 *   c * 32 + 32 - c * 32  ->  32
 *   i < 128               ->  True      with i in [0, 128)
 *
 * Integer expressions are normalised to a sum of (coefficient x atom) plus a
 * constant; constants fold in the expression's dtype (wrapping as TC1 does);
 * floats fold only exactly (x * 0 is not 0 for x = NaN, so that rule is integer-only).
 */
#ifndef TILECORE_TRANSFORM_ANALYZER_H_
#define TILECORE_TRANSFORM_ANALYZER_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>

#include "tilecore/ir/expr.h"

namespace tilecore {
namespace ir {
class IRMutator;
}  // namespace ir
namespace transform {

struct IntBound {
  int64_t lo{std::numeric_limits<int64_t>::min()};
  int64_t hi{std::numeric_limits<int64_t>::max()};
  bool is_const() const { return lo == hi; }
};

class Analyzer {
 public:
  /*! \brief Declares var in [min, min + extent) (constant bounds). */
  void Bind(const ir::Var& var, int64_t min, int64_t extent);
  /*! \brief Declares var in [min, min + extent) if both simplify to constants. */
  void BindRange(const ir::Var& var, const ir::PrimExpr& min, const ir::PrimExpr& extent);
  /*! \brief Forgets what Bind said about var. */
  void Unbind(const ir::Var& var);
  /*! \brief The constant range of an integer expression (full range when unknown). */
  IntBound ConstIntBound(const ir::PrimExpr& e);
  /*! \brief Whether a bool expression is provably true. */
  bool CanProve(const ir::PrimExpr& cond);
  /*! \brief The simplest form found (see the header comment). */
  ir::PrimExpr Simplify(const ir::PrimExpr& e);

 private:
  std::unordered_map<const ffi::Object*, IntBound> bounds_;
  // the simplifier Simplify reuses (its memo's array kept between calls; a pass
  // simplifies each expression of a kernel in turn)
  std::shared_ptr<ir::IRMutator> simplifier_;
  bool simplifying_ = false;
  int64_t bound_depth_ = 0;  // ConstIntBound's recursion (its StackGuard's own counter)
};

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_ANALYZER_H_
