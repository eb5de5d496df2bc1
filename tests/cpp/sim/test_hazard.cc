// tests/cpp/sim/test_hazard.cc — HazardCheck mode: reports unordered overlapping
// accesses, and stays quiet when waits or barriers order them.
#include <gtest/gtest.h>

#include "programs.h"
#include "tilecore/arch/assembler.h"
#include "tilecore/sim/simulator.h"

using namespace tilecore;

namespace {

std::vector<sim::Hazard> hazards_of(const std::string& text, int cores = 1) {
  sim::Simulator s(sim::SimConfig{.cores = cores, .mode = sim::Mode::HazardCheck});
  s.load(arch::assemble(text));
  s.run();
  return s.hazards();
}

const char* kDesc =
    ".data l1, 0xF0000\nd: .dmadesc dtype=i8 shape=[64]\nv: .vecdesc shape=[64]\n.text\n";

}  // namespace

TEST(Hazard, DmaThenVectorWithoutWaitIsReported) {
  auto h = hazards_of(
      std::string(kDesc) +
      "li x1, 0x100\ndma.in l1:x1, ddr:x0, [x0 + d]\ntadd.i8 x1, x1, x1, [x0 + v]\nfence\nhalt\n");
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "RAW");
  EXPECT_EQ(h[0].first_agent, "din");
  EXPECT_EQ(h[0].second_agent, "vec");
  EXPECT_EQ(h[0].space, "l1[0]");
  EXPECT_EQ(h[0].lo, 0x100u);
  EXPECT_EQ(h[0].hi, 0x140u);
  EXPECT_EQ(h[0].first_inst, "dma.in l1:x1, ddr:x0, [x0 + 983040]");
  EXPECT_EQ(h[0].first_line, 6);  // kDesc is lines 1-4, then li (5), dma.in (6), tadd (7)
  EXPECT_EQ(h[0].second_line, 7);
  EXPECT_EQ(h[0].to_string(),
            "RAW hazard on l1[0] [0x100, 0x140): core 0 din pc 1 line 6 (`dma.in l1:x1, ddr:x0, "
            "[x0 + 983040]`) and "
            "core 0 vec pc 2 line 7 (`tadd.i8 x1, x1, x1, [x0 + 983112]`) are not ordered by any "
            "wait or barrier");
}

TEST(Hazard, QueueWaitOrdersTheAccesses) {
  auto h = hazards_of(std::string(kDesc) +
                      "li x1, 0x100\ndma.in l1:x1, ddr:x0, [x0 + d]\nwait vec, din, 1\ntadd.i8 x1, "
                      "x1, x1, [x0 + v]\nfence\nhalt\n");
  for (const auto& x : h) ADD_FAILURE() << x.to_string();
}

TEST(Hazard, ScalarReadBeforeWaitIsReported) {
  auto h = hazards_of(
      std::string(kDesc) +
      "li x1, 0x100\ndma.in l1:x1, ddr:x0, [x0 + d]\nlw x2, [l1: x1 + 4]\nwait sc, din, 1\nhalt\n");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].second_agent, "sc");
  auto ok = hazards_of(
      std::string(kDesc) +
      "li x1, 0x100\ndma.in l1:x1, ddr:x0, [x0 + d]\nwait sc, din, 1\nlw x2, [l1: x1 + 4]\nhalt\n");
  EXPECT_TRUE(ok.empty());
}

TEST(Hazard, CrossCoreWritesNeedABarrier) {
  const char* racy =
      ".core 0\nli x1, 7\nsw x1, [l2: x0 + 64]\nhalt\n.core 1\nlw x2, [l2: x0 + 64]\nhalt\n";
  auto h = hazards_of(racy, 2);
  ASSERT_EQ(h.size(), 1u);
  // Core 1's load runs first (core 0 spends a cycle on li): a write-after-read.
  EXPECT_EQ(h[0].kind, "WAR");
  EXPECT_EQ(h[0].first_core, 1);
  EXPECT_EQ(h[0].second_core, 0);
  const char* ordered =
      ".core 0\nli x1, 7\nsw x1, [l2: x0 + 64]\nbarrier\nhalt\n.core 1\nbarrier\nlw x2, [l2: x0 + "
      "64]\nhalt\n";
  EXPECT_TRUE(hazards_of(ordered, 2).empty());
}

TEST(Hazard, GemmWithoutTheWriteBackWaitIsCaught) {
  // Drop the wait that keeps mm from overwriting a C buffer the DMA-out is still
  // reading: the classic double-buffering bug. With 3 tiles per core the mm of
  // tile 2 reuses tile 0's buffer.
  std::string text = tc1_programs::gemm_i8(64, 96, 32, 16, 32, 4);
  const std::string wait = "wait  mm, dout, x20";
  size_t at = text.find(wait);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, wait.size(), "nop");
  sim::Simulator s(sim::SimConfig{.cores = 4, .mode = sim::Mode::HazardCheck});
  s.load(arch::assemble(text));
  s.run();
  bool found = false;
  for (const auto& h : s.hazards())
    found |= h.kind == "WAR" && h.first_agent == "dout" && h.second_agent == "mm";
  EXPECT_TRUE(found) << (s.hazards().empty() ? "no hazards" : s.hazards()[0].to_string());
}

// Two cores store interleaved rows of one L2 tensor: their bounding ranges overlap, their
// bytes do not. Rows that do share bytes are a race.
TEST(Hazard, StridedStoresOfTwoCoresCompareByTheirBytes) {
  auto program = [](int row_of_core1) {
    return ".data l1, 0xF0000\n"
           "d: .dmadesc dtype=i8 shape=[4, 64] src_stride=[64, 1] dst_stride=[128, 1]\n"
           ".text\n.core 0\nli x1, 0x1000\ndma.out l2:x1, l1:x0, [x0 + d]\nfence\nhalt\n"
           ".core 1\nli x1, " +
           std::to_string(0x1000 + row_of_core1 * 64) +
           "\ndma.out l2:x1, l1:x0, [x0 + d]\nfence\nhalt\n";
  };
  for (const auto& x : hazards_of(program(1), 2)) ADD_FAILURE() << x.to_string();
  auto h = hazards_of(program(2), 2);  // core 1's rows 0..2 are core 0's rows 1..3
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "WAW");
  EXPECT_EQ(h[0].space, "l2");
}

// A scalar loop's stores, one element at a time, are ordered before the DMA the front end
// issues after them; the same loop's stores after the issue are not (their records grow
// into one per loop, which must still be compared).
TEST(Hazard, ALoopsStoresAfterADmaIssueAreReported) {
  auto h =
      hazards_of(std::string(kDesc) +
                 "li x1, 0\nli x3, 64\nloop:\nsw x1, [l1: x1 + 0x100]\naddi x1, x1, 4\n"
                 "blt x1, x3, loop\nli x4, 0x100\ndma.out ddr:x0, l1:x4, [x0 + d]\n"
                 "li x1, 0\nloop2:\nsw x1, [l1: x1 + 0x100]\naddi x1, x1, 4\nblt x1, x3, loop2\n"
                 "fence\nhalt\n");
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "WAR");
  EXPECT_EQ(h[0].first_agent, "dout");
  EXPECT_EQ(h[0].second_agent, "sc");
}

// The mm reads the first 64 of A's 128 columns while a DMA, unwaited, loads the other 64
// (a matrix plan splitting its K in two loads): they share rows, not bytes. Loading the
// columns the mm reads is a race.
TEST(Hazard, AnMmComparesItsOperandsByTheirBytes) {
  auto program = [](int column) {
    return ".data l1, 0xF0000\n"
           "d: .dmadesc dtype=f32 shape=[4, 64] src_stride=[64, 1] dst_stride=[128, 1]\n"
           "m: .mmdesc m=4 n=16 k=64 lda=128 ldb=16 ldc=16\n"
           ".text\nli x1, " +
           std::to_string(0x1000 + column * 4) +
           "\ndma.in l1:x1, ddr:x0, [x0 + d]\nli x2, 0x1000\nli x3, 0x4000\nli x4, 0x8000\n"
           "mm.f32 x4, x2, x3, [x0 + m]\nfence\nhalt\n";
  };
  for (const auto& x : hazards_of(program(64))) ADD_FAILURE() << x.to_string();
  auto h = hazards_of(program(32));
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "RAW");
  EXPECT_EQ(h[0].second_agent, "mm");
}
