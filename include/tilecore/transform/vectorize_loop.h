/*
 * include/tilecore/transform/vectorize_loop.h — VectorizeLoop: loops of kind
 * `vectorized` become SIMD code on TC1's 256-bit registers.
 *
 * In:  For loops of kind `vectorized`. The lane count is 256 / the element width
 *      of the buffers the body stores to (int32x8, float16x16, int8x32).
 * Out: for a loop `for i in vectorized(m, m + n)` whose body qualifies,
 *        for i_o in range(0, n // L):           body with i = ramp(m + i_o * L, 1, L)
 *        for i in range(m + n // L * L, m + n):  the body, serial (the tail; absent
 *                                                when L divides n)
 *      Loads and stores indexed by `i` in their innermost dimension become vector
 *      BufferLoad / BufferStore with a Ramp index of stride 1; values that do not
 *      depend on `i` stay scalar and are Broadcast where they meet vectors; IR
 *      operators, Cast and Select work lane-wise. A loop that does not qualify
 *      becomes `serial` (the fallback) with the same body.
 * Qualifies when: min and extent are constant and extent >= L; the body is stores
 *      and LetStmts only (no loop, if, allocation or call statement); every stored
 *      value and intermediate has the stored element width (a bool vector from a
 *      comparison is fine), so no intermediate exceeds one register; every access
 *      indexed by `i` is contiguous (stride 1 in the buffer's innermost dimension)
 *      and its first element offset is provably a multiple of L (TC1 `vld`/`vst`
 *      are 32-byte aligned); every store is indexed by `i`; a buffer stored in the
 *      loop is loaded only at the stored index; calls take no vector argument.
 * Assumes: buffers start 32-byte aligned (PlanLocalMemory aligns L1/L2 buffers to
 *      64 bytes, the runtime aligns DDR allocations); distinct buffers do not overlap.
 * Report: PrimFunc attr "vectorize_report", one line per vectorized loop (lanes,
 *      tail, or the reason for the fallback). With the PassContext option
 *      "transform.VectorizeLoop.strict" (bool, default false) a fallback is a
 *      ValueError naming the loop and the reason instead.
 * Helps: 8-32 lanes per front-end instruction on L1 data. Hurts: nothing when it
 *      applies; use the vector engine (EmitTileIntrinsics) for large L1 tensors.
 */
#ifndef TILECORE_TRANSFORM_VECTORIZE_LOOP_H_
#define TILECORE_TRANSFORM_VECTORIZE_LOOP_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.VectorizeLoop`. */
Pass VectorizeLoop();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_VECTORIZE_LOOP_H_
