// tests/cpp/arch/test_isa.cc — the instruction table, encoder and decoder.
#include <gtest/gtest.h>

#include "tilecore/arch/isa.h"

using namespace tilecore::arch;

TEST(Isa, TableIsIndexedByOpcode) {
  auto t = instruction_table();
  ASSERT_EQ(t.size(), size_t(kNumOpcodes));
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(size_t(t[i].op), i);
}

TEST(Isa, MnemonicsAreUnique) {
  for (const auto& row : instruction_table()) {
    auto op = find_opcode(row.mnemonic);
    ASSERT_TRUE(op.has_value()) << row.mnemonic;
    EXPECT_EQ(*op, row.op) << row.mnemonic;
  }
}

TEST(Isa, EncodeDecodeRoundTrip) {
  Inst i;
  i.op = Opcode::Addi;
  i.a = 3;
  i.b = 31;
  i.imm = -7;
  uint64_t w = encode(i);
  // Field positions from the documented layout, computed independently.
  EXPECT_EQ(w & 0xFF, uint64_t(Opcode::Addi));
  EXPECT_EQ((w >> 8) & 31, 3u);
  EXPECT_EQ((w >> 13) & 31, 31u);
  EXPECT_EQ(uint32_t(w >> 32), 0xFFFFFFF9u);
  auto d = decode(w);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, i);
}

TEST(Isa, DecodeRejectsReservedFieldsAndBadCodes) {
  std::string why;
  EXPECT_FALSE(decode(0xFF, &why));
  EXPECT_NE(why.find("unknown opcode"), std::string::npos);
  Inst nop;
  EXPECT_FALSE(decode(encode(nop) | (uint64_t(1) << 8), &why));  // field a set on nop
  EXPECT_NE(why.find("reserved"), std::string::npos);
  Inst v;
  v.op = Opcode::Vand;
  v.e = uint8_t(DType::F32);  // vand is integer-only
  EXPECT_FALSE(decode(encode(v), &why));
  Inst p;
  p.op = Opcode::Pand;
  p.a = 9;  // p9 does not exist
  EXPECT_FALSE(decode(encode(p), &why));
}

TEST(Isa, FormatInstruction) {
  Inst i;
  i.op = Opcode::Lw;
  i.a = 1;
  i.b = 2;
  i.e = uint8_t(Space::DDR);
  i.imm = 16;
  EXPECT_EQ(format_instruction(i), "lw x1, [ddr: x2 + 16]");
  Inst v;
  v.op = Opcode::Vadd;
  v.a = 1;
  v.b = 2;
  v.c = 3;
  v.d = 4;
  v.e = uint8_t(DType::I16);
  EXPECT_EQ(format_instruction(v), "vadd.i16 v1, v2, v3, p4");
}
