// tests/cpp/sim/test_vector_engine.cc — every vector-engine command x dtype
// against reference loops written here (reference.h), plus its cost formula.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "reference.h"

using tilecore::arch::DType;
using tilecore::arch::dtype_name;

namespace {

constexpr uint32_t kD = 0x0, kA = 0x10000, kB = 0x20000;  // different banks: no conflict

const DType kAllNum[] = {DType::I8,  DType::U8,  DType::I16,  DType::U16, DType::I32,
                         DType::U32, DType::F16, DType::BF16, DType::F32};
const DType kFloats[] = {DType::F16, DType::BF16, DType::F32};

std::vector<double> random_values(DType t, size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> v(n);
  for (auto& x : v) {
    if (ref::is_float(t))
      x = double(int(g() % 129) - 64) / 8.0;  // exact in every float type
    else
      x = double(ref::lo(t) + int64_t(g() % uint64_t(ref::hi(t) - ref::lo(t) + 1)));
  }
  return v;
}

std::string sfx(DType t) { return "." + std::string(dtype_name(t)); }

double sat(DType t, __int128 v) {
  if (v < ref::lo(t)) return double(ref::lo(t));
  if (v > ref::hi(t)) return double(ref::hi(t));
  return double(int64_t(v));
}

}  // namespace

TEST(VectorEngine, BinaryOpsEveryDtypeWithBroadcast) {
  struct Op {
    const char* name;
    bool float_only;
  };
  const Op ops[] = {{"tadd", false}, {"tsub", false}, {"tmul", false},
                    {"tmax", false}, {"tmin", false}, {"tdiv", true}};
  const int R = 3, C = 16;
  for (const Op& op : ops)
    for (DType t : kAllNum) {
      if (op.float_only && !ref::is_float(t)) continue;
      auto a = random_values(t, R * C, 11), b = random_values(t, C, 12);  // b broadcast over rows
      if (std::string(op.name) == "tdiv") b[0] = 0.0;                     // x / 0 = ±Inf or NaN
      ref::Run r;
      r.go("d: .vecdesc shape=[3, 16] b_stride=[0, 1]",
           "li x1, 0\nli x2, 0x10000\nli x3, 0x20000\n" + std::string(op.name) + sfx(t) +
               " x1, x2, x3, [x0 + d]\nwait sc, vec, 1",
           {{kA, ref::encode_all(t, a)}, {kB, ref::encode_all(t, b)}});
      auto out = ref::decode_all(t, r.l1(kD, size_t(R * C * ref::size(t))));
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
          double x = a[size_t(i * C + j)], y = b[size_t(j)], want;
          std::string n = op.name;
          if (ref::is_float(t)) {
            double e = n == "tadd"   ? x + y
                       : n == "tsub" ? x - y
                       : n == "tmul" ? x * y
                       : n == "tmax" ? std::max(x, y)
                       : n == "tmin" ? std::min(x, y)
                                     : x / y;
            uint8_t buf[4];
            ref::encode(t, e, buf);
            want = ref::decode(t, buf);
          } else {
            __int128 xi = __int128(int64_t(x)), yi = __int128(int64_t(y));
            __int128 e = n == "tadd"   ? xi + yi
                         : n == "tsub" ? xi - yi
                         : n == "tmul" ? xi * yi
                         : n == "tmax" ? std::max(xi, yi)
                                       : std::min(xi, yi);
            want = sat(t, e);
          }
          ASSERT_TRUE(ref::same(out[size_t(i * C + j)], want))
              << op.name << sfx(t) << " [" << i << "," << j << "] " << x << " , " << y << " -> "
              << out[size_t(i * C + j)] << " want " << want;
        }
    }
}

TEST(VectorEngine, ScalarOpsEveryDtype) {
  const char* ops[] = {"tadds", "tmuls", "tmaxs", "tmins"};
  for (const char* op : ops)
    for (DType t : kAllNum) {
      auto a = random_values(t, 32, 21);
      double s = ref::is_float(t) ? -1.5 : 3.0;
      ref::Run r;
      r.go("d: .vecdesc shape=[32] scalar=" + std::to_string(s),
           "li x1, 0\nli x2, 0x10000\n" + std::string(op) + sfx(t) +
               " x1, x2, [x0 + d]\nwait sc, vec, 1",
           {{kA, ref::encode_all(t, a)}});
      auto out = ref::decode_all(t, r.l1(kD, size_t(32 * ref::size(t))));
      for (int i = 0; i < 32; ++i) {
        std::string n = op;
        double x = a[size_t(i)];
        double e = n == "tadds"   ? x + s
                   : n == "tmuls" ? x * s
                   : n == "tmaxs" ? std::max(x, s)
                                  : std::min(x, s);
        double want;
        if (ref::is_float(t)) {
          uint8_t buf[4];
          ref::encode(t, e, buf);
          want = ref::decode(t, buf);
        } else {
          want = sat(t, __int128(int64_t(e)));
        }
        ASSERT_TRUE(ref::same(out[size_t(i)], want)) << op << sfx(t) << " lane " << i;
      }
    }
}

TEST(VectorEngine, UnaryMathFloatTypes) {
  struct U {
    const char* name;
    std::function<double(double)> f;
  };
  const U ops[] = {{"texp", [](double x) { return std::exp(x); }},
                   {"tlog", [](double x) { return std::log(x); }},
                   {"trecip", [](double x) { return 1.0 / x; }},
                   {"tsqrt", [](double x) { return std::sqrt(x); }},
                   {"trsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
                   {"ttanh", [](double x) { return std::tanh(x); }},
                   {"tsigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
                   {"trelu", [](double x) { return std::isnan(x) ? x : std::max(x, 0.0); }}};
  for (const U& op : ops)
    for (DType t : kFloats) {
      auto a = random_values(t, 16, 31);
      a[0] = 0.0;   // log 0 = -inf, 1/0 = inf
      a[1] = -1.0;  // log, sqrt of negative = NaN
      ref::Run r;
      r.go("d: .vecdesc shape=[16]",
           "li x1, 0\nli x2, 0x10000\n" + std::string(op.name) + sfx(t) +
               " x1, x2, [x0 + d]\nwait sc, vec, 1",
           {{kA, ref::encode_all(t, a)}});
      auto out = ref::decode_all(t, r.l1(kD, size_t(16 * ref::size(t))));
      for (int i = 0; i < 16; ++i) {
        uint8_t buf[4];
        ref::encode(t, op.f(a[size_t(i)]), buf);
        ASSERT_TRUE(ref::same(out[size_t(i)], ref::decode(t, buf)))
            << op.name << sfx(t) << " of " << a[size_t(i)];
      }
    }
}

TEST(VectorEngine, ReluIntegers) {
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::U8}) {
    auto a = random_values(t, 32, 41);
    ref::Run r;
    r.go("d: .vecdesc shape=[32]",
         "li x1, 0\nli x2, 0x10000\ntrelu" + sfx(t) + " x1, x2, [x0 + d]\nwait sc, vec, 1",
         {{kA, ref::encode_all(t, a)}});
    auto out = ref::decode_all(t, r.l1(kD, size_t(32 * ref::size(t))));
    for (int i = 0; i < 32; ++i) EXPECT_EQ(out[size_t(i)], std::max(a[size_t(i)], 0.0));
  }
}

TEST(VectorEngine, ConvertEveryPair) {
  const DType all[] = {DType::I8,  DType::U8,  DType::I16,  DType::U16, DType::I32,
                       DType::U32, DType::F16, DType::BF16, DType::F32, DType::Bool};
  // Source values chosen to hit rounding ties, saturation, NaN and infinities.
  const std::vector<double> probe = {
      0.0,     1.0,      -1.0,    2.5,  -2.5,  3.5, 127.0,     128.0, -129.0,   255.0,     256.0,
      40000.0, -40000.0, 70000.0, 1e10, -1e10, 0.1, 1.0 / 3.0, NAN,   INFINITY, -INFINITY, 65519.0};
  for (DType src : all)
    for (DType dst : all) {
      // Represent the probes in the source type first (what the source holds).
      std::vector<uint8_t> in = ref::encode_all(src, probe);
      std::vector<double> held = ref::decode_all(src, in);
      ref::Run r;
      r.go("d: .vecdesc shape=[" + std::to_string(probe.size()) + "]",
           "li x1, 0\nli x2, 0x10000\ntcvt" + sfx(dst) + sfx(src) +
               " x1, x2, [x0 + d]\nwait sc, vec, 1",
           {{kA, in}});
      auto out = ref::decode_all(dst, r.l1(kD, probe.size() * size_t(ref::size(dst))));
      for (size_t i = 0; i < probe.size(); ++i) {
        uint8_t buf[4];
        ref::encode(dst, held[i], buf);
        ASSERT_TRUE(ref::same(out[i], ref::decode(dst, buf)))
            << "tcvt." << dtype_name(dst) << "." << dtype_name(src) << " of " << held[i] << " gave "
            << out[i];
      }
    }
}

TEST(VectorEngine, RequantizeInt32) {
  std::vector<double> a = {
      0, 1, 2, 3, -3, 255, 256, -256, 1000, -1000, 2147483647.0, -2147483648.0, 5, 7, -5, -7};
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32}) {
    ref::Run r;
    r.go("d: .vecdesc shape=[16] scale=0.5 zp=3",
         "li x1, 0\nli x2, 0x10000\ntrequant" + sfx(t) + ".i32 x1, x2, [x0 + d]\nwait sc, vec, 1",
         {{kA, ref::encode_all(DType::I32, a)}});
    auto out = ref::decode_all(t, r.l1(kD, 16 * size_t(ref::size(t))));
    for (size_t i = 0; i < a.size(); ++i) {
      float prod = float(a[i]) * 0.5f;  // f32 product, then round half to even, then + zp, saturate
      double want = sat(t, __int128(int64_t(std::nearbyint(double(prod)))) + 3);
      EXPECT_EQ(out[i], want) << "trequant" << sfx(t) << " of " << a[i];
    }
  }
}

TEST(VectorEngine, ReductionsOverInnermostAxis) {
  const int R = 4, C = 24;
  for (const char* op : {"tredsum", "tredmax", "tredmin"})
    for (DType t : kAllNum) {
      auto a = random_values(t, R * C, 51);
      ref::Run r;
      r.go("d: .vecdesc shape=[4, 24] d_stride=[1, 0]",
           "li x1, 0\nli x2, 0x10000\n" + std::string(op) + sfx(t) +
               " x1, x2, [x0 + d]\nwait sc, vec, 1",
           {{kA, ref::encode_all(t, a)}});
      auto out = ref::decode_all(t, r.l1(kD, size_t(R * ref::size(t))));
      for (int i = 0; i < R; ++i) {
        double want;
        std::string n = op;
        if (ref::is_float(t)) {
          float acc = n == "tredsum" ? 0.0f : n == "tredmax" ? -INFINITY : INFINITY;
          for (int j = 0; j < C; ++j) {
            float x = float(a[size_t(i * C + j)]);
            acc = n == "tredsum" ? acc + x : n == "tredmax" ? std::max(acc, x) : std::min(acc, x);
          }
          uint8_t buf[4];
          ref::encode(t, acc, buf);
          want = ref::decode(t, buf);
        } else {
          __int128 acc = n == "tredsum" ? 0 : n == "tredmax" ? ref::lo(t) : ref::hi(t);
          for (int j = 0; j < C; ++j) {
            __int128 x = int64_t(a[size_t(i * C + j)]);
            acc = n == "tredsum" ? acc + x : n == "tredmax" ? std::max(acc, x) : std::min(acc, x);
          }
          want = sat(t, acc);
        }
        ASSERT_TRUE(ref::same(out[size_t(i)], want)) << op << sfx(t) << " row " << i;
      }
    }
}

TEST(VectorEngine, LookupTable) {
  std::vector<double> idx = {0, 1, 2, 255, 128, 7, 7, 200};
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32, DType::F16,
                  DType::BF16, DType::F32, DType::Bool}) {
    // Table entries representable in every type: 0/1 for bool, else small integers.
    std::vector<double> table(256);
    for (int i = 0; i < 256; ++i)
      table[size_t(i)] = t == DType::Bool ? double(i % 2) : double(i % 100);
    ref::Run r;
    r.go("d: .vecdesc shape=[8]",
         "li x1, 0\nli x2, 0x10000\nli x3, 0x20000\ntlut" + sfx(t) +
             " x1, x2, x3, [x0 + d]\nwait sc, vec, 1",
         {{kA, ref::encode_all(DType::U8, idx)}, {kB, ref::encode_all(t, table)}});
    auto out = ref::decode_all(t, r.l1(kD, 8 * size_t(ref::size(t))));
    for (size_t i = 0; i < idx.size(); ++i)
      EXPECT_EQ(out[i], table[size_t(idx[i])]) << "tlut" << sfx(t);
  }
}

TEST(VectorEngine, CyclesFollowTheCostFormula) {
  // 3 x li (3 cycles), issue at t = 3 (1 cycle); engine: 8 + ceil(4096 / (256 / 4)) = 72
  // -> ends at 75; wait sc stalls until 75 and costs 1 (t = 76); halt -> 77.
  ref::Run r;
  r.go("d: .vecdesc shape=[64, 64]",
       "li x1, 0\nli x2, 0x10000\nli x3, 0x20000\ntadd.f32 x1, x2, x3, [x0 + d]\nwait sc, vec, 1",
       {});
  EXPECT_EQ(r.sim.stats().cycles, 77u);
  EXPECT_EQ(r.sim.stats().cores[0].agents[4].busy, 72u);
  // Same-bank sources double the streaming part: 8 + 2 * 64 = 136 -> 141.
  ref::Run c;
  c.go("d: .vecdesc shape=[64, 64]",
       "li x1, 0\nli x2, 0x10000\nli x3, 0x14000\ntadd.f32 x1, x2, x3, [x0 + d]\nwait sc, vec, 1",
       {});
  EXPECT_EQ(c.sim.stats().cycles, 141u);
  // Transcendentals run at a quarter rate: texp.f16 of 4096: 8 + 4 * ceil(4096 / 128) = 136 -> 140
  // (2 li + issue = 3 cycles, ends at 2 + 136 = 138, wait -> 139, halt -> 140).
  ref::Run e;
  e.go("d: .vecdesc shape=[4096]",
       "li x1, 0\nli x2, 0x10000\ntexp.f16 x1, x2, [x0 + d]\nwait sc, vec, 1", {});
  EXPECT_EQ(e.sim.stats().cycles, 140u);
}
