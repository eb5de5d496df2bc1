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

std::vector<int32_t> reference_gemm(const std::vector<int8_t>& a, const std::vector<int8_t>& b,
                                    int M, int N, int K) {
  std::vector<int32_t> c(size_t(M) * size_t(N), 0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int32_t s = 0;
      for (int k = 0; k < K; ++k)
        s += int32_t(a[size_t(i) * size_t(K) + size_t(k)]) *
             int32_t(b[size_t(k) * size_t(N) + size_t(j)]);
      c[size_t(i) * size_t(N) + size_t(j)] = s;
    }
  return c;
}

std::vector<int32_t> run_gemm(sim::Simulator& s, int M, int N, int K, int TM, int TN,
                              const std::vector<int8_t>& a, const std::vector<int8_t>& b) {
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
  std::printf("functional int8 GEMM 1024^3 on 4 cores: %.3f s, %.2f GMAC/s\n", dt,
              double(M) * N * K / dt / 1e9);
  EXPECT_EQ(c[0], reference_gemm(std::vector<int8_t>(a.begin(), a.begin() + K), b, 1, N, K)[0]);
}

TEST(Programs, DISABLED_TimingOnlyCommandRate) {
  // benchmarks/sim_command_mix.s: one command per engine per iteration, 4 cores.
  sim::Simulator s(sim::SimConfig{.cores = 4, .mode = sim::Mode::Timing});
  s.load(arch::assemble(tc1_programs::command_mix(250000)));
  auto t0 = std::chrono::steady_clock::now();
  s.run();
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto st = s.stats();
  std::printf(
      "timing-only: %llu tile commands (+ %llu instructions) in %.3f s: %.2f M commands/s, %llu "
      "cycles\n",
      (unsigned long long)st.commands, (unsigned long long)st.instructions, dt,
      double(st.commands) / dt / 1e6, (unsigned long long)st.cycles);
  EXPECT_EQ(st.commands, 4u * 4u * 250000u);
}

TEST(Programs, SoftmaxOnTheVectorEngine) {
  const int R = 4, C = 64;
  const char* text = R"(
.core 0
.data l1, 0xF0000
din: .dmadesc dtype=f32 shape=[4, 64]
red: .vecdesc shape=[4, 64] d_stride=[1, 0]      # row reduction -> [4]
bc:  .vecdesc shape=[4, 64] b_stride=[1, 0]      # b broadcast along each row
row: .vecdesc shape=[4]
all: .vecdesc shape=[4, 64]
.text
    li x1, 0x0                      # x
    li x2, 0x10000                  # per-row max, then sum, then 1/sum
    li x3, 0x20000                  # e
    li x4, 0x1000                   # DDR in/out
    dma.in l1:x1, ddr:x4, [x0 + din]
    wait vec, din, 1
    tredmax.f32 x2, x1, [x0 + red]
    tsub.f32 x3, x1, x2, [x0 + bc]
    texp.f32 x3, x3, [x0 + all]
    tredsum.f32 x2, x3, [x0 + red]
    trecip.f32 x2, x2, [x0 + row]
    tmul.f32 x3, x3, x2, [x0 + bc]
    wait dout, vec, 6
    dma.out ddr:x4, l1:x3, [x0 + din]
    wait sc, dout, 1
    halt
)";
  std::vector<float> x(size_t(R * C));
  for (int i = 0; i < R * C; ++i) x[size_t(i)] = float((i * 37) % 101) / 10.0f - 5.0f;
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble(text));
  s.write(Space::DDR, 0x1000, std::span(reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4));
  s.run();
  std::vector<float> y(x.size());
  s.read_into(Space::DDR, 0x1000, std::span(reinterpret_cast<uint8_t*>(y.data()), y.size() * 4));
  for (int i = 0; i < R; ++i) {
    double m = -1e30, sum = 0;
    for (int j = 0; j < C; ++j) m = std::max(m, double(x[size_t(i * C + j)]));
    for (int j = 0; j < C; ++j) sum += std::exp(double(x[size_t(i * C + j)]) - m);
    for (int j = 0; j < C; ++j) {
      double want = std::exp(double(x[size_t(i * C + j)]) - m) / sum;
      EXPECT_NEAR(y[size_t(i * C + j)], want, 1e-6 * want + 1e-9) << i << "," << j;
    }
  }
  // Cycles by hand (docs/tc1.md "Cost"):
  //   front end: 4 li (t 0..4); dma.in issued at 4; din: 1 KiB = 16 beats + 200 -> ends 220.
  //   vec marker issued at 5 waits for din -> 220; then f32 [4, 64] = 256 elements:
  //   tredmax 8 + 4 = 12 (232), tsub 12 (244), texp 8 + 4 * 4 = 24 (268), tredsum 12 (280),
  //   trecip [4] 8 + 4 * 1 = 12 (292), tmul 12 (304).
  //   dout marker waits vec >= 6 -> 304; dma.out 16 beats; DDR drained at 320; + 200 -> 520.
  //   wait sc at 14 stalls to 520, costs 1 (521); halt -> 522.
  EXPECT_EQ(s.stats().cycles, 522u);
  EXPECT_EQ(s.stats().cores[0].agents[4].busy, 84u);
  EXPECT_EQ(s.stats().cores[0].agents[4].stalled_dep, 215u);
}

// Each core sums its 1 KiB of DDR on the vector engine, leaves the sum in L2 and meets
// the others at a barrier; core 0 adds the four sums into DDR.
const char* const kBarrierReduction = R"(
.data l1, 0xF0000
d: .dmadesc dtype=i32 shape=[256]
r: .vecdesc shape=[256] d_stride=[0]     # reduce all 256 -> 1
.text
    csrr x1, coreid
    slli x2, x1, 10                      # this core's 1 KiB chunk in DDR
    li   x3, 0x100
    dma.in l1:x3, ddr:x2, [x0 + d]
    wait vec, din, 1
    li   x4, 0x200
    tredsum.i32 x4, x3, [x0 + r]
    wait sc, vec, 1
    lw   x5, [l1: x4]
    slli x6, x1, 2
    sw   x5, [l2: x6]                    # partial sum -> L2 slot
    barrier
    bne  x1, x0, done
    lw   x7, [l2: x0]
    lw   x8, [l2: x0 + 4]
    lw   x9, [l2: x0 + 8]
    lw   x10, [l2: x0 + 12]
    add  x7, x7, x8
    add  x7, x7, x9
    add  x7, x7, x10
    sw   x7, [ddr: x0 + 0x10000]
done:
    halt
)";

TEST(Programs, BarrierSynchronisedReductionAcrossCores) {
  const char* text = kBarrierReduction;
  std::vector<int32_t> v(1024);
  int64_t total = 0;
  for (int i = 0; i < 1024; ++i) total += v[size_t(i)] = (i * 7919) % 2001 - 1000;
  for (auto mode : {sim::Mode::FunctionalTiming, sim::Mode::HazardCheck}) {
    sim::Simulator s(sim::SimConfig{.cores = 4, .mode = mode});
    s.load(arch::assemble(text));
    s.write(Space::DDR, 0, std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
    s.run();
    auto out = s.read(Space::DDR, 0x10000, 4);
    int32_t got;
    std::memcpy(&got, out.data(), 4);
    EXPECT_EQ(got, int32_t(total));
    EXPECT_TRUE(s.hazards().empty()) << (s.hazards().empty() ? "" : s.hazards()[0].to_string());
    // Cycles by hand: dma.in issued at 3 on every core; DDR (64 B/cycle shared)
    // drains 1 KiB per core at 19, 35, 51, 67 -> din ends 219, 235, 251, 267;
    // tredsum.i32 of 256 = 8 + 4 = 12 -> 231 .. 279; wait (+1), lw l1 (+1),
    // slli (+1), sw l2 (+20) -> core 3 reaches the barrier last at 302;
    // release 302 + 8 = 310, barrier costs 1 -> 311. Core 0: bne not taken (312),
    // 4 x lw l2 (392), 3 x add (395), sw ddr (595), halt -> 596.
    EXPECT_EQ(s.stats().cycles, 596u);
  }
}

TEST(Programs, TiledGemmCyclesDerivedByHand) {
  // M = N = K = 64 on 4 cores, 16 x 32 tiles: each core computes rows 16c..16c+15
  // as two tiles (j = 0, 1). The front ends run identical straight-line timelines:
  // dma.in A issued at 17, dma.in B at 28 (j=0) and 58 (j=1), mm at 35 / 65,
  // dma.out at 45 / 75, and `wait sc, dout, 2` at 82.
  // DMA costs: A tile 16 x 64 i8 = 16 beats, B tile 64 x 32 i8 = 64 beats (one per
  // row), C tile 16 x 32 i32 = 32 beats; each + 200 cycles DDR latency; DDR drains
  // 64 B/cycle for all cores together (ddr_free below); mm 16x32x64 i8 = 16 + 16 = 32.
  //   A:  cores 0..3 start at 17: ddr_free 33, 49, 65, 81 -> end 233, 249, 265, 281.
  //   B0: core c starts when its A ends: ddr_free 297, 361, 425, 489 -> end 497, 561, 625, 689.
  //   core 0 at 497: B1 (ddr_free 561 -> 761), mm0 497-529, C0 at 529 (ddr_free 593 -> 793).
  //   core 1 at 561: B1 (657 -> 857), mm0 561-593, C0 at 593 (689 -> 889).
  //   core 2 at 625: B1 (753 -> 953), mm0 625-657, C0 at 657 (785 -> 985).
  //   core 3 at 689: B1 (849 -> 1049), mm0 689-721, C0 at 721 (881 -> 1081).
  //   mm1 starts when B1 lands: 761, 857, 953, 1049 (+32); C1 starts after C0 and mm1:
  //   core 0 793 (913 -> 1113), core 1 889 (945 -> 1145), core 2 985 (1017 -> 1217),
  //   core 3 1081 (1113 -> 1313).
  //   Core 3's front end leaves its wait at 1313 + 1 and halts: 1315 cycles.
  const int M = 64, N = 64, K = 64;
  auto a = random_i8(size_t(M) * K, 5), b = random_i8(size_t(K) * N, 6);
  sim::Simulator s(sim::SimConfig{.cores = 4});
  auto c = run_gemm(s, M, N, K, 16, 32, a, b);
  EXPECT_EQ(c, reference_gemm(a, b, M, N, K));
  auto st = s.stats();
  EXPECT_EQ(st.cycles, 1315u);
  EXPECT_EQ(st.cores[3].agents[2].busy + st.cores[3].agents[2].stalled_bw,
            1313u - 721u);  // dout back to back
  EXPECT_EQ(st.cores[0].macs, 2u * 16u * 32u * 64u);
}

TEST(Programs, SixteenCoresMeetAtBarriers) {
  // Every core stores coreid + 1 to its L2 slot; after the barrier core 0 sums
  // the slots with a loop (1 + ... + 16 = 136); a second barrier round checks the
  // barrier can be reused.
  const char* text = R"(
.core all
    csrr x1, coreid
    csrr x2, ncores
    addi x3, x1, 1
    slli x4, x1, 2
    sw   x3, [l2: x4]
    barrier
    bne  x1, x0, second
    li   x5, 0
    li   x6, 0
    slli x7, x2, 2
sum:
    lw   x8, [l2: x6]
    add  x5, x5, x8
    addi x6, x6, 4
    blt  x6, x7, sum
    sw   x5, [ddr: x0 + 0x100]
second:
    barrier
    halt
)";
  for (int cores : {1, 16}) {
    sim::Simulator s(sim::SimConfig{.cores = cores, .mode = sim::Mode::HazardCheck});
    s.load(arch::assemble(text));
    s.run();
    auto b = s.read(Space::DDR, 0x100, 4);
    uint32_t got;
    std::memcpy(&got, b.data(), 4);
    EXPECT_EQ(got, uint32_t(cores * (cores + 1) / 2)) << cores << " cores";
    EXPECT_TRUE(s.hazards().empty()) << (s.hazards().empty() ? "" : s.hazards()[0].to_string());
  }
}

TEST(Programs, FrontEndsRunningAheadGiveTheStrictOrdersFigures) {
  // A front end runs instructions on its registers, and ones that touch only its core, ahead
  // of the other cores' agents; a trace keeps the strict global order. Both must give the
  // same memory and every statistic, on programs where cores share DDR bandwidth (the GEMM,
  // the command mix) and meet at a barrier with L2 traffic (the reduction above's pattern).
  const int M = 64, N = 96, K = 80, TM = 16, TN = 32;
  auto a = random_i8(size_t(M) * K, 3), b = random_i8(size_t(K) * N, 4);
  std::string stats[2];
  std::vector<int32_t> c[2];
  for (int traced = 0; traced < 2; ++traced) {
    sim::Simulator s(sim::SimConfig{.cores = 4, .trace = traced == 1});
    c[traced] = run_gemm(s, M, N, K, TM, TN, a, b);
    stats[traced] = s.stats().to_json();
  }
  EXPECT_EQ(c[0], c[1]);
  EXPECT_EQ(c[0], reference_gemm(a, b, M, N, K));
  EXPECT_EQ(stats[0], stats[1]);
  // And two programs whose figures depend on the order itself: core 0 polls an L2 word that
  // core 1 sets after a delay (its count of polls is fixed by the interleaving), and each
  // core polls its DMA-in counter after issuing a DMA (csrr against its own engine).
  const std::string polls = R"(
.data l1, 0x100
d: .dmadesc dtype=i32 shape=[256]
.text
    csrr x1, coreid
    li   x3, 0x1000
    dma.in l1:x3, ddr:x0, [x0 + d]
    li   x8, 0
count:
    addi x8, x8, 1
    csrr x7, cnt.din
    beq  x7, x0, count
    slli x9, x1, 2
    sw   x8, [ddr: x9 + 0x10100]
    bne  x1, x0, writer
    li   x5, 0
spin:
    addi x5, x5, 1
    lw   x6, [l2: x0]
    beq  x6, x0, spin
    sw   x5, [ddr: x0 + 0x10000]
    halt
writer:
    li   x3, 0
delay:
    addi x3, x3, 1
    slti x4, x3, 100
    bne  x4, x0, delay
    li   x2, 1
    sw   x2, [l2: x0]
    halt
)";
  for (const std::string& text :
       {tc1_programs::command_mix(20), std::string(kBarrierReduction), polls}) {
    std::vector<uint8_t> out[2];
    for (int traced = 0; traced < 2; ++traced) {
      sim::Simulator s(sim::SimConfig{.cores = 4, .trace = traced == 1});
      s.load(arch::assemble(text));
      std::vector<uint8_t> in(4096);
      for (size_t k = 0; k < in.size(); ++k) in[k] = uint8_t(k * 131 + 7);
      s.write(Space::DDR, 0, std::span<const uint8_t>(in));
      s.run(1'000'000);
      stats[traced] = s.stats().to_json();
      out[traced] = s.read(Space::DDR, 0x10000, 0x110);
    }
    EXPECT_EQ(stats[0], stats[1]);
    EXPECT_EQ(out[0], out[1]);
  }
}
