// tests/cpp/transform/test_lower_async_dma.cc — LowerAsyncDMA.
#include <gtest/gtest.h>

#include <string>

#include "pass_test_util.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/lower_async_dma.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
PrimFunc Kernel(PrimExpr event) {
  Buffer A = DeclBuffer({64}, DataType::Int(8), "A");
  Buffer T = DeclBuffer({64}, DataType::Int(8), "T", "local");
  Stmt body = Allocate(
      T,
      SeqStmt(
          {Evaluate(call("tile.dma_copy", {BufferRegion::Full(T), BufferRegion::Full(A), event})),
           Evaluate(call("tile.wait", {event})),
           Evaluate(call("tile.dma_copy", {BufferRegion::Full(A), BufferRegion::Full(T), event})),
           Evaluate(call("tile.wait", {event}))}));
  return PrimFunc({A->data}, body, Map<Var, Buffer>{{A->data, A}});
}
}  // namespace

TEST(LowerAsyncDMA, EventsBecomeCounterWaits) {
  PrimFunc g = ApplyPass(LowerAsyncDMA(), Kernel(3));
  std::string zero;  // (one store per word, no loop)
  for (int k = 0; k < 32; ++k) zero += "dma_state[" + std::to_string(k) + "] = 0\n";
  // after each copy its engine's issued count (the codegen's register) is the count its
  // event's waits need
  EXPECT_EQ(AsScript(g->body), "dma_state = allocate((32,), \"int32\", \"local\")\n" + zero +
                                   "T = allocate((64,), \"int8\", \"local\")\n"
                                   "tc1.dma_in(T[0:64], A[0:64])\n"
                                   "dma_state[3 * 2 + 0] = tc1.dma_issued(0)\n"
                                   "tc1.wait(\"sc\", \"din\", dma_state[3 * 2])\n"
                                   "tc1.wait(\"sc\", \"dout\", dma_state[3 * 2 + 1])\n"
                                   "tc1.dma_out(A[0:64], T[0:64])\n"
                                   "dma_state[3 * 2 + 1] = tc1.dma_issued(1)\n"
                                   "tc1.wait(\"sc\", \"din\", dma_state[3 * 2])\n"
                                   "tc1.wait(\"sc\", \"dout\", dma_state[3 * 2 + 1])");
}

TEST(LowerAsyncDMA, EventOutOfRangeIsAnError) {
  try {
    ApplyPass(LowerAsyncDMA(), Kernel(16));
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message()).find("uses event 16; events are 0..15"), std::string::npos)
        << e.message();
  }
}
