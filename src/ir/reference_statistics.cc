/*
 * src/ir/reference_statistics.cc — what int8 calibration measures of an activation
 * (python/tilecore/compiler/precision.py, activation_statistics) in one pass over its float32
 * values: max |x| and, for a matrix op's data input, the sums per channel its mean takes
 * (ir.ReferenceActivationStatistics; in numpy, a max, a min, a float64 copy and a mean).
 *
 * The per-channel sums are numpy's, bit for bit: its mean of the float64 array adds, for each
 * channel and each block of the dims before it, the block's run of positions as its pairwise
 * sum (eight accumulators over runs of up to 128, halves beyond: numpy's pairwise_sum) into a
 * sum that starts at 0, the blocks in order; a channel axis that is the last adds the rows
 * one by one, and a single channel is the whole array as one run. (float32 values added in double
 * are mostly exact whatever the order; the order is numpy's for the sums where they are not:
 * magnitudes far apart.)
 */
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "src/ir/reference_arrays.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

namespace {

/*! \brief numpy's pairwise sum of `n` float32 values, each made a double. */
double PairwiseSum(const float* a, int64_t n) {
  if (n < 8) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += double(a[i]);
    return s;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = double(a[j]);
    int64_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += double(a[i + j]);
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += double(a[i]);
    return s;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return PairwiseSum(a, half) + PairwiseSum(a + half, n - half);
}

/*! \brief max |x| over `n` values; NaN when one is. (As unsigned integers the bits of |x|
 * order as the values do, infinity above the finite ones and NaNs above infinity: an
 * integer max, which vectorises.) */
TILECORE_REFERENCE_CLONES double AbsMax(const float* x, int64_t n) {
  uint32_t hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bits &= 0x7fffffffu;
    hi = bits > hi ? bits : hi;
  }
  if (hi > 0x7f800000u) return std::numeric_limits<double>::quiet_NaN();
  float a;
  std::memcpy(&a, &hi, sizeof a);
  return double(a);
}

}  // namespace

// max |x| (NaN when an element is); with `sums` (float64, one per index of `axis`) also the
// sums of x over every axis but `axis`, as numpy's mean of x in float64 adds them
TILECORE_REGISTER_GLOBAL("ir.ReferenceActivationStatistics")
    .set_body_typed(
        [](ffi::NDArray x, int64_t axis, ffi::AnyView sums_arg) {
          if (!IsFloat32Host(x))
            TILECORE_THROW(TypeError)
                << "ReferenceActivationStatistics: expects a contiguous float32 host array";
          const float* data = x.data<float>();
          const int64_t n = x.NumElements();
          const double absmax = AbsMax(data, n);
          if (sums_arg.is_none()) return absmax;
          const ffi::NDArray s = sums_arg.cast<ffi::NDArray>();
          const std::vector<int64_t> shape = x.shape();
          const int64_t rank = int64_t(shape.size());
          if (axis < 0 || axis >= rank)
            TILECORE_THROW(ValueError) << "ReferenceActivationStatistics: axis " << axis
                                       << " out of range for rank " << rank;
          const int64_t channels = shape[size_t(axis)];
          if (s.dtype().code != kDLFloat || s.dtype().bits != 64 || s.dtype().lanes != 1 ||
              s.device().device_type != kDLCPU || !s.IsContiguous() || s.NumElements() != channels)
            TILECORE_THROW(TypeError)
                << "ReferenceActivationStatistics: the sums must be a contiguous float64 "
                << "host array of " << channels << " elements";
          if (s->read_only)
            TILECORE_THROW(ValueError) << "ReferenceActivationStatistics: the sums are read-only";
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < axis; ++d) outer *= shape[size_t(d)];
          for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[size_t(d)];
          double* out = s.data<double>();
          for (int64_t c = 0; c < channels; ++c) out[c] = 0.0;
          if (channels == 1) {  // (a sum of the whole array: numpy adds it as one run)
            out[0] += PairwiseSum(data, n);
            return absmax;
          }
          for (int64_t o = 0; o < outer; ++o) {
            const float* block = data + o * channels * inner;
            if (inner == 1) {
              for (int64_t c = 0; c < channels; ++c) out[c] += double(block[c]);
            } else {
              for (int64_t c = 0; c < channels; ++c)
                out[c] += PairwiseSum(block + c * inner, inner);
            }
          }
          return absmax;
        });

}  // namespace ir
}  // namespace tilecore
