// src/sim/exp_rows.cc — exp_row_f32 (exp_rows.h): a vectorised double exp, its result
// checked against the f32 rounding, the specification's formula where the check fails.
#include "exp_rows.h"

#include <cmath>
#include <cstring>

#include "cpu_features.h"

namespace tilecore::sim {

namespace {

constexpr int64_t kChunk = 256;

// (always inlined: the AVX2 entry below compiles them again for its target)

/// exp(z) for |z| <= 88.8 (any other z gives some double): z = k ln2 + r, |r| <= ln2 / 2 (a little
/// more when the multiply and add are fused), exp(r) by its Taylor polynomial of degree 13
/// (truncation below 2^-56 relative), times 2^k built from its bits. Relative error well under
/// 2^-50.
[[gnu::always_inline]] inline double exp_near(double z) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // (k * kLn2Hi exact for |k| < 2^20)
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer in the low bits
  const double t = z * kLog2e + kShift;
  const double k = t - kShift;
  const double r = (z - k * kLn2Hi) - k * kLn2Lo;
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  uint64_t bits;
  std::memcpy(&bits, &t, 8);                        // 0x4338000000000000 + k
  const uint64_t scale_bits = (bits + 1023) << 52;  // 2^k (modulo 2^64: no overflow)
  double scale;
  std::memcpy(&scale, &scale_bits, 8);
  return p * scale;
}

/// One chunk: out[k] for k < m, and how many need the formula (redo[k] set).
template <ExpRow kKind>
[[gnu::always_inline]] inline int chunk(const float* in, float* out, uint8_t* redo, int64_t m) {
  // where the result is a normal float and the argument safe for exp_near (tanh: where |x| is
  // large enough that e - 1 keeps its precision, and exp(2|x|) is safe)
  constexpr double lo = kKind == ExpRow::Exp ? -87.0 : kKind == ExpRow::Sigmoid ? -80.0 : 0x1p-4;
  constexpr double hi = kKind == ExpRow::Exp ? 88.0 : kKind == ExpRow::Sigmoid ? 80.0 : 40.0;
  int count = 0;
  for (int64_t k = 0; k < m; ++k) {  // no branch, no call: the loop vectorises
    const double x = in[k];
    // (exp_near of any double is some double, computed without a branch; outside, it is
    // flagged and replaced)
    const double arg = kKind == ExpRow::Tanh ? std::fabs(x) : x;
    const bool inside = (arg >= lo) & (arg <= hi);  // (false for NaN)
    const double e = exp_near(kKind == ExpRow::Exp ? x : kKind == ExpRow::Sigmoid ? -x : 2.0 * arg);
    const double y = kKind == ExpRow::Exp       ? e
                     : kKind == ExpRow::Sigmoid ? 1.0 / (1.0 + e)
                                                : std::copysign((e - 1.0) / (e + 1.0), x);
    const float below = float(y * (1.0 - 0x1p-45)), above = float(y * (1.0 + 0x1p-45));
    const bool sure = inside & (below == above);
    out[k] = below;
    redo[k] = uint8_t(!sure);
    count += int(!sure);
  }
  return count;
}

template <ExpRow kKind>
[[gnu::always_inline]] inline void rows(uint8_t* d, const uint8_t* a, int64_t n) {
  float in[kChunk], out[kChunk];
  uint8_t redo[kChunk];
  for (int64_t base = 0; base < n; base += kChunk) {
    const int64_t m = n - base < kChunk ? n - base : kChunk;
    std::memcpy(in, a + base * 4, size_t(m) * 4);
    if (chunk<kKind>(in, out, redo, m) > 0)
      for (int64_t k = 0; k < m; ++k)
        if (redo[k]) out[k] = exp_reference(kKind, in[k]);
    std::memcpy(d + base * 4, out, size_t(m) * 4);
  }
}

#ifdef TC1_SIM_X86
__attribute__((target("avx2,fma"))) void rows_avx2(ExpRow kind, uint8_t* d, const uint8_t* a,
                                                   int64_t n) {
  if (kind == ExpRow::Exp)
    rows<ExpRow::Exp>(d, a, n);
  else if (kind == ExpRow::Sigmoid)
    rows<ExpRow::Sigmoid>(d, a, n);
  else
    rows<ExpRow::Tanh>(d, a, n);
}
#endif

}  // namespace

float exp_reference(ExpRow kind, float x) {
  const double xd = x;
  return float(kind == ExpRow::Exp       ? std::exp(xd)
               : kind == ExpRow::Sigmoid ? 1.0 / (1.0 + std::exp(-xd))
                                         : std::tanh(xd));
}

void exp_row_f32(ExpRow kind, uint8_t* d, const uint8_t* a, int64_t n) {
#ifdef TC1_SIM_X86
  if (CpuHasAvx2Fma()) return rows_avx2(kind, d, a, n);
#endif
  if (kind == ExpRow::Exp)
    rows<ExpRow::Exp>(d, a, n);
  else if (kind == ExpRow::Sigmoid)
    rows<ExpRow::Sigmoid>(d, a, n);
  else
    rows<ExpRow::Tanh>(d, a, n);
}

}  // namespace tilecore::sim
