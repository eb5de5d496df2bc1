// tests/cpp/ir/test_printer.cc — the script printer against golden text.
#include <gtest/gtest.h>

#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"

using namespace tilecore::ir;  // NOLINT

TEST(Printer, Expressions) {
  Var i("i"), j("j");
  EXPECT_EQ(AsScript((i + j) * 2), "(i + j) * 2");
  EXPECT_EQ(AsScript(i - (j - 1)), "i - (j - 1)");
  EXPECT_EQ(AsScript(floordiv(i, 4) + floormod(i, 4)), "i // 4 + i % 4");
  EXPECT_EQ(AsScript(i / 4 + i % 4), "truncdiv(i, 4) + truncmod(i, 4)");
  EXPECT_EQ(AsScript((i < 3) && !(j >= 2)), "i < 3 and not j >= 2");
  EXPECT_EQ(AsScript(Cast(DataType::Float(32), i) * 0.5f), "float32(i) * 0.5");
  EXPECT_EQ(AsScript(IntImm(DataType::Int(8), 5)), "int8(5)");
  EXPECT_EQ(AsScript(Ramp(i, 1, 8)), "ramp(i, 1, 8)");
  EXPECT_EQ(AsScript(Broadcast(FloatImm(DataType::Float(32), 1.0), 8)), "broadcast(1.0, 8)");
  EXPECT_EQ(AsScript(min(i, j)), "min(i, j)");
}

TEST(Printer, SameNameVariablesGetSuffixes) {
  Var a("i"), b("i");
  EXPECT_EQ(AsScript(a + b), "i + i_1");
}

TEST(Printer, Kernel) {
  Buffer A = DeclBuffer({128}, DataType::Int(32), "A");
  Buffer B = DeclBuffer({128}, DataType::Int(32), "B");
  Buffer T = DeclBuffer({32}, DataType::Int(32), "T", "local");
  Var c("c"), i("i");
  Stmt inner =
      For(i, 0, 32, ForKind::kSerial,
          IfThenElse(i < 16, BufferStore(T, BufferLoad(T, {i}) * 2, {i}), BufferStore(T, 0, {i})));
  Stmt body = For(
      c, 0, 4, ForKind::kCores,
      Allocate(T, SeqStmt({Evaluate(call("tile.dma_copy", {BufferRegion(T, {0}, {32}),
                                                           BufferRegion(A, {c * 32}, {32}), 0})),
                           Evaluate(call("tile.wait", {0})), inner,
                           Evaluate(call("tile.dma_copy", {BufferRegion(B, {c * 32}, {32}),
                                                           BufferRegion(T, {0}, {32}), 1})),
                           Evaluate(call("tile.wait", {1}))})));
  PrimFunc f({A->data, B->data}, body, Map<Var, Buffer>{{A->data, A}, {B->data, B}},
             Map<tilecore::ffi::String, tilecore::ffi::Any>{
                 {"global_symbol", tilecore::ffi::Any("double_it")}});
  EXPECT_EQ(AsScript(f),
            "@prim_func\n"
            "def double_it(A: Buffer((128,), \"int32\"), B: Buffer((128,), \"int32\")):\n"
            "    for c in cores(0, 4):\n"
            "        T = allocate((32,), \"int32\", \"local\")\n"
            "        tile.dma_copy(T[0:32], A[c * 32:c * 32 + 32], 0)\n"
            "        tile.wait(0)\n"
            "        for i in range(0, 32):\n"
            "            if i < 16:\n"
            "                T[i] = T[i] * 2\n"
            "            else:\n"
            "                T[i] = 0\n"
            "        tile.dma_copy(B[c * 32:c * 32 + 32], T[0:32], 1)\n"
            "        tile.wait(1)");
}
