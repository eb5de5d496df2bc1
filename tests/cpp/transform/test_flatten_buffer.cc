// tests/cpp/transform/test_flatten_buffer.cc — FlattenBuffer.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/flatten_buffer.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT
using namespace tilecore::test_util;  // NOLINT

namespace {
Buffer Flat(const Buffer& b, int64_t n) {
  return Buffer(b->data, b->dtype, {IntImm(DataType::Int(32), n)}, {}, IntImm(DataType::Int(32), 0),
                b->scope, b->name);
}
}  // namespace

TEST(FlattenBuffer, TwoDimensionalAccessesBecomeOneOffset) {
  Buffer A = DeclBuffer({4, 64}, DataType::Int(32), "A");
  Buffer B = DeclBuffer({4, 64}, DataType::Int(32), "B");
  Var i("i"), j("j");
  Stmt body =
      For(i, 0, 4, ForKind::kSerial,
          For(j, 0, 64, ForKind::kSerial, BufferStore(B, BufferLoad(A, {i, j}) + 1, {i, j})));
  PrimFunc f({A->data, B->data}, body, Map<Var, Buffer>{{A->data, A}, {B->data, B}});
  PrimFunc g = ApplyPass(FlattenBuffer(), f);
  Buffer fa = Flat(A, 256), fb = Flat(B, 256);
  Stmt expect = For(i, 0, 4, ForKind::kSerial,
                    For(j, 0, 64, ForKind::kSerial,
                        BufferStore(fb, BufferLoad(fa, {i * 64 + j}) + 1, {i * 64 + j})));
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
  // The views print under the declared buffers' names; the signature keeps the 2-D buffers.
  EXPECT_NE(AsScript(g).find("B[i * 64 + j] = A[i * 64 + j] + 1"), std::string::npos)
      << AsScript(g);
  EXPECT_TRUE(g->buffer_map.Get(A->data)->same_as(A));
}

TEST(FlattenBuffer, RampIndexStaysARamp) {
  Buffer A = DeclBuffer({4, 64}, DataType::Float(32), "A", "local");
  Var i("i"), j("j");
  Stmt s = BufferStore(A, Broadcast(FloatImm(DataType::Float(32), 0.0), 8), {i, Ramp(j * 8, 1, 8)});
  PrimFunc f({}, Allocate(A, s));
  PrimFunc g = ApplyPass(FlattenBuffer(), f);
  EXPECT_EQ(AsScript(g->body),
            "A = allocate((4, 64), \"float32\", \"local\")\nA[ramp(j * 8 + i * 64, 1, 8)] = "
            "broadcast(0.0, 8)")
      << AsScript(g->body);
}

TEST(FlattenBuffer, StridesAndOffsetAreUsed) {
  Var data("P", PointerType(DataType::Int(8), "global"));
  Buffer P(data, DataType::Int(8), {4, 16}, {128, 2}, IntImm(DataType::Int(32), 5), "global", "P");
  Var i("i"), j("j");
  PrimFunc f({data}, BufferStore(P, IntImm(DataType::Int(8), 1), {i, j}),
             Map<Var, Buffer>{{data, P}});
  PrimFunc g = ApplyPass(FlattenBuffer(), f);
  Buffer flat = Flat(P, 5 + 3 * 128 + 15 * 2 + 1);
  Stmt expect = BufferStore(flat, IntImm(DataType::Int(8), 1), {PrimExpr(5) + i * 128 + j * 2});
  EXPECT_TRUE(ffi::StructuralEqual(g->body, expect)) << AsScript(g->body);
}

TEST(FlattenBuffer, RegionsAndOneDimensionalBuffersAreKept) {
  Buffer A = DeclBuffer({4, 64}, DataType::Int(32), "A", "local");
  Buffer V = DeclBuffer({64}, DataType::Int(32), "V", "local");
  Var i("i");
  Stmt body = Allocate(
      A, Allocate(V, SeqStmt({Evaluate(call("tile.vec_copy",
                                            {BufferRegion::Full(A), BufferRegion::Full(A)})),
                              BufferStore(V, BufferLoad(V, {i}), {i})})));
  PrimFunc f({}, body);
  PrimFunc g = ApplyPass(FlattenBuffer(), f);
  EXPECT_TRUE(g.same_as(f));
}

TEST(FlattenBuffer, OffsetsBeyondInt32AreAnError) {
  Buffer A = DeclBuffer({65536, 65536}, DataType::Int(8), "huge");
  Var i("i");
  PrimFunc f({A->data}, BufferStore(A, IntImm(DataType::Int(8), 0), {i, i}),
             Map<Var, Buffer>{{A->data, A}});
  try {
    ApplyPass(FlattenBuffer(), f);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(
        std::string(e.message())
            .find("buffer `huge` spans 4294967296 elements; element offsets must fit in int32"),
        std::string::npos)
        << e.message();
  }
}
