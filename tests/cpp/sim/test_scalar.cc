// tests/cpp/sim/test_scalar.cc — scalar instructions against hand-computed values.
#include <gtest/gtest.h>

#include <cstring>

#include "tilecore/arch/assembler.h"
#include "tilecore/sim/simulator.h"

using namespace tilecore;
using arch::Space;

namespace {

uint32_t word_at(const sim::Simulator& s, Space sp, uint64_t addr, int core = 0) {
  auto b = s.read(sp, addr, 4, core);
  uint32_t v;
  std::memcpy(&v, b.data(), 4);
  return v;
}

/// Runs `body` (which leaves its result in x10) on one core; returns x10.
uint32_t eval(const std::string& body) {
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble(body + "\nhalt\n"));
  s.run();
  return s.xreg(0, 10);
}

}  // namespace

TEST(Scalar, LoopSumsOneToTen) {
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble(R"(
      li x1, 0          # sum
      li x2, 1          # i
      li x3, 11
  loop:
      add x1, x1, x2
      addi x2, x2, 1
      blt x2, x3, loop
      sw x1, [ddr: x0 + 0x100]
      halt
  )"));
  s.run();
  EXPECT_EQ(word_at(s, Space::DDR, 0x100), 55u);
}

struct AluCase {
  const char* code;
  uint32_t expect;
};

TEST(Scalar, AluSemantics) {
  const AluCase cases[] = {
      {"li x1, 7\nli x2, -3\nadd x10, x1, x2", 4u},
      {"li x1, 7\nli x2, 9\nsub x10, x1, x2", uint32_t(-2)},
      {"li x1, 0x10000\nli x2, 0x10000\nmul x10, x1, x2", 0u},
      {"li x1, -2\nli x2, 3\nmulh x10, x1, x2", 0xFFFFFFFFu},
      {"li x1, 0x80000000\nli x2, 4\nmulhu x10, x1, x2", 2u},
      {"li x1, -7\nli x2, 2\ndiv x10, x1, x2", uint32_t(-3)},
      {"li x1, 5\nli x2, 0\ndiv x10, x1, x2", 0xFFFFFFFFu},
      {"li x1, 0x80000000\nli x2, -1\ndiv x10, x1, x2", 0x80000000u},
      {"li x1, 7\nli x2, 0\ndivu x10, x1, x2", 0xFFFFFFFFu},
      {"li x1, -7\nli x2, 2\nrem x10, x1, x2", uint32_t(-1)},
      {"li x1, 9\nli x2, 0\nrem x10, x1, x2", 9u},
      {"li x1, 9\nli x2, 4\nremu x10, x1, x2", 1u},
      {"li x1, 0xF0\nli x2, 0x3C\nand x10, x1, x2", 0x30u},
      {"li x1, 0xF0\nli x2, 0x0F\nor x10, x1, x2", 0xFFu},
      {"li x1, 0xFF\nli x2, 0x0F\nxor x10, x1, x2", 0xF0u},
      {"li x1, 1\nli x2, 33\nsll x10, x1, x2", 2u},
      {"li x1, -16\nli x2, 2\nsrl x10, x1, x2", 0x3FFFFFFCu},
      {"li x1, -16\nli x2, 2\nsra x10, x1, x2", uint32_t(-4)},
      {"li x1, -1\nli x2, 1\nslt x10, x1, x2", 1u},
      {"li x1, -1\nli x2, 1\nsltu x10, x1, x2", 0u},
      {"li x1, -5\nli x2, 3\nmin x10, x1, x2", uint32_t(-5)},
      {"li x1, -5\nli x2, 3\nmax x10, x1, x2", 3u},
      {"li x1, -5\nli x2, 3\nminu x10, x1, x2", 3u},
      {"li x1, -5\nli x2, 3\nmaxu x10, x1, x2", uint32_t(-5)},
      {"li x1, 10\naddi x10, x1, -11", 0xFFFFFFFFu},
      {"li x1, 0xFF\nandi x10, x1, 0x0F", 0x0Fu},
      {"li x1, 0xF0\nori x10, x1, 0x0F", 0xFFu},
      {"li x1, 0xFF\nxori x10, x1, -1", 0xFFFFFF00u},
      {"li x1, 3\nslli x10, x1, 4", 48u},
      {"li x1, -1\nsrli x10, x1, 28", 15u},
      {"li x1, -32\nsrai x10, x1, 4", uint32_t(-2)},
      {"li x1, -3\nslti x10, x1, -2", 1u},
      {"li x1, 3\nsltiu x10, x1, -1", 1u},
      {"li x1, 6\nmuli x10, x1, -7", uint32_t(-42)},
      {"li x10, 123456789", 123456789u},
      {"li x0, 5\nadd x10, x0, x0", 0u},  // x0 ignores writes
      {"csrr x10, coreid", 0u},
      {"csrr x10, ncores", 1u},
      {"nop\nnop\ncsrr x10, instret", 2u},
      {"li x1, 1\njal x5, skip\nli x1, 2\nskip: add x10, x1, x5",
       3u},  // x5 = 2 (return index), x1 = 1
      {"li x1, 4\njalr x0, x1, 0\nli x10, 9\nhalt\nli x10, 7", 7u},
      {"li x1, 1\nli x2, 1\nli x10, 0\nbne x1, x2, t\nli x10, 5\nt: nop", 5u},
      {"li x1, -1\nli x2, 1\nli x10, 0\nbgeu x1, x2, t\nli x10, 5\nt: nop", 0u},
      {"li x1, -1\nli x2, 1\nli x10, 0\nbge x1, x2, t\nli x10, 5\nt: nop", 5u},
      {"li x1, -1\nli x2, 1\nli x10, 0\nbltu x1, x2, t\nli x10, 5\nt: nop", 5u},
      {"li x1, 3\nli x2, 3\nli x10, 0\nbeq x1, x2, t\nli x10, 5\nt: nop", 0u},
  };
  for (const auto& c : cases) EXPECT_EQ(eval(c.code), c.expect) << c.code;
}

TEST(Scalar, LoadsAndStoresEverySpace) {
  sim::Simulator s(sim::SimConfig{.cores = 2});
  s.load(arch::assemble(R"(
      li x1, 0x80FF7F01
      sw x1, [ddr: x0 + 0x40]
      sw x1, [l2: x0 + 0x40]
      sw x1, [l1: x0 + 0x40]
      lb x10, [ddr: x0 + 0x41]
      lbu x11, [l2: x0 + 0x42]
      lh x12, [l1: x0 + 0x42]
      lhu x13, [l1: x0 + 0x42]
      lw x14, [ddr: x0 + 0x40]
      li x2, 0x1234
      sh x2, [l1: x0 + 0x80]
      sb x2, [l1: x0 + 0x84]
      halt
  )"));
  s.run();
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(s.xreg(c, 10), 0x0000007Fu);
    EXPECT_EQ(s.xreg(c, 11), 0xFFu);
    EXPECT_EQ(s.xreg(c, 12), 0xFFFF80FFu);
    EXPECT_EQ(s.xreg(c, 13), 0x80FFu);
    EXPECT_EQ(s.xreg(c, 14), 0x80FF7F01u);
    EXPECT_EQ(word_at(s, Space::L1, 0x80, c), 0x1234u);
    EXPECT_EQ(word_at(s, Space::L1, 0x84, c), 0x34u);
  }
}

TEST(Scalar, CycleCountsFollowTheCostTable) {
  // 3 ALU (1 each) + lw from DDR (200) + taken branch (2) ... see docs/tc1.md "Cost".
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble(R"(
      li x1, 1
      li x2, 2
      add x3, x1, x2
      lw x4, [ddr: x0]
      lw x5, [l2: x0]
      lw x6, [l1: x0]
      beq x0, x0, next
  next:
      bne x0, x0, next
      halt
  )"));
  s.run();
  // 1+1+1 + 200 + 20 + 1 + 2 (taken) + 1 (not taken) + 1 (halt)
  EXPECT_EQ(s.stats().cycles, 228u);
}
