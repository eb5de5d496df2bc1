/*
 * include/tilecore/compiler/weight_prefetch.h — InterleavePrefetch: copies into L2 spread
 * through a layer group member's own work, so that a later member finds its weights in
 * L2 instead of the DDR (docs/compiler.md, "Weight prefetch").
 *
 * Each copy is cut into pieces handed to the cores round robin. A core issues its pieces
 * spread over its matrix commands (`tile.mm`; a member without any: its copies) and the
 * rest after its work, all on the DMA engine whose copies in the member move fewer bytes
 * (DMA-out: `tile.dma_prefetch`; DMA-in: `tile.dma_copy` into L2): the member's busier
 * engine never queues behind a piece, and the DDR's bandwidth goes to the pieces between
 * the member's own transfers. The member waits
 * for its pieces once, after its work (on one core no fence ends the cores loop).
 * Errors: a ValueError when the member has no `cores` loop or uses every DMA event.
 */
#ifndef TILECORE_COMPILER_WEIGHT_PREFETCH_H_
#define TILECORE_COMPILER_WEIGHT_PREFETCH_H_

#include <cstdint>
#include <vector>

#include "tilecore/ir/expr.h"
#include "tilecore/ir/stmt.h"

namespace tilecore {
namespace compiler {

/*! \brief Bytes [src_begin, src_begin + bytes) of `src` to [dst_begin, ...) of `dst`
 * (both viewed as bytes: int8 buffers over the tensors' data). */
struct PrefetchCopy {
  ir::Buffer src, dst;
  int64_t src_begin = 0, dst_begin = 0, bytes = 0;
};

/*! \brief `member` (a strategy body: one or more `cores` loops) with `copies` issued
 * through its first cores loop. */
ir::Stmt InterleavePrefetch(const ir::Stmt& member, const std::vector<PrefetchCopy>& copies);

}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_COMPILER_WEIGHT_PREFETCH_H_
