// tests/cpp/sim/test_programs.cc — whole hand-written programs: results and cycles.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "programs.h"
#include "tilecore/arch/assembler.h"
#include "tilecore/sim/simulator.h"

using namespace tilecore;
using arch::Space;

namespace {

std::vector<int8_t> random_i8(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = int8_t(int(g() % 256) - 128);
  return v;
}

std::vector<int32_t> reference_gemm(const std::vector<int8_t>& a, const std::vector<int8_t>& b, int M, int N, int K) {
  std::vector<int32_t> c(size_t(M) * size_t(N), 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t s = 0;
      for (int k = 0; k < K; ++k) s += int32_t(a[size_t(i) * size_t(K) + size_t(k)]) * int32_t(b[size_t(k) * size_t(N) + size_t(j)]);
      c[size_t(i) * size_t(N) + size_t(j)] = s;
    }
  return c;
}

std::vector<int32_t> run_gemm(sim::Simulator& s, int M, int N, int K, int TM, int TN, const std::vector<int8_t>& a,
                              const std::vector<int8_t>& b) {
  s.load(arch::assemble(tc1_programs::gemm_i8(M, N, K, TM, TN, s.cores())));
  s.write(Space::DDR, 0, std::span(reinterpret_cast<const uint8_t*>(a.data()), a.size()));
  s.write(Space::DDR, 0x1000000, std::span(reinterpret_cast<const uint8_t*>(b.data()), b.size()));
  s.run();
  std::vector<int32_t> c(size_t(M) * size_t(N));
  s.read_into(Space::DDR, 0x2000000, std::span(reinterpret_cast<uint8_t*>(c.data()), c.size() * 4));
  return c;
}

}  // namespace

TEST(Programs, TiledGemmInt8FourCoresMatchesReference) {
  const int M = 128, N = 96, K = 80, TM = 16, TN = 32;
  auto a = random_i8(size_t(M) * K, 1), b = random_i8(size_t(K) * N, 2);
  for (auto mode : {sim::Mode::FunctionalTiming, sim::Mode::Functional, sim::Mode::HazardCheck}) {
    sim::Simulator s(sim::SimConfig{.cores = 4, .mode = mode});
    auto c = run_gemm(s, M, N, K, TM, TN, a, b);
    EXPECT_EQ(c, reference_gemm(a, b, M, N, K)) << sim::mode_name(mode);
    if (mode == sim::Mode::HazardCheck) {
      for (const auto& h : s.hazards()) ADD_FAILURE() << h.to_string();
    }
  }
}

TEST(Programs, DISABLED_GemmThroughput) {
  const int M = 1024, N = 1024, K = 1024;
  auto a = random_i8(size_t(M) * K, 3), b = random_i8(size_t(K) * N, 4);
  sim::Simulator s(sim::SimConfig{.cores = 4, .mode = sim::Mode::Functional});
  auto t0 = std::chrono::steady_clock::now();
  auto c = run_gemm(s, M, N, K, 128, 128, a, b);
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("functional int8 GEMM 1024^3 on 4 cores: %.3f s, %.2f GMAC/s\n", dt, double(M) * N * K / dt / 1e9);
  EXPECT_EQ(c[0], reference_gemm(std::vector<int8_t>(a.begin(), a.begin() + K), b, 1, N, K)[0]);
}

TEST(Programs, DISABLED_TimingOnlyCommandRate) {
  // Each iteration issues four tile commands (one per engine) and three queue
  // waits; the front end runs ~12 instructions per iteration.
  const char* text = R"(
.equ ITERS, 250000
.core all
.data l1, 0xF0000
d_dma: .dmadesc dtype=i8 shape=[64, 64]
d_vec: .vecdesc shape=[64, 64]
d_mm:  .mmdesc m=64 n=64 k=64
.text
        li x1, 0
        li x2, ITERS
        li x3, 0x10000
        li x4, 0x20000
        li x5, 0x40000
loop:
        dma.in l1:x3, ddr:x0, [x0 + d_dma]
        addi x1, x1, 1
        wait mm, din, x1
        mm.i8 x5, x3, x4, [x0 + d_mm]
        wait vec, mm, x1
        tadd.i32 x5, x5, x5, [x0 + d_vec]
        wait dout, vec, x1
        dma.out ddr:x0, l1:x3, [x0 + d_dma]
        blt x1, x2, loop
        wait sc, dout, x1
        halt
)";
  sim::Simulator s(sim::SimConfig{.cores = 4, .mode = sim::Mode::Timing});
  s.load(arch::assemble(text));
  auto t0 = std::chrono::steady_clock::now();
  s.run();
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto st = s.stats();
  std::printf("timing-only: %llu tile commands (+ %llu instructions) in %.3f s: %.2f M commands/s, %llu cycles\n",
              (unsigned long long)st.commands, (unsigned long long)st.instructions, dt, double(st.commands) / dt / 1e6,
              (unsigned long long)st.cycles);
  EXPECT_EQ(st.commands, 4u * 4u * 250000u);
}
