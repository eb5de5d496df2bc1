// tests/cpp/transform/test_plan_local_memory.cc — PlanLocalMemory.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/plan_local_memory.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
PrimFunc TwoBuffers(int32_t n, const char* scope = "local") {
  Buffer X = DeclBuffer({n}, DataType::Float(32), "X", scope);
  Buffer Y = DeclBuffer({n}, DataType::Float(32), "Y", scope);
  Stmt body = Allocate(X, Allocate(Y, BufferStore(Y, BufferLoad(X, {0}), {0})));
  return PrimFunc({}, body, Map<Var, Buffer>(),
                  Map<ffi::String, ffi::Any>{{"global_symbol", ffi::Any("two")}});
}
}  // namespace

TEST(PlanLocalMemory, BuffersGetTheirOwnBanks) {
  PrimFunc f = TwoBuffers(2048);  // 8 KiB each
  PrimFunc g = ApplyPass(PlanLocalMemory(), f);
  auto plan = g->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  std::vector<std::vector<int64_t>> rows;
  for (const auto& [v, r] : plan.items()) rows.push_back({r[0], r[1], r[2]});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<int64_t>{0, 8192, 0}));
  EXPECT_EQ(rows[1], (std::vector<int64_t>{65536, 8192, 1}));
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 65536 + 8192);
}

TEST(PlanLocalMemory, SmallBuffersArePacked) {
  PrimFunc g = ApplyPass(PlanLocalMemory(), TwoBuffers(1024));  // 4 KiB each: no bank of its own
  auto plan = g->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  std::vector<std::vector<int64_t>> rows;
  for (const auto& [v, r] : plan.items()) rows.push_back({r[0], r[1], r[2]});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<int64_t>{0, 4096, 0}));
  EXPECT_EQ(rows[1], (std::vector<int64_t>{4096, 4096, 0}));
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 8192);
}

TEST(PlanLocalMemory, SmallBuffersStackBelowTheBankedOnes) {
  // big X, then small S inside it, then big Y inside both: S takes the bottom of L1, X and
  // Y a bank each above it (S between them would put Y a bank further and S in X's bank)
  Buffer X = DeclBuffer({2048}, DataType::Float(32), "X", "local");
  Buffer S = DeclBuffer({256}, DataType::Float(32), "S", "local");
  Buffer Y = DeclBuffer({2048}, DataType::Float(32), "Y", "local");
  Stmt body = Allocate(
      X, Allocate(S, Allocate(Y, BufferStore(Y, BufferLoad(X, {0}) + BufferLoad(S, {0}), {0}))));
  PrimFunc g = ApplyPass(PlanLocalMemory(), PrimFunc({}, body));
  auto plan = g->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(plan.at(S->data)[0], 0);
  EXPECT_EQ(plan.at(X->data)[0], 65536);
  EXPECT_EQ(plan.at(Y->data)[0], 131072);
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 131072 + 8192);
}

TEST(PlanLocalMemory, PinnedBuffersHaveTheirPlacesAboveTheSmallOnes) {
  // S (256 B) small; P pinned 128 bytes into an area of 8 KiB (a handoff's buffers); X big:
  // S at the bottom, the area above it, X on the first bank above the area
  Buffer S = DeclBuffer({64}, DataType::Float(32), "S", "local");
  Buffer P = DeclBuffer({1024}, DataType::Float(32), "P", "local");
  Buffer X = DeclBuffer({2048}, DataType::Float(32), "X", "local");
  Stmt body = Allocate(
      S, Allocate(X, Allocate(P, BufferStore(X, BufferLoad(P, {0}) + BufferLoad(S, {0}), {0}))));
  Map<Var, Array<int64_t>> pinned;
  pinned.Set(P->data, Array<int64_t>{128, 8192});
  PrimFunc f({}, body, Map<Var, Buffer>(),
             Map<ffi::String, ffi::Any>{{ffi::String(kL1PinnedAttr), ffi::Any(pinned)}});
  PrimFunc g = ApplyPass(PlanLocalMemory(), f);
  auto plan = g->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(plan.at(S->data)[0], 0);
  EXPECT_EQ(plan.at(P->data)[0], 256 + 128);
  EXPECT_EQ(plan.at(P->data)[1], 4096);
  EXPECT_EQ(plan.at(X->data)[0], 65536);
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 65536 + 8192);
}

TEST(PlanLocalMemory, ASmallSourceOfAPinnedOneMovesToAnotherBank) {
  // B (small) is an mm's source beside A, pinned above the small buffers (a tile the member
  // before loaded): B goes on top of the others, in bank 1, where the small stack would put
  // it in A's bank 0 (the command would pay twice). Unpinned, A is small and B stays put.
  const DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  Buffer C = DeclBuffer({16, 1}, i32, "C", "local");
  Buffer A = DeclBuffer({16, 480}, i8, "A", "local");
  Buffer B = DeclBuffer({480, 1}, i8, "B", "local");
  Stmt mm = Evaluate(call("tile.mm", {BufferRegion::Full(C), BufferRegion::Full(A),
                                      BufferRegion::Full(B), IntImm(DataType::Bool(), 1)}));
  Stmt body = Allocate(C, Allocate(B, Allocate(A, mm)));
  Map<Var, Array<int64_t>> pinned;
  pinned.Set(A->data, Array<int64_t>{0, 8192});
  PrimFunc f({}, body, Map<Var, Buffer>(),
             Map<ffi::String, ffi::Any>{{ffi::String(kL1PinnedAttr), ffi::Any(pinned)}});
  auto plan =
      ApplyPass(PlanLocalMemory(), f)->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(plan.at(A->data)[2], 0);
  EXPECT_EQ(plan.at(B->data)[0], 65536);
  EXPECT_EQ(plan.at(B->data)[2], 1);
  EXPECT_EQ(plan.at(C->data)[2], 0);  // (not a source beside A: it stays small)
  auto unpinned = ApplyPass(PlanLocalMemory(), PrimFunc({}, body))
                      ->attrs.at("memory_plan")
                      .cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(unpinned.at(B->data)[2], 0);
}

TEST(PlanLocalMemory, TwoSmallSourcesOfAnMmTakeDifferentBanks) {
  // A 1x1 Conv's transposed plan: its weights (kept, 1 KiB) and each X tile (2 KiB) are
  // both small; in the small stack the mm would read both from bank 0 and pay twice for
  // every block. The X tile, allocated second, goes on top of the others: above the output
  // tile (8 KiB, not a source) in bank 1. A source under 1 KiB (a pooled vector: an mm of
  // few blocks) stays in the stack beside the weights.
  const DataType i8 = DataType::Int(8), i32 = DataType::Int(32);
  Buffer W = DeclBuffer({32, 32}, i8, "W", "local");
  Buffer C = DeclBuffer({64, 32}, i32, "C", "local");
  Buffer X = DeclBuffer({64, 32}, i8, "X", "local");
  Buffer V = DeclBuffer({1, 32}, i8, "V", "local");
  Buffer D = DeclBuffer({1, 32}, i32, "D", "local");
  auto mm = [](const Buffer& c, const Buffer& a, const Buffer& b) {
    return Evaluate(call("tile.mm", {BufferRegion::Full(c), BufferRegion::Full(a),
                                     BufferRegion::Full(b), IntImm(DataType::Bool(), 0)}));
  };
  Stmt body = Allocate(
      W, SeqStmt({Allocate(C, Allocate(X, mm(C, X, W))), Allocate(D, Allocate(V, mm(D, V, W)))}));
  auto plan = ApplyPass(PlanLocalMemory(), PrimFunc({}, body))
                  ->attrs.at("memory_plan")
                  .cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(plan.at(W->data)[2], 0);
  EXPECT_EQ(plan.at(C->data)[2], 1);
  EXPECT_EQ(plan.at(X->data)[0], 65536 + 8192);
  EXPECT_EQ(plan.at(X->data)[2], 1);
  EXPECT_EQ(plan.at(V->data)[2], 0);
}

TEST(PlanLocalMemory, SmallBuffersOverflowingL1AreAnError) {
  // 257 nested buffers of 4 KiB each: every one small, together over the 1 MiB of L1
  std::vector<Buffer> bufs;
  for (int i = 0; i < 257; ++i)
    bufs.push_back(DeclBuffer({1024}, DataType::Float(32), "S" + std::to_string(i), "local"));
  Stmt body = BufferStore(bufs.back(), BufferLoad(bufs.front(), {0}), {0});
  for (auto it = bufs.rbegin(); it != bufs.rend(); ++it) body = Allocate(*it, body);
  try {
    ApplyPass(PlanLocalMemory(), PrimFunc({}, body));
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_EQ(std::string(e.kind()), "ValueError");
    EXPECT_NE(std::string(e.message())
                  .find("local memory (L1) overflows: 1048576 bytes available "
                        "per core, the live buffers need 1052672 bytes"),
              std::string::npos)
        << e.message();
  }
}

TEST(PlanLocalMemory, SiblingScopesReuseSpace) {
  Buffer X = DeclBuffer({1024}, DataType::Int(8), "X", "local");
  Buffer Y = DeclBuffer({1024}, DataType::Int(8), "Y", "local");
  Stmt body = SeqStmt({Allocate(X, BufferStore(X, IntImm(DataType::Int(8), 0), {0})),
                       Allocate(Y, BufferStore(Y, IntImm(DataType::Int(8), 0), {0}))});
  PrimFunc g = ApplyPass(PlanLocalMemory(), PrimFunc({}, body));
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 1024);
}

TEST(PlanLocalMemory, L1OverflowNamesTheBuffers) {
  try {
    ApplyPass(PlanLocalMemory(), TwoBuffers(200000));  // 800 KB each
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_EQ(std::string(e.kind()), "ValueError");
    EXPECT_EQ(std::string(e.message()),
              "kernel `two`: PlanLocalMemory: local memory (L1) overflows: 1048576 bytes available "
              "per core, the "
              "live buffers need 1600000 bytes (`X` 800000 B, `Y` 800000 B)");
  }
}

TEST(PlanLocalMemory, L2Overflow) {
  try {
    ApplyPass(PlanLocalMemory(), TwoBuffers(600000, "shared"));
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(
        std::string(e.message()).find("shared memory (L2) overflows: 4194304 bytes available"),
        std::string::npos);
  }
}

TEST(PlanLocalMemory, SymbolicShapeIsAnError) {
  Var n("n");
  Buffer X = DeclBuffer({n}, DataType::Int(8), "X", "local");
  PrimFunc f({n}, Allocate(X, BufferStore(X, IntImm(DataType::Int(8), 0), {0})));
  try {
    ApplyPass(PlanLocalMemory(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message()).find("buffer `X` has a shape that is not constant"),
              std::string::npos);
  }
}

TEST(PlanLocalMemory, PackedSourcesOfOneCommandTakeDifferentBanks) {
  // X, A, B do not fit L1 each on a bank of its own (B overflows after A's padding), so the
  // kernel is packed; in the other scope the mm's A and B (P, Q) would then share bank 1:
  // Q moves up to bank 2, where it fits.
  auto i8 = DataType::Int(8);
  Buffer X = DeclBuffer({400000}, i8, "X", "local");
  Buffer A = DeclBuffer({400000}, i8, "A", "local");
  Buffer B = DeclBuffer({200000}, i8, "B", "local");
  Stmt big = Allocate(X, Allocate(A, Allocate(B, BufferStore(B, BufferLoad(X, {0}), {0}))));
  Buffer C = DeclBuffer({128, 128}, DataType::Int(32), "C", "local");
  Buffer P = DeclBuffer({128, 240}, i8, "P", "local");
  Buffer Q = DeclBuffer({240, 128}, i8, "Q", "local");
  Stmt mm = Evaluate(call("tile.mm", {BufferRegion::Full(C), BufferRegion::Full(P),
                                      BufferRegion::Full(Q), IntImm(DataType::Bool(), 0)}));
  Stmt body = SeqStmt({big, Allocate(C, Allocate(P, Allocate(Q, mm)))});
  PrimFunc g = ApplyPass(PlanLocalMemory(), PrimFunc({}, body));
  auto plan = g->attrs.at("memory_plan").cast<Map<Var, Array<int64_t>>>();
  EXPECT_EQ(plan.at(A->data)[0], 400000);  // packed
  EXPECT_EQ(plan.at(C->data)[0], 0);
  EXPECT_EQ(plan.at(P->data)[0], 65536);
  EXPECT_EQ(plan.at(Q->data)[0], 131072);
  EXPECT_EQ(plan.at(Q->data)[2], 2);
  EXPECT_EQ(g->attrs.at("local_bytes").cast<int64_t>(), 1000000);
}
