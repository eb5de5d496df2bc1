// src/sim/vector_engine.cc — functional semantics of the vector engine's tile commands.
//
// Elementwise commands walk the 4-D shape and read a (and b) through their own
// strides (stride 0 broadcasts). Integers compute exactly in 64 bits and
// saturate to the dtype; floats compute in double and round once to the dtype
// (via f32). Reductions fold the innermost axis in index order: float sums
// accumulate in f32, integer sums exactly, then saturate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "byte_rounding.h"
#include "cpu_features.h"
#include "exp_rows.h"
#include "machine.h"
#include "tilecore/arch/numeric.h"
#include "tilecore/arch/tile_ops.h"

#ifdef TC1_SIM_X86
#include <immintrin.h>
#endif

namespace tilecore::sim {

namespace {

using arch::DType;

struct Walk {
  std::array<int64_t, 4> shape{1, 1, 1, 1}, d{0, 0, 0, 0}, a{0, 0, 0, 0}, b{0, 0, 0, 0};
};

Walk walk_of(const arch::VecDesc& v) {
  Walk w;
  for (int k = 0; k < v.rank; ++k) {
    size_t o = size_t(4 - v.rank + k);
    w.shape[o] = v.shape[size_t(k)];
    w.d[o] = v.d_stride[size_t(k)];
    w.a[o] = v.a_stride[size_t(k)];
    w.b[o] = v.b_stride[size_t(k)];
  }
  return w;
}

/// The same walk over fewer, longer rows: unit dims dropped and a dim merged into the one
/// inside it where every operand steps over it as one run (stride = inner shape x inner
/// stride; broadcasts, stride 0, merge too). The elements and the order they are visited
/// in do not change; the row loops below get long rows instead of a call per short one.
Walk coalesced(const Walk& w) {
  Walk c;  // filled from the innermost dim outwards
  int k = 3;
  c.shape[3] = w.shape[3], c.d[3] = w.d[3], c.a[3] = w.a[3], c.b[3] = w.b[3];
  for (int i = 2; i >= 0; --i) {
    const size_t s = size_t(i);
    if (w.shape[s] == 1) continue;
    const size_t in = size_t(k);
    if (c.shape[in] == 1) {
      c.shape[in] = w.shape[s], c.d[in] = w.d[s], c.a[in] = w.a[s], c.b[in] = w.b[s];
      continue;
    }
    if (w.d[s] == c.shape[in] * c.d[in] && w.a[s] == c.shape[in] * c.a[in] &&
        w.b[s] == c.shape[in] * c.b[in]) {
      c.shape[in] *= w.shape[s];
      continue;
    }
    --k;
    const size_t o = size_t(k);
    c.shape[o] = w.shape[s], c.d[o] = w.d[s], c.a[o] = w.a[s], c.b[o] = w.b[s];
  }
  return c;
}

/// Copies `n` bytes with no call for the short rows of tap and patch copies (a few to a
/// few dozen bytes): overlapping 8- or 4-byte moves, else memcpy.
inline void copy_8_to_16(uint8_t* d, const uint8_t* a, int64_t n) {
  uint64_t x, y;
  std::memcpy(&x, a, 8);
  std::memcpy(&y, a + n - 8, 8);
  std::memcpy(d, &x, 8);
  std::memcpy(d + n - 8, &y, 8);
}

inline void copy_row(uint8_t* d, const uint8_t* a, int64_t n) {
  if (n >= 8 && n <= 16) {
    copy_8_to_16(d, a, n);
  } else if (n >= 4 && n < 8) {
    uint32_t x, y;
    std::memcpy(&x, a, 4);
    std::memcpy(&y, a + n - 4, 4);
    std::memcpy(d, &x, 4);
    std::memcpy(d + n - 4, &y, 4);
  } else if (n < 4) {
    for (int64_t k = 0; k < n; ++k) d[k] = a[k];
  } else {
    std::memcpy(d, a, size_t(n));
  }
}

/// d[j * dp + k] = a[k * ap + j] for j < rows, k < cols: a byte matrix transposed (the
/// im2col of int8 taps reads a column of each row). 8 x 8 blocks through SSE2 unpacks on
/// x86, the rest byte by byte; the same bytes either way.
inline void transpose_bytes(uint8_t* d, int64_t dp, const uint8_t* a, int64_t ap, int64_t rows,
                            int64_t cols) {
  int64_t j0 = 0;
#ifdef TC1_SIM_X86
  for (; j0 + 8 <= rows; j0 += 8) {
    int64_t k0 = 0;
    for (; k0 + 8 <= cols; k0 += 8) {
      auto row = [&](int64_t k) {
        return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + (k0 + k) * ap + j0));
      };
      __m128i t0 = _mm_unpacklo_epi8(row(0), row(1)), t1 = _mm_unpacklo_epi8(row(2), row(3));
      __m128i t2 = _mm_unpacklo_epi8(row(4), row(5)), t3 = _mm_unpacklo_epi8(row(6), row(7));
      __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
      __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
      const __m128i v[4] = {_mm_unpacklo_epi32(u0, u2), _mm_unpackhi_epi32(u0, u2),
                            _mm_unpacklo_epi32(u1, u3), _mm_unpackhi_epi32(u1, u3)};
      for (int q = 0; q < 4; ++q) {  // v[q] holds output rows 2q and 2q + 1
        _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (j0 + 2 * q) * dp + k0), v[q]);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (j0 + 2 * q + 1) * dp + k0),
                         _mm_unpackhi_epi64(v[q], v[q]));
      }
    }
    for (int64_t j = j0; j < j0 + 8; ++j)
      for (int64_t k = k0; k < cols; ++k) d[j * dp + k] = a[k * ap + j];
  }
#endif
  for (int64_t j = j0; j < rows; ++j)
    for (int64_t k = 0; k < cols; ++k) d[j * dp + k] = a[k * ap + j];
}

/// f(dst_off, a_off, b_off) in elements, innermost fastest.
template <typename F>
[[gnu::always_inline]] inline void for_each(const Walk& w, F f) {
  // (the innermost dim in locals: f's stores, bytes, may alias anything a reference
  // reaches, and the loop would reload them after every element)
  const int64_t n = w.shape[3], sd = w.d[3], sa = w.a[3], sb = w.b[3];
  for (int64_t i0 = 0; i0 < w.shape[0]; ++i0)
    for (int64_t i1 = 0; i1 < w.shape[1]; ++i1)
      for (int64_t i2 = 0; i2 < w.shape[2]; ++i2) {
        int64_t od = i0 * w.d[0] + i1 * w.d[1] + i2 * w.d[2];
        int64_t oa = i0 * w.a[0] + i1 * w.a[1] + i2 * w.a[2];
        int64_t ob = i0 * w.b[0] + i1 * w.b[1] + i2 * w.b[2];
        for (int64_t i3 = 0; i3 < n; ++i3) f(od + i3 * sd, oa + i3 * sa, ob + i3 * sb);
      }
}

/// Exact product clamped into int64 (u32 x u32 does not fit); saturation to
/// the dtype happens on store.
int64_t mul_clamped(int64_t a, int64_t b) {
  __int128 p = __int128(a) * __int128(b);
  if (p > INT64_MAX / 2) return INT64_MAX / 2;
  if (p < INT64_MIN / 2) return INT64_MIN / 2;
  return int64_t(p);
}

double fmax_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
}
double fmin_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
}

/// Fast path for the commonest commands over one element type T (f32, i32): typed loads
/// and arithmetic. For f32, + - * / min max give exactly the double-then-round result the
/// specification asks for (double rounding is innocuous for these operations); for i32 the
/// operations compute in 64 bits and saturate, as the generic path does.
template <typename T, typename F>
[[gnu::always_inline]] inline void typed_binary(const Walk& w, uint8_t* D, const uint8_t* A,
                                                const uint8_t* B, F f) {
  constexpr int64_t es = sizeof(T);
  if (w.d[3] == 1 && w.a[3] == 1 && (w.b[3] == 1 || w.b[3] == 0)) {
    // Unit-stride rows (b contiguous or broadcast): a loop the compiler vectorises,
    // the same operation per element as below.
    const int64_t n = w.shape[3];
    const bool bcast = w.b[3] == 0;
    Walk outer = w;
    outer.shape[3] = 1;
    for_each(outer, [&](int64_t od, int64_t oa, int64_t ob) {
      uint8_t* d = D + od * es;
      const uint8_t* a = A + oa * es;
      const uint8_t* b = B + ob * es;
      if (bcast) {
        T y;
        std::memcpy(&y, b, es);
        for (int64_t k = 0; k < n; ++k) {
          T x;
          std::memcpy(&x, a + k * es, es);
          T r = f(x, y);
          std::memcpy(d + k * es, &r, es);
        }
      } else {
        for (int64_t k = 0; k < n; ++k) {
          T x, y;
          std::memcpy(&x, a + k * es, es);
          std::memcpy(&y, b + k * es, es);
          T r = f(x, y);
          std::memcpy(d + k * es, &r, es);
        }
      }
    });
    return;
  }
  for_each(w, [&](int64_t od, int64_t oa, int64_t ob) {
    T x, y;
    std::memcpy(&x, A + oa * es, es);
    std::memcpy(&y, B + ob * es, es);
    T r = f(x, y);
    std::memcpy(D + od * es, &r, es);
  });
}

template <typename F>
[[gnu::always_inline]] inline void f32_binary(const Walk& w, uint8_t* D, const uint8_t* A,
                                              const uint8_t* B, F f) {
  typed_binary<float>(w, D, A, B, f);
}

/// Whether the destination walk of `w` writes no element twice (its dims, by stride, each
/// step past the span of the ones below): then the order of its writes changes nothing.
inline bool writes_each_once(const Walk& w) {
  std::array<std::pair<int64_t, int64_t>, 4> dims;  // (stride, extent) of the dims of extent > 1
  size_t n = 0;
  for (size_t k = 0; k < 4; ++k)
    if (w.shape[k] > 1) dims[n++] = {w.d[k] < 0 ? -w.d[k] : w.d[k], w.shape[k]};
  std::sort(dims.begin(), dims.begin() + n);
  int64_t span = 0;  // the farthest element the dims so far reach
  for (size_t k = 0; k < n; ++k) {
    if (dims[k].first <= span) return false;
    span += (dims[k].second - 1) * dims[k].first;
  }
  return true;
}

/// d = f(a) element by element from type S to type T; unit-stride rows as a loop the
/// compiler vectorises (a source row with a stride, a stride-2 Conv's input quantised, is
/// first gathered into a contiguous chunk: the same f on the same values).
template <typename S, typename T, typename F>
[[gnu::always_inline]] inline void typed_convert(const Walk& walk, uint8_t* D, const uint8_t* A,
                                                 F f) {
  // A destination written down its columns (a transposed product quantised into rows) is
  // walked along them: its unit-stride dim innermost, the source gathered. Each element is
  // converted on its own (a source overlapping the destination was copied), so the order
  // of the walk changes no bit.
  Walk w = walk;
  if (w.d[3] != 1 && w.shape[3] > 1 && writes_each_once(w)) {
    for (size_t k = 0; k < 3; ++k) {
      if (w.d[k] != 1 || w.shape[k] == 1) continue;
      std::swap(w.shape[k], w.shape[3]);
      std::swap(w.d[k], w.d[3]);
      std::swap(w.a[k], w.a[3]);
      std::swap(w.b[k], w.b[3]);
      break;
    }
  }
  if (w.d[3] == 1 && w.a[3] != 1) {
    const int64_t n = w.shape[3], sa = w.a[3];
    Walk outer = w;
    outer.shape[3] = 1;
    constexpr int64_t kChunk = 256;
    S chunk[kChunk];
    for_each(outer, [&](int64_t od, int64_t oa, int64_t) {
      for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
        const int64_t m = std::min(kChunk, n - k0);
        for (int64_t k = 0; k < m; ++k)
          std::memcpy(&chunk[k], A + (oa + (k0 + k) * sa) * int64_t(sizeof(S)), sizeof(S));
        uint8_t* d = D + (od + k0) * int64_t(sizeof(T));
        for (int64_t k = 0; k < m; ++k) {
          T r = f(chunk[k]);
          std::memcpy(d + k * int64_t(sizeof(T)), &r, sizeof(T));
        }
      }
    });
    return;
  }
  if (w.d[3] == 1 && w.a[3] == 1) {
    const int64_t n = w.shape[3];
    Walk outer = w;
    outer.shape[3] = 1;
    for_each(outer, [&](int64_t od, int64_t oa, int64_t) {
      uint8_t* d = D + od * int64_t(sizeof(T));
      const uint8_t* a = A + oa * int64_t(sizeof(S));
      for (int64_t k = 0; k < n; ++k) {
        S x;
        std::memcpy(&x, a + k * int64_t(sizeof(S)), sizeof(S));
        T r = f(x);
        std::memcpy(d + k * int64_t(sizeof(T)), &r, sizeof(T));
      }
    });
    return;
  }
  for_each(w, [&](int64_t od, int64_t oa, int64_t) {
    S x;
    std::memcpy(&x, A + oa * int64_t(sizeof(S)), sizeof(S));
    T r = f(x);
    std::memcpy(D + od * int64_t(sizeof(T)), &r, sizeof(T));
  });
}

/// A signed integer element-wise command (i32; i8: a max pool's taps, an int8 residual's
/// add) on typed loops; false if not covered. Sums, differences and products are exact in
/// `Wide` and saturate into T, as store_from_int does.
template <typename T, typename Wide>
bool signed_fast(Opcode op, const Walk& w, uint8_t* D, const uint8_t* A, const uint8_t* B) {
  constexpr auto sat = [](Wide v) {
    constexpr Wide lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    return T(v < lo ? lo : v > hi ? hi : v);
  };
  switch (op) {
    case Opcode::Tadd:
      typed_binary<T>(w, D, A, B, [sat](T x, T y) { return sat(Wide(x) + y); });
      return true;
    case Opcode::Tsub:
      typed_binary<T>(w, D, A, B, [sat](T x, T y) { return sat(Wide(x) - y); });
      return true;
    case Opcode::Tmul:
      typed_binary<T>(w, D, A, B, [sat](T x, T y) { return sat(Wide(x) * y); });
      return true;
    case Opcode::Tmax:
      typed_binary<T>(w, D, A, B, [](T x, T y) { return x > y ? x : y; });
      return true;
    case Opcode::Tmin:
      typed_binary<T>(w, D, A, B, [](T x, T y) { return x < y ? x : y; });
      return true;
    default:
      return false;
  }
}

// Lambdas (not function pointers) so the row loops inline and vectorise them.
constexpr auto fmaxf_nan = [](float a, float b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
};
constexpr auto fminf_nan = [](float a, float b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
};

/// Runs an f32 binary or scalar command on the fast path; false if not covered. (Inlined
/// into a default and an AVX2 entry below: the same operations on wider vectors, no FMA,
/// so the same results.)
[[gnu::always_inline]] inline bool f32_fast_body(Opcode op, const Walk& w, uint8_t* D,
                                                 const uint8_t* A, const uint8_t* B, float s) {
  // Broadcast the scalar through b with stride 0.
  Walk ws = w;
  const uint8_t* S = reinterpret_cast<const uint8_t*>(&s);
  switch (op) {
    case Opcode::Tadd:
      f32_binary(w, D, A, B, [](float x, float y) { return x + y; });
      return true;
    case Opcode::Tsub:
      f32_binary(w, D, A, B, [](float x, float y) { return x - y; });
      return true;
    case Opcode::Tmul:
      f32_binary(w, D, A, B, [](float x, float y) { return x * y; });
      return true;
    case Opcode::Tdiv:
      f32_binary(w, D, A, B, [](float x, float y) { return x / y; });
      return true;
    case Opcode::Tmax:
      f32_binary(w, D, A, B, fmaxf_nan);
      return true;
    case Opcode::Tmin:
      f32_binary(w, D, A, B, fminf_nan);
      return true;
    default:
      break;
  }
  ws.b = {0, 0, 0, 0};
  switch (op) {
    case Opcode::Tadds:
      f32_binary(ws, D, A, S, [](float x, float y) { return x + y; });
      return true;
    case Opcode::Tmuls:
      f32_binary(ws, D, A, S, [](float x, float y) { return x * y; });
      return true;
    case Opcode::Tmaxs:
      f32_binary(ws, D, A, S, fmaxf_nan);
      return true;
    case Opcode::Tmins:
      f32_binary(ws, D, A, S, fminf_nan);
      return true;
    default:
      return false;
  }
}

/// The conversions around int8 matrix ops on the fast path (a default and an AVX2 entry, as
/// f32_fast): tcvt f32 -> i8, i8 -> i32, i8 -> f32, i32 -> f32 and tquant to i8 / u8, with
/// the results of convert_element; false for any other.
[[gnu::always_inline]] inline bool convert_fast_body(Opcode op, DType st, DType dt, const Walk& w,
                                                     uint8_t* D, const uint8_t* A, float scale,
                                                     int32_t zero_point) {
  if (op == Opcode::Tquant) {
    if (dt != DType::I8 && dt != DType::U8) return false;
    const ByteRounding round =
        dt == DType::I8 ? ByteRounding(-128.0f, 127.0f) : ByteRounding(0.0f, 255.0f);
    const float zp = float(zero_point);
    // (captured by value: the byte stores could alias a reference, and the loop would
    // reload them instead of vectorising)
    typed_convert<float, uint8_t>(w, D, A, [round, scale, zp](float x) {
      const float q = x * scale;
      return uint8_t(round(q + zp));  // (-128..127 and 0..255 both keep their low byte)
    });
    return true;
  }
  if (op != Opcode::Tcvt) return false;
  if (st == DType::F32 && dt == DType::I8) {
    const ByteRounding quantise(-128.0f, 127.0f);
    typed_convert<float, int8_t>(w, D, A, [quantise](float x) { return int8_t(quantise(x)); });
  } else if (st == DType::I8 && dt == DType::I32) {  // widening: exact
    typed_convert<int8_t, int32_t>(w, D, A, [](int8_t x) { return int32_t(x); });
  } else if (st == DType::I8 && dt == DType::F32) {  // exact
    typed_convert<int8_t, float>(w, D, A, [](int8_t x) { return float(x); });
  } else if (st == DType::I32 && dt == DType::F32) {
    typed_convert<int32_t, float>(w, D, A, [](int32_t x) { return float(x); });  // nearest even
  } else {
    return false;
  }
  return true;
}

// Entries compiled for AVX2 beside the portable ones below (cpu_features.h).
#ifdef TC1_SIM_X86
__attribute__((target("avx2"))) bool f32_fast_avx2(Opcode op, const Walk& w, uint8_t* D,
                                                   const uint8_t* A, const uint8_t* B, float s) {
  return f32_fast_body(op, w, D, A, B, s);
}
__attribute__((target("avx2"))) bool convert_fast_avx2(Opcode op, DType st, DType dt, const Walk& w,
                                                       uint8_t* D, const uint8_t* A, float scale,
                                                       int32_t zero_point) {
  return convert_fast_body(op, st, dt, w, D, A, scale, zero_point);
}
#endif

#ifdef TC1_SIM_X86
// AVX-512: unit-stride rows 16 elements at a time, the last ones in masked lanes (the rows
// of a depthwise Conv's taps are 7 or 14 elements: one masked vector each, where the loop
// the compiler vectorises runs its scalar remainder). The same IEEE operation per element
// as the loops above (min and max with their NaN rule), so the same bits. (The maskz forms
// with every lane selected: the unmasked ones trip GCC 12's maybe-uninitialized warning
// inside its own header.)
constexpr __mmask16 kAll16 = 0xFFFF;

template <Opcode Op>
__attribute__((target("avx512f"))) inline __m512 f32_op16(__m512 x, __m512 y) {
  if constexpr (Op == Opcode::Tadd) {
    return _mm512_maskz_add_ps(kAll16, x, y);
  } else if constexpr (Op == Opcode::Tsub) {
    return _mm512_maskz_sub_ps(kAll16, x, y);
  } else if constexpr (Op == Opcode::Tmul) {
    return _mm512_maskz_mul_ps(kAll16, x, y);
  } else {
    static_assert(Op == Opcode::Tmax || Op == Opcode::Tmin);
    // x > y ? x : y (x < y ? x : y), NaN when either is: max/min_ps give y when either
    // is NaN or both are equal
    const __m512 r =
        Op == Opcode::Tmax ? _mm512_maskz_max_ps(kAll16, x, y) : _mm512_maskz_min_ps(kAll16, x, y);
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, y, _CMP_UNORD_Q), _mm512_set1_ps(NAN));
  }
}

/// `m` (1..16) elements of a row with stride `SA` (1 or 2) from `a` in lanes 0..m-1, the rest
/// zero: stride 2 from the even lanes of two loads that read no element past the m-th.
template <int SA>
__attribute__((target("avx512f"))) inline __m512 load_row16(const float* a, int64_t m) {
  if constexpr (SA == 1) {
    return _mm512_maskz_loadu_ps(m >= 16 ? kAll16 : __mmask16((1u << m) - 1), a);
  } else {
    static_assert(SA == 2);
    const int64_t lo = std::min<int64_t>(16, 2 * m - 1), hi = std::max<int64_t>(0, 2 * m - 17);
    const __m512 x0 = _mm512_maskz_loadu_ps(lo >= 16 ? kAll16 : __mmask16((1u << lo) - 1), a);
    const __m512 x1 = _mm512_maskz_loadu_ps(__mmask16((1u << hi) - 1), a + 16);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_maskz_permutex2var_ps(kAll16, x0, even, x1);
  }
}

/// The rows of `w`, d and b unit-stride (b also a broadcast, stride 0), a of stride SA (a
/// stride-2 Conv's taps).
template <Opcode Op, int SA>
__attribute__((target("avx512f"))) void f32_rows_avx512(const Walk& w, uint8_t* D, const uint8_t* A,
                                                        const uint8_t* B) {
  const int64_t n = w.shape[3];
  const bool bcast = w.b[3] == 0;
  const __mmask16 tail = n % 16 ? __mmask16((1u << (n % 16)) - 1) : __mmask16(0xFFFF);
  for (int64_t i0 = 0; i0 < w.shape[0]; ++i0)
    for (int64_t i1 = 0; i1 < w.shape[1]; ++i1)
      for (int64_t i2 = 0; i2 < w.shape[2]; ++i2) {
        float* d = reinterpret_cast<float*>(D) + i0 * w.d[0] + i1 * w.d[1] + i2 * w.d[2];
        const float* a =
            reinterpret_cast<const float*>(A) + i0 * w.a[0] + i1 * w.a[1] + i2 * w.a[2];
        const float* b =
            reinterpret_cast<const float*>(B) + i0 * w.b[0] + i1 * w.b[1] + i2 * w.b[2];
        const __m512 y1 = bcast ? _mm512_set1_ps(*b) : _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + 16 <= n; k += 16) {
          const __m512 y = bcast ? y1 : _mm512_loadu_ps(b + k);
          const __m512 x = SA == 1 ? _mm512_loadu_ps(a + k) : load_row16<SA>(a + SA * k, 16);
          _mm512_storeu_ps(d + k, f32_op16<Op>(x, y));
        }
        if (k < n) {
          const __m512 y = bcast ? y1 : _mm512_maskz_loadu_ps(tail, b + k);
          _mm512_mask_storeu_ps(d + k, tail, f32_op16<Op>(load_row16<SA>(a + SA * k, n - k), y));
        }
      }
}

template <Opcode Op>
void f32_rows_avx512(const Walk& w, uint8_t* D, const uint8_t* A, const uint8_t* B) {
  if (w.a[3] == 2)
    f32_rows_avx512<Op, 2>(w, D, A, B);
  else
    f32_rows_avx512<Op, 1>(w, D, A, B);
}

bool f32_fast_avx512(Opcode op, const Walk& w, uint8_t* D, const uint8_t* A, const uint8_t* B,
                     float s) {
  Walk ws = w;
  switch (op) {
    case Opcode::Tadds:
    case Opcode::Tmuls:
    case Opcode::Tmaxs:
    case Opcode::Tmins:
      ws.b = {0, 0, 0, 0};  // the scalar through b with stride 0
      B = reinterpret_cast<const uint8_t*>(&s);
      break;
    default:
      break;
  }
  // (a's stride 2: a stride-2 Conv's taps, on the vector engine)
  if (ws.d[3] != 1 || (ws.a[3] != 1 && ws.a[3] != 2) || (ws.b[3] != 1 && ws.b[3] != 0))
    return false;
  switch (op) {
    case Opcode::Tadd:
    case Opcode::Tadds:
      f32_rows_avx512<Opcode::Tadd>(ws, D, A, B);
      return true;
    case Opcode::Tsub:
      f32_rows_avx512<Opcode::Tsub>(ws, D, A, B);
      return true;
    case Opcode::Tmul:
    case Opcode::Tmuls:
      f32_rows_avx512<Opcode::Tmul>(ws, D, A, B);
      return true;
    case Opcode::Tmax:
    case Opcode::Tmaxs:
      f32_rows_avx512<Opcode::Tmax>(ws, D, A, B);
      return true;
    case Opcode::Tmin:
    case Opcode::Tmins:
      f32_rows_avx512<Opcode::Tmin>(ws, D, A, B);
      return true;
    default:
      return false;
  }
}
#endif

bool f32_fast(Opcode op, const Walk& w, uint8_t* D, const uint8_t* A, const uint8_t* B, float s) {
#ifdef TC1_SIM_X86
  if (CpuHasAvx512f() && f32_fast_avx512(op, w, D, A, B, s)) return true;
  if (CpuHasAvx2()) return f32_fast_avx2(op, w, D, A, B, s);
#endif
  return f32_fast_body(op, w, D, A, B, s);
}

bool convert_fast(Opcode op, DType st, DType dt, const Walk& w, uint8_t* D, const uint8_t* A,
                  float scale, int32_t zero_point) {
#ifdef TC1_SIM_X86
  if (CpuHasAvx2()) return convert_fast_avx2(op, st, dt, w, D, A, scale, zero_point);
#endif
  return convert_fast_body(op, st, dt, w, D, A, scale, zero_point);
}

}  // namespace

void Machine::execute_vector(Core& c, const Command& cmd) {
  const arch::VecDesc& v = std::get<arch::VecDesc>(cmd.desc);
  const Inst& i = cmd.inst;
  DType dt = i.dtype();
  int es = arch::dtype_size(dt);
  uint8_t* l1 = mem.base(Space::L1, c.id);
  Walk w = walk_of(v);
  for (int64_t e : w.shape)
    if (e == 0) return;  // empty: the loops over the other dims must not run
  Opcode op = i.op;
  const arch::TileOpInfo* top = arch::FindTileOpByOpcode(op);
  // (a reduction folds the innermost dim as it is: only element-wise walks are merged)
  if (op == Opcode::Tlut || (top != nullptr && top->form != arch::TileForm::Reduce))
    w = coalesced(w);

  bool isf = arch::is_float(dt);

  // Reads/writes one element of the dtype; sources are copied first when they
  // may alias the destination, so results never depend on the walk order.
  std::vector<uint8_t> a_copy, b_copy;
  const uint8_t* A = l1 + cmd.addr[1];
  const uint8_t* B = l1 + cmd.addr[2];
  // The destination is the last range (issue.cc); a source that does not overlap it
  // is read in place.
  const Range* dst_range = cmd.nranges ? &cmd.ranges[size_t(cmd.nranges - 1)] : nullptr;
  // Nor does an elementwise source that is exactly the destination (same address, same
  // element type and strides) over a compact destination walk: every element is read
  // just before its own write and no other element touches it, as with a copy.
  const bool elementwise = top != nullptr && top->form != arch::TileForm::Reduce &&
                           op != Opcode::Tlut && op != Opcode::Trequant && op != Opcode::Tquant &&
                           (op != Opcode::Tcvt || i.src_dtype() == dt);
  auto compact = [&] {
    int64_t expect = 1;
    for (int k = 3; k >= 0; --k) {
      if (w.shape[size_t(k)] == 1) continue;
      if (w.d[size_t(k)] != expect) return false;
      expect *= w.shape[size_t(k)];
    }
    return true;
  };
  const bool d_compact = elementwise && compact();
  auto snapshot = [&](int k, std::vector<uint8_t>& buf, const uint8_t*& p, uint32_t addr,
                      const std::array<int64_t, 4>& strides) {
    if (k >= cmd.nranges - 1) return;
    const Range& r = cmd.ranges[size_t(k)];
    if (dst_range && !Overlap(r, *dst_range)) return;
    if (d_compact && addr == cmd.addr[0] && strides == w.d) return;
    buf.assign(l1 + r.lo, l1 + r.hi);
    p = buf.data() + (int64_t(addr) - int64_t(r.lo));
  };
  snapshot(0, a_copy, A, cmd.addr[1], w.a);
  if (arch::info(op).format == arch::Format::Tile3) snapshot(1, b_copy, B, cmd.addr[2], w.b);
  uint8_t* D = l1 + cmd.addr[0];

  // f32 inline (the same conversions as arch::load_as_double / store_from_double), the
  // rest through the out-of-line converters.
  auto ld = [&](const uint8_t* base, int64_t off, DType t) -> double {
    if (t == DType::F32) {
      float f;
      std::memcpy(&f, base + off * 4, 4);
      return f;
    }
    return arch::load_as_double(t, base + off * arch::dtype_size(t));
  };
  auto li = [&](const uint8_t* base, int64_t off, DType t) {
    return arch::load_as_int(t, base + off * arch::dtype_size(t));
  };
  auto st_f = [&](int64_t off, double x) {
    if (dt == DType::F32) {
      float f = float(x);
      std::memcpy(D + off * 4, &f, 4);
    } else {
      arch::store_from_double(dt, x, D + off * es);
    }
  };
  auto st_i = [&](int64_t off, int64_t x) { arch::store_from_int(dt, x, D + off * es); };

  if (dt == DType::F32 && f32_fast(op, w, D, A, B, v.scalar)) return;
  if (dt == DType::I32 && signed_fast<int32_t, int64_t>(op, w, D, A, B)) return;
  if (dt == DType::I8 && signed_fast<int8_t, int32_t>(op, w, D, A, B)) return;

  switch (op) {
    case Opcode::Tadd:
    case Opcode::Tsub:
    case Opcode::Tmul:
    case Opcode::Tmax:
    case Opcode::Tmin:
    case Opcode::Tdiv:
      for_each(w, [&](int64_t od, int64_t oa, int64_t ob) {
        if (isf) {
          double x = ld(A, oa, dt), y = ld(B, ob, dt), r = 0;
          switch (op) {
            case Opcode::Tadd:
              r = x + y;
              break;
            case Opcode::Tsub:
              r = x - y;
              break;
            case Opcode::Tmul:
              r = x * y;
              break;
            case Opcode::Tmax:
              r = fmax_nan(x, y);
              break;
            case Opcode::Tmin:
              r = fmin_nan(x, y);
              break;
            default:
              r = x / y;
              break;
          }
          st_f(od, r);
        } else {
          int64_t x = li(A, oa, dt), y = li(B, ob, dt), r = 0;
          switch (op) {
            case Opcode::Tadd:
              r = x + y;
              break;
            case Opcode::Tsub:
              r = x - y;
              break;
            case Opcode::Tmul:
              r = mul_clamped(x, y);
              break;
            case Opcode::Tmax:
              r = std::max(x, y);
              break;
            default:
              r = std::min(x, y);
              break;
          }
          st_i(od, r);
        }
      });
      break;
    case Opcode::Tadds:
    case Opcode::Tmuls:
    case Opcode::Tmaxs:
    case Opcode::Tmins: {
      // The scalar is first converted to the dtype (rounded, saturated).
      uint8_t sb[4];
      arch::store_from_double(dt, double(v.scalar), sb);
      double sf = arch::load_as_double(dt, sb);
      int64_t si = isf ? 0 : arch::load_as_int(dt, sb);
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        if (isf) {
          double x = ld(A, oa, dt);
          double r = op == Opcode::Tadds   ? x + sf
                     : op == Opcode::Tmuls ? x * sf
                     : op == Opcode::Tmaxs ? fmax_nan(x, sf)
                                           : fmin_nan(x, sf);
          st_f(od, r);
        } else {
          int64_t x = li(A, oa, dt);
          int64_t r = op == Opcode::Tadds   ? x + si
                      : op == Opcode::Tmuls ? mul_clamped(x, si)
                      : op == Opcode::Tmaxs ? std::max(x, si)
                                            : std::min(x, si);
          st_i(od, r);
        }
      });
      break;
    }
    case Opcode::Texp:
    case Opcode::Tlog:
    case Opcode::Trecip:
    case Opcode::Tsqrt:
    case Opcode::Trsqrt:
    case Opcode::Ttanh:
    case Opcode::Tsigmoid:
      if ((op == Opcode::Texp || op == Opcode::Tsigmoid || op == Opcode::Ttanh) &&
          dt == DType::F32 && w.d[3] == 1 && w.a[3] == 1) {
        // whole rows, bit-identical to the loop below (exp_rows.h)
        const ExpRow kind = op == Opcode::Texp       ? ExpRow::Exp
                            : op == Opcode::Tsigmoid ? ExpRow::Sigmoid
                                                     : ExpRow::Tanh;
        const int64_t n = w.shape[3];
        Walk outer = w;
        outer.shape[3] = 1;
        for_each(outer, [&](int64_t od, int64_t oa, int64_t) {
          exp_row_f32(kind, D + od * 4, A + oa * 4, n);
        });
        break;
      }
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        double x = ld(A, oa, dt), r = 0;
        switch (op) {
          case Opcode::Texp:
            r = std::exp(x);
            break;
          case Opcode::Tlog:
            r = std::log(x);
            break;
          case Opcode::Trecip:
            r = 1.0 / x;
            break;
          case Opcode::Tsqrt:
            r = std::sqrt(x);
            break;
          case Opcode::Trsqrt:
            r = 1.0 / std::sqrt(x);
            break;
          case Opcode::Ttanh:
            r = std::tanh(x);
            break;
          default:
            r = 1.0 / (1.0 + std::exp(-x));
            break;
        }
        st_f(od, r);
      });
      break;
    case Opcode::Trelu:
      // (the typed loops read a second operand: a itself)
      w.b = w.a;
      if (dt == DType::F32) {  // NaN passes through, as below
        typed_binary<float>(w, D, A, A,
                            [](float x, float) { return x != x ? x : (x > 0 ? x : 0.0f); });
        break;
      }
      if (dt == DType::I32) {
        typed_binary<int32_t>(w, D, A, A, [](int32_t x, int32_t) { return x > 0 ? x : 0; });
        break;
      }
      if (dt == DType::I8) {
        typed_binary<int8_t>(w, D, A, A, [](int8_t x, int8_t) { return x > 0 ? x : int8_t(0); });
        break;
      }
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        if (isf) {
          double x = ld(A, oa, dt);
          st_f(od, std::isnan(x) ? x : (x > 0 ? x : 0.0));
        } else
          st_i(od, std::max<int64_t>(li(A, oa, dt), 0));
      });
      break;
    case Opcode::Tcvt: {
      DType st = i.src_dtype();
      int ses = arch::dtype_size(st);
      if (st == dt) {
        // A same-type conversion is a copy (what convert_element does per element): whole
        // rows at once when both sides are unit-stride.
        Walk outer = w;
        outer.shape[3] = 1;
        const int64_t n = w.shape[3];
        // (locals: a byte store may alias anything a reference reaches, and the loops would
        // reload the strides after every element)
        const int64_t sd = w.d[3], sa = w.a[3];
        const bool rows = sd == 1 && sa == 1;
        const bool fill = sd == 1 && sa == 0;
        if (es == 1 && sd == 1 && w.a[2] == 1 && sa > 1 && w.shape[2] >= 8 && n >= 8) {
          // dims 2 and 3 a transpose: dst rows along dim 2 read a column of src rows
          Walk planes = outer;
          planes.shape[2] = 1;
          for_each(planes, [&](int64_t od, int64_t oa, int64_t) {
            transpose_bytes(D + od, w.d[2], A + oa, sa, w.shape[2], n);
          });
          break;
        }
        if (rows) {  // (the loop per row size class: rows of a few bytes, a tap's, are most)
          const int64_t bytes = n * es;
          auto each_row = [&](auto copy) {
            for_each(outer,
                     [&](int64_t od, int64_t oa, int64_t) { copy(D + od * es, A + oa * es); });
          };
          if (bytes >= 8 && bytes <= 16)
            each_row([bytes](uint8_t* d, const uint8_t* a) { copy_8_to_16(d, a, bytes); });
          else
            each_row([bytes](uint8_t* d, const uint8_t* a) { copy_row(d, a, bytes); });
          break;
        }
        for_each(outer, [&](int64_t od, int64_t oa, int64_t) {
          if (fill && es == 4) {  // one word along the row (a broadcast bias)
            uint32_t x;
            std::memcpy(&x, A + oa * 4, 4);
            uint8_t* d = D + od * 4;
            for (int64_t k = 0; k < n; ++k) std::memcpy(d + k * 4, &x, 4);
          } else if (es == 1 && sd == 1 && sa == 2) {  // a stride-2 Conv's taps
            uint8_t* d = D + od;
            const uint8_t* a = A + oa;
            for (int64_t k = 0; k < n; ++k) d[k] = a[2 * k];
          } else if (es == 1) {  // strided bytes (an im2col of int8 taps): no call an element
            uint8_t* d = D + od;
            const uint8_t* a = A + oa;
            for (int64_t k = 0; k < n; ++k) d[k * sd] = a[k * sa];
          } else {
            for (int64_t k = 0; k < n; ++k)
              std::memcpy(D + (od + k * sd) * es, A + (oa + k * sa) * es, size_t(es));
          }
        });
        break;
      }
      // the conversions around int8 matrix ops (quantise on load, dequantise) without the
      // generic loader's switches; the same results as convert_element
      if (!convert_fast(op, st, dt, w, D, A, 0.0f, 0))
        for_each(w, [&](int64_t od, int64_t oa, int64_t) {
          arch::convert_element(dt, D + od * es, st, A + oa * ses);
        });
      break;
    }
    case Opcode::Trequant:
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        float x = float(int32_t(li(A, oa, DType::I32))) * v.scale;  // f32 product, rounded once
        int64_t r = arch::round_sat(double(x), INT64_MIN / 4, INT64_MAX / 4) + v.zero_point;
        st_i(od, r);
      });
      break;
    case Opcode::Tquant: {
      // tmuls, tadds and tcvt's roundings: the product and the sum in f32, then the
      // conversion (saturating, half to even, NaN to 0)
      const float zp = float(v.zero_point);
      if (convert_fast(op, DType::F32, dt, w, D, A, v.scale, v.zero_point)) break;  // i8, u8
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        float x;
        std::memcpy(&x, A + oa * 4, 4);
        const float q = x * v.scale;
        const float y = q + zp;
        arch::convert_element(dt, D + od * es, DType::F32, reinterpret_cast<const uint8_t*>(&y));
      });
      break;
    }
    case Opcode::Tredsum:
    case Opcode::Tredmax:
    case Opcode::Tredmin: {
      Walk outer = w;
      int64_t n = outer.shape[3], sa = outer.a[3];
      outer.shape[3] = 1;
      const int64_t init = isf || op == Opcode::Tredsum ? 0
                           : op == Opcode::Tredmax      ? arch::int_min(dt)
                                                        : arch::int_max(dt);
      for_each(outer, [&](int64_t od, int64_t oa, int64_t) {
        if (isf) {
          float acc = op == Opcode::Tredsum ? 0.0f : op == Opcode::Tredmax ? -INFINITY : INFINITY;
          for (int64_t k = 0; k < n; ++k) {
            float x = float(ld(A, oa + k * sa, dt));
            if (op == Opcode::Tredsum)
              acc = acc + x;
            else if (std::isnan(x) || std::isnan(acc))
              acc = NAN;
            else
              acc = op == Opcode::Tredmax ? std::max(acc, x) : std::min(acc, x);
          }
          st_f(od, acc);
        } else if (dt == DType::I8) {  // (typed: a max pool's reduction of int8 taps)
          const int8_t* a = reinterpret_cast<const int8_t*>(A) + oa;
          int64_t acc = init;
          for (int64_t k = 0; k < n; ++k) {
            const int64_t x = a[k * sa];
            acc = op == Opcode::Tredsum   ? acc + x
                  : op == Opcode::Tredmax ? std::max(acc, x)
                                          : std::min(acc, x);
          }
          st_i(od, acc);
        } else {
          int64_t acc = init;
          for (int64_t k = 0; k < n; ++k) {
            int64_t x = li(A, oa + k * sa, dt);
            acc = op == Opcode::Tredsum   ? acc + x
                  : op == Opcode::Tredmax ? std::max(acc, x)
                                          : std::min(acc, x);
          }
          st_i(od, acc);
        }
      });
      break;
    }
    case Opcode::Tlut:
      if (es == 1) {  // an int8 table (a fused activation's): a byte an element, no call
        uint8_t* d = D;
        const uint8_t *a = A, *table = B;
        for_each(w, [d, a, table](int64_t od, int64_t oa, int64_t) { d[od] = table[a[oa]]; });
        break;
      }
      for_each(w, [&](int64_t od, int64_t oa, int64_t) {
        std::memcpy(D + od * es, B + int64_t(A[oa]) * es, size_t(es));
      });
      break;
    default:
      fault(SimError::Kind::IllegalInstruction, c, cmd.pc, "not a vector-engine command");
  }
}

}  // namespace tilecore::sim
