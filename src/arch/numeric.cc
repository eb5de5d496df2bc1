// src/arch/numeric.cc — TC1's conversion rules (see numeric.h for the list).
#include "tilecore/arch/numeric.h"

#include <limits>

namespace tilecore::arch {

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        man <<= 1;
        ++e;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (man << 13) | (man ? 0x400000u : 0);
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  return bits_to_f32(bits);
}

uint16_t f32_to_f16(float f) {
  uint32_t x = f32_to_bits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000u) return sign | 0x7E00;   // NaN -> canonical quiet NaN
  if (ax >= 0x477FF000u) return sign | 0x7C00;  // rounds to >= 65520 -> Inf
  if (ax < 0x38800000u) {                       // below f16 min normal: subnormal
    // value = ax as float; f16 subnormal unit is 2^-24.
    float a = bits_to_f32(ax);
    float scaled = a * 16777216.0f;  // exact (power of two)
    // Round to nearest even integer.
    float r = std::nearbyint(scaled);  // default rounding mode is nearest-even
    return sign | uint16_t(r);
  }
  uint32_t man = ax & 0x7FFFFF;
  uint32_t exp = (ax >> 23) - 112;
  uint32_t half = exp << 10 | man >> 13;
  uint32_t rest = man & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return sign | uint16_t(half);
}

uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_to_bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000u) return uint16_t(((x >> 16) & 0x8000) | 0x7FC0);
  uint32_t rounding = 0x7FFF + ((x >> 16) & 1);
  return uint16_t((x + rounding) >> 16);
}

int64_t int_min(DType t) {
  switch (t) {
    case DType::I8:
      return -128;
    case DType::I16:
      return -32768;
    case DType::I32:
      return std::numeric_limits<int32_t>::min();
    default:
      return 0;
  }
}

int64_t int_max(DType t) {
  switch (t) {
    case DType::I8:
      return 127;
    case DType::U8:
      return 255;
    case DType::I16:
      return 32767;
    case DType::U16:
      return 65535;
    case DType::I32:
      return std::numeric_limits<int32_t>::max();
    case DType::U32:
      return std::numeric_limits<uint32_t>::max();
    case DType::Bool:
      return 1;
    default:
      return 0;
  }
}

int64_t round_sat(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  if (v <= double(lo)) return lo;
  if (v >= double(hi)) return hi;
  return int64_t(std::nearbyint(v));  // nearest-even: the default FP environment
}

double load_as_double(DType t, const uint8_t* p) {
  switch (t) {
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    }
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    default:
      return double(load_as_int(t, p));
  }
}

int64_t load_as_int(DType t, const uint8_t* p) {
  switch (t) {
    case DType::I8:
      return int8_t(p[0]);
    case DType::U8:
      return p[0];
    case DType::Bool:
      return p[0] != 0;
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default:
      return round_sat(load_as_double(t, p), INT64_MIN / 2, INT64_MAX / 2);
  }
}

void store_from_int(DType t, int64_t v, uint8_t* p) {
  switch (t) {
    case DType::I8:
    case DType::U8: {
      uint8_t b = uint8_t(saturate(t, v));
      p[0] = b;
      return;
    }
    case DType::Bool:
      p[0] = v != 0;
      return;
    case DType::I16:
    case DType::U16: {
      uint16_t b = uint16_t(saturate(t, v));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::I32:
    case DType::U32: {
      uint32_t b = uint32_t(saturate(t, v));
      std::memcpy(p, &b, 4);
      return;
    }
    default:
      store_from_double(t, double(v), p);
      return;
  }
}

void store_from_double(DType t, double v, uint8_t* p) {
  switch (t) {
    case DType::F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::F16: {
      uint16_t h = f32_to_f16(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::BF16: {
      uint16_t h = f32_to_bf16(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::Bool:
      p[0] = !std::isnan(v) && v != 0.0;
      return;
    default:
      store_from_int(t, round_sat(v, int_min(t), int_max(t)), p);
      return;
  }
}

void convert_element(DType dst, uint8_t* d, DType src, const uint8_t* s) {
  if (dst == src) {
    std::memcpy(d, s, size_t(dtype_size(dst)));
    return;
  }
  if (is_float(src))
    store_from_double(dst, load_as_double(src, s), d);
  else
    store_from_int(dst, load_as_int(src, s), d);
}

}  // namespace tilecore::arch
