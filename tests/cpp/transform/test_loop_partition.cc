// tests/cpp/transform/test_loop_partition.cc — LoopPartition.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/loop_partition.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

TEST(LoopPartition, IfElseSplitsTheRange) {
  Buffer T = DeclBuffer({32}, DataType::Int(32), "T");
  Var i("i");
  Stmt body =
      For(i, 0, 32, ForKind::kSerial,
          IfThenElse(i < 16, BufferStore(T, BufferLoad(T, {i}) * 2, {i}), BufferStore(T, 0, {i})));
  PrimFunc g = ApplyPass(LoopPartition(), Wrap(T, body));
  Stmt expect =
      SeqStmt({For(i, 0, 16, ForKind::kSerial, BufferStore(T, BufferLoad(T, {i}) * 2, {i})),
               For(i, 16, 16, ForKind::kSerial, BufferStore(T, 0, {i}))});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(LoopPartition, BordersOfAPaddedLoop) {
  // for i in 0..10: if i >= 1 && i < 9: A[i - 1] = 1   ->   for i in 1..9: A[i - 1] = 1
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i");
  Stmt body =
      For(i, 0, 10, ForKind::kSerial, IfThenElse(i >= 1 && i < 9, BufferStore(A, 1, {i - 1})));
  PrimFunc g = ApplyPass(LoopPartition(), Wrap(A, body));
  Stmt expect = For(i, 1, 8, ForKind::kSerial, BufferStore(A, 1, {i - 1}));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(LoopPartition, ScaledConditionAndGreaterThan) {
  // 2 * i > 5 flips at i = 3; the vectorized kind is kept.
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i");
  Stmt body = For(i, 0, 8, ForKind::kVectorized,
                  IfThenElse(i * 2 > 5, BufferStore(A, 1, {i}), BufferStore(A, 2, {i})));
  PrimFunc g = ApplyPass(LoopPartition(), Wrap(A, body));
  Stmt expect = SeqStmt({For(i, 0, 3, ForKind::kVectorized, BufferStore(A, 2, {i})),
                         For(i, 3, 5, ForKind::kVectorized, BufferStore(A, 1, {i}))});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(LoopPartition, InnerLoopConditionOnOuterVariable) {
  // The `if` on i sits inside the j loop: the i loop is split, the j loop copied.
  Buffer A = DeclBuffer({4, 4}, DataType::Int(32), "A");
  Var i("i"), j("j");
  Stmt body = For(i, 0, 4, ForKind::kSerial,
                  For(j, 0, 4, ForKind::kSerial,
                      IfThenElse(i < 1, BufferStore(A, 0, {i, j}), BufferStore(A, j, {i, j}))));
  PrimFunc g = ApplyPass(LoopPartition(), Wrap(A, body));
  Stmt expect = SeqStmt(
      {For(j, 0, 4, ForKind::kSerial, BufferStore(A, 0, {0, j})),
       For(i, 1, 3, ForKind::kSerial, For(j, 0, 4, ForKind::kSerial, BufferStore(A, j, {i, j})))});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(LoopPartition, LeavesWhatItCannotSplit) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A");
  Var i("i"), j("j"), n("n"), c("c");
  // Not affine, depends on an inner variable, symbolic point, a cores loop.
  Stmt s1 =
      For(i, 0, 16, ForKind::kSerial, IfThenElse(eq(floormod(i, 2), 0), BufferStore(A, 1, {i})));
  Stmt s2 = For(i, 0, 4, ForKind::kSerial,
                For(j, 0, 4, ForKind::kSerial, IfThenElse(i + j < 3, BufferStore(A, 1, {j}))));
  Stmt s3 = For(i, 0, 16, ForKind::kSerial, IfThenElse(i < n, BufferStore(A, 1, {i})));
  Stmt s4 = For(c, 0, 4, ForKind::kCores, IfThenElse(c < 1, BufferStore(A, 1, {c})));
  Stmt body = SeqStmt({s1, s2, s3, s4});
  PrimFunc f = PrimFunc({A->data, n}, body, Map<Var, Buffer>{{A->data, A}});
  PrimFunc g = ApplyPass(LoopPartition(), f);
  EXPECT_TRUE(g.same_as(f)) << AsScript(g->body);
}

TEST(LoopPartition, PieceLimit) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A");
  Var i("i");
  Stmt body = For(
      i, 0, 16, ForKind::kSerial,
      SeqStmt({IfThenElse(i < 4, BufferStore(A, 1, {i})), IfThenElse(i < 8, BufferStore(A, 2, {i})),
               IfThenElse(i < 12, BufferStore(A, 3, {i}))}));
  PrimFunc f = Wrap(A, body);
  EXPECT_EQ(ApplyPass(LoopPartition(), f)->body.as<SeqStmtNode>()->seq.size(),
            3u);  // the last piece, [12, 16), is empty
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.LoopPartition.max_pieces", ffi::Any(int64_t(2)));
  PassContextScope scope(ctx);
  EXPECT_EQ(ApplyPass(LoopPartition(), f)->body.as<SeqStmtNode>()->seq.size(), 2u);
}

TEST(LoopPartition, BadPieceLimitIsAnError) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A");
  Var i("i");
  PrimFunc f = Wrap(A, For(i, 0, 16, ForKind::kSerial, BufferStore(A, 1, {i})));
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.LoopPartition.max_pieces", ffi::Any(int64_t(0)));
  PassContextScope scope(ctx);
  try {
    ApplyPass(LoopPartition(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message())
                  .find("transform.LoopPartition.max_pieces must be at least 1, got 0"),
              std::string::npos);
  }
}
