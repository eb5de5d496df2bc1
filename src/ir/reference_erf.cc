/*
 * src/ir/reference_erf.cc — the error function of the reference implementations (the Erf
 * op and Gelu's exact form, tilecore/ir/ops) on float32 arrays: ir.ReferenceErf and
 * ir.ReferenceGelu. A transformer's GELUs were most of its calibration's time (scipy's erf
 * of float32 takes 9 to 19 ns an element; here most elements take one vectorised pass).
 *
 * The result is the float32 value scipy's gives, which is erf in double rounded once. Each
 * element's erf is approximated in double (|u| < 1: its series in u^2; 1 <= |u| < 4:
 * 1 - exp(-u^2) erfcx(u), the elements gathered; beyond: 1), in passes the compiler
 * vectorises, and rounded only when every value within kBand of the approximation rounds to
 * the same float32: then the value scipy rounds (as accurate as kBand) rounds to it too. An
 * element whose band straddles a rounding boundary (a few in a million) is rounded from erf in
 * long double instead (kPreciseLongDouble), so that a compile needs no scipy (whose import
 * took a third of a BERT layer's int8 compile); a NaN argument (whose payload is the caller's
 * form's to pass on) is left NaN and counted: the caller computes it as scipy does. Over every
 * float32 the results are scipy's, bit for bit (tests/python/ir_ops/test_reference_erf.py
 * draws a seeded part of them, and the elements near a boundary).
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/ir/reference_arrays.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

namespace {

/*! \brief Terms of erf(u)/u's series in z = u^2 (through z^16): for |u| < 1 the first left
 * out is below 1e-16, and Horner's rounding about 3e-16. */
constexpr int kTerms = 17;

/*! \brief Chebyshev terms of erfcx(u) = exp(u^2) erfc(u) over [1, 4] (its relative error
 * about 1e-14), and of exp(v)'s series over v in [-1, -1/16] (below 2e-16). */
constexpr int kTailTerms = 23;
constexpr int kExpTerms = 18;

/*! \brief From 4 on, erf rounds to 1 in float32: erfc(4) is 1.5e-8, half an ulp below 1 3e-8. */
constexpr double kSaturated = 4.0;

/*! \brief How far (relative) the rounded value may be from erf: this approximation's error,
 * plus that of the double erf scipy rounds (cephes: at most about 1e-14 of erf), with room. */
constexpr double kBand = 1e-13;

/*! \brief The coefficients, computed once (in long double, or from std::erfc at the
 * Chebyshev nodes). */
struct ErfCoefficients {
  double series[kTerms];         // 2/sqrt(pi) (-1)^n / (n! (2n+1))
  double tail[kTailTerms];       // erfcx over [1, 4] as sum c_k T_k((u - 2.5) / 1.5)
  double exp_series[kExpTerms];  // 1 / n!
  ErfCoefficients() {
    const long double pi = std::acos(-1.0L);
    long double factorial = 1;
    for (int n = 0; n < kTerms || n < kExpTerms; ++n) {
      if (n > 0) factorial *= n;
      if (n < kTerms) {
        const long double term = 2 / std::sqrt(pi) / (factorial * (2 * n + 1));
        series[n] = static_cast<double>(n % 2 ? -term : term);
      }
      if (n < kExpTerms) exp_series[n] = static_cast<double>(1 / factorial);
    }
    double at[kTailTerms];
    for (int i = 0; i < kTailTerms; ++i) {
      const double u = 2.5 + 1.5 * std::cos(static_cast<double>(pi) * (i + 0.5) / kTailTerms);
      at[i] = std::erfc(u) * std::exp(u * u);
    }
    for (int k = 0; k < kTailTerms; ++k) {
      long double sum = 0;
      for (int i = 0; i < kTailTerms; ++i)
        sum += at[i] * std::cos(pi * k * (i + 0.5L) / kTailTerms);
      tail[k] = static_cast<double>(sum * (k == 0 ? 1 : 2) / kTailTerms);
    }
  }
};

const ErfCoefficients& Coefficients() {
  static const ErfCoefficients coefficients;
  return coefficients;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// (inlined into each vectorised pass, whatever vectors it is built for)
#define TILECORE_ERF_INLINE inline __attribute__((always_inline))

/*! \brief r rounded to float32 when all of [r - kBand |r|, r + kBand |r|] rounds to one value
 * (rounding is monotone: its ends agreeing is enough), else NaN. */
TILECORE_ERF_INLINE float RoundedSurely(double r) {
  const double w = std::fabs(r) * kBand;
  return static_cast<float>(r - w) == static_cast<float>(r + w) ? static_cast<float>(r) : kNaN;
}

/*! \brief erf(u) from its series, rounded surely, where |u| < 1; NaN elsewhere. */
TILECORE_ERF_INLINE float SeriesErf(float u, const double* c) {
  const double ud = u, z = ud * ud;
  double p = c[kTerms - 1];
#pragma GCC unroll 17
  for (int k = kTerms - 2; k >= 0; --k) p = p * z + c[k];
  const float e = RoundedSurely(ud * p);
  return std::fabs(ud) < 1.0 ? e : kNaN;
}

/*! \brief erf(u) = 1 - exp(-u^2) erfcx(u), rounded surely, where 1 <= |u|; NaN elsewhere. */
TILECORE_ERF_INLINE float TailErf(float u, const double* tail, const double* ex) {
  const double a = std::fabs(static_cast<double>(u));
  const double t = a < 1.0 ? 1.0 : a > kSaturated ? kSaturated : a;
  // exp(-t^2) as exp(-t^2 / 16)^16 (t^2 / 16 in [1/16, 1]: the series converges quickly)
  const double v = -(t * t) * (1.0 / 16);
  double e = ex[kExpTerms - 1];
#pragma GCC unroll 18
  for (int k = kExpTerms - 2; k >= 0; --k) e = e * v + ex[k];
  e *= e;
  e *= e;
  e *= e;
  e *= e;
  // erfcx by Clenshaw's recurrence
  const double x = (t - 2.5) * (1.0 / 1.5), x2 = 2 * x;
  double b1 = 0, b2 = 0;
#pragma GCC unroll 23
  for (int k = kTailTerms - 1; k >= 1; --k) {
    const double b0 = x2 * b1 - b2 + tail[k];
    b2 = b1;
    b1 = b0;
  }
  const double erfcx = x * b1 - b2 + tail[0];
  const double r = a > kSaturated ? 1.0 : 1.0 - e * erfcx;
  const float f = RoundedSurely(r);
  const float signed_f = u < 0 ? -f : f;
  return a >= 1.0 ? signed_f : kNaN;  // (NaN u: NaN)
}

/*! \brief y[i] = f(u) where u = x[i] (erf) or x[i] / sqrt(2) (Gelu, then y[i] = (0.5 x[i])
 * (1 + f(u)), each step in float32 in the numpy form's order), f SeriesErf or TailErf (kTail);
 * y[i] NaN where f is. */
template <bool kGelu, bool kTail>
TILECORE_ERF_INLINE void Pass(const float* x, float* y, int64_t n, const ErfCoefficients& c) {
  const float root2 = static_cast<float>(std::sqrt(2.0));
  for (int64_t i = 0; i < n; ++i) {
    const float u = kGelu ? x[i] / root2 : x[i];
    const float e = kTail ? TailErf(u, c.tail, c.exp_series) : SeriesErf(u, c.series);
    y[i] = kGelu ? (0.5f * x[i]) * (1.0f + e) : e;
  }
}

TILECORE_REFERENCE_CLONES void SeriesPassErf(const float* x, float* y, int64_t n,
                                             const ErfCoefficients& c) {
  Pass<false, false>(x, y, n, c);
}
TILECORE_REFERENCE_CLONES void SeriesPassGelu(const float* x, float* y, int64_t n,
                                              const ErfCoefficients& c) {
  Pass<true, false>(x, y, n, c);
}
TILECORE_REFERENCE_CLONES void TailPassErf(const float* u, float* e, int64_t n,
                                           const ErfCoefficients& c) {
  Pass<false, true>(u, e, n, c);
}

/*! \brief Whether long double carries at least 64 bits of mantissa (x86's extended
 * precision, aarch64's quad): its erf (error near 1e-19 of erf) then rounds an element whose
 * band straddles a float32 rounding boundary to the float32 scipy's double erf rounds to. Over
 * every float32 argument the two agree (6,424 such elements of erf, 7,661 of Gelu's,
 * glibc's erfl); where long double is double, those elements stay the caller's. */
constexpr bool kPreciseLongDouble = std::numeric_limits<long double>::digits >= 64;

/*! \brief The elements a block takes: its rest gathered stays in L1. */
constexpr int64_t kBlock = 2048;

/*! \brief y = erf(x) or Gelu(x) (kGelu); an element the passes cannot round surely from its
 * long double erf (kPreciseLongDouble), or left NaN and counted, as NaN arguments are. */
template <bool kGelu>
int64_t ErfArray(const float* x, float* y, int64_t n) {
  const ErfCoefficients& c = Coefficients();
  const float root2 = static_cast<float>(std::sqrt(2.0));
  int64_t unsure = 0;
  int64_t at[kBlock];
  float u[kBlock], e[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const float* xb = x + b;
    float* yb = y + b;
    if (kGelu)
      SeriesPassGelu(xb, yb, m, c);
    else
      SeriesPassErf(xb, yb, m, c);
    // the rest (|u| >= 1, mostly) gathered (without branches: each element written, kept when
    // its y is NaN), their tail in one pass, put back
    int64_t rest = 0;
    for (int64_t i = 0; i < m; ++i) {
      at[rest] = i;
      u[rest] = kGelu ? xb[i] / root2 : xb[i];
      rest += std::isnan(yb[i]);
    }
    TailPassErf(u, e, rest, c);
    for (int64_t j = 0; j < rest; ++j) {
      const int64_t i = at[j];
      float ej = e[j];
      if (std::isnan(ej) && !std::isnan(u[j]) && kPreciseLongDouble)
        ej = static_cast<float>(std::erf(static_cast<long double>(u[j])));
      if (std::isnan(ej)) {  // (a NaN argument: its payload is the caller's form's)
        ++unsure;
        yb[i] = kNaN;
      } else {
        yb[i] = kGelu ? (0.5f * xb[i]) * (1.0f + ej) : ej;
      }
    }
  }
  return unsure;
}

/*! \brief x and y: contiguous float32 host arrays of one size, y writeable; `what` names the
 * caller. */
void CheckFloat32Pair(const char* what, const ffi::NDArray& x, const ffi::NDArray& y) {
  if (!IsFloat32Host(x) || !IsFloat32Host(y))
    TILECORE_THROW(TypeError) << what << ": expects contiguous float32 host arrays";
  if (x.NumElements() != y.NumElements())
    TILECORE_THROW(ValueError) << what << ": the input has " << x.NumElements()
                               << " elements, the output " << y.NumElements();
  if (y->read_only) TILECORE_THROW(ValueError) << what << ": the output is read-only";
  // (the passes read x after writing y)
  const char* xs = static_cast<const char*>(static_cast<const void*>(x.data<float>()));
  const char* ys = static_cast<const char*>(static_cast<const void*>(y.data<float>()));
  const int64_t bytes = x.NumElements() * int64_t(sizeof(float));
  if (bytes > 0 && xs < ys + bytes && ys < xs + bytes)
    TILECORE_THROW(ValueError) << what << ": the output overlaps the input";
}

}  // namespace

// y = erf(x); returns how many elements were left NaN for the caller to compute (NaN arguments
// among them)
TILECORE_REGISTER_GLOBAL("ir.ReferenceErf").set_body_typed([](ffi::NDArray x, ffi::NDArray y) {
  CheckFloat32Pair("ReferenceErf", x, y);
  return ErfArray<false>(x.data<float>(), y.data<float>(), x.NumElements());
});

// y = Gelu(x) = (0.5 x) (1 + erf(x / sqrt(2))); returns as ReferenceErf does
TILECORE_REGISTER_GLOBAL("ir.ReferenceGelu").set_body_typed([](ffi::NDArray x, ffi::NDArray y) {
  CheckFloat32Pair("ReferenceGelu", x, y);
  return ErfArray<true>(x.data<float>(), y.data<float>(), x.NumElements());
});

}  // namespace ir
}  // namespace tilecore
