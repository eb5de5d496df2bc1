// tests/cpp/compiler/test_weight_prefetch.cc — what a layer group's prefetch reads of a
// member: the bytes and the busy cycles of its DMA engines (weight_prefetch.h), against
// values computed by hand from TC1's DMA rules (docs/tc1.md).
#include <gtest/gtest.h>

#include "compiler/kernel_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/weight_prefetch.h"

using namespace tilecore;                    // NOLINT
using namespace tilecore::compiler;          // NOLINT
using namespace tilecore::compiler::detail;  // NOLINT
using ir::DataType;

namespace {
// A depthwise Conv's item, much as LowerDepthwise makes it: the patch filled then loaded
// from L2 in 16 rows of 25 bytes, the item's weights copied within L1, the result stored
// to L2 as one contiguous run of 2 KiB; eight items.
ir::Stmt SmallLoadsAndOneStore() {
  const DataType i8 = DataType::Int(8);
  ir::Buffer patch = Local({16, 25}, i8, "Xl"), w = Local({16, 25}, i8, "Wl");
  ir::Buffer wall = Local({64, 25}, i8, "Wall"), y = Local({2048}, i8, "Y");
  ir::Buffer x = DeclBuffer({I32(16 * 25 * 8)}, i8, ir::String("X"), "shared");
  ir::Buffer out = DeclBuffer({I32(2048 * 8)}, i8, ir::String("Out"), "shared");
  ir::Buffer xv = View(x, {8, 16, 25}, "Xv"), ov = View(out, {8, 2048}, "Ov");
  ir::Stmt item = Loop("t", 8, [&](ir::PrimExpr t) {
    return Seq(
        {Intrin("tile.dma_fill", {Region(patch, {I32(0), I32(0)}, {16, 25}), F32(0), I32(0)}),
         Intrin("tile.dma_copy", {Region(patch, {I32(0), I32(0)}, {16, 25}),
                                  Region(xv, {t, I32(0), I32(0)}, {1, 16, 25}), I32(0)}),
         Intrin("tile.dma_copy", {Region(w, {I32(0), I32(0)}, {16, 25}),
                                  Region(wall, {I32(0), I32(0)}, {16, 25}), I32(0)}),
         Intrin("tile.dma_copy",
                {Region(ov, {t, I32(0)}, {1, 2048}), Region(y, {I32(0)}, {2048}), I32(1)})});
  });
  return item;
}
}  // namespace

TEST(WeightPrefetch, EngineBytesCountsBytes) {
  auto [in, out] = EngineBytes(SmallLoadsAndOneStore());
  EXPECT_EQ(in, 8 * (400 + 400));  // the patch and the weights (fills move nothing)
  EXPECT_EQ(out, 8 * 2048);
}

TEST(WeightPrefetch, EngineCyclesCountsLatencyAndRows) {
  namespace tc1 = arch::tc1;
  auto [in, out] = EngineCycles(SmallLoadsAndOneStore());
  // per item: the fill (L1's latency, a beat a 25-byte row), the patch from L2 (L2's
  // latency, 16 beats), the weights within L1 (16 beats); the store: L2's latency and
  // 2048 / 64 beats
  EXPECT_EQ(in, 8 * ((tc1::kL1Latency + 16) + (tc1::kL2Latency + 16) + (tc1::kL1Latency + 16)));
  EXPECT_EQ(out, 8 * (tc1::kL2Latency + 2048 / tc1::kDmaBytesPerCycle));
  // by bytes the DMA-in engine moves less, by the time it is held more: a prefetch's pieces
  // go on the DMA-out engine
  EXPECT_LT(EngineBytes(SmallLoadsAndOneStore()).first,
            EngineBytes(SmallLoadsAndOneStore()).second);
  EXPECT_GT(in, out);
}
