// tests/cpp/sim/test_mm_kernels.cc — the matrix engine's GEMM kernels (every path this host
// runs) against the plain loops their header specifies: f32 bit-identical (c += a * b with k
// ascending, each product and sum rounded to f32), int8 exact int32 sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "sim/mm_kernels.h"

namespace {
void Reference(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
               int ldc, bool acc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = acc ? c[i * ldc + j] : 0.0f;
      for (int kk = 0; kk < k; ++kk) {
        float p = a[i * lda + kk] * b[kk * ldb + j];
        s = s + p;
      }
      c[i * ldc + j] = s;
    }
}
}  // namespace

TEST(MmKernels, GemmF32IsBitIdenticalToTheSpecifiedLoop) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  struct Case {
    int m, n, k;
    bool acc;
  };
  for (Case cs : {Case{1, 1, 1, false}, Case{4, 16, 8, false}, Case{7, 37, 5, true},
                  Case{128, 128, 256, true}, Case{9, 15, 300, false}, Case{5, 48, 1, true},
                  Case{8, 32, 7, false}, Case{17, 70, 33, true}, Case{16, 96, 64, false},
                  Case{8, 31, 3, true}, Case{32, 49, 96, false}, Case{24, 196, 40, true},
                  Case{1, 250, 64, false}, Case{32, 1, 144, true}, Case{13, 47, 9, true},
                  Case{6, 17, 2, false}, Case{3, 8, 5, true}}) {
    int lda = cs.k + 3, ldb = cs.n + 5, ldc = cs.n + 2;
    std::vector<float> a(size_t(cs.m) * lda), b(size_t(cs.k) * ldb), c(size_t(cs.m) * ldc);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    for (float& x : c) x = u(rng);
    std::vector<float> want = c;
    Reference(cs.m, cs.n, cs.k, a.data(), lda, b.data(), ldb, want.data(), ldc, cs.acc);
    std::vector<float> got = c;
    tilecore::sim::gemm_f32(cs.m, cs.n, cs.k, a.data(), lda, b.data(), ldb, got.data(), ldc,
                            cs.acc);
    // the padding columns past n are untouched, the rest equal bit for bit
    EXPECT_EQ(std::memcmp(got.data(), want.data(), c.size() * sizeof(float)), 0)
        << cs.m << "x" << cs.n << "x" << cs.k << (cs.acc ? " accumulate" : "");
    // and so on every path this host runs, not only the one it picks
    for (const char* path : {"portable", "avx2", "avx512"}) {
      got = c;
      if (!tilecore::sim::gemm_f32_on(path, cs.m, cs.n, cs.k, a.data(), lda, b.data(), ldb,
                                      got.data(), ldc, cs.acc))
        continue;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), c.size() * sizeof(float)), 0)
          << path << " " << cs.m << "x" << cs.n << "x" << cs.k << (cs.acc ? " accumulate" : "");
    }
  }
}

TEST(MmKernels, GemmI8SumsExactlyOnEveryPath) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> u(-128, 127);
  struct Case {
    int m, n, k;
    bool acc, block_diagonal;  // A zero but each row's own stretch of K (a depthwise Conv's)
    bool tight = false;        // lda == k and ldb == n, A and B no larger than they must be
    int zero_rows = 0;         // rows 4 .. 4 + zero_rows of A all zero (a block with none)
    bool extreme = false;      // every value -128 or 127 (the largest pair sums)
  };
  for (Case cs : {Case{1, 1, 1, false, false},
                  Case{4, 16, 4, false, false},
                  Case{7, 37, 5, true, false},
                  Case{16, 64, 64, false, false},
                  Case{17, 70, 33, true, false},
                  Case{5, 200, 131, false, false},
                  Case{16, 256, 144, false, true},
                  Case{16, 49, 400, true, true},
                  Case{3, 129, 67, false, false},
                  Case{32, 1, 300, true, false},
                  Case{9, 65, 9, false, true},
                  Case{64, 96, 256, true, false},
                  Case{1, 17, 2, false, false, true},
                  Case{5, 15, 15, true, false, true},
                  Case{6, 16, 16, false, false, true},
                  Case{3, 31, 17, true, false, true},
                  Case{1, 33, 32, false, false, true},
                  Case{10, 40, 33, true, false, false, 4},
                  Case{10, 40, 33, false, false, true, 4},
                  Case{9, 20, 48, false, false, true, 0, true},
                  Case{4, 16, 200, true, false, false, 0, true}}) {
    int lda = cs.tight ? cs.k : cs.k + 3, ldb = cs.tight ? cs.n : cs.n + 5, ldc = cs.n + 2;
    std::vector<int8_t> a(size_t(cs.m) * lda), b(size_t(cs.k) * ldb);
    std::vector<int32_t> c(size_t(cs.m) * ldc);
    for (auto& x : a) x = int8_t(cs.extreme ? (u(rng) < 0 ? -128 : 127) : u(rng));
    for (auto& x : b) x = int8_t(cs.extreme ? (u(rng) < 0 ? -128 : 127) : u(rng));
    for (auto& x : c) x = u(rng) * 1000;
    if (cs.block_diagonal) {
      const int taps = std::max(1, cs.k / cs.m);
      for (int i = 0; i < cs.m; ++i)
        for (int kk = 0; kk < cs.k; ++kk)
          if (kk / taps != i) a[size_t(i) * lda + kk] = 0;
    }
    for (int i = 4; i < 4 + cs.zero_rows && i < cs.m; ++i)
      std::fill(a.begin() + ptrdiff_t(i) * lda, a.begin() + ptrdiff_t(i + 1) * lda, int8_t(0));
    std::vector<int32_t> want = c;
    for (int i = 0; i < cs.m; ++i)
      for (int j = 0; j < cs.n; ++j) {
        int64_t s = cs.acc ? want[size_t(i) * ldc + j] : 0;
        for (int kk = 0; kk < cs.k; ++kk)
          s += int64_t(a[size_t(i) * lda + kk]) * int64_t(b[size_t(kk) * ldb + j]);
        want[size_t(i) * ldc + j] = int32_t(s);
      }
    int paths = 0;
    for (const char* path : {"portable", "avx2", "avx512-vnni"}) {
      std::vector<int32_t> got = c;
      if (!tilecore::sim::gemm_i8_on(path, cs.m, cs.n, cs.k, a.data(), lda, b.data(), ldb,
                                     got.data(), ldc, cs.acc))
        continue;
      ++paths;
      // the padding columns past n are untouched, the rest the exact sums
      EXPECT_EQ(got, want) << path << " " << cs.m << "x" << cs.n << "x" << cs.k
                           << (cs.acc ? " accumulate" : "")
                           << (cs.block_diagonal ? " block-diagonal" : "")
                           << (cs.tight ? " tight" : "") << (cs.extreme ? " extreme" : "")
                           << " zero rows " << cs.zero_rows;
    }
    EXPECT_GE(paths, 1);
  }
}
