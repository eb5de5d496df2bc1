// tests/cpp/arch/test_assembler.cc — assembler syntax, diagnostics (one per
// error), the program image, and the assemble -> disassemble -> assemble round trip.
#include <gtest/gtest.h>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/disassembler.h"

using namespace tilecore::arch;

namespace {

/// Every instruction of the table, once, with non-trivial operands.
const char* kEveryInstruction = R"(
.equ BASE, 0x40
.core 0, 2
start:
    nop
    add x1, x2, x3
    sub x1, x2, x3
    mul x1, x2, x3
    mulh x1, x2, x3
    mulhu x1, x2, x3
    div x1, x2, x3
    divu x1, x2, x3
    rem x1, x2, x3
    remu x1, x2, x3
    and x1, x2, x3
    or x1, x2, x3
    xor x1, x2, x3
    sll x1, x2, x3
    srl x1, x2, x3
    sra x1, x2, x3
    slt x1, x2, x3
    sltu x1, x2, x3
    min x1, x2, x3
    max x1, x2, x3
    minu x1, x2, x3
    maxu x1, x2, x3
    addi x4, x5, -12
    andi x4, x5, 0xFF
    ori x4, x5, 1 << 4
    xori x4, x5, ~0
    slli x4, x5, 3
    srli x4, x5, 3
    srai x4, x5, 3
    slti x4, x5, -1
    sltiu x4, x5, 7
    muli x4, x5, 3 * (2 + 1)
    li x31, 0xFFFFFFFF
    lb x1, [ddr: x2 + BASE]
    lbu x1, [l2: x2 - 4]
    lh x1, [l1: x2]
    lhu x1, [l1: 8]
    lw x1, [ddr: x2 + 4]
    sb x1, [ddr: x2 + 1]
    sh x1, [l2: x2 + 2]
    sw x1, [l1: x2 + 4]
    beq x1, x2, start
    bne x1, x2, fwd
    blt x1, x2, start
    bge x1, x2, fwd
    bltu x1, x2, start
    bgeu x1, x2, fwd
fwd:
    jal x1, start
    jalr x0, x1, 0
    csrr x7, cnt.mm
    wait sc, dout, x9 + 2
    wait mm, din, 4
    vadd.f16 v1, v2, v3
    vsub.i8 v1, v2, v3, p3
    vmul.bf16 v1, v2, v3
    vmin.u16 v1, v2, v3
    vmax.f32 v1, v2, v3
    vand.i32 v1, v2, v3
    vor.u8 v1, v2, v3
    vxor.i16 v1, v2, v3
    vadds.i8 v1, v2, v3
    vsubs.u32 v1, v2, v3
    vsplat.bool v4, x5, p1
    vld v6, [l2: x7 + 64]
    vst.i32 v6, [ddr: x7 + 32], p2
    vcmpeq.f32 p1, v2, v3
    vcmplt.i8 p1, v2, v3, p7
    vcmple.u32 p1, v2, v3
    vsel.f16 v1, v2, v3, p0
    vredsum.i32 v1, v2
    vredmax.f32 v1, v2, p4
    vredmin.u8 v1, v2
    vext.i16 x3, v4, 15
    vcvt.f32.i8 v1, v2
    pwhile.i16 p2, x9
    pand p1, p2, p3
    por p1, p2, p3
    pxor p1, p2, p3
    pnot p1, p2
    dma.in l1:x1, ddr:x2, [x3 + 16]
    dma.out l2:x1, l1:x2, [x0 + 0xF0000]
    mm.i8 x1, x2, x3, [x4]
    mma.bf16 x1, x2, x3, [x4 + 52]
    tadd.f32 x1, x2, x3, [x4]
    tsub.i16 x1, x2, x3, [x4]
    tmul.u8 x1, x2, x3, [x4]
    tmax.f16 x1, x2, x3, [x4]
    tmin.i32 x1, x2, x3, [x4]
    tdiv.f32 x1, x2, x3, [x4]
    tadds.f32 x1, x2, [x4]
    tmuls.i8 x1, x2, [x4]
    tmaxs.u16 x1, x2, [x4]
    tmins.bf16 x1, x2, [x4]
    texp.f32 x1, x2, [x4]
    tlog.f16 x1, x2, [x4]
    trecip.f32 x1, x2, [x4]
    tsqrt.bf16 x1, x2, [x4]
    trsqrt.f32 x1, x2, [x4]
    ttanh.f32 x1, x2, [x4]
    tsigmoid.f16 x1, x2, [x4]
    trelu.i8 x1, x2, [x4]
    tcvt.f16.i32 x1, x2, [x4]
    trequant.i8.i32 x1, x2, [x4]
    tredsum.f32 x1, x2, [x4]
    tredmax.i16 x1, x2, [x4]
    tredmin.u8 x1, x2, [x4]
    tlut.f16 x1, x2, x3, [x4]
    tquant.u8.f32 x1, x2, [x4]
    hcall x1, x2, 8
    barrier
    fence
    halt
.core 1
    halt
.data ddr, 0x1000
table: .byte 1, 2, 3
    .align 4
    .half 0xBEEF
    .word table, -1
    .float 1.5, -0.25
    .f16 1.0
    .bf16 2.0
    .zero 3
.core 0
.data l1, 0x100
    .dmadesc src=i8 dst=f32 shape=[2, 3] pad_lo=[0, 1] fill=-1
    .vecdesc shape=[4, 4] b_stride=[0, 1] scalar=2.5
    .mmdesc m=16 n=32 k=64 out=i8 act=relu scale=0.5 zp=3
)";

}  // namespace

TEST(Assembler, EveryInstructionIsCovered) {
  Program p = assemble(kEveryInstruction);
  std::set<Opcode> seen;
  for (const auto& t : p.text)
    for (uint64_t w : t.words) seen.insert(decode(w)->op);
  for (const auto& row : instruction_table())
    EXPECT_TRUE(seen.count(row.op)) << row.mnemonic << " missing from the test";
}

TEST(Assembler, RoundTripIsStable) {
  Program p = assemble(kEveryInstruction);
  std::string text = disassemble(p);
  Program q = assemble(text);
  EXPECT_EQ(p, q) << text;
  EXPECT_EQ(disassemble(q), text);
  // The binary image round-trips too.
  EXPECT_EQ(Program::from_bytes(p.to_bytes()), p);
}

TEST(Assembler, SectionsLabelsAndData) {
  Program p = assemble(kEveryInstruction);
  ASSERT_EQ(p.text.size(), 2u);
  EXPECT_EQ(p.text[0].core_mask, 0b101u);
  EXPECT_EQ(p.text[1].core_mask, 0b010u);
  EXPECT_EQ(p.text_for_core(2), &p.text[0]);
  EXPECT_EQ(p.text_for_core(3), nullptr);
  // beq at index 41 branches back to start (index 0): offset -41.
  auto beq = decode(p.text[0].words[41]);
  ASSERT_EQ(beq->op, Opcode::Beq);
  EXPECT_EQ(beq->imm, -41);
  ASSERT_EQ(p.data.size(), 2u);
  const auto& d = p.data[0].bytes;
  EXPECT_EQ(p.data[0].space, Space::DDR);
  EXPECT_EQ(p.data[0].core_mask, 0u);
  // .byte 1,2,3 / align 4 / .half BEEF / .word table(=0x1000), -1 / floats
  std::vector<uint8_t> head(d.begin(), d.begin() + 14);
  EXPECT_EQ(head, (std::vector<uint8_t>{1, 2, 3, 0, 0xEF, 0xBE, 0x00, 0x10, 0, 0, 0xFF, 0xFF, 0xFF,
                                        0xFF}));
  EXPECT_EQ(p.data[1].space, Space::L1);
  EXPECT_EQ(p.data[1].core_mask, 1u);
  EXPECT_EQ(p.data[1].bytes.size(), DmaDesc::kBytes + VecDesc::kBytes + MmDesc::kBytes);
  auto dma = DmaDesc::parse(p.data[1].bytes, nullptr);
  ASSERT_TRUE(dma);
  EXPECT_EQ(dma->rank, 2);
  EXPECT_EQ(dma->src_stride[0], 2);  // source window is 2 x 2 (one padded column)
  EXPECT_EQ(dma->dst_stride[0], 3);
  EXPECT_EQ(dma->fill_bits, 0xBF800000u);  // -1.0f
}

struct BadCase {
  std::string text;
  int line;
  const char* message;
};

TEST(Assembler, DiagnosticsNameLineAndProblem) {
  const BadCase cases[] = {
      {"nop\nfrob x1, x2\n", 2, "unknown instruction 'frob'"},
      {"add x1, x2\n", 1, "'add' expects 3 operands (xd, xs1, xs2), got 2"},
      {"add x1, x2, x32\n", 1, "register 'x32' does not exist"},
      {"vadd v1, v2, v3\n", 1, "'vadd' needs 1 dtype suffix"},
      {"vand.f32 v1, v2, v3\n", 1, "'vand' does not accept dtype f32"},
      {"add.i8 x1, x2, x3\n", 1, "'add' takes no dtype suffix"},
      {"beq x1, x2, nowhere\n", 1, "undefined symbol 'nowhere'"},
      {"a:\na:\n", 2, "symbol 'a' defined twice"},
      {"lw x1, [x2 + 4]\n", 1, "memory operand needs a space"},
      {"lw x1, [hbm: x2]\n", 1, "unknown memory space 'hbm'"},
      {"li x1, 0x123456789\n", 1, "does not fit in 32 bits"},
      {"vext.i32 x1, v2, 8\n", 1, "lane 8 out of range"},
      {".data ddr, 0\nadd x1, x2, x3\n", 2, "instruction inside a .data segment"},
      {".byte 1\n", 1, "data directive outside a .data segment"},
      {".data l1, 0\n.dmadesc shape=[4] strides=[1]\n", 2, "unknown key 'strides'"},
      {".data l1, 0\n.mmdesc m=0 n=1 k=1\n", 2, "M, N, K must be in 1..4096"},
      // (a default stride past 32 bits: once a signed 64-bit overflow, found by the fuzzer)
      {".data l1, 0\n.dmadesc shape=[4294967291, 3944390655, 65536, 2]\n", 2,
       "does not fit 32 bits"},
      {".data l1, 0\n.vecdesc shape=[2, 65536, 65536, 1]\n", 2, "does not fit 32 bits"},
      {".core 17\n", 1, "core numbers must be in 0..15"},
      {".core 0\nnop\n.core 0,1\nnop\n", 4, "already has code in another section"},
      {"wait xx, din, 1\n", 1, "unknown queue 'xx'"},
      {"csrr x1, time\n", 1, "unknown CSR 'time'"},
      {"dma.in x1, ddr:x2, [x3]\n", 1, "expected space:xreg"},
      {"tadd.f32 x1, x2, x3, [l1: x4]\n", 1, "descriptors are always in local L1"},
      {".zero N\n.equ N, 4\n", 1, "must be defined before this line"},
      {"li x1, 1 +\n", 1, "expression expected"},
      {".frob\n", 1, "unknown directive '.frob'"},
      {"li x1, " + std::string(300, '(') + "1" + std::string(300, ')') + "\n", 1,
       "expression nested too deeply"},
  };
  for (const auto& c : cases) {
    try {
      assemble(c.text);
      ADD_FAILURE() << "no error for: " << c.text;
    } catch (const AsmError& e) {
      EXPECT_EQ(e.line(), c.line) << c.text << " -> " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << c.text << " -> " << e.what();
    }
  }
}

TEST(Assembler, ExpressionsWrapInsteadOfOverflowing) {
  // 2^63 arithmetic wraps like the 64-bit words it feeds; the low 32 bits land in imm.
  Program p = assemble(
      ".inst 0x7fffffffffffffff + 1\n.inst -(0x8000000000000000)\nli x1, 0x100000000 * 0x100000000 "
      "+ 5\n");
  EXPECT_EQ(p.text[0].words[0], 0x8000000000000000ull);
  EXPECT_EQ(p.text[0].words[1], 0x8000000000000000ull);
  EXPECT_EQ(decode(p.text[0].words[2])->imm, 5);
}

TEST(Assembler, ProgramImageRejectsGarbage) {
  std::vector<uint8_t> junk = {'T', 'C', '1', 'X'};
  EXPECT_THROW(Program::from_bytes(junk), ProgramFormatError);
  auto bytes = assemble("halt\n").to_bytes();
  bytes.push_back(0);
  EXPECT_THROW(Program::from_bytes(bytes), ProgramFormatError);
}

TEST(Disassembler, UndecodableWordsStayRaw) {
  Program p = assemble(
      ".inst 0xFF\nhalt\n.inst 0xffffff0008000010\n");  // a full 64-bit raw word (found by fuzzing)
  std::string text = disassemble(p);
  EXPECT_NE(text.find(".inst 0xff"), std::string::npos) << text;
  EXPECT_EQ(assemble(text), p);
  EXPECT_EQ(disassemble_word(p.text[0].words[1]), "halt");
  EXPECT_EQ(p.text[0].words[2], 0xffffff0008000010ull);
}
