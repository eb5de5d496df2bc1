/*
 * src/ir/reference_erf.cc — the error function of the reference implementations (the Erf
 * op and Gelu's exact form, tilecore/ir/ops) on float32 arrays: ir.ReferenceErf and
 * ir.ReferenceGelu. A model's GELUs were the most of its calibration's time in numpy
 * (scipy's erf, then four more passes over the array); here each element is one pass.
 *
 * erf is evaluated in double, on each piece of a quarter, as the degree-10 polynomial that
 * interpolates std::erf at the piece's Chebyshev nodes (the first piece in x^2, so that small
 * arguments keep their relative accuracy), fitted at first use. Rounded to float32 it is the
 * value scipy's float32 erf gives on every argument the tests draw
 * (tests/python/ir_ops/test_reference_erf.py).
 */
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

namespace {

constexpr double kPiece = 0.25;  // the width of a piece
constexpr int kPieces = 24;      // [0, 6): erf(6) is 1 in double
constexpr int kTerms = 11;       // a degree-10 interpolant a piece
constexpr int kLanes = 8;        // elements summed side by side

class ErfPieces {
 public:
  ErfPieces() {
    const double pi = std::acos(-1.0);
    // piece 0 interpolates erf(sqrt(u)) / sqrt(u) over u in [0, kPiece^2]; the others erf
    Fit(0, 0.0, kPiece * kPiece, [&](double u) {
      return u > 0 ? std::erf(std::sqrt(u)) / std::sqrt(u) : 2 / std::sqrt(pi);
    });
    for (int k = 1; k < kPieces; ++k)
      Fit(k, k * kPiece, (k + 1) * kPiece, [](double x) { return std::erf(x); });
    coeffs_[kPieces][0] = 1;  // from 6 on: erf is 1 in double
  }

  /*! \brief y[i] = erf(x[i]) for i < n <= kLanes, the lanes' polynomials summed side by
   * side (one element's is a chain of dependent steps: several at once keep the core busy). */
  void ErfBlock(const double* x, double* y, int n) const {
    double t[kLanes], sum[kLanes], scale[kLanes];
    double c[kTerms][kLanes];
    for (int l = 0; l < kLanes; ++l) {
      // (no branches: the pieces of random arguments would mispredict them; past the last
      // piece, and for NaN, the piece of the constant 1, fixed up below for NaN)
      const double a = l < n ? std::fabs(x[l]) : 0.0;
      const double within = a < kPieces * kPiece ? a : kPieces * kPiece;
      const int k = static_cast<int>(within * (1 / kPiece));
      const double span = kPiece * kPiece;
      const double t_first = (2 * a * a - span) * (1 / span);
      const double t_other = (2 * within - (2 * k + 1) * kPiece) * (1 / kPiece);
      t[l] = k == 0 ? t_first : k == kPieces ? 0.0 : t_other;
      scale[l] = k == 0 ? a : 1.0;
      for (int j = 0; j < kTerms; ++j) c[j][l] = coeffs_[k][j];
      sum[l] = c[kTerms - 1][l];
    }
    for (int j = kTerms - 2; j >= 0; --j)
      for (int l = 0; l < kLanes; ++l) sum[l] = sum[l] * t[l] + c[j][l];
    for (int l = 0; l < n; ++l)
      y[l] = std::isnan(x[l]) ? x[l] : std::copysign(scale[l] * sum[l], x[l]);
  }

 private:
  template <typename F>
  void Fit(int piece, double lo, double hi, F f) {
    const double pi = std::acos(-1.0);
    std::array<double, kTerms> at{};
    for (int i = 0; i < kTerms; ++i)
      at[i] = f((lo + hi) / 2 + (hi - lo) / 2 * std::cos(pi * (i + 0.5) / kTerms));
    std::array<double, kTerms> cheb{};
    for (int j = 0; j < kTerms; ++j) {
      double s = 0;
      for (int i = 0; i < kTerms; ++i) s += at[i] * std::cos(pi * j * (i + 0.5) / kTerms);
      cheb[j] = 2 * s / kTerms;
    }
    cheb[0] /= 2;
    // the series' powers of t: T_j's, from T_{j+1} = 2 t T_j - T_{j-1}
    std::array<double, kTerms> prev{}, cur{}, next{};
    prev[0] = 1;  // T_0
    cur[1] = 1;   // T_1
    std::array<double, kTerms>& out = coeffs_[piece];
    out.fill(0);
    out[0] += cheb[0];
    for (int i = 0; i < kTerms; ++i) out[i] += cheb[1] * cur[i];
    for (int j = 2; j < kTerms; ++j) {
      next.fill(0);
      for (int i = 0; i + 1 < kTerms; ++i) next[i + 1] += 2 * cur[i];
      for (int i = 0; i < kTerms; ++i) next[i] -= prev[i];
      for (int i = 0; i < kTerms; ++i) out[i] += cheb[j] * next[i];
      prev = cur;
      cur = next;
    }
  }

  std::array<std::array<double, kTerms>, kPieces + 1> coeffs_{};  // (the last: 1)
};

const ErfPieces& Pieces() {
  static const ErfPieces pieces;
  return pieces;
}

/*! \brief y = erf(x) over n elements (`gelu`: y = Gelu(x), every step in float32 in the order
 * the numpy form takes them, erf rounded to float32 as scipy's is). */
void ErfArray(const ErfPieces& p, const float* x, float* y, int64_t n, bool gelu) {
  const float root2 = static_cast<float>(std::sqrt(2.0));
  double in[kLanes], out[kLanes];
  for (int64_t i = 0; i < n; i += kLanes) {
    const int m = static_cast<int>(std::min<int64_t>(kLanes, n - i));
    for (int l = 0; l < m; ++l) in[l] = static_cast<double>(gelu ? x[i + l] / root2 : x[i + l]);
    p.ErfBlock(in, out, m);
    for (int l = 0; l < m; ++l) {
      const float e = static_cast<float>(out[l]);
      if (gelu) {
        const float half = 0.5f * x[i + l];
        const float one_plus = 1.0f + e;
        y[i + l] = half * one_plus;
      } else {
        y[i + l] = e;
      }
    }
  }
}

/*! \brief x and y: contiguous float32 host arrays of one size; `what` names the caller. */
void CheckFloat32Pair(const char* what, const ffi::NDArray& x, const ffi::NDArray& y) {
  auto f32 = [](const ffi::NDArray& a) {
    return a.dtype().code == kDLFloat && a.dtype().bits == 32 && a.dtype().lanes == 1 &&
           a.device().device_type == kDLCPU && a.IsContiguous();
  };
  if (!f32(x) || !f32(y))
    TILECORE_THROW(TypeError) << what << ": expects contiguous float32 host arrays";
  if (x.NumElements() != y.NumElements())
    TILECORE_THROW(ValueError) << what << ": the input has " << x.NumElements()
                               << " elements, the output " << y.NumElements();
}

}  // namespace

// y = erf(x), each element rounded once from double
// y = erf(x), each element rounded once from double
TILECORE_REGISTER_GLOBAL("ir.ReferenceErf").set_body_typed([](ffi::NDArray x, ffi::NDArray y) {
  CheckFloat32Pair("ReferenceErf", x, y);
  ErfArray(Pieces(), x.data<float>(), y.data<float>(), x.NumElements(), false);
});

// y = Gelu(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
TILECORE_REGISTER_GLOBAL("ir.ReferenceGelu").set_body_typed([](ffi::NDArray x, ffi::NDArray y) {
  CheckFloat32Pair("ReferenceGelu", x, y);
  ErfArray(Pieces(), x.data<float>(), y.data<float>(), x.NumElements(), true);
});

}  // namespace ir
}  // namespace tilecore
