// src/sim/byte_rounding.h — f32 to int8 / uint8 as arch::convert_element gives it (NaN to 0,
// saturated, half to even), inline for the engines' inner loops (a call an element was a
// quarter of an int8 network's simulated time).
#pragma once

#include <algorithm>
#include <cstdint>

namespace tilecore::sim {

/// Clamps to [lo, hi] (NaN to 0), then rounds half to even: adding and taking away
/// 1.5 * 2^23 rounds an f32 below 2^22 in magnitude to an integer in the default rounding
/// mode, with no call (the loops vectorise).
class ByteRounding {
 public:
  ByteRounding(float lo, float hi) : lo_(lo), hi_(hi) {
    volatile float magic = 12582912.0f;  // (read once: the sum is not folded away)
    magic_ = magic;
  }
  int32_t operator()(float f) const {
    const float c = f != f ? 0.0f : std::min(std::max(f, lo_), hi_);
    return int32_t((c + magic_) - magic_);
  }

 private:
  float lo_, hi_, magic_;
};

}  // namespace tilecore::sim
