// tests/cpp/ir/test_ir_nodes.cc — Kernel IR constructors, type checks and reflection.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "../ffi/small_stack.h"
#include "tilecore/ffi/serialization.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"

using namespace tilecore;      // NOLINT
using namespace tilecore::ir;  // NOLINT

namespace {
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ffi::Error& e) {
    return std::string(e.kind()) + ": " + std::string(e.message());
  }
  return "";
}
}  // namespace

TEST(IRNodes, ArithmeticTypes) {
  Var i("i");
  PrimExpr e = i * 4 + 1;
  EXPECT_EQ(e.dtype(), DataType::Int(32));
  EXPECT_EQ((i < 3).dtype(), DataType::Bool());
  Var x("x", DataType::Float(16));
  EXPECT_EQ((x * 2).dtype(), DataType::Float(16));  // the literal takes x's dtype
}

TEST(IRNodes, AddOfIntAndFloatIsATypeError) {
  Var i("i");
  Var x("x", DataType::Float(32));
  EXPECT_EQ(ErrorOf([&] { Add(i, x); }),
            "TypeError: Add: operand dtypes differ: int32 vs float32 (insert a Cast)");
}

TEST(IRNodes, LaneMismatchIsATypeError) {
  Var a("a", DataType::Int(32, 8));
  Var b("b", DataType::Int(32, 4));
  EXPECT_NE(ErrorOf([&] { Mul(a, b); }).find("lanes differ"), std::string::npos);
}

TEST(IRNodes, StoreOfWrongDTypeIsATypeError) {
  Buffer buf = DeclBuffer({16}, DataType::Int(8), "A");
  Var x("x", DataType::Float(32));
  std::string msg = ErrorOf([&] { BufferStore(buf, x, {0}); });
  EXPECT_NE(msg.find("TypeError: BufferStore: storing float32 into `A` expects int8"),
            std::string::npos)
      << msg;
}

TEST(IRNodes, VectorLoadFromRamp) {
  Buffer buf = DeclBuffer({64}, DataType::Int(32), "A");
  PrimExpr v = BufferLoad(buf, {Ramp(0, 1, 8)});
  EXPECT_EQ(v.dtype(), DataType::Int(32, 8));
  EXPECT_EQ(v.dtype().str(), "int32x8");
}

TEST(IRNodes, ModOfFloatIsATypeError) {
  Var x("x", DataType::Float(32));
  EXPECT_NE(ErrorOf([&] { Mod(x, x); }).find("Mod: operands must be integers"), std::string::npos);
}

TEST(IRNodes, IntImmRange) {
  EXPECT_NE(ErrorOf([] { IntImm(DataType::Int(8), 200); }).find("does not fit int8"),
            std::string::npos);
}

TEST(IRNodes, GlobalAllocateIsAnError) {
  Buffer buf = DeclBuffer({16}, DataType::Int(8), "G", "global");
  EXPECT_NE(ErrorOf([&] {
              Allocate(buf, Evaluate(PrimExpr(0)));
            }).find("only local (L1) and shared (L2)"),
            std::string::npos);
}

TEST(IRNodes, UnknownScopeIsAnError) {
  EXPECT_NE(ErrorOf([] {
              DeclBuffer({16}, DataType::Int(8), "A", "l3");
            }).find("unknown memory scope `l3`"),
            std::string::npos);
}

TEST(IRNodes, IntrinsicChecks) {
  Buffer a = DeclBuffer({16, 16}, DataType::Int(8), "a", "local");
  Buffer b = DeclBuffer({16, 16}, DataType::Int(8), "b", "local");
  Buffer c = DeclBuffer({16, 16}, DataType::Int(32), "c", "local");
  Buffer cf = DeclBuffer({16, 16}, DataType::Float(32), "cf", "local");
  PrimExpr mm = call("tile.mm", {BufferRegion::Full(c), BufferRegion::Full(a),
                                 BufferRegion::Full(b), IntImm(DataType::Bool(), 0)});
  EXPECT_TRUE(mm.dtype().is_void());
  EXPECT_NE(ErrorOf([&] {
              call("tile.mm", {BufferRegion::Full(cf), BufferRegion::Full(a), BufferRegion::Full(b),
                               IntImm(DataType::Bool(), 0)});
            }).find("accumulator c must be int32"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { call("tile.nope", {}); }).find("unknown intrinsic `tile.nope`"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { call("tile.wait", {}); }).find("expected 1 arguments"), std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              call("tile.vec_exp", {BufferRegion::Full(a), BufferRegion::Full(b)});
            }).find("float only"),
            std::string::npos);
  EXPECT_EQ(call("tir.core_id", {}).dtype(), DataType::Int(32));
  EXPECT_GE(ListIntrinsics().size(), 30u);
}

TEST(IRNodes, StructuralEqualityMapsBoundVars) {
  auto make = [] {
    Buffer buf = DeclBuffer({16}, DataType::Int(32), "A");
    Var i("i");
    Stmt body = For(i, 0, 16, ForKind::kSerial, BufferStore(buf, BufferLoad(buf, {i}) + 1, {i}));
    return PrimFunc({buf->data}, body, Map<Var, Buffer>{{buf->data, buf}});
  };
  PrimFunc f = make(), g = make();
  EXPECT_TRUE(ffi::StructuralEqual(f, g));
  EXPECT_EQ(ffi::StructuralHash(f), ffi::StructuralHash(g));
  // JSON round trip keeps the structure.
  EXPECT_TRUE(ffi::StructuralEqual(f, ffi::LoadJSON(ffi::SaveJSON(f))));
}

TEST(IRNodes, DeepExpressionChainsSaveLoadCompareAndHash) {
  // let i = 0 in (((i + c0) + c1) + ... ): 100000 Adds, on a 256 KiB stack, so no walk
  // (save, load, equality, hash, destruction) may use a C stack frame per level.
  constexpr int kDepth = 100000;
  tilecore::testing::RunOnSmallStack([] {
    auto chain = [](int64_t bottom) {
      Var i("i");
      PrimExpr e = Add(i, IntImm(DataType::Int(32), bottom));
      for (int k = 1; k < kDepth; ++k) e = Add(e, IntImm(DataType::Int(32), k % 7));
      return Let(i, IntImm(DataType::Int(32), 0), e);
    };
    PrimExpr a = chain(1), b = chain(1), c = chain(2);
    EXPECT_TRUE(ffi::StructuralEqual(a, b));
    EXPECT_EQ(ffi::StructuralHash(a), ffi::StructuralHash(b));
    PrimExpr back = ffi::LoadJSON(ffi::SaveJSON(a)).cast<PrimExpr>();
    EXPECT_TRUE(ffi::StructuralEqual(back, a));
    EXPECT_EQ(ffi::StructuralHash(back), ffi::StructuralHash(a));
    EXPECT_FALSE(ffi::StructuralEqual(a, c));
    EXPECT_NE(ffi::StructuralHash(a), ffi::StructuralHash(c));
    std::string bottom = "root.body";
    for (int k = 1; k < kDepth; ++k) bottom += ".a";
    bottom += ".b.value";
    auto mismatch = ffi::GetFirstMismatch(a, c);
    ASSERT_TRUE(mismatch.has_value());
    EXPECT_EQ(mismatch->first, bottom);
    EXPECT_EQ(mismatch->second, bottom);
  });
}

TEST(IRNodes, SpansAreIgnoredByEquality) {
  Var i("i");
  PrimExpr a = Add(i, 1, Span("k.py", 3, 5));
  PrimExpr b = Add(i, 1);
  EXPECT_TRUE(ffi::StructuralEqual(a, b));
  std::string msg = ErrorOf([&] { Add(i, Var("x", DataType::Float(32)), Span("k.py", 3, 5)); });
  EXPECT_NE(msg.find("(at k.py:3:5)"), std::string::npos) << msg;
}

TEST(IRNodes, MutatorKeepsUnchangedNodes) {
  Var i("i");
  PrimExpr e = i * 4 + 1;
  IRMutator m;
  EXPECT_TRUE(m.VisitExpr(e).same_as(e));
  PrimExpr s = Substitute(e, Map<Var, PrimExpr>{{i, PrimExpr(2)}});
  EXPECT_EQ(AsScript(s), "2 * 4 + 1");
}

namespace {
// e = e + e, `depth` times: 2^depth paths to the leaf, depth + 1 nodes.
PrimExpr SharedChain(const PrimExpr& leaf, int depth) {
  PrimExpr e = leaf;
  for (int k = 0; k < depth; ++k) e = e + e;
  return e;
}

struct CountVars : IRVisitor {
  using IRVisitor::IRVisitor;
  int64_t n = 0;
  void VisitExpr_(const VarNode*) override { ++n; }
};

// Rewrites `from` into `to`, counting the variables it rewrites or keeps.
struct Rename : IRMutator {
  Rename(Var from, Var to) : from(std::move(from)), to(std::move(to)) {}
  Var from, to;
  int64_t calls = 0;
  PrimExpr VisitExpr_(const VarNode* op) override {
    ++calls;
    return op == from.get() ? PrimExpr(to) : GetRef<PrimExpr>(op);
  }
};
}  // namespace

TEST(IRNodes, VisitorVisitsASharedSubexpressionOncePerExpression) {
  Var x("x");
  CountVars once;
  once.VisitExpr(SharedChain(x, 60));  // 2^60 paths: only a memo finishes
  EXPECT_EQ(once.n, 1);
  // The memo lasts one expression: the same expression in two statements is seen twice.
  PrimExpr e = SharedChain(x, 3);
  Stmt two = SeqStmt({Evaluate(e), Evaluate(e)});
  CountVars per_statement;
  per_statement.VisitStmt(two);
  EXPECT_EQ(per_statement.n, 2);
  // A visitor that counts occurrences asks for each.
  CountVars each(Sharing::kEachOccurrence);
  each.VisitExpr(e);
  EXPECT_EQ(each.n, 8);
}

TEST(IRNodes, AnArrayElementSharedWithinAnExpressionIsWalkedOnce) {
  // An array element is read without a reference of its own: the walk must still see an
  // element the expression holds twice, in the array or next to it, as shared.
  Var x("x"), y("y");
  Buffer buf = DeclBuffer({64, 64}, DataType::Int(32), "A");
  PrimExpr a = x + 1;
  PrimExpr twice = BufferLoad(buf, {a, a});  // only this array holds `a`, twice
  CountVars once;
  once.VisitExpr(twice);
  EXPECT_EQ(once.n, 1);
  CountVars next_to_it;
  next_to_it.VisitExpr(BufferLoad(buf, {a, y}) * a);
  EXPECT_EQ(next_to_it.n, 2);  // x once, y once
  CountVars each(Sharing::kEachOccurrence);
  each.VisitExpr(BufferLoad(buf, {a, y}) * a);
  EXPECT_EQ(each.n, 3);
  Rename m(x, y);
  PrimExpr r = m.VisitExpr(BufferLoad(buf, {a, a}) + a);
  EXPECT_EQ(m.calls, 1);  // rewritten once, and the result shares it the same way
  const auto* add = r.as<AddNode>();
  ASSERT_NE(add, nullptr);
  const auto* load = add->a.as<BufferLoadNode>();
  ASSERT_NE(load, nullptr);
  EXPECT_TRUE(load->indices[0].same_as(load->indices[1]));
  EXPECT_TRUE(load->indices[0].same_as(add->b));
  EXPECT_EQ(AsScript(add->b), "y + 1");
}

TEST(IRNodes, MutatorRewritesASharedSubexpressionOnce) {
  Var x("x"), y("y");
  Rename m(x, y);
  PrimExpr r = m.VisitExpr(SharedChain(x, 60));
  EXPECT_EQ(m.calls, 1);
  // The result is shared the same way: each level's two operands are one node.
  for (int k = 0; k < 60; ++k) {
    const auto* add = r.as<AddNode>();
    ASSERT_NE(add, nullptr);
    EXPECT_TRUE(add->a.same_as(add->b));
    r = add->a;
  }
  EXPECT_TRUE(r.same_as(y));
}

TEST(IRNodes, StatementWalkCallsWhatTheFullWalkCallsOnStatements) {
  // PostOrderVisitStmts: the statements of PostOrderVisit's walk, in its order, a shared
  // one once, with no expression reached.
  const DataType f32 = DataType::Float(32);
  Buffer A = DeclBuffer({8}, f32, "A"), T = DeclBuffer({8}, f32, "T", "local");
  Var c("c"), i("i");
  Stmt wait = Evaluate(call("tile.wait", {0}));  // held twice
  Stmt body = SeqStmt(
      {Evaluate(call("tile.dma_copy", {BufferRegion::Full(T), BufferRegion::Full(A), 0})), wait,
       For(i, 0, 8, ForKind::kSerial,
           IfThenElse(i < 4, BufferStore(T, BufferLoad(T, {i}) * 2.0f, {i}),
                      BufferStore(T, BufferLoad(T, {i}) + 1.0f, {i}))),
       wait});
  Stmt kernel = For(c, 0, 4, ForKind::kCores, Allocate(T, body));
  std::vector<const Object*> full, stmts;
  PostOrderVisit(kernel, [&](const ObjectRef& n) {
    if (n.as<StmtNode>()) full.push_back(n.get());
  });
  PostOrderVisitStmts(kernel, [&](const Stmt& s) { stmts.push_back(s.get()); });
  EXPECT_EQ(stmts, full);
  // the copy, the wait, two stores, the if, the loop, the sequence, the allocation, the
  // cores loop
  EXPECT_EQ(stmts.size(), 9u);
  EXPECT_EQ(stmts.back(), kernel.get());
  EXPECT_EQ(std::count(stmts.begin(), stmts.end(), wait.get()), 1);
}
