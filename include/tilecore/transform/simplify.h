/*
 * include/tilecore/transform/simplify.h — Simplify: constant folding, algebraic
 * identities and range-aware index simplification over a whole kernel.
 *
 * In:  any Kernel IR.
 * Out: the same program with
 *   - expressions simplified by the Analyzer (analyzer.h), knowing each loop
 *     variable's range: `(io * 32 + ii) // 32` becomes `io`;
 *   - `if` with a provable condition replaced by the branch taken;
 *   - loops of extent 0 removed, serial loops of extent 1 replaced by their body
 *     (with the variable substituted; `cores` loops are kept);
 *   - LetStmt of a constant or a variable inlined;
 *   - nested SeqStmts flattened, no-op statements dropped.
 * Assumes: integer arithmetic wraps (as the scalar unit does); float folding is
 * exact only (no reassociation).
 * Helps: every later pass — pattern matching in instruction emission, memory
 * planning (constant shapes), and the codegen's addressing.
 */
#ifndef TILECORE_TRANSFORM_SIMPLIFY_H_
#define TILECORE_TRANSFORM_SIMPLIFY_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief Simplifies one statement (free variables have unknown ranges). */
ir::Stmt SimplifyStmt(const ir::Stmt& s);

/*! \brief The pass `transform.Simplify`. */
Pass Simplify();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_SIMPLIFY_H_
