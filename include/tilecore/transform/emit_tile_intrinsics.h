/*
 * include/tilecore/transform/emit_tile_intrinsics.h — EmitTileIntrinsics:
 * instruction emission. Serial loop nests over L1 buffers become one vector-
 * engine (`tile.vec_*`) or matrix-engine (`tile.mm`) command each; anything else
 * stays scalar / SIMD code (the fallback).
 *
 * In:  perfect nests of serial loops with constant extents (the innermost m <= 4
 *      of a deeper nest; outer loops stay as loops around the command) whose body
 *      is one store, all operands in `local` scope, indices `base + v` (each loop
 *      variable in at most one dimension, coefficient 1). Matched, in this order:
 *   matmul   C[i, j] = C[i, j] + A[i, k] * B[k, j] (casts of i8 / f16 / bf16 inputs
 *            to the i32 / f32 accumulator) -> tile.mm(C, A, B, True), any loop
 *            order; with `C[i, j] = 0` before the k loop -> accumulate False.
 *            Matrices are the last two dimensions, rows contiguous, M, N, K <= 4096.
 *   reduce   D[..] = init; for k: D[..] = D[..] + / max / min X[.., k] ->
 *            tile.vec_redsum / redmax / redmin (init the identity: 0, -inf / the
 *            dtype's lowest, +inf / highest). Sums: float32, or integers when
 *            saturation is allowed (below).
 *   element  D = X op Y (+ - * max min, / for floats), D = X op c (adds muls maxs
 *            mins; X - c as adds of -c; max(X, 0) as relu), D = f(X) (exp log sqrt
 *            rsqrt recip tanh sigmoid, 1 / X), D = X and D = cast(X) (vec_copy).
 *            A source that misses loop variables is broadcast, one that takes them
 *            in another order is transposed — both through a view Buffer (same
 *            data Var, strides with 0 for broadcast) named `<X>_view`.
 *      A body of several element-wise stores is split into one nest per store
 *      (loop fission) when every buffer shared between them is accessed at the
 *      same index everywhere.
 * Out: Evaluate(tile.* call) with BufferRegion operands (see docs/passes.md for
 *      how the codegen reads them); unmatched nests unchanged.
 * Exactness: only exact rewrites. TC1's vector engine saturates integer add, sub,
 *      mul and sums where the IR wraps, so those are emitted only when the
 *      PassContext option "transform.EmitTileIntrinsics.allow_saturation" is true
 *      or a loop of the nest carries the annotation "tile_no_overflow" (its value:
 *      why no value leaves the dtype's range; the lowering that makes the nest
 *      bounds its operands, as the depthwise Conv's int8 taps);
 *      scalar operands must be constants exact in f32 (the descriptor's field).
 *      No command computes on bool; a conversion between bool and an integer type
 *      is one (tcvt: to bool x != 0, from bool 0 or 1, as the IR's Cast).
 * Report: PrimFunc attrs "tile_emit_counts" (intrinsic -> count) and
 *      "tile_emit_report" (one line per nest: what matched, or why not).
 * Errors: a loop annotated "pragma_tile" (any value) that yields no tile command
 *      is a ValueError naming the loop and the reason.
 * Helps: 256 B/cycle on the vector engine and 256-2048 MAC/cycle on the matrix
 *      engine instead of a front-end loop. Hurts: tiny nests (a command costs
 *      8-16 cycles of latency) — leave those to VectorizeLoop.
 */
#ifndef TILECORE_TRANSFORM_EMIT_TILE_INTRINSICS_H_
#define TILECORE_TRANSFORM_EMIT_TILE_INTRINSICS_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.EmitTileIntrinsics`. */
Pass EmitTileIntrinsics();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_EMIT_TILE_INTRINSICS_H_
