// tests/cpp/sim/test_matrix_engine.cc — mm / mma for every input dtype, the
// fused epilogue, the host kernels on odd shapes, and the cost formula.
#include <gtest/gtest.h>

#include <random>

#include "reference.h"
#include "sim/mm_kernels.h"

using tilecore::arch::DType;

namespace {

constexpr uint32_t kC = 0x0, kA = 0x10000, kB = 0x20000, kBias = 0x30000;

std::vector<double> rnd(DType t, size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> v(n);
  for (auto& x : v)
    x = t == DType::I8 ? double(int(g() % 256) - 128) : double(int(g() % 33) - 16) / 4.0;
  return v;
}

std::string body(const char* op, DType t) {
  return "li x1, 0\nli x2, 0x10000\nli x3, 0x20000\n" + std::string(op) + "." +
         std::string(tilecore::arch::dtype_name(t)) + " x1, x2, x3, [x0 + d]\nwait sc, mm, 1";
}

}  // namespace

TEST(MatrixEngine, Int8AccumulatesInInt32WithStrides) {
  const int M = 20, N = 40, K = 36, lda = 48, ldb = 56, ldc = 64;
  auto a = rnd(DType::I8, size_t(M) * lda, 1), b = rnd(DType::I8, size_t(K) * ldb, 2);
  std::vector<double> c0(size_t(M) * ldc);
  for (size_t i = 0; i < c0.size(); ++i) c0[i] = double(int(i % 1000) - 500);
  for (const char* op : {"mm", "mma"}) {
    ref::Run r;
    r.go("d: .mmdesc m=20 n=40 k=36 lda=48 ldb=56 ldc=64", body(op, DType::I8),
         {{kA, ref::encode_all(DType::I8, a)},
          {kB, ref::encode_all(DType::I8, b)},
          {kC, ref::encode_all(DType::I32, c0)}});
    auto c = ref::decode_all(DType::I32, r.l1(kC, size_t(M) * ldc * 4));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < ldc; ++j) {
        double want = c0[size_t(i * ldc + j)];
        if (j < N) {
          int64_t s = std::string(op) == "mma" ? int64_t(want) : 0;
          for (int k = 0; k < K; ++k)
            s += int64_t(a[size_t(i * lda + k)]) * int64_t(b[size_t(k * ldb + j)]);
          want = double(s);
        }
        ASSERT_EQ(c[size_t(i * ldc + j)], want)
            << op << " [" << i << "," << j << "]";  // columns >= N untouched
      }
  }
}

TEST(MatrixEngine, FloatTypesAccumulateInF32InKOrder) {
  const int M = 8, N = 24, K = 20;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    auto a = rnd(t, size_t(M) * K, 3), b = rnd(t, size_t(K) * N, 4);
    ref::Run r;
    r.go("d: .mmdesc m=8 n=24 k=20", body("mm", t),
         {{kA, ref::encode_all(t, a)}, {kB, ref::encode_all(t, b)}});
    auto c = ref::decode_all(DType::F32, r.l1(kC, size_t(M) * N * 4));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float s = 0;
        for (int k = 0; k < K; ++k)
          s = s + float(a[size_t(i * K + k)]) * float(b[size_t(k * N + j)]);
        ASSERT_EQ(c[size_t(i * N + j)], double(s)) << tilecore::arch::dtype_name(t);
      }
  }
}

// The product without an epilogue accumulates in C itself only when C is apart from A
// and B: a C over its own A still sees A as it was before the command (and mma the
// bytes C held).
TEST(MatrixEngine, ProductOverItsOwnOperandReadsItFirst) {
  const int M = 24, N = 40, K = 16;  // (more rows and columns than a host kernel's block)
  for (DType t : {DType::I8, DType::F32}) {
    const DType acc = t == DType::I8 ? DType::I32 : DType::F32;
    for (const char* op : {"mm", "mma"}) {
      auto a = rnd(t, size_t(M) * K, 5), b = rnd(t, size_t(K) * N, 6);
      std::vector<uint8_t> a_bytes = ref::encode_all(t, a);
      // (C at A's address: mma's accumulator is A's bytes read as the accumulator type,
      // padded with the zeros beyond A)
      std::vector<uint8_t> c_bytes(size_t(M) * N * 4, 0);
      std::copy(a_bytes.begin(), a_bytes.end(), c_bytes.begin());
      std::vector<double> c0 = ref::decode_all(acc, c_bytes);
      ref::Run r;
      r.go("d: .mmdesc m=24 n=40 k=16",
           "li x1, 0x10000\nli x2, 0x10000\nli x3, 0x20000\n" + std::string(op) + "." +
               std::string(tilecore::arch::dtype_name(t)) + " x1, x2, x3, [x0 + d]\nwait sc, mm, 1",
           {{kA, a_bytes}, {kB, ref::encode_all(t, b)}});
      auto c = ref::decode_all(acc, r.l1(kA, size_t(M) * N * 4));
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = std::string(op) == "mma" ? c0[size_t(i * N + j)] : 0.0;
          if (t == DType::I8) {
            int64_t si = int64_t(s);
            for (int k = 0; k < K; ++k)
              si += int64_t(a[size_t(i * K + k)]) * int64_t(b[size_t(k * N + j)]);
            s = double(int32_t(uint32_t(uint64_t(si))));
          } else {
            float sf = float(s);
            for (int k = 0; k < K; ++k)
              sf = sf + float(a[size_t(i * K + k)]) * float(b[size_t(k * N + j)]);
            s = double(sf);
          }
          ASSERT_EQ(c[size_t(i * N + j)], s)
              << op << "." << tilecore::arch::dtype_name(t) << " [" << i << "," << j << "]";
        }
    }
  }
}

TEST(MatrixEngine, EpilogueBiasScaleReluZeroPointClampCast) {
  const int M = 16, N = 32, K = 64;
  auto a = rnd(DType::I8, size_t(M) * K, 5), b = rnd(DType::I8, size_t(K) * N, 6);
  std::vector<double> bias(N);
  for (int j = 0; j < N; ++j) bias[size_t(j)] = double(j * 37 - 500);
  for (bool relu : {false, true}) {
    ref::Run r;
    std::string desc =
        "d: .mmdesc m=16 n=32 k=64 out=i8 bias=0x30000 scale=0.01 zp=-5 lo=-100 hi=120";
    if (relu) desc += " act=relu";
    r.go(desc, body("mm", DType::I8),
         {{kA, ref::encode_all(DType::I8, a)},
          {kB, ref::encode_all(DType::I8, b)},
          {kBias, ref::encode_all(DType::I32, bias)}});
    auto o = ref::decode_all(DType::I8, r.l1(kC, size_t(M) * N));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int32_t acc = 0;
        for (int k = 0; k < K; ++k)
          acc += int32_t(a[size_t(i * K + k)]) * int32_t(b[size_t(k * N + j)]);
        acc += int32_t(bias[size_t(j)]);
        float v = float(acc) * 0.01f;
        if (relu && v < 0) v = 0;
        v = v + -5.0f;
        v = std::min(std::max(v, -100.0f), 120.0f);
        ASSERT_EQ(o[size_t(i * N + j)], std::nearbyint(double(v)))
            << "relu=" << relu << " [" << i << "," << j << "]";
      }
  }
}

TEST(MatrixEngine, EpiloguePerChannelScaleAndResidualEveryCombination) {
  // acc (+ bias) -> f32 -> x scale (scalar or scales[j]) -> + f32(R[i][j]) -> relu -> + zp -> clamp
  // -> round half to even, saturate. Reference written here in plain C++ with float arithmetic.
  const int M = 12, N = 40, K = 24, ldr = 48;
  constexpr uint32_t kScales = 0x38000, kRes = 0x40000;
  auto a = rnd(DType::I8, size_t(M) * K, 7), b = rnd(DType::I8, size_t(K) * N, 8);
  std::vector<double> bias(N), scales(N);
  for (int j = 0; j < N; ++j) {
    bias[size_t(j)] = double(j * 91 - 1700);
    scales[size_t(j)] = double(float(0.001 + 0.0007 * j));
  }
  for (bool has_bias : {false, true})
    for (bool per_channel : {false, true})
      for (DType rt : {DType::I32, DType::I8, DType::F32, DType::I32 /*none*/})
        for (bool relu : {false, true})
          for (DType out : {DType::I8, DType::U8, DType::I16}) {
            static int round = 0;
            bool has_res = (round++ % 4) != 3;
            std::vector<double> res(size_t(M) * ldr);
            for (size_t q = 0; q < res.size(); ++q)
              res[q] = rt == DType::F32 ? double(int(q % 29) - 14) * 0.75
                                        : double(int(q * 7 % 255) - 127);
            std::string desc = "d: .mmdesc m=12 n=40 k=24 zp=3 lo=-120 hi=250 scale=0.02 out=" +
                               std::string(tilecore::arch::dtype_name(out));
            if (has_bias) desc += " bias=0x30000";
            if (per_channel) desc += " scales=0x38000";
            if (has_res)
              desc +=
                  " res=0x40000 ldr=48 res_dtype=" + std::string(tilecore::arch::dtype_name(rt));
            if (relu) desc += " act=relu";
            ref::Run r;
            r.go(desc, body("mm", DType::I8),
                 {{kA, ref::encode_all(DType::I8, a)},
                  {kB, ref::encode_all(DType::I8, b)},
                  {kBias, ref::encode_all(DType::I32, bias)},
                  {kScales, ref::encode_all(DType::F32, scales)},
                  {kRes, ref::encode_all(rt, res)}});
            auto o = ref::decode_all(out, r.l1(kC, size_t(M) * N * size_t(ref::size(out))));
            double lo_t = out == DType::I8 ? -128 : out == DType::U8 ? 0 : -32768;
            double hi_t = out == DType::I8 ? 127 : out == DType::U8 ? 255 : 32767;
            for (int i = 0; i < M; ++i)
              for (int j = 0; j < N; ++j) {
                int32_t acc = 0;
                for (int k = 0; k < K; ++k)
                  acc += int32_t(a[size_t(i * K + k)]) * int32_t(b[size_t(k * N + j)]);
                if (has_bias) acc += int32_t(bias[size_t(j)]);
                float v = float(acc) * (per_channel ? float(scales[size_t(j)]) : 0.02f);
                if (has_res) v = v + float(res[size_t(i * ldr + j)]);
                if (relu && v < 0) v = 0;
                v = v + 3.0f;
                v = std::min(std::max(v, -120.0f), 250.0f);
                double want = std::min(std::max(std::nearbyint(double(v)), lo_t), hi_t);
                ASSERT_EQ(o[size_t(i * N + j)], want) << desc << " [" << i << "," << j << "]";
              }
          }
}

TEST(MatrixEngine, EpilogueInputsCostStreamingCycles) {
  // i8 32x64x64: 16 + 2*2*16 = 80; epilogue ceil(2048/64) = 32; scales ceil(256/64) = 4;
  // residual i8 ceil(2048/64) = 32 -> 148; 3 li + issue at 3 -> ends at 151; wait 152; halt 153.
  ref::Run r;
  r.go("d: .mmdesc m=32 n=64 k=64 out=i8 scales=0x38000 res=0x40000 res_dtype=i8",
       body("mm", DType::I8), {});
  EXPECT_EQ(r.sim.stats().cycles, 153u);
  ref::Run p;  // without the residual: 116 -> 121
  p.go("d: .mmdesc m=32 n=64 k=64 out=i8 scales=0x38000", body("mm", DType::I8), {});
  EXPECT_EQ(p.sim.stats().cycles, 121u);
}

TEST(MatrixEngine, HostKernelOddShapes) {
  // The SIMD kernels' remainders (rows % 4, columns % 16, K % 4 or odd K) against a plain loop.
  for (auto [m, n, k] : {std::tuple{1, 1, 1},
                         {5, 37, 13},
                         {7, 16, 4},
                         {4, 64, 3},
                         {33, 65, 129},
                         {6, 40, 12},
                         {9, 48, 64}}) {
    std::mt19937 g(uint32_t(m * 1000 + n));
    std::vector<int8_t> a(size_t(m * k)), b(size_t(k * n));
    for (auto& x : a) x = int8_t(g());
    for (auto& x : b) x = int8_t(g());
    std::vector<int32_t> c(size_t(m * n), 7), want(size_t(m * n));
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int32_t s = 7;
        for (int kk = 0; kk < k; ++kk)
          s += int32_t(a[size_t(i * k + kk)]) * int32_t(b[size_t(kk * n + j)]);
        want[size_t(i * n + j)] = s;
      }
    tilecore::sim::gemm_i8(m, n, k, a.data(), k, b.data(), n, c.data(), n, true);
    EXPECT_EQ(c, want) << m << "x" << n << "x" << k << " via " << tilecore::sim::gemm_i8_path();
  }
}

TEST(MatrixEngine, HostKernelSkipsZeroStretchesOfAExactly) {
  // Rows of A zero outside a stretch (a depthwise Conv's block-diagonal weights, stretches
  // not aligned to 4), all-zero rows, and the extremes -128 / 127, against a plain loop.
  for (auto [m, n, k, run] : {std::tuple{16, 196, 400, 25},
                              {10, 37, 90, 9},
                              {7, 50, 63, 9},
                              {5, 16, 13, 3},
                              {12, 33, 30, 1}}) {
    std::mt19937 g(uint32_t(m * 1000 + k));
    std::vector<int8_t> a(size_t(m * k), 0), b(size_t(k * n));
    for (int i = 0; i < m; ++i) {
      if (i % 5 == 3) continue;  // an all-zero row
      for (int kk = (i * run) % k; kk < std::min(k, (i * run) % k + run); ++kk)
        a[size_t(i * k + kk)] = int8_t(g() % 3 == 0 ? (g() % 2 ? -128 : 127) : int(g()));
    }
    for (auto& x : b) x = int8_t(g() % 4 == 0 ? -128 : int(g()));
    for (bool accumulate : {false, true}) {
      std::vector<int32_t> c(size_t(m * n), -5), want(size_t(m * n));
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          int32_t s = accumulate ? -5 : 0;
          for (int kk = 0; kk < k; ++kk)
            s += int32_t(a[size_t(i * k + kk)]) * int32_t(b[size_t(kk * n + j)]);
          want[size_t(i * n + j)] = s;
        }
      tilecore::sim::gemm_i8(m, n, k, a.data(), k, b.data(), n, c.data(), n, accumulate);
      EXPECT_EQ(c, want) << m << "x" << n << "x" << k << " accumulate " << accumulate << " via "
                         << tilecore::sim::gemm_i8_path();
    }
  }
}

TEST(MatrixEngine, CyclesFollowTheCostFormula) {
  // 3 li + issue (t = 3); mm.i8 64x64x64: 16 + ceil(64/16) * ceil(64/32) * ceil(64/4) = 16 + 128 =
  // 144
  // -> ends at 147; wait -> 148; halt -> 149.
  ref::Run r;
  r.go("d: .mmdesc m=64 n=64 k=64", body("mm", DType::I8), {});
  EXPECT_EQ(r.sim.stats().cycles, 149u);
  EXPECT_EQ(r.sim.stats().cores[0].macs, 64u * 64u * 64u);
  // Padding waste: 17x33x5 i8 issues ceil(17/16)*ceil(33/32)*ceil(5/4) = 8 blocks -> 16 + 8 = 24
  // -> 29.
  ref::Run p;
  p.go("d: .mmdesc m=17 n=33 k=5", body("mm", DType::I8), {});
  EXPECT_EQ(p.sim.stats().cycles, 29u);
  EXPECT_EQ(p.sim.stats().cores[0].issued_macs, 8u * 2048u);
  // f32 32x32x32: 16 + 2 * 2 * 32 = 144; epilogue adds ceil(32*32/64) = 16 -> 160 -> 165.
  ref::Run f;
  f.go("d: .mmdesc m=32 n=32 k=32 out=f16", body("mm", DType::F32), {});
  EXPECT_EQ(f.sim.stats().cycles, 165u);
  // A and B in the same L1 bank: the block phase doubles: 16 + 2 * 128 = 272 -> 277.
  ref::Run b;
  b.go("d: .mmdesc m=64 n=64 k=64",
       "li x1, 0\nli x2, 0x10000\nli x3, 0x18000\nmm.i8 x1, x2, x3, [x0 + d]\nwait sc, mm, 1", {});
  EXPECT_EQ(b.sim.stats().cycles, 277u);
}
