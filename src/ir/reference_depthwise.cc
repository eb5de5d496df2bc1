/*
 * src/ir/reference_depthwise.cc — the reference implementation's depthwise 2-D Conv on
 * float32 (tilecore/ir/ops/_conv.py): ir.ReferenceDepthwise2d. In numpy each kernel offset
 * was a pass over the whole map (a product, then a sum), 49 pairs of passes for a 7x7
 * kernel; here one channel's sums stay in cache while every offset adds to them.
 *
 * The sums are numpy's: each product rounded to float32, added in kernel-offset order to a
 * float32 sum that starts at 0 (no fused multiply-add: this file is compiled with
 * -ffp-contract=off, CMakeLists.txt), so that the results are the numpy form's bit for bit.
 */
#include <cstdint>
#include <vector>

#include "src/ir/reference_arrays.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

namespace {

bool IsFloat32Host4d(const ffi::NDArray& a) { return IsFloat32Host(a) && a.shape().size() == 4; }

}  // namespace

// y[n, c, oh, ow] = sum over (kh, kw) of xp[n, c, oh * sh + kh * dh, ow * sw + kw * dw] *
// w[c, 0, kh, kw]: xp already padded (N, C, H, W), w (C, 1, KH, KW), y (N, C, OH, OW)
TILECORE_REGISTER_GLOBAL("ir.ReferenceDepthwise2d")
    .set_body_typed([](ffi::NDArray xp, ffi::NDArray w, ffi::NDArray y, ffi::Array<int64_t> strides,
                       ffi::Array<int64_t> dilations) {
      if (!IsFloat32Host4d(xp) || !IsFloat32Host4d(w) || !IsFloat32Host4d(y))
        TILECORE_THROW(TypeError)
            << "ReferenceDepthwise2d: expects contiguous 4-D float32 host arrays";
      if (strides.size() != 2 || dilations.size() != 2)
        TILECORE_THROW(ValueError) << "ReferenceDepthwise2d: expects 2 strides and 2 dilations";
      if (y->read_only)
        TILECORE_THROW(ValueError) << "ReferenceDepthwise2d: the output is read-only";
      const std::vector<int64_t> xs = xp.shape(), ws = w.shape(), ys = y.shape();
      const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
      const int64_t KH = ws[2], KW = ws[3], OH = ys[2], OW = ys[3];
      const int64_t sh = strides[0], sw = strides[1], dh = dilations[0], dw = dilations[1];
      if (ws[0] != C || ws[1] != 1 || ys[0] != N || ys[1] != C || sh < 1 || sw < 1 || dh < 1 ||
          dw < 1 || (OH > 0 && (OH - 1) * sh + (KH - 1) * dh >= H) ||
          (OW > 0 && (OW - 1) * sw + (KW - 1) * dw >= W))
        TILECORE_THROW(ValueError) << "ReferenceDepthwise2d: shapes, strides and dilations do "
                                      "not agree";
      const float* x = xp.data<float>();
      const float* k = w.data<float>();
      float* out = y.data<float>();
      for (int64_t nc = 0; nc < N * C; ++nc) {
        const float* xc = x + nc * H * W;
        const float* kc = k + (nc % C) * KH * KW;
        float* yc = out + nc * OH * OW;
        for (int64_t i = 0; i < OH * OW; ++i) yc[i] = 0.0f;
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t kw = 0; kw < KW; ++kw) {
            const float wt = kc[kh * KW + kw];
            for (int64_t oh = 0; oh < OH; ++oh) {
              const float* row = xc + (oh * sh + kh * dh) * W + kw * dw;
              float* sums = yc + oh * OW;
              if (sw == 1) {  // (a unit stride: a loop the compiler vectorises)
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const float product = row[ow] * wt;
                  sums[ow] = sums[ow] + product;
                }
              } else {
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const float product = row[ow * sw] * wt;
                  sums[ow] = sums[ow] + product;
                }
              }
            }
          }
        }
      }
    });

}  // namespace ir
}  // namespace tilecore
