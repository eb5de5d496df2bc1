// include/tilecore/arch/numeric.h — bit-exact scalar conversions of TC1.
//
// Every engine (SIMD, vector, matrix epilogue, DMA cast) converts through these
// functions, so the rounding and saturation rules of docs/tc1.md ("Numerics")
// live in one place:
//   * float -> float narrowing rounds to nearest even; overflow gives ±Inf for
//     f16 and bf16; NaN stays NaN (quiet, canonical 0x7E00 / 0x7FC0).
//   * float -> int rounds to nearest even, saturates, and maps NaN to 0.
//   * int -> narrower int saturates; int -> float rounds to nearest even.
//   * anything -> bool is (value != 0); bool -> anything is 0 or 1.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tilecore/arch/dtype.h"

namespace tilecore::arch {

inline float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }
uint16_t f32_to_bf16(float f);

/// Reads one element of type `t` at `p` as a double (exact for every TC1 type).
double load_as_double(DType t, const uint8_t* p);
/// Reads one element of an integer type as int64 (exact).
int64_t load_as_int(DType t, const uint8_t* p);

/// Writes `v` to `p` as type `t` with TC1 rounding/saturation (see above).
/// Float destinations round `v` first to f32, then narrow (double rounding is
/// part of the specification; it is what every engine does).
void store_from_double(DType t, double v, uint8_t* p);
/// Writes an exact integer `v` as type `t` (saturating; floats round).
void store_from_int(DType t, int64_t v, uint8_t* p);

/// Converts one element between types (the DMA cast and tile/SIMD convert).
void convert_element(DType dst, uint8_t* d, DType src, const uint8_t* s);

int64_t int_min(DType t);
int64_t int_max(DType t);
inline int64_t saturate(DType t, int64_t v) {
  int64_t lo = int_min(t), hi = int_max(t);
  return v < lo ? lo : (v > hi ? hi : v);
}

/// Round half to even of a finite double, saturated to [lo, hi]; NaN -> 0.
int64_t round_sat(double v, int64_t lo, int64_t hi);

}  // namespace tilecore::arch
