// src/sim/dma_engine.cc — functional semantics of dma.in / dma.out.
//
// Destination element i (a 4-D index over `shape`) receives the source element
// i - pad_lo when that lies inside the source window (shape - pad_lo - pad_hi),
// converted from src_dtype to dst_dtype; otherwise (or with the fill flag) it
// receives the fill value. Bounds were checked at issue. Overlapping source and
// destination behave as if the source were read completely first.
#include <algorithm>
#include <cstring>

#include "machine.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::sim {

namespace {

/// n elements of des bytes at dst, stride elements apart, set to the fill value: typed
/// stores (a memset for bytes) instead of a variable-size copy per element.
void fill_elements(uint8_t* dst, int64_t n, int64_t stride, int des, const uint8_t* fill) {
  auto typed = [&](auto v) {
    std::memcpy(&v, fill, sizeof v);
    for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * stride * int64_t(sizeof v), &v, sizeof v);
  };
  switch (des) {
    case 1:
      if (stride == 1)
        std::memset(dst, fill[0], size_t(n));
      else
        typed(uint8_t{});
      break;
    case 2:
      typed(uint16_t{});
      break;
    case 4:
      typed(uint32_t{});
      break;
    default:
      for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * stride * des, fill, size_t(des));
  }
}

}  // namespace

void Machine::execute_dma(Core& c, const Command& cmd) {
  const arch::DmaDesc& d = std::get<arch::DmaDesc>(cmd.desc);
  int rank = d.rank;
  // Normalise to 4-D, innermost last.
  std::array<int64_t, 4> shape{1, 1, 1, 1}, ss{0, 0, 0, 0}, ds{0, 0, 0, 0}, lo{0, 0, 0, 0},
      win{1, 1, 1, 1};
  for (int k = 0; k < rank; ++k) {
    size_t o = size_t(4 - rank + k);
    shape[o] = d.shape[size_t(k)];
    ss[o] = d.src_stride[size_t(k)];
    ds[o] = d.dst_stride[size_t(k)];
    lo[o] = d.pad_lo[size_t(k)];
    win[o] = int64_t(d.shape[size_t(k)]) - d.pad_lo[size_t(k)] - d.pad_hi[size_t(k)];
  }
  for (int64_t e : shape)
    if (e == 0) return;  // nothing to move (and the walk below must not spin on the other dims)
  int ses = arch::dtype_size(d.src_dtype), des = arch::dtype_size(d.dst_dtype);
  uint8_t* dst = mem.base(cmd.dst_space, c.id) + cmd.addr[0];
  const uint8_t* src_base = mem.base(cmd.src_space, c.id) + cmd.addr[1];

  // Snapshot the source when it may overlap the destination (same memory).
  std::vector<uint8_t> snapshot;
  const uint8_t* src = src_base;
  int64_t src_origin = 0;
  if (!d.fill() && cmd.dst_space == cmd.src_space && cmd.nranges == 2) {
    const Range& rs = cmd.ranges[1];
    if (Overlap(cmd.ranges[0], rs)) {
      snapshot.assign(mem.base(cmd.src_space, c.id) + rs.lo, mem.base(cmd.src_space, c.id) + rs.hi);
      src = snapshot.data();
      src_origin = int64_t(cmd.addr[1]) - int64_t(rs.lo);
    }
  }
  const uint8_t* s0 = src + src_origin;

  uint8_t fill[4];
  std::memcpy(fill, &d.fill_bits, 4);
  const bool to_half =
      d.src_dtype == DType::F32 && (d.dst_dtype == DType::F16 || d.dst_dtype == DType::BF16);
  const bool same = d.src_dtype == d.dst_dtype;
  bool plain = !d.fill() && d.src_dtype == d.dst_dtype && ss[3] == 1 && ds[3] == 1 &&
               lo == std::array<int64_t, 4>{0, 0, 0, 0} && win == shape;
  for (int64_t i0 = 0; i0 < shape[0]; ++i0)
    for (int64_t i1 = 0; i1 < shape[1]; ++i1)
      for (int64_t i2 = 0; i2 < shape[2]; ++i2) {
        uint8_t* drow = dst + (i0 * ds[0] + i1 * ds[1] + i2 * ds[2]) * des;
        if (plain) {
          std::memmove(drow, s0 + (i0 * ss[0] + i1 * ss[1] + i2 * ss[2]) * ses,
                       size_t(shape[3] * des));
          continue;
        }
        int64_t j0 = i0 - lo[0], j1 = i1 - lo[1], j2 = i2 - lo[2];
        bool row_in =
            !d.fill() && j0 >= 0 && j0 < win[0] && j1 >= 0 && j1 < win[1] && j2 >= 0 && j2 < win[2];
        const uint8_t* srow = row_in ? s0 + (j0 * ss[0] + j1 * ss[1] + j2 * ss[2]) * ses : nullptr;
        if (same && row_in) {
          // Same dtype: the in-window part of the row is a byte copy (memmove when both
          // sides are contiguous), the padding on either side the fill value.
          int64_t k0 = std::clamp<int64_t>(lo[3], 0, shape[3]),
                  k1 = std::clamp<int64_t>(lo[3] + win[3], k0, shape[3]);
          fill_elements(drow, k0, ds[3], des, fill);
          if (ss[3] == 1 && ds[3] == 1) {
            std::memmove(drow + k0 * des, srow + (k0 - lo[3]) * ses, size_t((k1 - k0) * des));
          } else {
            for (int64_t i3 = k0; i3 < k1; ++i3)
              std::memcpy(drow + i3 * ds[3] * des, srow + (i3 - lo[3]) * ss[3] * ses, size_t(des));
          }
          fill_elements(drow + k1 * ds[3] * des, shape[3] - k1, ds[3], des, fill);
          continue;
        }
        if (!row_in) {
          fill_elements(drow, shape[3], ds[3], des, fill);
          continue;
        }
        for (int64_t i3 = 0; i3 < shape[3]; ++i3) {
          int64_t j3 = i3 - lo[3];
          uint8_t* dp = drow + i3 * ds[3] * des;
          if (row_in && j3 >= 0 && j3 < win[3]) {
            const uint8_t* sp = srow + j3 * ss[3] * ses;
            if (to_half) {  // f32 -> f16/bf16, the narrow matrix operands: as convert_element,
                            // without its switches
              float f;
              std::memcpy(&f, sp, 4);
              uint16_t h = d.dst_dtype == DType::F16 ? arch::f32_to_f16(f) : arch::f32_to_bf16(f);
              std::memcpy(dp, &h, 2);
            } else {
              arch::convert_element(d.dst_dtype, dp, d.src_dtype, sp);
            }
          } else {
            std::memcpy(dp, fill, size_t(des));
          }
        }
      }
}

}  // namespace tilecore::sim
