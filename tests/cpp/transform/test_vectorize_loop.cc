// tests/cpp/transform/test_vectorize_loop.cc — VectorizeLoop.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/vectorize_loop.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
std::string Report(const PrimFunc& f) { return ReportLines(f, "vectorize_report"); }
const DataType f32 = DataType::Float(32);
}  // namespace

TEST(VectorizeLoop, FloatLoopBecomesEightLanes) {
  Buffer A = DeclBuffer({64}, f32, "A"), B = DeclBuffer({64}, f32, "B");
  Var i("i");
  PrimFunc f = Wrap(
      {A, B}, For(i, 0, 64, ForKind::kVectorized, BufferStore(B, BufferLoad(A, {i}) * 2.0f, {i})));
  PrimFunc g = ApplyPass(VectorizeLoop(), f);
  Var io("i_o");
  PrimExpr idx = Ramp(io * 8, 1, 8);
  Stmt expect = For(io, 0, 8, ForKind::kSerial,
                    BufferStore(B, BufferLoad(A, {idx}) * Broadcast(FloatImm(f32, 2.0), 8), {idx}));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect, true)) << AsScript(g->body);
  EXPECT_EQ(Report(g).find("loop `i`: vectorized, 8 lanes x 8"), 0u) << Report(g);
}

TEST(VectorizeLoop, TailIsPartitionedOff) {
  Buffer A = DeclBuffer({20}, DataType::Int(32), "A");
  Var i("i");
  Stmt body = BufferStore(A, i + 1, {i});
  PrimFunc g = ApplyPass(VectorizeLoop(), Wrap({A}, For(i, 0, 20, ForKind::kVectorized, body)));
  Var io("i_o");
  Stmt expect = SeqStmt({For(io, 0, 2, ForKind::kSerial,
                             BufferStore(A, Ramp(io * 8 + 1, 1, 8), {Ramp(io * 8, 1, 8)})),
                         For(i, 16, 4, ForKind::kSerial, body)});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect, true)) << AsScript(g->body);
  EXPECT_NE(Report(g).find("serial tail of 4"), std::string::npos);
}

TEST(VectorizeLoop, Int8RowsOfATwoDimensionalBuffer) {
  Buffer A = DeclBuffer({4, 64}, DataType::Int(8), "A", "local");
  Buffer B = DeclBuffer({4, 64}, DataType::Int(8), "B", "local");
  Var r("r"), i("i"), s("s", DataType::Int(8));
  Stmt body = For(
      r, 0, 4, ForKind::kSerial,
      For(i, 0, 64, ForKind::kVectorized, BufferStore(B, max(BufferLoad(A, {r, i}), s), {r, i})));
  PrimFunc f = PrimFunc({s}, Allocate(A, Allocate(B, body)));
  PrimFunc g = ApplyPass(VectorizeLoop(), f);
  Var io("i_o");
  PrimExpr idx = Ramp(io * 32, 1, 32);
  Stmt expect =
      Allocate(A, Allocate(B, For(r, 0, 4, ForKind::kSerial,
                                  For(io, 0, 2, ForKind::kSerial,
                                      BufferStore(B, Max(BufferLoad(A, {r, idx}), Broadcast(s, 32)),
                                                  {r, idx})))));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect, true)) << AsScript(g->body);
}

TEST(VectorizeLoop, SelectCastAndLet) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A"), B = DeclBuffer({16}, f32, "B");
  Var i("i"), t("t");
  Stmt body = LetStmt(t, BufferLoad(A, {i}) * 3,
                      BufferStore(B, Cast(f32, select(t > 0, t, PrimExpr(0))), {i}));
  PrimFunc g = ApplyPass(VectorizeLoop(), Wrap({A, B}, For(i, 0, 16, ForKind::kVectorized, body)));
  std::string text = AsScript(g->body);
  EXPECT_NE(text.find("A[ramp(i_o * 8, 1, 8)] * broadcast(3, 8)"), std::string::npos) << text;
  EXPECT_NE(text.find("B[ramp(i_o * 8, 1, 8)] = cast(\"float32x8\", select(t > broadcast(0, 8), t, "
                      "broadcast(0, 8)))"),
            std::string::npos)
      << text;
}

TEST(VectorizeLoop, FallbacksAreSerialWithAReason) {
  Buffer A = DeclBuffer({64}, f32, "A"), B = DeclBuffer({64}, f32, "B"),
         S = DeclBuffer({1}, f32, "S");
  Buffer C = DeclBuffer({64}, DataType::Int(8), "C");
  Var i("i");
  struct Case {
    Stmt body;
    int32_t extent;
    const char* reason;
  };
  std::vector<Case> cases = {
      {BufferStore(B, BufferLoad(A, {i * 2}), {i}), 32, "the load from `A` is not contiguous"},
      {BufferStore(S, BufferLoad(S, {0}) + BufferLoad(A, {i}), {0}), 64, "does not depend on `i`"},
      {BufferStore(B, BufferLoad(A, {i + 1}), {i}), 63, "is not provably a multiple of 8 lanes"},
      {BufferStore(B, BufferLoad(B, {i + 1}), {i}), 63, "a dependence between iterations"},
      {BufferStore(B, call("tir.exp", {BufferLoad(A, {i})}), {i}), 64,
       "`tir.exp` takes an argument"},
      {BufferStore(B, Cast(f32, BufferLoad(C, {i})), {i}), 64, "an intermediate value is int8x8"},
      {BufferStore(B, BufferLoad(A, {i}), {i}), 4, "its extent 4 is less than the 8 lanes"},
      {IfThenElse(i < 3, BufferStore(B, 0.0f, {i})), 64, "the body contains an if"},
  };
  for (const Case& c : cases) {
    PrimFunc f = Wrap({A, B, S, C}, For(i, 0, c.extent, ForKind::kVectorized, c.body));
    PrimFunc g = ApplyPass(VectorizeLoop(), f);
    Stmt expect = For(i, 0, c.extent, ForKind::kSerial, c.body);
    EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
    EXPECT_NE(Report(g).find(c.reason), std::string::npos) << Report(g) << " wanted: " << c.reason;
  }
}

TEST(VectorizeLoop, StrictModeMakesAFallbackAnError) {
  Buffer A = DeclBuffer({64}, f32, "A"), B = DeclBuffer({64}, f32, "B");
  Var i("i");
  PrimFunc f = Wrap(
      {A, B}, For(i, 0, 32, ForKind::kVectorized, BufferStore(B, BufferLoad(A, {i * 2}), {i})));
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.VectorizeLoop.strict", ffi::Any(true));
  PassContextScope scope(ctx);
  try {
    ApplyPass(VectorizeLoop(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message())
                  .find("VectorizeLoop: loop `i` cannot be vectorized: the load from `A` is not "
                        "contiguous"),
              std::string::npos)
        << e.message();
  }
}
