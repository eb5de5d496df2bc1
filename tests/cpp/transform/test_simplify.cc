// tests/cpp/transform/test_simplify.cc — Simplify and the Analyzer.
#include <gtest/gtest.h>

#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/simplify.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT

TEST(Simplify, ConstantFolding) {
  Analyzer an;
  EXPECT_EQ(AsScript(an.Simplify(PrimExpr(3) * 4 + 1)), "13");
  EXPECT_EQ(AsScript(an.Simplify(floordiv(PrimExpr(-7), 2))), "-4");
  EXPECT_EQ(AsScript(an.Simplify(PrimExpr(-7) / 2)), "-3");  // truncating
  EXPECT_EQ(AsScript(an.Simplify(floormod(PrimExpr(-7), 2))), "1");
  EXPECT_EQ(AsScript(an.Simplify(PrimExpr(-7) % 2)), "-1");
  // int32 arithmetic wraps as the scalar unit does
  EXPECT_EQ(AsScript(an.Simplify(PrimExpr(2147483647) + 1)), "-2147483648");
}

TEST(Simplify, Identities) {
  Analyzer an;
  Var x("x"), c("c");
  EXPECT_EQ(AsScript(an.Simplify(x * 1 + 0)), "x");
  EXPECT_EQ(AsScript(an.Simplify(x - x)), "0");
  EXPECT_EQ(AsScript(an.Simplify(c * 32 + 32 - c * 32)), "32");
  EXPECT_EQ(AsScript(an.Simplify((x + 8) - x)), "8");
  Var f("f", DataType::Float(32));
  EXPECT_EQ(AsScript(an.Simplify(f * 0.0f)), "f * 0.0");  // NaN * 0 is NaN: not folded
}

TEST(Simplify, TiledIndexMath) {
  Analyzer an;
  Var io("io"), ii("ii");
  an.Bind(io, 0, 8);
  an.Bind(ii, 0, 32);
  EXPECT_EQ(AsScript(an.Simplify(floordiv(io * 32 + ii, 32))), "io");
  EXPECT_EQ(AsScript(an.Simplify(floormod(io * 32 + ii, 32))), "ii");
  EXPECT_EQ(AsScript(an.Simplify((io * 32 + ii) / 32)), "io");
  EXPECT_EQ(AsScript(an.Simplify(io * 32 + ii < 256)), "True");
  EXPECT_EQ(AsScript(an.Simplify(min(ii, 40))), "ii");
  IntBound b = an.ConstIntBound(io * 32 + ii);
  EXPECT_EQ(b.lo, 0);
  EXPECT_EQ(b.hi, 255);
}

TEST(Simplify, Statements) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A");
  Var i("i"), j("j");
  // A loop of extent 1 disappears; an if with a provable condition keeps its branch.
  Stmt in = For(j, 0, 1, ForKind::kSerial,
                For(i, 0, 16, ForKind::kSerial,
                    IfThenElse(i < 16, BufferStore(A, i + j, {i}), BufferStore(A, 0, {i}))));
  Stmt expect = For(i, 0, 16, ForKind::kSerial, BufferStore(A, i, {i}));
  Stmt out = SimplifyStmt(in);
  EXPECT_TRUE(ffi::StructuralEqual(out, expect, true)) << AsScript(out);
}

TEST(Simplify, CoresLoopOfExtentOneIsKept) {
  Buffer A = DeclBuffer({16}, DataType::Int(32), "A");
  Var c("c");
  Stmt in = For(c, 0, 1, ForKind::kCores, BufferStore(A, c, {c}));
  EXPECT_TRUE(SimplifyStmt(in)->IsInstance<ForNode>());
}
