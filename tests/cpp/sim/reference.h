// tests/cpp/sim/reference.h — independent reference numerics and a harness that
// runs one tile command. The conversions here are written from the IEEE
// definitions (frexp / ldexp / nearbyint), not with tilecore's numeric.h, so the
// tests check the simulator against a second implementation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/dtype.h"
#include "tilecore/sim/simulator.h"

namespace ref {

using tilecore::arch::DType;

inline int size(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return 1;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      return 2;
    default:
      return 4;
  }
}
inline bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }

inline double f16_decode(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0)
    v = std::ldexp(double(m), -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = std::ldexp(double(1024 + m), e - 25);
  return s ? -v : v;
}

/// Round a float to f16, nearest-even (from the definition).
inline uint16_t f16_encode(float xf) {
  double x = xf;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7E00;
  x = std::fabs(x);
  if (std::isinf(x)) return sign | 0x7C00;
  if (x < std::ldexp(1.0, -14)) return sign | uint16_t(std::nearbyint(x * std::ldexp(1.0, 24)));
  int e;
  double m = std::frexp(x, &e);           // x = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint(m * 2048.0);  // 11 significant bits
  if (q == 2048.0) {
    q = 1024.0;
    ++e;
  }
  int be = e - 1 + 15;
  if (be >= 31) return sign | 0x7C00;
  return sign | uint16_t(be << 10) | uint16_t(int(q) - 1024);
}

inline double bf16_decode(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline uint16_t bf16_encode(float xf) {
  double x = xf;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return sign | 0x7FC0;
  x = std::fabs(x);
  if (std::isinf(x) || x == 0.0) {
    uint32_t b;
    float f = float(x);
    std::memcpy(&b, &f, 4);
    return sign | uint16_t(b >> 16);
  }
  int e;
  double m = std::frexp(x, &e);
  double q = std::nearbyint(m * 256.0);  // 8 significant bits
  double r = std::ldexp(q, e - 8);
  if (r >= std::ldexp(1.0, 128)) return sign | 0x7F80;
  float f = float(r);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return sign | uint16_t(b >> 16);
}

inline int64_t lo(DType t) {
  switch (t) {
    case DType::I8:
      return -128;
    case DType::I16:
      return -32768;
    case DType::I32:
      return INT32_MIN;
    default:
      return 0;
  }
}
inline int64_t hi(DType t) {
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
      return INT32_MAX;
    case DType::U32:
      return UINT32_MAX;
    case DType::Bool:
      return 1;
    default:
      return 0;
  }
}

inline double decode(DType t, const uint8_t* p) {
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
    case DType::F16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f16_decode(v);
    }
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_decode(v);
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
  return 0;
}

/// Encodes with TC1's documented rules: floats round (via f32) to nearest even;
/// integers round to nearest even, saturate, NaN -> 0; bool is != 0.
inline void encode(DType t, double v, uint8_t* p) {
  switch (t) {
    case DType::F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::F16: {
      uint16_t h = f16_encode(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::BF16: {
      uint16_t h = bf16_encode(float(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::Bool:
      p[0] = (v != 0 && !std::isnan(v));
      return;
    default:
      break;
  }
  int64_t i = std::isnan(v)        ? 0
              : v <= double(lo(t)) ? lo(t)
              : v >= double(hi(t)) ? hi(t)
                                   : int64_t(std::nearbyint(v));
  uint64_t u = uint64_t(i);
  std::memcpy(p, &u, size_t(size(t)));
}

inline std::vector<uint8_t> encode_all(DType t, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * size_t(size(t)));
  for (size_t i = 0; i < v.size(); ++i) encode(t, v[i], out.data() + i * size_t(size(t)));
  return out;
}

inline std::vector<double> decode_all(DType t, const std::vector<uint8_t>& b) {
  std::vector<double> out(b.size() / size_t(size(t)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = decode(t, b.data() + i * size_t(size(t)));
  return out;
}

/// Same value, or both NaN.
inline bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// Runs `body` on core 0 after writing `inputs` (L1 address -> bytes); `data`
/// is extra assembly placed in an l1 data segment at 0xF0000.
struct Run {
  tilecore::sim::Simulator sim;
  explicit Run(int cores = 1, tilecore::sim::Mode mode = tilecore::sim::Mode::FunctionalTiming)
      : sim(tilecore::sim::SimConfig{.cores = cores, .mode = mode}) {}
  void go(const std::string& data, const std::string& body,
          const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& inputs) {
    std::string text = ".core 0\n.data l1, 0xF0000\n" + data + "\n.text\n" + body + "\nhalt\n";
    sim.load(tilecore::arch::assemble(text));
    for (const auto& [addr, bytes] : inputs) sim.write(tilecore::arch::Space::L1, addr, bytes);
    sim.run();
  }
  std::vector<uint8_t> l1(uint32_t addr, size_t n) {
    return sim.read(tilecore::arch::Space::L1, addr, n);
  }
};

}  // namespace ref
