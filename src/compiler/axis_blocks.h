/*
 * src/compiler/axis_blocks.h — the work split shared by the strategies that view a
 * tensor as (outer, A, inner) around one axis (Gather, Scatter, OneHot, the axis
 * scans): items of one `outer` index and a block of `inner` columns, the DMA of an
 * item's (rows, block) slab, and chunks of a run-time index list.
 */
#ifndef TILECORE_SRC_COMPILER_AXIS_BLOCKS_H_
#define TILECORE_SRC_COMPILER_AXIS_BLOCKS_H_

#include <algorithm>
#include <functional>

#include "kernel_util.h"

namespace tilecore {
namespace compiler {
namespace detail {

/*!
 * \brief Columns per block: as many as `budget` bytes of L1 hold at `column_bytes` each
 * (at most `inner`), and when `outer` alone gives fewer items than cores, narrow enough
 * that every core gets one.
 */
inline int64_t BlockColumns(int64_t outer, int64_t inner, int64_t cores, int64_t column_bytes,
                            int64_t budget) {
  int64_t ic = std::min(inner, budget / column_bytes);
  if (outer < cores) ic = std::min(ic, std::max<int64_t>(1, (inner * outer + cores - 1) / cores));
  return ic;
}

/*!
 * \brief The items (o, block of `ic` columns from i0, `size` wide) of an (outer, *, inner)
 * view over the cores round robin (ForEachItem): first the full blocks of every o, then
 * the narrower last block of every o. body(o, i0, size) builds one item.
 */
inline Stmt ForEachColumnBlock(const PrimExpr& core, int64_t cores, int64_t outer, int64_t inner,
                               int64_t ic, int64_t* rotation,
                               const std::function<Stmt(PrimExpr, PrimExpr, int64_t)>& body) {
  int64_t nfull = inner / ic, rem = inner % ic;
  auto blocks = [&](int64_t count, int64_t size, int64_t start, int64_t per) {
    return ForEachItem(core, cores, count, rotation, "t", [&](PrimExpr t) {
      PrimExpr o = floordiv(t, I32(per)), i0 = I32(start) + floormod(t, I32(per)) * I32(ic);
      return body(o, i0, size);
    });
  };
  return Seq({blocks(outer * nfull, ic, 0, nfull), blocks(rem ? outer : 0, rem, nfull * ic, 1)});
}

/*!
 * \brief `n` entries in chunks of `ck` (the last one shorter): body(start, size) builds one
 * chunk. With `rotation` the chunks go over the cores round robin (ForEachItem); without,
 * this core takes them all, in order.
 */
inline Stmt ForEachChunk(const PrimExpr& core, int64_t cores, int64_t n, int64_t ck,
                         int64_t* rotation, const std::function<Stmt(PrimExpr, int64_t)>& body) {
  auto chunks = [&](int64_t count, int64_t size, int64_t base) {
    auto item = [&](PrimExpr t) { return body(I32(base) + t * I32(ck), size); };
    return rotation ? ForEachItem(core, cores, count, rotation, "t", item) : Loop("t", count, item);
  };
  return Seq({chunks(n / ck, ck, 0), chunks(n % ck ? 1 : 0, n % ck, (n / ck) * ck)});
}

/*!
 * \brief DMA of item `o`'s rows [0, rows) and columns [col, col + cols) of an (outer, rows,
 * inner) global buffer to the front of the local `slab`, and the wait (event 0).
 */
inline Stmt LoadSlab(const Buffer& slab, const Buffer& global, const PrimExpr& o,
                     const PrimExpr& col, int64_t rows, int64_t cols) {
  return DmaWait(Region(slab, {I32(0), I32(0)}, {rows, cols}),
                 Region(global, {o, I32(0), col}, {1, rows, cols}), 0);
}

/*!
 * \brief The way back: the front of `slab` to item `o` of `global`, on event 1 without a
 * wait (the next item waits before it reuses the slab).
 */
inline Stmt StoreSlab(const Buffer& global, const Buffer& slab, const PrimExpr& o,
                      const PrimExpr& col, int64_t rows, int64_t cols) {
  return Intrin("tile.dma_copy", {Region(global, {o, I32(0), col}, {1, rows, cols}),
                                  Region(slab, {I32(0), I32(0)}, {rows, cols}), I32(1)});
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_AXIS_BLOCKS_H_
