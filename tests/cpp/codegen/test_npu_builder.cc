// tests/cpp/codegen/test_npu_builder.cc — the npu code generator's instruction
// builder, register pools, spill slots and region merging.
#include <gtest/gtest.h>

#include "codegen/npu/emitter.h"
#include "tilecore/arch/assembler.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/params.h"
#include "tilecore/codegen/npu/builder.h"
#include "tilecore/codegen/npu/registers.h"

#if TILECORE_ENABLE_NPU  // the npu code generator is built only with the npu device

namespace tilecore::codegen::npu {
namespace {

using arch::Opcode;

TEST(NpuBuilder, TypedInstructionsEncodeLikeTheAssembler) {
  InstrBuilder b(1024);
  Label top = b.NewLabel("top"), done = b.NewLabel("done");
  b.Emit(Opcode::Li, {Operand::X(5), Operand::Imm(3)});
  b.Bind(top);
  b.Emit(Opcode::Addi, {Operand::X(5), Operand::X(5), Operand::Imm(-1)});
  b.Emit(Opcode::Beq, {Operand::X(5), Operand::X(0), Operand::To(done)});
  b.Emit(Opcode::Jal, {Operand::X(0), Operand::To(top)});
  b.Bind(done);
  b.Emit(Opcode::Vadd, {Operand::V(3), Operand::V(4), Operand::V(5), Operand::P(2)},
         arch::DType::I16);
  b.Emit(Opcode::Lw, {Operand::X(6), Operand::Mem(arch::Space::L1, 0, 1024)});
  b.Emit(Opcode::Wait,
         {Operand::FrontEnd(), Operand::Engine(arch::Engine::Vector), Operand::Count(30)});
  b.Emit(Opcode::Tcvt, {Operand::X(1), Operand::X(2), Operand::Desc(0, 1024)}, arch::DType::I8,
         arch::DType::F32);
  b.Emit(Opcode::Halt, {});
  arch::Program p = b.Finish(2);
  const char* text =
      ".core 0-1\n"
      "li x5, 3\n"
      "top: addi x5, x5, -1\n"
      "beq x5, x0, done\n"
      "jal x0, top\n"
      "done: vadd.i16 v3, v4, v5, p2\n"
      "lw x6, [l1: x0 + 1024]\n"
      "wait sc, vec, x30\n"
      "tcvt.i8.f32 x1, x2, [x0 + 1024]\n"
      "halt\n";
  arch::Program want = arch::assemble(text);
  ASSERT_EQ(p.text.size(), 1u);
  EXPECT_EQ(p.text[0].words, want.text[0].words);
  EXPECT_EQ(p.text[0].core_mask, 3u);
  // The source (for get_source) assembles back to the same program.
  EXPECT_EQ(arch::assemble(b.Source("test")), p);
}

TEST(NpuBuilder, OperandMismatchIsAnInternalError) {
  InstrBuilder b;
  EXPECT_ANY_THROW(b.Emit(Opcode::Add, {Operand::X(1), Operand::X(2)}));  // too few
  EXPECT_ANY_THROW(
      b.Emit(Opcode::Add, {Operand::X(1), Operand::X(2), Operand::Imm(3)}));  // wrong kind
  EXPECT_ANY_THROW(
      b.Emit(Opcode::Vand, {Operand::V(1), Operand::V(2), Operand::V(3)}, arch::DType::F32));
  EXPECT_ANY_THROW(
      b.Emit(Opcode::Add, {Operand::X(arch::tc1::kNumXRegs), Operand::X(0), Operand::X(0)}));
  EXPECT_ANY_THROW(b.Emit(Opcode::Li, {Operand::X(1), Operand::Imm(int64_t(1) << 40)}));
  EXPECT_EQ(b.size(), 0);
}

TEST(NpuBuilder, UnplacedLabelIsAnInternalError) {
  InstrBuilder b;
  Label l = b.NewLabel("nowhere");
  b.Emit(Opcode::Jal, {Operand::X(0), Operand::To(l)});
  EXPECT_ANY_THROW(b.Finish(1));
}

TEST(NpuBuilder, DataSegmentSharesIdenticalDescriptors) {
  InstrBuilder b(4096);
  arch::VecDesc v;
  v.shape = {16, 1, 1, 1};
  int64_t w = b.Words(1);
  int64_t d1 = b.Data(v.to_bytes(), true);
  int64_t d2 = b.Data(v.to_bytes(), true);
  int64_t d3 = b.Data(v.to_bytes(), false);
  int64_t blk = b.Block(32, 32);
  EXPECT_EQ(w, 4096);
  EXPECT_EQ(d1, 4100);
  EXPECT_EQ(d2, d1);
  EXPECT_EQ(d3, d1 + int64_t(arch::VecDesc::kBytes));
  EXPECT_EQ(blk % 32, 0);
  EXPECT_EQ(b.data_top(), blk + 32);
  b.Emit(Opcode::Halt, {});
  arch::Program p = b.Finish(1);
  ASSERT_EQ(p.data.size(), 1u);
  EXPECT_EQ(p.data[0].addr, 4096u);
  EXPECT_EQ(p.data[0].space, arch::Space::L1);
  ASSERT_EQ(p.data[0].bytes.size(), size_t(b.data_top() - 4096));
  std::string why;
  EXPECT_TRUE(arch::VecDesc::parse(
      std::span(p.data[0].bytes).subspan(size_t(d1 - 4096), arch::VecDesc::kBytes), &why))
      << why;
  EXPECT_EQ(arch::assemble(b.Source("data")), p);
}

TEST(NpuRegisters, PoolsAreSizedFromTheArchitecture) {
  RegisterPool x(kFirstPoolX, kLastPoolX);
  EXPECT_EQ(kMmCount, arch::tc1::kNumXRegs - 1);
  EXPECT_EQ(x.Size(), kLastPoolX - kFirstPoolX + 1);
  EXPECT_EQ(*x.Alloc(), kFirstPoolX);  // lowest first
  int n = 1;
  while (x.Alloc()) ++n;
  EXPECT_EQ(n, x.Size());
  EXPECT_FALSE(x.Alloc().has_value());  // exhausted: the caller spills
  x.Free(kFirstPoolX + 3);
  x.Free(1);  // a fixed register is never pooled
  EXPECT_EQ(x.FreeCount(), 1);
  EXPECT_EQ(*x.Alloc(), kFirstPoolX + 3);
  RegisterPool p(kFirstPoolP, arch::tc1::kNumPRegs - 1);
  EXPECT_EQ(p.Size(), arch::tc1::kNumPRegs - 1);  // p0 = all lanes is never allocated
}

TEST(NpuRegisters, SpillSlotsAreRecycled) {
  int64_t next = 100;
  SpillSlots s([&] { return (next += 4) - 4; });
  int64_t a = s.Take(), b = s.Take();
  EXPECT_NE(a, b);
  s.Give(a);
  EXPECT_EQ(s.Take(), a);  // reused, not a new word
  EXPECT_EQ(s.made(), 2);
}

TEST(NpuRegions, MergeJointMergesOnlyWhatIsContiguousInEveryOperand) {
  Tensor a, b;
  a.shape = {4, 8, 16};
  a.strides = {128, 16, 1};
  b.shape = {4, 8, 16};
  b.strides = {256, 16, 1};  // rows 0..7 contiguous, the outer dimension padded
  MergeJoint({&a, &b});
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(b.strides, (std::vector<int64_t>{256, 1}));
  Tensor c;
  c.shape = {1, 5, 1, 3};
  c.strides = {99, 3, 7, 1};
  Squeeze(&c);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{5, 3}));
  EXPECT_TRUE(Contiguous(c));
  EXPECT_EQ(Count(c), 15);
}

}  // namespace
}  // namespace tilecore::codegen::npu
#else
TEST(NpuBuilder, NeedsTheNpuDevice) {
  GTEST_SKIP() << "tilecore was built with TILECORE_ENABLE_NPU=OFF";
}
#endif  // TILECORE_ENABLE_NPU
