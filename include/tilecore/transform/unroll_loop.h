/*
 * include/tilecore/transform/unroll_loop.h — UnrollLoop: replaces loops by copies
 * of their body.
 *
 * In:  For loops of kind `unrolled` (always unrolled; their extent must be a
 *      constant, else ValueError naming the loop), and serial loops with a constant
 *      extent <= PassContext option "transform.UnrollLoop.auto_max_extent"
 *      (default 0 = off) whose body has no loop.
 * Out: a SeqStmt of the body with the loop variable replaced by min, min+1, ...
 *      (then simplified), so later passes see constant indices.
 * Helps: short loops around tile commands (the front end issues one command per
 * copy instead of a loop's compare and branch), and constant addressing.
 * Hurts: code size — TC1's text is per core and unrolling large loops costs
 * instruction fetch; `transform.UnrollLoop.max_extent` (default 256) caps it.
 */
#ifndef TILECORE_TRANSFORM_UNROLL_LOOP_H_
#define TILECORE_TRANSFORM_UNROLL_LOOP_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.UnrollLoop`. */
Pass UnrollLoop();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_UNROLL_LOOP_H_
