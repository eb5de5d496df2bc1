// tests/cpp/compiler/test_memory_plan.cc — PlanMemory: no two live buffers share bytes,
// dead buffers' bytes are reused, alignment, the bounds it reports, and its errors.
#include <gtest/gtest.h>

#include <random>

#include "tilecore/compiler/memory_plan.h"
#include "tilecore/ffi/error.h"

using namespace tilecore::compiler;  // NOLINT

namespace {
// Checked independently of the planner: every pair of buffers alive together is disjoint.
void ExpectValid(const std::vector<BufferLife>& b, const MemoryPlan& p, int64_t align) {
  ASSERT_EQ(p.offsets.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % align, 0) << i;
    EXPECT_LE(p.offsets[i] + b[i].size, p.arena_size) << i;
    for (size_t j = i + 1; j < b.size(); ++j) {
      if (b[i].size == 0 || b[j].size == 0) continue;
      bool live = b[i].first <= b[j].last && b[j].first <= b[i].last;
      bool overlap =
          p.offsets[i] < p.offsets[j] + b[j].size && p.offsets[j] < p.offsets[i] + b[i].size;
      EXPECT_FALSE(live && overlap) << "buffers " << i << " and " << j;
    }
  }
}
}  // namespace

TEST(MemoryPlan, ChainReusesTwoSlots) {
  // x -> a -> b -> c -> y: step t reads buffer t and writes t + 1, each 1000 bytes.
  std::vector<BufferLife> b;
  for (int t = 0; t < 5; ++t) b.push_back({1000, t == 0 ? -1 : t - 1, t == 4 ? 4 : t});
  MemoryPlan p = PlanMemory(b, 64);
  ExpectValid(b, p, 64);
  EXPECT_EQ(p.total_size, 5 * 1024);
  EXPECT_EQ(p.lower_bound, 2 * 1024);
  EXPECT_EQ(p.arena_size, 2 * 1024);  // a chain needs two buffers' worth, whatever its length
}

TEST(MemoryPlan, LiveBuffersNeverShareAndAlignmentHolds) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLife> b;
    int n = 1 + int(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int64_t first = int64_t(rng() % 30) - 1, len = int64_t(rng() % 8);
      b.push_back({int64_t(rng() % 5000), first, first + len});
    }
    int64_t align = int64_t{1} << (rng() % 8);
    MemoryPlan p = PlanMemory(b, align);
    ExpectValid(b, p, align);
    EXPECT_GE(p.arena_size, p.lower_bound);
    EXPECT_LE(p.arena_size, p.total_size);
  }
}

TEST(MemoryPlan, ZeroSizeAndEmpty) {
  MemoryPlan p = PlanMemory({}, 64);
  EXPECT_EQ(p.arena_size, 0);
  p = PlanMemory({{0, 0, 3}, {10, 0, 0}}, 64);
  EXPECT_EQ(p.offsets[0], 0);
  EXPECT_EQ(p.arena_size, 64);
}

TEST(MemoryPlan, BadInputIsAnError) {
  EXPECT_THROW(PlanMemory({{-1, 0, 0}}, 64), tilecore::ffi::Error);
  EXPECT_THROW(PlanMemory({{8, 3, 2}}, 64), tilecore::ffi::Error);
  EXPECT_THROW(PlanMemory({{8, 0, 0}}, 48), tilecore::ffi::Error);
  EXPECT_THROW(PlanMemory({{8, 0, 0}}, 0), tilecore::ffi::Error);
}
