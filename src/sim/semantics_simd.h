// src/sim/semantics_simd.h — semantics of the SIMD and predicate instructions.
//
// Lanes: a 256-bit register holds 32 / sizeof(dtype) lanes; predicate bit i
// governs lane i; p0 reads as all lanes and ignores writes. Masked-off lanes keep
// the destination's old value. Integer arithmetic wraps (vadds/vsubs saturate);
// float arithmetic is computed exactly and rounded once to the dtype.
#pragma once

#include <cmath>
#include <cstring>

#include "semantics.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::sim {

namespace simd {

using arch::dtype_size;
using arch::is_float;

inline int lanes(DType t) { return 32 / dtype_size(t); }
inline uint32_t pred(const Core& c, unsigned p) { return p == 0 ? 0xFFFFFFFFu : c.p[p]; }
inline void set_p(Core& c, unsigned p, uint32_t v) {
  if (p != 0) c.p[p] = v;
}
inline uint32_t lane_mask(DType t) { return lanes(t) == 32 ? 0xFFFFFFFFu : (1u << lanes(t)) - 1; }

inline int64_t get_i(DType t, const uint8_t* v, int lane) {
  return arch::load_as_int(t, v + lane * dtype_size(t));
}
inline double get_f(DType t, const uint8_t* v, int lane) {
  return arch::load_as_double(t, v + lane * dtype_size(t));
}
inline void put_wrap(DType t, uint8_t* v, int lane, int64_t x) {
  uint64_t u = uint64_t(x);
  std::memcpy(v + lane * dtype_size(t), &u, size_t(dtype_size(t)));  // little-endian low bytes
}
inline void put_f(DType t, uint8_t* v, int lane, double x) {
  arch::store_from_double(t, x, v + lane * dtype_size(t));
}

/// Binary lane-wise op: IOp(int64, int64) -> int64 (stored wrapping or
/// saturating), FOp(double, double) -> double.
template <bool Saturate, typename IOp, typename FOp>
Outcome binary(Core& c, const Inst& i, IOp iop, FOp fop) {
  DType t = i.dtype();
  std::array<uint8_t, 32> a = c.v[i.b], b = c.v[i.c];
  uint8_t* d = c.v[i.a].data();
  uint32_t m = pred(c, i.d);
  if (t == DType::F32 || (t == DType::I32 && !Saturate)) {
    // The common 32-bit lanes with inline loads and stores: the same conversions as
    // get_f / put_f (f32 <-> double) and get_i / put_wrap (int32, low 32 bits).
    for (int l = 0; l < 8; ++l) {
      if (!(m >> l & 1)) continue;
      if (t == DType::F32) {
        float x, y;
        std::memcpy(&x, a.data() + 4 * l, 4);
        std::memcpy(&y, b.data() + 4 * l, 4);
        float r = float(fop(double(x), double(y)));
        std::memcpy(d + 4 * l, &r, 4);
      } else {
        int32_t x, y;
        std::memcpy(&x, a.data() + 4 * l, 4);
        std::memcpy(&y, b.data() + 4 * l, 4);
        uint32_t r = uint32_t(uint64_t(iop(int64_t(x), int64_t(y))));
        std::memcpy(d + 4 * l, &r, 4);
      }
    }
    return {};
  }
  for (int l = 0; l < lanes(t); ++l) {
    if (!(m >> l & 1)) continue;
    if (is_float(t)) {
      put_f(t, d, l, fop(get_f(t, a.data(), l), get_f(t, b.data(), l)));
    } else {
      int64_t r = iop(get_i(t, a.data(), l), get_i(t, b.data(), l));
      if (Saturate)
        arch::store_from_int(t, r, d + l * dtype_size(t));
      else
        put_wrap(t, d, l, r);
    }
  }
  return {};
}

inline double fmin_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
}
inline double fmax_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
}
inline int64_t mul_low(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

}  // namespace simd

#define TC1_SIMD_BIN(Id, Sat, iexpr, fexpr)                            \
  template <>                                                          \
  struct Semantics<Opcode::Id> {                                       \
    static Outcome exec(Machine&, Core& c, const Inst& i) {            \
      return simd::binary<Sat>(                                        \
          c, i, [](int64_t a, int64_t b) -> int64_t { return iexpr; }, \
          [](double a, double b) -> double {                           \
            (void)a;                                                   \
            (void)b;                                                   \
            return fexpr;                                              \
          });                                                          \
    }                                                                  \
  };
TC1_SIMD_BIN(Vadd, false, a + b, a + b)
TC1_SIMD_BIN(Vsub, false, a - b, a - b)
TC1_SIMD_BIN(Vmul, false, simd::mul_low(a, b), a* b)
TC1_SIMD_BIN(Vmin, false, a < b ? a : b, simd::fmin_nan(a, b))
TC1_SIMD_BIN(Vmax, false, a > b ? a : b, simd::fmax_nan(a, b))
TC1_SIMD_BIN(Vand, false, a& b, 0.0)
TC1_SIMD_BIN(Vor, false, a | b, 0.0)
TC1_SIMD_BIN(Vxor, false, a ^ b, 0.0)
TC1_SIMD_BIN(Vadds, true, a + b, 0.0)
TC1_SIMD_BIN(Vsubs, true, a - b, 0.0)
#undef TC1_SIMD_BIN

template <>
struct Semantics<Opcode::Vsplat> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    DType t = i.dtype();
    uint32_t x = c.x[i.b];
    if (t == DType::Bool) x = x != 0;
    uint32_t m = simd::pred(c, i.d);
    uint8_t* d = c.v[i.a].data();
    // The low bytes of x in each selected lane (what put_wrap stores), with a fixed-size
    // store per lane width instead of a variable-size copy.
    auto splat = [&](auto v) {
      constexpr int w = int(sizeof v);
      for (int l = 0; l < 32 / w; ++l)
        if (m >> l & 1) std::memcpy(d + l * w, &v, w);
    };
    switch (arch::dtype_size(t)) {
      case 4:
        splat(uint32_t(x));
        break;
      case 2:
        splat(uint16_t(x));
        break;
      case 1:
        splat(uint8_t(x));
        break;
      default:
        for (int l = 0; l < simd::lanes(t); ++l)
          if (m >> l & 1) simd::put_wrap(t, d, l, int64_t(x));
    }
    return {};
  }
};

template <>
struct Semantics<Opcode::Vld> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) {
    Space sp = Space(i.c);
    uint64_t addr = uint32_t(c.x[i.b] + uint32_t(i.imm));
    const uint8_t* p = m.access(c, sp, addr, 32, 32, false);
    std::memcpy(c.v[i.a].data(), p, 32);
    return {Outcome::Next, 0, arch::cost::front_end(arch::CostClass::SimdMem, sp), 0};
  }
};

template <>
struct Semantics<Opcode::Vst> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) {
    Space sp = Space(i.c);
    DType t = i.dtype();
    uint64_t addr = uint32_t(c.x[i.b] + uint32_t(i.imm));
    uint32_t mask = simd::pred(c, i.d);
    int es = arch::dtype_size(t);
    // The bytes of the first to the last active lane are what the store writes.
    uint32_t active = mask & simd::lane_mask(t);
    uint64_t lo = 0, len = 0;
    if (active != 0) {
      int first = __builtin_ctz(active), last = 31 - __builtin_clz(active);
      lo = uint64_t(first) * uint64_t(es);
      len = uint64_t(last - first + 1) * uint64_t(es);
    }
    uint8_t* p = m.access(c, sp, addr, 32, 32, true, lo, len);
    for (int l = 0; l < simd::lanes(t); ++l)
      if (mask >> l & 1) std::memcpy(p + l * es, c.v[i.a].data() + l * es, size_t(es));
    return {Outcome::Next, 0, arch::cost::front_end(arch::CostClass::SimdMem, sp), 0};
  }
};

#define TC1_SIMD_CMP(Id, iexpr, fexpr)                                                            \
  template <>                                                                                     \
  struct Semantics<Opcode::Id> {                                                                  \
    static Outcome exec(Machine&, Core& c, const Inst& i) {                                       \
      DType t = i.dtype();                                                                        \
      uint32_t m = simd::pred(c, i.d), r = 0;                                                     \
      for (int l = 0; l < simd::lanes(t); ++l) {                                                  \
        if (!(m >> l & 1)) continue;                                                              \
        bool bit;                                                                                 \
        if (arch::is_float(t)) {                                                                  \
          double a = simd::get_f(t, c.v[i.b].data(), l), b = simd::get_f(t, c.v[i.c].data(), l);  \
          bit = fexpr;                                                                            \
        } else {                                                                                  \
          int64_t a = simd::get_i(t, c.v[i.b].data(), l), b = simd::get_i(t, c.v[i.c].data(), l); \
          bit = iexpr;                                                                            \
        }                                                                                         \
        r |= uint32_t(bit) << l;                                                                  \
      }                                                                                           \
      simd::set_p(c, i.a, r);                                                                     \
      return {};                                                                                  \
    }                                                                                             \
  };
TC1_SIMD_CMP(Vcmpeq, a == b, a == b)
TC1_SIMD_CMP(Vcmplt, a < b, a < b)
TC1_SIMD_CMP(Vcmple, a <= b, a <= b)
#undef TC1_SIMD_CMP

template <>
struct Semantics<Opcode::Vsel> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    DType t = i.dtype();
    int es = arch::dtype_size(t);
    std::array<uint8_t, 32> a = c.v[i.b], b = c.v[i.c];
    uint32_t m = simd::pred(c, i.d);
    for (int l = 0; l < simd::lanes(t); ++l)
      std::memcpy(c.v[i.a].data() + l * es, ((m >> l & 1) ? a : b).data() + l * es, size_t(es));
    return {};
  }
};

/// Reductions: lane 0 of vd gets the result, every other lane 0. Float sums
/// accumulate in f32 in lane order; integer sums wrap.
template <int Kind>  // 0 sum, 1 max, 2 min
Outcome simd_reduce(Core& c, const Inst& i) {
  DType t = i.dtype();
  uint32_t m = simd::pred(c, i.d);
  std::array<uint8_t, 32> a = c.v[i.b];
  std::array<uint8_t, 32> out{};
  if (arch::is_float(t)) {
    float acc = Kind == 0 ? 0.0f : Kind == 1 ? -INFINITY : INFINITY;
    for (int l = 0; l < simd::lanes(t); ++l) {
      if (!(m >> l & 1)) continue;
      float x = float(simd::get_f(t, a.data(), l));
      if (Kind == 0)
        acc = acc + x;
      else if (std::isnan(x) || std::isnan(acc))
        acc = NAN;
      else
        acc = Kind == 1 ? std::max(acc, x) : std::min(acc, x);
    }
    simd::put_f(t, out.data(), 0, acc);
  } else {
    int64_t acc = Kind == 0 ? 0 : Kind == 1 ? arch::int_min(t) : arch::int_max(t);
    for (int l = 0; l < simd::lanes(t); ++l) {
      if (!(m >> l & 1)) continue;
      int64_t x = simd::get_i(t, a.data(), l);
      acc = Kind == 0 ? acc + x : Kind == 1 ? std::max(acc, x) : std::min(acc, x);
    }
    simd::put_wrap(t, out.data(), 0, acc);
  }
  c.v[i.a] = out;
  return {};
}
template <>
struct Semantics<Opcode::Vredsum> {
  static Outcome exec(Machine&, Core& c, const Inst& i) { return simd_reduce<0>(c, i); }
};
template <>
struct Semantics<Opcode::Vredmax> {
  static Outcome exec(Machine&, Core& c, const Inst& i) { return simd_reduce<1>(c, i); }
};
template <>
struct Semantics<Opcode::Vredmin> {
  static Outcome exec(Machine&, Core& c, const Inst& i) { return simd_reduce<2>(c, i); }
};

template <>
struct Semantics<Opcode::Vext> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    DType t = i.dtype();
    const uint8_t* p = c.v[i.b].data() + i.imm * arch::dtype_size(t);
    uint32_t x;
    if (arch::is_float(t)) {
      x = 0;
      std::memcpy(&x, p, size_t(arch::dtype_size(t)));
    } else {
      x = uint32_t(arch::load_as_int(t, p));
    }
    set_x(c, i.a, x);
    return {};
  }
};

template <>
struct Semantics<Opcode::Vcvt> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    DType dt = i.dtype(), st = i.src_dtype();
    int n = std::min(simd::lanes(dt), simd::lanes(st));
    std::array<uint8_t, 32> a = c.v[i.b], out{};
    for (int l = 0; l < n; ++l)
      arch::convert_element(dt, out.data() + l * arch::dtype_size(dt), st,
                            a.data() + l * arch::dtype_size(st));
    c.v[i.a] = out;
    return {};
  }
};

template <>
struct Semantics<Opcode::Pwhile> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    uint32_t n = std::min<uint32_t>(c.x[i.b], uint32_t(simd::lanes(i.dtype())));
    simd::set_p(c, i.a, n >= 32 ? 0xFFFFFFFFu : (1u << n) - 1);
    return {};
  }
};
template <>
struct Semantics<Opcode::Pand> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    simd::set_p(c, i.a, simd::pred(c, i.b) & simd::pred(c, i.c));
    return {};
  }
};
template <>
struct Semantics<Opcode::Por> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    simd::set_p(c, i.a, simd::pred(c, i.b) | simd::pred(c, i.c));
    return {};
  }
};
template <>
struct Semantics<Opcode::Pxor> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    simd::set_p(c, i.a, simd::pred(c, i.b) ^ simd::pred(c, i.c));
    return {};
  }
};
template <>
struct Semantics<Opcode::Pnot> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    simd::set_p(c, i.a, ~simd::pred(c, i.b));
    return {};
  }
};

}  // namespace tilecore::sim
