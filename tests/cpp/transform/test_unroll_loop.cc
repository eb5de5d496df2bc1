// tests/cpp/transform/test_unroll_loop.cc — UnrollLoop.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/unroll_loop.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

TEST(UnrollLoop, UnrolledLoopBecomesCopies) {
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i");
  PrimFunc f = Wrap(A, For(i, 2, 3, ForKind::kUnrolled, BufferStore(A, i * 2, {i})));
  PrimFunc g = ApplyPass(UnrollLoop(), f);
  Stmt expect = SeqStmt({BufferStore(A, 4, {2}), BufferStore(A, 6, {3}), BufferStore(A, 8, {4})});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect, true)) << AsScript(g->body);
}

TEST(UnrollLoop, SerialLoopsStayUnlessAsked) {
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i");
  PrimFunc f = Wrap(A, For(i, 0, 4, ForKind::kSerial, BufferStore(A, i, {i})));
  EXPECT_TRUE(ApplyPass(UnrollLoop(), f)->body->IsInstance<ForNode>());
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.UnrollLoop.auto_max_extent", ffi::Any(int64_t(4)));
  PassContextScope scope(ctx);
  EXPECT_TRUE(ApplyPass(UnrollLoop(), f)->body->IsInstance<SeqStmtNode>());
}

TEST(UnrollLoop, SymbolicExtentIsAnError) {
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i"), n("n");
  PrimFunc f = PrimFunc({A->data, n}, For(i, 0, n, ForKind::kUnrolled, BufferStore(A, i, {i})),
                        Map<Var, Buffer>{{A->data, A}});
  try {
    ApplyPass(UnrollLoop(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message())
                  .find("loop `i` is marked unrolled but its bounds are not constant"),
              std::string::npos);
  }
}

TEST(UnrollLoop, TooLongIsAnError) {
  Buffer A = DeclBuffer({1000}, DataType::Int(32), "A");
  Var i("i");
  PrimFunc f = Wrap(A, For(i, 0, 1000, ForKind::kUnrolled, BufferStore(A, i, {i})));
  try {
    ApplyPass(UnrollLoop(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(
        std::string(e.message()).find("has extent 1000, more than transform.UnrollLoop.max_extent"),
        std::string::npos);
  }
}
