/*
 * src/ir/reference_im2col.cc — the patches of the reference implementation's 2-D Conv on
 * float32 (tilecore/ir/ops/_conv.py): ir.ReferenceIm2col2d. numpy padded the input into a
 * copy, then copied the patches out of a strided view of it; here each patch row is copied
 * once from the input as it is, its padding written as zeros. The same values: a copy.
 */
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "src/ir/reference_arrays.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"

namespace tilecore {
namespace ir {

// cols[n, c, kh, kw, oh, ow] = x[n, c, oh * sh + kh * dh - pt, ow * sw + kw * dw - pl], 0 where
// that is outside x: x (N, C, H, W), cols (N, C, KH, KW, OH, OW), pads (pt, pl) >= 0
TILECORE_REGISTER_GLOBAL("ir.ReferenceIm2col2d")
    .set_body_typed([](ffi::NDArray x, ffi::NDArray cols, ffi::Array<int64_t> strides,
                       ffi::Array<int64_t> dilations, ffi::Array<int64_t> pads) {
      if (!IsFloat32Host(x) || !IsFloat32Host(cols) || x.shape().size() != 4 ||
          cols.shape().size() != 6)
        TILECORE_THROW(TypeError) << "ReferenceIm2col2d: expects a contiguous 4-D float32 input "
                                     "and 6-D float32 patches in host memory";
      if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 2)
        TILECORE_THROW(ValueError)
            << "ReferenceIm2col2d: expects 2 strides, 2 dilations and 2 leading pads";
      if (cols->read_only)
        TILECORE_THROW(ValueError) << "ReferenceIm2col2d: the patches are read-only";
      const std::vector<int64_t> xs = x.shape(), cs = cols.shape();
      const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
      const int64_t KH = cs[2], KW = cs[3], OH = cs[4], OW = cs[5];
      const int64_t sh = strides[0], sw = strides[1], dh = dilations[0], dw = dilations[1];
      const int64_t pt = pads[0], pl = pads[1];
      if (cs[0] != N || cs[1] != C || sh < 1 || sw < 1 || dh < 1 || dw < 1 || pt < 0 || pl < 0)
        TILECORE_THROW(ValueError) << "ReferenceIm2col2d: shapes, strides, dilations and pads do "
                                      "not agree";
      const float* in = x.data<float>();
      float* out = cols.data<float>();
      for (int64_t nc = 0; nc < N * C; ++nc) {
        const float* plane = in + nc * H * W;
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t kw = 0; kw < KW; ++kw) {
            // the output columns whose input column is inside the row: [lo, hi)
            const int64_t c0 = kw * dw - pl;  // input column of output column 0
            const int64_t lo = std::min(OW, c0 >= 0 ? 0 : (-c0 + sw - 1) / sw);
            const int64_t hi = std::max(lo, std::min(OW, c0 >= W ? 0 : (W - 1 - c0) / sw + 1));
            for (int64_t oh = 0; oh < OH; ++oh, out += OW) {
              const int64_t r = oh * sh + kh * dh - pt;
              if (r < 0 || r >= H) {
                std::fill(out, out + OW, 0.0f);
                continue;
              }
              std::fill(out, out + lo, 0.0f);
              if (hi > lo) {
                const float* first = plane + r * W + (c0 + lo * sw);  // output column lo's
                if (sw == 1) {
                  std::memcpy(out + lo, first, size_t(hi - lo) * sizeof(float));
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) out[ow] = first[(ow - lo) * sw];
                }
              }
              std::fill(out + hi, out + OW, 0.0f);
            }
          }
        }
      }
    });

}  // namespace ir
}  // namespace tilecore
