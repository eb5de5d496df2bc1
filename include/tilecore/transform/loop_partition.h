/*
 * include/tilecore/transform/loop_partition.h — LoopPartition: splits a loop's
 * range where an `if` inside it changes value, so each piece has no `if`.
 *
 * In:  For loops (serial, unrolled, vectorized; never `cores`) with constant min
 *      and extent whose body holds an IfThenElse whose condition contains a
 *      comparison (`<`, `<=`, `>`, `>=`) that is affine in the loop variable,
 *      `c * v + r` with a nonzero constant c and r built from variables bound
 *      outside the loop, and that splits the range at a constant point.
 *      Conditions may combine comparisons with `&&`, `||` and `not`.
 * Out: the loop becomes two consecutive loops of the same kind over
 *      [min, p) and [p, min + extent); in each, the comparison is replaced by its
 *      value there and the piece is simplified (the `if` folds to one branch, a
 *      piece of extent 1 loses its loop). Repeats on each piece while conditions
 *      remain, at most `transform.LoopPartition.max_pieces` pieces per loop
 *      (default 8). Inner loops are partitioned first.
 *
 *      for i in range(0, 32):              for i in range(0, 16):
 *          if i < 16:              ->          T[i] = T[i] * 2
 *              T[i] = T[i] * 2             for i in range(16, 32):
 *          else:                               T[i] = 0
 *              T[i] = 0
 *
 * Assumes: index arithmetic does not overflow int32 within the loop's range.
 * Helps: instruction emission and vectorisation, which need branch-free bodies
 *      (padding borders, the ragged last tile of a tiled loop).
 * Hurts: code size — each piece is a copy of the body.
 */
#ifndef TILECORE_TRANSFORM_LOOP_PARTITION_H_
#define TILECORE_TRANSFORM_LOOP_PARTITION_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.LoopPartition`. */
Pass LoopPartition();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_LOOP_PARTITION_H_
