// tests/cpp/transform/test_default_kernel_pipeline.cc — DefaultKernelPipeline and
// the output contract of docs/passes.md.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/default_kernel_pipeline.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
const DataType f32 = DataType::Float(32);

/*! \brief Row softmax of a 4 x 64 tile per core, written as plain loops. */
PrimFunc Softmax() {
  Buffer X = DeclBuffer({16, 64}, f32, "X"), Y = DeclBuffer({16, 64}, f32, "Y");
  Buffer T = DeclBuffer({4, 64}, f32, "T", "local"), M = DeclBuffer({4}, f32, "M", "local");
  Buffer S = DeclBuffer({4}, f32, "S", "local");
  Var c("c"), i("i"), j("j"), k("k"), v("v");
  PrimExpr ninf = FloatImm(f32, -std::numeric_limits<double>::infinity());
  Stmt body = SeqStmt({
      Evaluate(
          call("tile.dma_copy", {BufferRegion::Full(T), BufferRegion(X, {c * 4, 0}, {4, 64}), 0})),
      Evaluate(call("tile.wait", {0})),
      For(i, 0, 4, ForKind::kSerial,
          SeqStmt({BufferStore(M, ninf, {i}),
                   For(k, 0, 64, ForKind::kSerial,
                       BufferStore(M, max(BufferLoad(M, {i}), BufferLoad(T, {i, k})), {i}))})),
      For(i, 0, 4, ForKind::kSerial,
          For(j, 0, 64, ForKind::kSerial,
              BufferStore(T, call("tir.exp", {BufferLoad(T, {i, j}) - BufferLoad(M, {i})}),
                          {i, j}))),
      For(i, 0, 4, ForKind::kSerial,
          SeqStmt({BufferStore(S, 0.0f, {i}),
                   For(k, 0, 64, ForKind::kSerial,
                       BufferStore(S, BufferLoad(S, {i}) + BufferLoad(T, {i, k}), {i}))})),
      For(i, 0, 4, ForKind::kSerial,
          For(v, 0, 64, ForKind::kVectorized,
              BufferStore(T, BufferLoad(T, {i, v}) / BufferLoad(S, {i}), {i, v}))),
      Evaluate(
          call("tile.dma_copy", {BufferRegion(Y, {c * 4, 0}, {4, 64}), BufferRegion::Full(T), 1})),
      Evaluate(call("tile.wait", {1})),
  });
  Stmt kernel = For(c, 0, 4, ForKind::kCores, Allocate(T, Allocate(M, Allocate(S, body))));
  return PrimFunc({X->data, Y->data}, kernel, Map<Var, Buffer>{{X->data, X}, {Y->data, Y}},
                  Map<String, Any>{{"global_symbol", Any("softmax")}});
}

/*! \brief Checks what docs/passes.md promises the codegen. */
void CheckContract(const PrimFunc& f) {
  PostOrderVisit(f->body, [&](const ObjectRef& n) {
    if (const auto* loop = n.as<ForNode>()) {
      EXPECT_TRUE(loop->kind == ForKind::kSerial || loop->kind == ForKind::kCores)
          << ForKindName(loop->kind);
    }
    if (const auto* ld = n.as<BufferLoadNode>()) {
      EXPECT_EQ(ld->indices.size(), 1u);
      if (ld->dtype.is_vector()) {
        const auto* r = ld->indices[0].as<RampNode>();
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(is_const_int(r->stride, 1));
      }
    }
    if (const auto* st = n.as<BufferStoreNode>()) {
      EXPECT_EQ(st->indices.size(), 1u);
    }
    if (const auto* c = n.as<CallNode>()) {
      std::string op(c->op.view());
      EXPECT_TRUE(op != "tile.dma_copy" && op != "tile.dma_fill" && op != "tile.wait") << op;
    }
  });
  EXPECT_TRUE(f->attrs.Get("memory_plan").has_value());
}
}  // namespace

TEST(DefaultKernelPipeline, SoftmaxBecomesTileCommandsAndSimd) {
  PrimFunc g = ApplyPass(DefaultKernelPipeline(2), Softmax());
  CheckContract(g);
  std::string text = AsScript(g);
  for (const char* want :
       {"tile.vec_redmax(M[0:4], T[0:4, 0:64])", "tile.vec_redsum(S[0:4], T[0:4, 0:64])",
        "tc1.dma_in(T[0:4, 0:64], X[c * 4:c * 4 + 4, 0:64])"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  // exp(T - M) is not one command: it stays a loop, reported.
  std::string report;
  for (const String& l : g->attrs.Get("tile_emit_report")->cast<Array<String>>())
    report += std::string(l.view()) + "\n";
  EXPECT_NE(report.find("kept as a loop"), std::string::npos) << report;
  // The vectorized division became 8-lane SIMD on flat offsets.
  EXPECT_NE(
      text.find(
          "T[ramp(v_o * 8 + i * 64, 1, 8)] = T[ramp(v_o * 8 + i * 64, 1, 8)] / broadcast(S[i], 8)"),
      std::string::npos)
      << text;
}

TEST(DefaultKernelPipeline, OptLevelZeroEmitsNoTileCommands) {
  PrimFunc g = ApplyPass(DefaultKernelPipeline(0), Softmax());
  CheckContract(g);
  EXPECT_EQ(AsScript(g).find("tile.vec_"), std::string::npos);
  EXPECT_EQ(DefaultKernelPipeline(0)->passes.size(), 6u);
  EXPECT_EQ(DefaultKernelPipeline(2)->passes.size(), 9u);
}

TEST(DefaultKernelPipeline, NegativeOptLevelIsAnError) {
  try {
    DefaultKernelPipeline(-1);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(
        std::string(e.message()).find("DefaultKernelPipeline: opt_level must be >= 0, got -1"),
        std::string::npos);
  }
}
