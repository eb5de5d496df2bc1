// src/sim/mm_kernels.cc — int8 and f32 GEMM kernels for the matrix engine.
//
// int8 paths: AVX-512 VNNI, else AVX2 (vpmaddwd on int16 pairs), else portable.
// VNNI path: vpdpbusd multiplies unsigned by signed bytes, so B is biased to
// unsigned (b + 128 == b ^ 0x80) and the bias is removed with 128 * rowsum(A).
// B is packed into [16-column block][K/4][16][4] so each 64-byte load feeds one
// vpdpbusd; a 4-row x 64-column register block keeps 16 accumulators live.
// Every path skips the stretches of K where a block of A's rows is all zeros (the
// block-diagonal weights of a depthwise Conv as a matrix product): their products are
// zero, so the sums, exact in int32, do not change.
#include "mm_kernels.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TC1_HAVE_X86 1
#endif

namespace tilecore::sim {

namespace {

void gemm_i8_portable(int m, int n, int k, const int8_t* a, int lda, const int8_t* b, int ldb,
                      int32_t* c, int ldc, bool accumulate) {
  for (int i = 0; i < m; ++i) {
    int32_t* crow = c + int64_t(i) * ldc;
    if (!accumulate) std::memset(crow, 0, size_t(n) * 4);
    const int8_t* arow = a + int64_t(i) * lda;
    for (int kk = 0; kk < k; ++kk) {
      int32_t av = arow[kk];
      if (av == 0) continue;
      const int8_t* brow = b + int64_t(kk) * ldb;
      // (the sums wrap modulo 2^32 as the vector paths' do: unsigned, not signed overflow)
      for (int j = 0; j < n; ++j)
        crow[j] = int32_t(uint32_t(crow[j]) + uint32_t(av * int32_t(brow[j])));
    }
  }
}

#ifdef TC1_HAVE_X86
// Lanes of x and y by Imm (vshufi32x4). (The maskz form with every lane selected: the
// unmasked one trips GCC 12's maybe-uninitialized warning inside its own header.)
template <int Imm>
__attribute__((target("avx512f"))) inline __m512i shuffle_lanes(__m512i x, __m512i y) {
  return _mm512_maskz_shuffle_i32x4(__mmask16(0xFFFF), x, y, Imm);
}

// The VNNI kernel's scratch, kept per thread (a model's run issues thousands of small
// products). Looked up once a call: the reference, not each use of it (GCC fetched the
// thread's copy anew at every use, tens of lookups a call).
struct VnniScratch {
  std::vector<uint8_t> bp;
  std::vector<int8_t> ap;
  std::vector<int32_t> rowsum;
  std::vector<int> first, last;
};
[[gnu::noinline]] VnniScratch& ThreadVnniScratch() {
  thread_local VnniScratch scratch;
  return scratch;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void gemm_i8_vnni(
    int m, int n, int k, const int8_t* a, int lda, const int8_t* b, int ldb, int32_t* c, int ldc,
    bool accumulate) {
  const int kg = (k + 3) / 4;    // groups of 4 along K
  const int nb = (n + 15) / 16;  // 16-column blocks
  VnniScratch& scratch = ThreadVnniScratch();
  std::vector<uint8_t>& bp = scratch.bp;
  std::vector<int8_t>& ap = scratch.ap;
  std::vector<int32_t>& rowsum = scratch.rowsum;
  std::vector<int>& first = scratch.first;
  std::vector<int>& last = scratch.last;
  // Pack B biased: block jb, group g -> 64 bytes = 16 columns x 4 k values, 4 rows x 64
  // columns at a time: byte and word unpacks interleave each 128-bit lane (16 columns) and
  // a 4 x 4 transpose of the lanes gathers a block's 64 bytes. The rows past K and the
  // columns past n load as zeros (masked), biased to 0x80 like the rest: K's padding meets
  // A's zero padding.
  bp.resize(size_t(nb) * size_t(kg) * 64);
  const __m512i bias = _mm512_set1_epi8(char(0x80));
  for (int g = 0; g < kg; ++g) {
    const int8_t* r0 = b + int64_t(4 * g) * ldb;
    for (int j = 0; j < n; j += 64) {
      const int cols = n - j < 64 ? n - j : 64;
      const __mmask64 cm = cols == 64 ? ~__mmask64(0) : (__mmask64(1) << cols) - 1;
      __m512i rows[4];  // (a loop, not a lambda: lambdas do not take the target attribute)
      for (int t = 0; t < 4; ++t) {
        const __m512i v = 4 * g + t < k ? _mm512_maskz_loadu_epi8(cm, r0 + int64_t(t) * ldb + j)
                                        : _mm512_setzero_si512();
        rows[t] = _mm512_xor_si512(v, bias);
      }
      const __m512i t0 = _mm512_unpacklo_epi8(rows[0], rows[1]);
      const __m512i t1 = _mm512_unpackhi_epi8(rows[0], rows[1]);
      const __m512i t2 = _mm512_unpacklo_epi8(rows[2], rows[3]);
      const __m512i t3 = _mm512_unpackhi_epi8(rows[2], rows[3]);
      // lane L of u_q: columns 16 L + 4 q .. + 3, their 4 k values each
      const __m512i u0 = _mm512_unpacklo_epi16(t0, t2), u1 = _mm512_unpackhi_epi16(t0, t2);
      const __m512i u2 = _mm512_unpacklo_epi16(t1, t3), u3 = _mm512_unpackhi_epi16(t1, t3);
      const __m512i x0 = shuffle_lanes<0x44>(u0, u1), x1 = shuffle_lanes<0x44>(u2, u3);
      const __m512i x2 = shuffle_lanes<0xEE>(u0, u1), x3 = shuffle_lanes<0xEE>(u2, u3);
      const __m512i blk[4] = {shuffle_lanes<0x88>(x0, x1), shuffle_lanes<0xDD>(x0, x1),
                              shuffle_lanes<0x88>(x2, x3), shuffle_lanes<0xDD>(x2, x3)};
      for (int q = 0; q < 4 && j / 16 + q < nb; ++q)
        _mm512_storeu_si512(bp.data() + (size_t(j / 16 + q) * size_t(kg) + size_t(g)) * 64, blk[q]);
    }
  }
  // A as it is, K padded with zeros to a multiple of 4; 128 * its row sums (the bias B's
  // products carry); the groups of 4 k values each row has a non-zero in, first to last.
  // 64 bytes (16 groups) at a time: the row sum from sums of |x ^ 0x80| (x + 128) less
  // 128 a byte.
  ap.assign(size_t(m) * size_t(kg) * 4, 0);
  rowsum.assign(size_t(m), 0);
  first.assign(size_t(m), kg);
  last.assign(size_t(m), 0);
  for (int i = 0; i < m; ++i) {
    const int8_t* arow = a + int64_t(i) * lda;
    int8_t* out = ap.data() + size_t(i) * size_t(kg) * 4;
    __m512i sums = _mm512_setzero_si512();
    int64_t bytes = 0;
    for (int kk = 0; kk < k; kk += 64) {
      const int left = k - kk < 64 ? k - kk : 64;
      const __mmask64 lm = left == 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
      const __m512i v = _mm512_maskz_loadu_epi8(lm, arow + kk);
      _mm512_mask_storeu_epi8(out + kk, lm, v);
      sums = _mm512_add_epi64(sums,
                              _mm512_sad_epu8(_mm512_xor_si512(v, bias), _mm512_setzero_si512()));
      bytes += 64;
      const unsigned nz = _mm512_test_epi32_mask(v, v);  // (the groups past K load as zeros)
      if (nz == 0) continue;
      const int g = kk / 4;
      first[size_t(i)] = std::min(first[size_t(i)], g + __builtin_ctz(nz));
      last[size_t(i)] = g + 32 - __builtin_clz(nz);
    }
    int64_t part[8];
    _mm512_storeu_si512(part, sums);
    int64_t sum = -128 * bytes;
    for (int64_t x : part) sum += x;
    rowsum[size_t(i)] = int32_t(sum) * 128;
  }

  for (int jb = 0; jb < nb; jb += 4) {
    int nq = nb - jb < 4 ? nb - jb : 4;
    for (int i = 0; i < m; i += 4) {
      int nr = m - i < 4 ? m - i : 4;
      __m512i acc[4][4];
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_setzero_si512();
      const int8_t* arows[4];
      int g0 = kg, g1 = 0;  // the groups where one of the rows has a non-zero
      for (int r = 0; r < 4; ++r) {
        const int row = i + (r < nr ? r : 0);
        arows[r] = ap.data() + size_t(row) * size_t(kg) * 4;
        g0 = std::min(g0, first[size_t(row)]), g1 = std::max(g1, last[size_t(row)]);
      }
      const uint8_t* bblk[4];
      for (int q = 0; q < 4; ++q)
        bblk[q] = bp.data() + size_t(jb + (q < nq ? q : 0)) * size_t(kg) * 64;
      if (nr == 4 && nq == 4) {
        for (int g = g0; g < g1; ++g) {
          __m512i b0 = _mm512_loadu_si512(bblk[0] + size_t(g) * 64);
          __m512i b1 = _mm512_loadu_si512(bblk[1] + size_t(g) * 64);
          __m512i b2 = _mm512_loadu_si512(bblk[2] + size_t(g) * 64);
          __m512i b3 = _mm512_loadu_si512(bblk[3] + size_t(g) * 64);
          for (int r = 0; r < 4; ++r) {
            int32_t av;
            std::memcpy(&av, arows[r] + size_t(g) * 4, 4);
            __m512i va = _mm512_set1_epi32(av);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, va);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, va);
            acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], b2, va);
            acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], b3, va);
          }
        }
      } else {
        for (int g = g0; g < g1; ++g)
          for (int q = 0; q < nq; ++q) {
            __m512i bv = _mm512_loadu_si512(bblk[q] + size_t(g) * 64);
            for (int r = 0; r < nr; ++r) {
              int32_t av;
              std::memcpy(&av, arows[r] + size_t(g) * 4, 4);
              acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], bv, _mm512_set1_epi32(av));
            }
          }
      }
      for (int r = 0; r < nr; ++r)
        for (int q = 0; q < nq; ++q) {
          int j0 = (jb + q) * 16;
          __m512i v = _mm512_sub_epi32(acc[r][q], _mm512_set1_epi32(rowsum[size_t(i + r)]));
          int32_t* crow = c + int64_t(i + r) * ldc + j0;
          int cols = n - j0 < 16 ? n - j0 : 16;
          __mmask16 mask = __mmask16((1u << cols) - 1);
          if (cols == 16) mask = 0xFFFF;
          if (accumulate) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, crow));
          _mm512_mask_storeu_epi32(crow, mask, v);
        }
    }
  }
}

// AVX2 path: pairs of k (a[i][k], a[i][k+1]) times the rows B[k], B[k+1] as int16 pairs,
// summed by vpmaddwd into int32 (|a * b| <= 2^14, so a pair never overflows). B is packed
// once a call into [16-column block][K/2][16][2] int16 (the two 8-column halves of a block
// one 32-byte load each, in column order), A into [row][K/2] pairs as one int32 each (one
// broadcast a row and pair); 4 rows x 16 columns of C stay in registers over K. Columns
// past n are packed as zeros and not stored. Exact like the portable loop (int32 sums wrap
// modulo 2^32 in any order).
struct Avx2Scratch {
  std::vector<int16_t> bp;
  std::vector<uint32_t> ap;
  std::vector<int> first, last;
};
[[gnu::noinline]] Avx2Scratch& ThreadAvx2Scratch() {
  thread_local Avx2Scratch scratch;
  return scratch;
}

__attribute__((target("avx2"))) void gemm_i8_avx2(int m, int n, int k, const int8_t* a, int lda,
                                                  const int8_t* b, int ldb, int32_t* c, int ldc,
                                                  bool accumulate) {
  const int kg = (k + 1) / 2;    // pairs along K
  const int nb = (n + 15) / 16;  // 16-column blocks
  Avx2Scratch& scratch = ThreadAvx2Scratch();
  std::vector<int16_t>& bp = scratch.bp;
  std::vector<uint32_t>& ap = scratch.ap;
  std::vector<int>& first = scratch.first;
  std::vector<int>& last = scratch.last;
  bp.resize(size_t(nb) * size_t(kg) * 32);
  alignas(16) int8_t tail[2][16];  // a last block's columns, zero past n
  for (int g = 0; g < kg; ++g) {
    const int8_t* r0 = b + int64_t(2 * g) * ldb;
    const int8_t* r1 = 2 * g + 1 < k ? r0 + ldb : nullptr;
    for (int jb = 0; jb < nb; ++jb) {
      const int j = jb * 16, cols = n - j < 16 ? n - j : 16;
      const int8_t* p0 = r0 + j;
      const int8_t* p1 = r1 ? r1 + j : nullptr;
      if (cols < 16 || !p1) {
        std::memset(tail, 0, sizeof(tail));
        std::memcpy(tail[0], p0, size_t(cols));
        if (p1) std::memcpy(tail[1], p1, size_t(cols));
        p0 = tail[0], p1 = tail[1];
      }
      const __m256i v0 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0)));
      const __m256i v1 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)));
      // unpack{lo,hi} interleave within 128-bit lanes: lo holds columns {0-3, 8-11}, hi
      // {4-7, 12-15}; the lane permutes put them in column order
      const __m256i lo = _mm256_unpacklo_epi16(v0, v1), hi = _mm256_unpackhi_epi16(v0, v1);
      int16_t* out = bp.data() + (size_t(jb) * size_t(kg) + size_t(g)) * 32;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
  // A's pairs (its bytes widened to int16 are the pairs, low half first), 16 k at a time,
  // the last ones through a zeroed copy; the pairs each row has a non-zero in, first to last
  ap.resize(size_t(m) * size_t(kg) + 8);  // (a last store of 8 pairs may pass the last row)
  first.assign(size_t(m), kg);
  last.assign(size_t(m), 0);
  alignas(16) int8_t part[16];
  for (int i = 0; i < m; ++i) {
    const int8_t* arow = a + int64_t(i) * lda;
    uint32_t* out = ap.data() + size_t(i) * size_t(kg);
    for (int kk = 0; kk < k; kk += 16) {
      const int8_t* src = arow + kk;
      if (k - kk < 16) {
        std::memset(part, 0, sizeof(part));
        std::memcpy(part, src, size_t(k - kk));
        src = part;
      }
      const __m256i v =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kk / 2), v);
      const unsigned zero = unsigned(
          _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_setzero_si256()))));
      const unsigned nz = ~zero & 0xFFu;  // (the pairs past K are zeros)
      if (nz == 0) continue;
      const int g = kk / 2;
      first[size_t(i)] = std::min(first[size_t(i)], g + __builtin_ctz(nz));
      last[size_t(i)] = g + 32 - __builtin_clz(nz);
    }
  }
  for (int i = 0; i < m; i += 4) {
    const int nr = m - i < 4 ? m - i : 4;
    const uint32_t* arows[4];
    int g0 = kg, g1 = 0;
    for (int r = 0; r < 4; ++r) {
      const int row = i + (r < nr ? r : 0);  // (a missing row repeats the first, not stored)
      arows[r] = ap.data() + size_t(row) * size_t(kg);
      g0 = std::min(g0, first[size_t(row)]), g1 = std::max(g1, last[size_t(row)]);
    }
    for (int jb = 0; jb < nb; ++jb) {
      __m256i acc0[4], acc1[4];
      for (int r = 0; r < 4; ++r) acc0[r] = acc1[r] = _mm256_setzero_si256();
      const int16_t* bblk = bp.data() + size_t(jb) * size_t(kg) * 32;
      for (int g = g0; g < g1; ++g) {
        const __m256i b0 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bblk + size_t(g) * 32));
        const __m256i b1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bblk + size_t(g) * 32 + 16));
        for (int r = 0; r < 4; ++r) {
          const __m256i av = _mm256_set1_epi32(int32_t(arows[r][g]));
          acc0[r] = _mm256_add_epi32(acc0[r], _mm256_madd_epi16(av, b0));
          acc1[r] = _mm256_add_epi32(acc1[r], _mm256_madd_epi16(av, b1));
        }
      }
      const int j = jb * 16, cols = n - j < 16 ? n - j : 16;
      for (int r = 0; r < nr; ++r) {
        int32_t* crow = c + int64_t(i + r) * ldc + j;
        if (cols == 16) {
          __m256i c0 = acc0[r], c1 = acc1[r];
          if (accumulate) {
            c0 = _mm256_add_epi32(c0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(crow)));
            c1 = _mm256_add_epi32(c1,
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(crow + 8)));
          }
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(crow), c0);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(crow + 8), c1);
        } else {
          alignas(32) int32_t v[16];
          _mm256_store_si256(reinterpret_cast<__m256i*>(v), acc0[r]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(v + 8), acc1[r]);
          for (int q = 0; q < cols; ++q)
            crow[q] = accumulate ? int32_t(uint32_t(crow[q]) + uint32_t(v[q])) : v[q];
        }
      }
    }
  }
}

bool have_vnni() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return ok;
}
#endif

}  // namespace

namespace {

void gemm_f32_portable(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                       float* c, int ldc, bool accumulate) {
  for (int i = 0; i < m; ++i) {
    float* crow = c + int64_t(i) * ldc;
    if (!accumulate) std::memset(crow, 0, size_t(n) * 4);
    const float* arow = a + int64_t(i) * lda;
    for (int kk = 0; kk < k; ++kk) {
      float av = arow[kk];
      const float* brow = b + int64_t(kk) * ldb;
      for (int j = 0; j < n; ++j) crow[j] = crow[j] + av * brow[j];
    }
  }
}

#ifdef TC1_HAVE_X86
// The rows of C in blocks of Max, then one block of the rows left: rows.template
// operator()<R>(i) computes rows [i, i + R) with R rows of accumulators in registers.
template <int R, typename Rows>
void LastRows(int left, int i, const Rows& rows) {
  if constexpr (R > 0) {
    if (left == R)
      rows.template operator()<R>(i);
    else
      LastRows<R - 1>(left, i, rows);
  }
}

template <int Max, typename Rows>
void OverRowBlocks(int m, const Rows& rows) {
  int i = 0;
  for (; i + Max <= m; i += Max) rows.template operator()<Max>(i);
  LastRows<Max - 1>(m - i, i, rows);
}

// Blocks of R rows x 16 columns held in registers over the whole K loop: per element the
// same operations in the same order as the portable loop (a multiply, then an add, k
// ascending; no FMA, which target("avx2") does not enable), so the results are
// bit-identical, several times faster than reloading C per k. The last columns of a row
// (n not a multiple of 16) take masked loads and stores: the lanes past n are neither
// read nor written, and the block shapes of small layers (7 x 7 = 49 positions) stay on
// the vector path.
__attribute__((target("avx2"))) inline __m256i LanesBelow8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <bool Full>
__attribute__((target("avx2"))) inline __m256 Load8(const float* p, __m256i lanes) {
  return Full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes);
}

template <int R, bool Full>
__attribute__((target("avx2"))) inline void block_f32_avx2(int cols, int k, const float* a, int lda,
                                                           const float* b, int ldb, float* c,
                                                           int ldc, bool accumulate) {
  const __m256i m0 = LanesBelow8(cols), m1 = LanesBelow8(cols - 8);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) {
    float* crow = c + int64_t(r) * ldc;
    acc[r][0] = accumulate ? Load8<Full>(crow, m0) : _mm256_setzero_ps();
    acc[r][1] = accumulate ? Load8<Full>(crow + 8, m1) : _mm256_setzero_ps();
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* brow = b + int64_t(kk) * ldb;
    __m256 b0 = Load8<Full>(brow, m0), b1 = Load8<Full>(brow + 8, m1);
    for (int r = 0; r < R; ++r) {
      __m256 av = _mm256_set1_ps(a[int64_t(r) * lda + kk]);
      acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_mul_ps(av, b0));
      acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_mul_ps(av, b1));
    }
  }
  for (int r = 0; r < R; ++r) {
    float* crow = c + int64_t(r) * ldc;
    if (Full) {
      _mm256_storeu_ps(crow, acc[r][0]);
      _mm256_storeu_ps(crow + 8, acc[r][1]);
    } else {
      _mm256_maskstore_ps(crow, m0, acc[r][0]);
      _mm256_maskstore_ps(crow + 8, m1, acc[r][1]);
    }
  }
}

template <int R>
__attribute__((target("avx2"))) void rows_f32_avx2(int n, int k, const float* a, int lda,
                                                   const float* b, int ldb, float* c, int ldc,
                                                   bool accumulate) {
  int j = 0;
  for (; j + 16 <= n; j += 16)
    block_f32_avx2<R, true>(16, k, a, lda, b + j, ldb, c + j, ldc, accumulate);
  if (j < n) block_f32_avx2<R, false>(n - j, k, a, lda, b + j, ldb, c + j, ldc, accumulate);
}

void gemm_f32_avx2(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                   int ldc, bool accumulate) {
  OverRowBlocks<4>(m, [&]<int R>(int i) {
    rows_f32_avx2<R>(n, k, a + int64_t(i) * lda, lda, b, ldb, c + int64_t(i) * ldc, ldc,
                     accumulate);
  });
}

// AVX-512: blocks of R rows x 32 columns (2R accumulators) over the whole K loop, the same
// multiply-then-add per element, k ascending, as the loops above. The explicitly rounded
// (round-to-nearest-even) forms keep the compiler from contracting the pair into an FMA,
// which avx512f enables; tests/cpp/sim/test_mm_kernels.cc checks bit for bit. The last
// columns of a row take masked loads and stores, as in the AVX2 kernel.
constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr __mmask16 kAll = 0xFFFF;

inline __mmask16 LanesBelow16(int n) {
  return n >= 16 ? kAll : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

template <int R>
__attribute__((target("avx512f"))) inline void block_f32_avx512(int cols, int k, const float* a,
                                                                int lda, const float* b, int ldb,
                                                                float* c, int ldc,
                                                                bool accumulate) {
  const __mmask16 m0 = LanesBelow16(cols), m1 = LanesBelow16(cols - 16);
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) {
    float* crow = c + int64_t(r) * ldc;
    acc[r][0] = accumulate ? _mm512_maskz_loadu_ps(m0, crow) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_maskz_loadu_ps(m1, crow + 16) : _mm512_setzero_ps();
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* brow = b + int64_t(kk) * ldb;
    __m512 b0 = _mm512_maskz_loadu_ps(m0, brow), b1 = _mm512_maskz_loadu_ps(m1, brow + 16);
    for (int r = 0; r < R; ++r) {
      __m512 av = _mm512_set1_ps(a[int64_t(r) * lda + kk]);
      acc[r][0] = _mm512_maskz_add_round_ps(kAll, acc[r][0],
                                            _mm512_maskz_mul_round_ps(kAll, av, b0, kRn), kRn);
      acc[r][1] = _mm512_maskz_add_round_ps(kAll, acc[r][1],
                                            _mm512_maskz_mul_round_ps(kAll, av, b1, kRn), kRn);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* crow = c + int64_t(r) * ldc;
    _mm512_mask_storeu_ps(crow, m0, acc[r][0]);
    _mm512_mask_storeu_ps(crow + 16, m1, acc[r][1]);
  }
}

template <int R>
__attribute__((target("avx512f"))) void rows_f32_avx512(int n, int k, const float* a, int lda,
                                                        const float* b, int ldb, float* c, int ldc,
                                                        bool accumulate) {
  for (int j = 0; j < n; j += 32)
    block_f32_avx512<R>(std::min(32, n - j), k, a, lda, b + j, ldb, c + j, ldc, accumulate);
}

void gemm_f32_avx512(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                     float* c, int ldc, bool accumulate) {
  OverRowBlocks<8>(m, [&]<int R>(int i) {
    rows_f32_avx512<R>(n, k, a + int64_t(i) * lda, lda, b, ldb, c + int64_t(i) * ldc, ldc,
                       accumulate);
  });
}
#endif

// The paths of a GEMM, widest first, each with whether this host runs it: gemm_i8 / gemm_f32
// take the first it runs, gemm_i8_on / gemm_f32_on the one named (one list for both).
template <typename T, typename C>
struct GemmPath {
  const char* name;
  bool (*runs)();
  void (*gemm)(int m, int n, int k, const T* a, int lda, const T* b, int ldb, C* c, int ldc,
               bool accumulate);
};

bool Always() { return true; }

const GemmPath<int8_t, int32_t> kI8Paths[] = {
#ifdef TC1_HAVE_X86
    {"avx512-vnni", have_vnni, gemm_i8_vnni},
    {"avx2", CpuHasAvx2, gemm_i8_avx2},
#endif
    {"portable", Always, gemm_i8_portable}};

const GemmPath<float, float> kF32Paths[] = {
#ifdef TC1_HAVE_X86
    {"avx512", CpuHasAvx512f, gemm_f32_avx512},
    {"avx2", CpuHasAvx2, gemm_f32_avx2},
#endif
    {"portable", Always, gemm_f32_portable}};

template <typename P, size_t N>
const P& HostPath(const P (&paths)[N]) {
  for (const P& p : paths)
    if (p.runs()) return p;
  return paths[N - 1];  // (the portable loop runs anywhere)
}

template <typename P, size_t N>
const P* NamedPath(const P (&paths)[N], const char* name) {
  for (const P& p : paths)
    if (std::string(name) == p.name && p.runs()) return &p;
  return nullptr;
}

}  // namespace

void gemm_i8(int m, int n, int k, const int8_t* a, int lda, const int8_t* b, int ldb, int32_t* c,
             int ldc, bool accumulate) {
  static const auto& path = HostPath(kI8Paths);
  path.gemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

const char* gemm_i8_path() { return HostPath(kI8Paths).name; }

bool gemm_i8_on(const char* path, int m, int n, int k, const int8_t* a, int lda, const int8_t* b,
                int ldb, int32_t* c, int ldc, bool accumulate) {
  const auto* p = NamedPath(kI8Paths, path);
  if (p) p->gemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  return p != nullptr;
}

void gemm_f32(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
              int ldc, bool accumulate) {
  static const auto& path = HostPath(kF32Paths);
  path.gemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

bool gemm_f32_on(const char* path, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float* c, int ldc, bool accumulate) {
  const auto* p = NamedPath(kF32Paths, path);
  if (p) p->gemm(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  return p != nullptr;
}

}  // namespace tilecore::sim
