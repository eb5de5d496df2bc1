// tests/cpp/transform/test_emit_tile_intrinsics.cc — EmitTileIntrinsics.
#include <gtest/gtest.h>

#include <limits>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/emit_tile_intrinsics.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);
const DataType i8 = DataType::Int(8);

Buffer Local(Array<PrimExpr> shape, DataType t, const char* name) {
  return DeclBuffer(shape, t, name, "local");
}
PrimFunc Func(Stmt body) { return PrimFunc({}, body); }
std::string Report(const PrimFunc& f) { return ReportLines(f, "tile_emit_report"); }
Stmt Nest2(Var i, int64_t m, Var j, int64_t n, Stmt body) {
  return For(i, 0, static_cast<int32_t>(m), ForKind::kSerial,
             For(j, 0, static_cast<int32_t>(n), ForKind::kSerial, body));
}
Stmt Cmd(const char* op, Array<PrimExpr> args) { return Evaluate(call(op, args)); }
BufferRegion R(Buffer b, Array<PrimExpr> begin, Array<PrimExpr> ext) {
  return BufferRegion(b, begin, ext);
}
}  // namespace

TEST(EmitTileIntrinsics, ElementwiseAddOfFloatTiles) {
  Buffer A = Local({4, 64}, f32, "A"), B = Local({4, 64}, f32, "B"), C = Local({4, 64}, f32, "C");
  Var i("i"), j("j");
  PrimFunc f = Func(
      Nest2(i, 4, j, 64, BufferStore(C, BufferLoad(A, {i, j}) + BufferLoad(B, {i, j}), {i, j})));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), f);
  Stmt expect =
      Cmd("tile.vec_add", {BufferRegion::Full(C), BufferRegion::Full(A), BufferRegion::Full(B)});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
  auto counts = g->attrs.Get("tile_emit_counts")->cast<Map<String, int64_t>>();
  EXPECT_EQ(counts.Get("tile.vec_add").value_or(0), 1);
  EXPECT_EQ(Report(g).find("loop `i`: tile.vec_add over 4 x 64"), 0u) << Report(g);
}

TEST(EmitTileIntrinsics, WindowsAndOuterLoopsStay) {
  // for c: for i in 2..6: for j: T[c * 2, i, j + 8] = exp(S[i, j])
  //   -> for c: tile.vec_exp(T[c * 2, 2:6, 8:72], S[2:6, 0:64])    (c * 2 is not `base + c`: c
  //   stays a loop)
  Buffer S = Local({8, 64}, f32, "S"), T = Local({4, 8, 80}, f32, "T");
  Var c("c"), i("i"), j("j");
  Stmt body =
      For(c, 0, 2, ForKind::kSerial,
          For(i, 2, 4, ForKind::kSerial,
              For(j, 0, 64, ForKind::kSerial,
                  BufferStore(T, call("tir.exp", {BufferLoad(S, {i, j})}), {c * 2, i, j + 8}))));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(body));
  Stmt expect = For(c, 0, 2, ForKind::kSerial,
                    Cmd("tile.vec_exp", {R(T, {c * 2, 2, 8}, {1, 4, 64}), R(S, {2, 0}, {4, 64})}));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(EmitTileIntrinsics, BroadcastGoesThroughAStrideZeroView) {
  // C[i, j] = A[i, j] - M[i]: M is read through M_view with strides (1, 0).
  Buffer A = Local({4, 64}, f32, "A"), C = Local({4, 64}, f32, "C"), M = Local({4}, f32, "M");
  Var i("i"), j("j");
  PrimFunc g = ApplyPass(
      EmitTileIntrinsics(),
      Func(Nest2(i, 4, j, 64, BufferStore(C, BufferLoad(A, {i, j}) - BufferLoad(M, {i}), {i, j}))));
  Buffer view(M->data, f32, {4, 64}, {1, 0}, IntImm(i32, 0), "local", "M_view");
  Stmt expect =
      Cmd("tile.vec_sub", {BufferRegion::Full(C), BufferRegion::Full(A), R(view, {0, 0}, {4, 64})});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(EmitTileIntrinsics, TransposedSourceGoesThroughAView) {
  Buffer A = Local({64, 4}, f32, "A"), C = Local({4, 64}, f32, "C");
  Var i("i"), j("j");
  PrimFunc g = ApplyPass(EmitTileIntrinsics(),
                         Func(Nest2(i, 4, j, 64, BufferStore(C, BufferLoad(A, {j, i}), {i, j}))));
  Buffer view(A->data, f32, {4, 64}, {1, 4}, IntImm(i32, 0), "local", "A_view");
  Stmt expect = Cmd("tile.vec_copy", {BufferRegion::Full(C), R(view, {0, 0}, {4, 64})});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(EmitTileIntrinsics, ScalarOperandsAndUnaryForms) {
  Buffer A = Local({64}, f32, "A"), C = Local({64}, f32, "C"),
         H = Local({64}, DataType::Float(16), "H");
  Var i("i");
  auto run = [&](Stmt store) {
    return ApplyPass(EmitTileIntrinsics(), Func(For(i, 0, 64, ForKind::kSerial, store)))->body;
  };
  PrimExpr a = BufferLoad(A, {i});
  BufferRegion c = BufferRegion::Full(C), ra = BufferRegion::Full(A);
  struct Case {
    Stmt in;
    Stmt out;
  };
  std::vector<Case> cases = {
      {BufferStore(C, a * 2.0f, {i}), Cmd("tile.vec_muls", {c, ra, FloatImm(f32, 2.0)})},
      {BufferStore(C, PrimExpr(3.0f) + a, {i}), Cmd("tile.vec_adds", {c, ra, FloatImm(f32, 3.0)})},
      {BufferStore(C, a - 1.5f, {i}), Cmd("tile.vec_adds", {c, ra, FloatImm(f32, -1.5)})},
      {BufferStore(C, max(a, 0.0f), {i}), Cmd("tile.vec_relu", {c, ra})},
      {BufferStore(C, min(a, 6.0f), {i}), Cmd("tile.vec_mins", {c, ra, FloatImm(f32, 6.0)})},
      {BufferStore(C, PrimExpr(1.0f) / a, {i}), Cmd("tile.vec_recip", {c, ra})},
      {BufferStore(C, call("tir.rsqrt", {a}), {i}), Cmd("tile.vec_rsqrt", {c, ra})},
      {BufferStore(C, a, {i}), Cmd("tile.vec_copy", {c, ra})},
      {BufferStore(H, Cast(DataType::Float(16), a), {i}),
       Cmd("tile.vec_copy", {BufferRegion::Full(H), ra})},
      {BufferStore(C, a, {i}), Cmd("tile.vec_copy", {c, ra})},
  };
  for (const Case& k : cases)
    EXPECT_TRUE(ffi::StructuralEqual(run(k.in), k.out)) << AsScript(run(k.in));
}

TEST(EmitTileIntrinsics, ReductionWithIdentityInit) {
  // D[i] = -inf; for k: D[i] = max(D[i], A[i, k])  ->  tile.vec_redmax(D[0:4], A[0:4, 0:64])
  Buffer A = Local({4, 64}, f32, "A"), D = Local({4}, f32, "D");
  Var i("i"), k("k");
  PrimExpr ninf = FloatImm(f32, -std::numeric_limits<double>::infinity());
  Stmt body =
      For(i, 0, 4, ForKind::kSerial,
          SeqStmt({BufferStore(D, ninf, {i}),
                   For(k, 0, 64, ForKind::kSerial,
                       BufferStore(D, Max(BufferLoad(D, {i}), BufferLoad(A, {i, k})), {i}))}));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(body));
  Stmt expect = Cmd("tile.vec_redmax", {BufferRegion::Full(D), BufferRegion::Full(A)});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
  // A sum of float32 with init 0 is a redsum; a start value that is not the identity is not.
  Stmt sum = For(i, 0, 4, ForKind::kSerial,
                 SeqStmt({BufferStore(D, 0.0f, {i}),
                          For(k, 0, 64, ForKind::kSerial,
                              BufferStore(D, BufferLoad(D, {i}) + BufferLoad(A, {i, k}), {i}))}));
  EXPECT_TRUE(
      ffi::StructuralEqual(ApplyPass(EmitTileIntrinsics(), Func(sum))->body,
                           Cmd("tile.vec_redsum", {BufferRegion::Full(D), BufferRegion::Full(A)})));
  Stmt bad = For(i, 0, 4, ForKind::kSerial,
                 SeqStmt({BufferStore(D, 1.0f, {i}),
                          For(k, 0, 64, ForKind::kSerial,
                              BufferStore(D, BufferLoad(D, {i}) + BufferLoad(A, {i, k}), {i}))}));
  PrimFunc gb = ApplyPass(EmitTileIntrinsics(), Func(bad));
  EXPECT_TRUE(ffi::StructuralEqual(gb->body, bad));
  EXPECT_NE(Report(gb).find("the initial value 1.0 is not the identity of the reduction"),
            std::string::npos)
      << Report(gb);
}

TEST(EmitTileIntrinsics, Int8MatmulWithAndWithoutInit) {
  Buffer A = Local({16, 64}, i8, "A"), B = Local({64, 32}, i8, "B"), C = Local({16, 32}, i32, "C");
  Var i("i"), j("j"), k("k");
  Stmt acc = BufferStore(
      C,
      BufferLoad(C, {i, j}) + Cast(i32, BufferLoad(A, {i, k})) * Cast(i32, BufferLoad(B, {k, j})),
      {i, j});
  Stmt with_init = Nest2(
      i, 16, j, 32, SeqStmt({BufferStore(C, 0, {i, j}), For(k, 0, 64, ForKind::kSerial, acc)}));
  PrimExpr no = IntImm(DataType::Bool(), 0), yes = IntImm(DataType::Bool(), 1);
  BufferRegion rc = BufferRegion::Full(C), ra = BufferRegion::Full(A), rb = BufferRegion::Full(B);
  EXPECT_TRUE(ffi::StructuralEqual(ApplyPass(EmitTileIntrinsics(), Func(with_init))->body,
                                   Cmd("tile.mm", {rc, ra, rb, no})));
  // Loop order i, k, j accumulates into C.
  Stmt ikj = For(i, 0, 16, ForKind::kSerial, Nest2(k, 64, j, 32, acc));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(ikj));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, Cmd("tile.mm", {rc, ra, rb, yes})))
      << AsScript(g->body);
  EXPECT_NE(Report(g).find("tile.mm over 16 x 64 x 32"), std::string::npos) << Report(g);
}

TEST(EmitTileIntrinsics, FloatMatmulAndTransposedOperandFallsBack) {
  Buffer A = Local({8, 16}, f32, "A"), B = Local({16, 8}, f32, "B"), C = Local({8, 8}, f32, "C");
  Buffer Bt = Local({8, 16}, f32, "Bt");
  Var i("i"), j("j"), k("k");
  Stmt mm = For(
      i, 0, 8, ForKind::kSerial,
      Nest2(j, 8, k, 16,
            BufferStore(C, BufferLoad(C, {i, j}) + BufferLoad(A, {i, k}) * BufferLoad(B, {k, j}),
                        {i, j})));
  EXPECT_TRUE(
      ffi::StructuralEqual(ApplyPass(EmitTileIntrinsics(), Func(mm))->body,
                           Cmd("tile.mm", {BufferRegion::Full(C), BufferRegion::Full(A),
                                           BufferRegion::Full(B), IntImm(DataType::Bool(), 1)})));
  Stmt tr = For(
      i, 0, 8, ForKind::kSerial,
      Nest2(j, 8, k, 16,
            BufferStore(C, BufferLoad(C, {i, j}) + BufferLoad(A, {i, k}) * BufferLoad(Bt, {j, k}),
                        {i, j})));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(tr));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, tr));
  EXPECT_NE(Report(g).find("not A[i, k] and B[k, j]"), std::string::npos) << Report(g);
}

TEST(EmitTileIntrinsics, FissionSplitsIndependentStores) {
  Buffer A = Local({64}, f32, "A"), B = Local({64}, f32, "B"), T = Local({64}, f32, "T"),
         U = Local({64}, f32, "U");
  Var i("i");
  Stmt body = For(i, 0, 64, ForKind::kSerial,
                  SeqStmt({BufferStore(T, BufferLoad(A, {i}) * BufferLoad(B, {i}), {i}),
                           BufferStore(U, call("tir.exp", {BufferLoad(T, {i})}), {i})}));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(body));
  Stmt expect = SeqStmt(
      {Cmd("tile.vec_mul", {BufferRegion::Full(T), BufferRegion::Full(A), BufferRegion::Full(B)}),
       Cmd("tile.vec_exp", {BufferRegion::Full(U), BufferRegion::Full(T)})});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
  // Reading T at another index than it is written makes fission illegal.
  Stmt shifted = For(i, 0, 63, ForKind::kSerial,
                     SeqStmt({BufferStore(T, BufferLoad(A, {i}), {i}),
                              BufferStore(U, BufferLoad(T, {i + 1}), {i})}));
  EXPECT_TRUE(ffi::StructuralEqual(ApplyPass(EmitTileIntrinsics(), Func(shifted))->body, shifted));
}

TEST(EmitTileIntrinsics, DeepNestKeepsItsOuterLoop) {
  Buffer A = Local({2, 2, 2, 2, 8}, f32, "A");
  Var a("a"), b("b"), c("c"), d("d"), e("e");
  Stmt body = For(
      a, 0, 2, ForKind::kSerial,
      For(b, 0, 2, ForKind::kSerial,
          For(c, 0, 2, ForKind::kSerial,
              For(d, 0, 2, ForKind::kSerial,
                  For(e, 0, 8, ForKind::kSerial,
                      BufferStore(A, BufferLoad(A, {a, b, c, d, e}) * 2.0f, {a, b, c, d, e}))))));
  PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(body));
  Stmt expect =
      For(a, 0, 2, ForKind::kSerial,
          Cmd("tile.vec_muls", {R(A, {a, 0, 0, 0, 0}, {1, 2, 2, 2, 8}),
                                R(A, {a, 0, 0, 0, 0}, {1, 2, 2, 2, 8}), FloatImm(f32, 2.0)}));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(EmitTileIntrinsics, FallbacksKeepTheLoopAndSayWhy) {
  Buffer A = Local({64}, i32, "A"), B = Local({64}, i32, "B"), C = Local({64}, i32, "C");
  Buffer G = DeclBuffer({64}, i32, "G");
  Var i("i");
  struct Case {
    Stmt store;
    const char* reason;
  };
  std::vector<Case> cases = {
      {BufferStore(C, BufferLoad(A, {i}) + BufferLoad(B, {i}), {i}),
       "integer add saturates on the vector engine"},
      {BufferStore(G, BufferLoad(A, {i}), {i}), "`G` is in global memory"},
      {BufferStore(C, BufferLoad(A, {i}) * BufferLoad(B, {i}) + 1, {i}),
       "not an element-wise operation of loads"},
      {BufferStore(C, BufferLoad(A, {i * 2 % 64}), {i}), "index 0 of `A` is not `base + i`"},
      {BufferStore(C, BufferLoad(C, {63 - i}), {i}), "reads its destination `C` at another index"},
      {BufferStore(C, max(BufferLoad(A, {i}), (1 << 25) + 1), {i}),
       "not a constant that f32 holds exactly"},
  };
  {
    // A triangle: the inner loop starts at the outer variable, so only the inner loop is a command.
    Buffer T = Local({8, 16}, i32, "T");
    Var r("r"), q("q");
    Stmt tri =
        For(r, 0, 8, ForKind::kSerial,
            For(q, r, 8, ForKind::kSerial, BufferStore(T, max(BufferLoad(T, {r, q}), 0), {r, q})));
    PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(tri));
    BufferRegion w = R(T, {r, r}, {1, 8});
    EXPECT_TRUE(
        ffi::StructuralEqual(g->body, For(r, 0, 8, ForKind::kSerial, Cmd("tile.vec_relu", {w, w}))))
        << AsScript(g->body);
  }
  for (const Case& k : cases) {
    Stmt loop = For(i, 0, 64, ForKind::kSerial, k.store);
    PrimFunc g = ApplyPass(EmitTileIntrinsics(), Func(loop));
    EXPECT_TRUE(ffi::StructuralEqual(g->body, loop)) << AsScript(g->body);
    EXPECT_NE(Report(g).find(k.reason), std::string::npos) << Report(g) << " wanted: " << k.reason;
  }
  // Saturation, when allowed, makes the integer add a command.
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.EmitTileIntrinsics.allow_saturation", ffi::Any(true));
  PassContextScope scope(ctx);
  PrimFunc g =
      ApplyPass(EmitTileIntrinsics(), Func(For(i, 0, 64, ForKind::kSerial, cases[0].store)));
  EXPECT_TRUE(ffi::StructuralEqual(
      g->body,
      Cmd("tile.vec_add", {BufferRegion::Full(C), BufferRegion::Full(A), BufferRegion::Full(B)})));
}

TEST(EmitTileIntrinsics, PragmaTileThatCannotBeEmittedIsAnError) {
  Buffer A = DeclBuffer({64}, f32, "A"), C = Local({64}, f32, "C");
  Var i("i");
  Map<String, Any> ann;
  ann.Set("pragma_tile", Any(int64_t(1)));
  Stmt loop = For(i, 0, 64, ForKind::kSerial, BufferStore(C, BufferLoad(A, {i}), {i}), ann);
  try {
    ApplyPass(EmitTileIntrinsics(), Func(loop));
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message())
                  .find("EmitTileIntrinsics: loop `i` is marked pragma_tile but no tile command "
                        "matches: `A` is in global memory"),
              std::string::npos)
        << e.message();
  }
}
