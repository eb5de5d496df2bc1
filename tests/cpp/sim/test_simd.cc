// tests/cpp/sim/test_simd.cc — SIMD and predicate instructions, lane by lane.
#include <gtest/gtest.h>

#include <random>

#include "reference.h"

using tilecore::arch::DType;
using tilecore::arch::dtype_name;

namespace {

const DType kNum[] = {DType::I8,  DType::U8,  DType::I16,  DType::U16, DType::I32,
                      DType::U32, DType::F16, DType::BF16, DType::F32};

std::vector<double> lanes_of(DType t, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> v(size_t(32 / ref::size(t)));
  for (auto& x : v) {
    if (ref::is_float(t))
      x = double(int(g() % 65) - 32) / 4.0;
    else
      x = double(ref::lo(t) + int64_t(g() % uint64_t(ref::hi(t) - ref::lo(t) + 1)));
  }
  return v;
}

/// Wraps an exact integer into the dtype (two's complement), as SIMD integer ops do.
double wrap(DType t, __int128 v) {
  int bits = ref::size(t) * 8;
  unsigned __int128 m = (unsigned __int128)v & ((((unsigned __int128)1) << bits) - 1);
  bool sign = t == DType::I8 || t == DType::I16 || t == DType::I32;
  if (sign && (m >> (bits - 1))) return double(int64_t(m) - (int64_t(1) << bits));
  return double(uint64_t(m));
}

std::string s(DType t) { return "." + std::string(dtype_name(t)); }

/// Loads va (0x1000) and vb (0x1020), runs `ops`, stores v3 to 0x2000 as dtype t.
std::vector<double> run_simd(DType t, const std::vector<double>& a, const std::vector<double>& b,
                             const std::string& ops, const std::vector<double>& init = {}) {
  ref::Run r;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> in = {{0x1000, ref::encode_all(t, a)},
                                                               {0x1020, ref::encode_all(t, b)}};
  if (!init.empty()) in.push_back({0x1040, ref::encode_all(t, init)});
  r.go("",
       "vld v1, [l1: x0 + 0x1000]\nvld v2, [l1: x0 + 0x1020]\nvld v3, [l1: x0 + 0x1040]\n" + ops +
           "\nvst" + s(t) + " v3, [l1: x0 + 0x2000]",
       in);
  return ref::decode_all(t, r.l1(0x2000, 32));
}

}  // namespace

TEST(Simd, ArithmeticEveryDtype) {
  for (const char* op : {"vadd", "vsub", "vmul", "vmin", "vmax"})
    for (DType t : kNum) {
      auto a = lanes_of(t, 1), b = lanes_of(t, 2);
      auto out = run_simd(t, a, b, std::string(op) + s(t) + " v3, v1, v2");
      for (size_t l = 0; l < a.size(); ++l) {
        std::string n = op;
        double want;
        if (ref::is_float(t)) {
          double e = n == "vadd"   ? a[l] + b[l]
                     : n == "vsub" ? a[l] - b[l]
                     : n == "vmul" ? a[l] * b[l]
                     : n == "vmin" ? std::min(a[l], b[l])
                                   : std::max(a[l], b[l]);
          uint8_t buf[4];
          ref::encode(t, e, buf);
          want = ref::decode(t, buf);
        } else {
          __int128 x = int64_t(a[l]), y = int64_t(b[l]);
          want = wrap(t, n == "vadd"   ? x + y
                         : n == "vsub" ? x - y
                         : n == "vmul" ? x * y
                         : n == "vmin" ? std::min(x, y)
                                       : std::max(x, y));
        }
        ASSERT_EQ(out[l], want) << op << s(t) << " lane " << l;
      }
    }
}

TEST(Simd, BitwiseAndSaturatingIntegers) {
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32}) {
    auto a = lanes_of(t, 3), b = lanes_of(t, 4);
    for (const char* op : {"vand", "vor", "vxor", "vadds", "vsubs"}) {
      auto out = run_simd(t, a, b, std::string(op) + s(t) + " v3, v1, v2");
      for (size_t l = 0; l < a.size(); ++l) {
        __int128 x = int64_t(a[l]), y = int64_t(b[l]);
        std::string n = op;
        uint64_t ux = uint64_t(int64_t(a[l])), uy = uint64_t(int64_t(b[l]));
        double want = n == "vand"   ? wrap(t, __int128(ux & uy))
                      : n == "vor"  ? wrap(t, __int128(ux | uy))
                      : n == "vxor" ? wrap(t, __int128(ux ^ uy))
                      : n == "vadds"
                          ? std::clamp(double(x + y), double(ref::lo(t)), double(ref::hi(t)))
                          : std::clamp(double(x - y), double(ref::lo(t)), double(ref::hi(t)));
        ASSERT_EQ(out[l], want) << op << s(t) << " lane " << l;
      }
    }
  }
}

TEST(Simd, PredicatesMaskLanesAndStores) {
  // pwhile p1 = lanes < 5; vadd under p1 keeps the old v3 in lanes >= 5; vst
  // under p1 writes only lanes < 5.
  DType t = DType::I32;
  std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {10, 20, 30, 40, 50, 60, 70, 80},
                      init = {-1, -2, -3, -4, -5, -6, -7, -8};
  auto out = run_simd(t, a, b, "li x1, 5\npwhile.i32 p1, x1\nvadd.i32 v3, v1, v2, p1", init);
  for (size_t l = 0; l < 8; ++l) EXPECT_EQ(out[l], l < 5 ? a[l] + b[l] : init[l]) << l;
  ref::Run r;
  r.go("",
       "vld v1, [l1: x0 + 0x1000]\nli x1, 3\npwhile.i32 p2, x1\npnot p3, p2\nvst.i32 v1, [l1: x0 + "
       "0x2000], p3",
       {{0x1000, ref::encode_all(t, a)}});
  auto st = ref::decode_all(t, r.l1(0x2000, 32));
  for (size_t l = 0; l < 8; ++l) EXPECT_EQ(st[l], l < 3 ? 0 : a[l]) << l;
}

TEST(Simd, CompareSelectReduceExtract) {
  DType t = DType::F32;
  std::vector<double> a = {1, -2, 3, NAN, 5, -6, 7, 8}, b = {1, 2, -3, 4, 5, 6, -7, 9};
  // vcmplt: lanes where a < b (NaN compares false); vsel picks a there, else b.
  auto sel = run_simd(t, a, b, "vcmplt.f32 p1, v1, v2\nvsel.f32 v3, v1, v2, p1");
  for (size_t l = 0; l < 8; ++l) EXPECT_TRUE(ref::same(sel[l], (a[l] < b[l]) ? a[l] : b[l])) << l;
  // vredsum over lanes where a == b (lanes 0 and 4): 1 + 5 = 6 in lane 0, zeros elsewhere.
  auto red = run_simd(t, a, b, "vcmpeq.f32 p2, v1, v2\nvredsum.f32 v3, v1, p2");
  EXPECT_EQ(red[0], 6.0);
  for (size_t l = 1; l < 8; ++l) EXPECT_EQ(red[l], 0.0);
  // Integer max/min reductions and lane extract (sign extension).
  ref::Run r;
  std::vector<double> v = {5, -100, 7, 3, -9, 100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  r.go("",
       "vld v1, [l1: x0 + 0x1000]\nvredmax.i16 v2, v1\nvredmin.i16 v3, v1\nvext.i16 x10, v2, "
       "0\nvext.i16 x11, v3, 0\nvext.i16 x12, v1, 1",
       {{0x1000, ref::encode_all(DType::I16, v)}});
  EXPECT_EQ(r.sim.xreg(0, 10), 100u);
  EXPECT_EQ(r.sim.xreg(0, 11), uint32_t(-100));
  EXPECT_EQ(r.sim.xreg(0, 12), uint32_t(-100));
}

TEST(Simd, SplatConvertAndPredicateLogic) {
  ref::Run r;
  r.go("",
       "li x1, -3\nvsplat.i16 v1, x1\nvcvt.f32.i16 v2, v1\nvst.f32 v2, [l1: x0 + 0x2000]\n"
       "li x2, 2\npwhile.i8 p1, x2\nli x3, 4\npwhile.i8 p2, x3\npxor p3, p1, p2\npand p4, p1, "
       "p2\npor p5, p1, p2\n"
       "vsplat.i8 v4, x3, p3\nvst.i8 v4, [l1: x0 + 0x2040]",
       {});
  auto f = ref::decode_all(DType::F32, r.l1(0x2000, 32));
  for (double x : f) EXPECT_EQ(x, -3.0);  // 8 lanes = min(16, 8)
  EXPECT_EQ(r.sim.preg(0, 3), 0b1100u);
  EXPECT_EQ(r.sim.preg(0, 4), 0b0011u);
  EXPECT_EQ(r.sim.preg(0, 5), 0b1111u);
  EXPECT_EQ(r.sim.preg(0, 0), 0xFFFFFFFFu);
  auto b = r.l1(0x2040, 8);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 0, 4, 4, 0, 0, 0, 0}));
}

TEST(Simd, CompareSelectReduceEveryDtype) {
  for (DType t : kNum) {
    auto a = lanes_of(t, 7), b = lanes_of(t, 8);
    b[1] = a[1];  // at least one equal lane
    size_t n = a.size();
    for (const char* op : {"vcmpeq", "vcmplt", "vcmple"}) {
      ref::Run r;
      r.go("",
           "vld v1, [l1: x0 + 0x1000]\nvld v2, [l1: x0 + 0x1020]\nli x1, " + std::to_string(n - 1) +
               "\npwhile" + s(t) + " p2, x1\n" + op + s(t) + " p1, v1, v2, p2\nvsel" + s(t) +
               " v3, v1, v2, p1\nvst" + s(t) + " v3, [l1: x0 + 0x2000]",
           {{0x1000, ref::encode_all(t, a)}, {0x1020, ref::encode_all(t, b)}});
      uint32_t want = 0;
      for (size_t l = 0; l + 1 < n; ++l) {  // the last lane is masked off by p2
        std::string o = op;
        bool bit = o == "vcmpeq" ? a[l] == b[l] : o == "vcmplt" ? a[l] < b[l] : a[l] <= b[l];
        want |= uint32_t(bit) << l;
      }
      EXPECT_EQ(r.sim.preg(0, 1), want) << op << s(t);
      auto sel = ref::decode_all(t, r.l1(0x2000, 32));
      for (size_t l = 0; l < n; ++l)
        EXPECT_EQ(sel[l], (want >> l & 1) ? a[l] : b[l]) << "vsel" << s(t) << " lane " << l;
    }
    for (const char* op : {"vredsum", "vredmax", "vredmin"}) {
      ref::Run r;
      r.go("",
           "vld v1, [l1: x0 + 0x1000]\nli x1, 3\npwhile" + s(t) + " p1, x1\npnot p2, p1\n" + op +
               s(t) + " v3, v1, p2\nvst" + s(t) + " v3, [l1: x0 + 0x2000]",
           {{0x1000, ref::encode_all(t, a)}});
      auto out = ref::decode_all(t, r.l1(0x2000, 32));
      std::string o = op;
      double want;
      if (ref::is_float(t)) {
        float acc = o == "vredsum" ? 0.0f : o == "vredmax" ? -INFINITY : INFINITY;
        for (size_t l = 3; l < n; ++l)
          acc = o == "vredsum"   ? acc + float(a[l])
                : o == "vredmax" ? std::max(acc, float(a[l]))
                                 : std::min(acc, float(a[l]));
        uint8_t buf[4];
        ref::encode(t, acc, buf);
        want = ref::decode(t, buf);
      } else {
        __int128 acc = o == "vredsum" ? 0 : o == "vredmax" ? ref::lo(t) : ref::hi(t);
        for (size_t l = 3; l < n; ++l) {
          __int128 x = int64_t(a[l]);
          acc = o == "vredsum" ? acc + x : o == "vredmax" ? std::max(acc, x) : std::min(acc, x);
        }
        want = wrap(t, acc);
      }
      EXPECT_EQ(out[0], want) << op << s(t);
      for (size_t l = 1; l < n; ++l) EXPECT_EQ(out[l], 0.0) << op << s(t);
    }
  }
}

TEST(Simd, SplatExtractConvertEveryDtype) {
  const DType all[] = {DType::I8,  DType::U8,  DType::I16,  DType::U16, DType::I32,
                       DType::U32, DType::F16, DType::BF16, DType::F32, DType::Bool};
  for (DType t : all) {
    // vsplat writes the low bits of x1 into every lane; vext reads lane 1 back.
    uint32_t x = 0x8001C0FF;
    ref::Run r;
    r.go("",
         "li x1, " + std::to_string(x) + "\nvsplat" + s(t) + " v1, x1\nvext" + s(t) +
             " x10, v1, 1\nvst" + s(t) + " v1, [l1: x0 + 0x2000]",
         {});
    auto bytes = r.l1(0x2000, 32);
    int es = ref::size(t);
    uint64_t lane_bits =
        t == DType::Bool ? 1 : (x & (es == 4 ? 0xFFFFFFFFu : (1u << (8 * es)) - 1));
    for (int l = 0; l < 32 / es; ++l) {
      uint64_t got = 0;
      std::memcpy(&got, bytes.data() + l * es, size_t(es));
      EXPECT_EQ(got, lane_bits) << "vsplat" << s(t);
    }
    uint32_t want_ext =
        ref::is_float(t) ? uint32_t(lane_bits) : uint32_t(int64_t(ref::decode(t, bytes.data())));
    EXPECT_EQ(r.sim.xreg(0, 10), want_ext) << "vext" << s(t);
  }
  // vcvt between every pair: the first min(lanes) lanes convert, the rest are zero.
  const std::vector<double> probe = {0,    1,     -1,   2.5, -3.5,     200,
                                     -200, 70000, 0.25, NAN, INFINITY, 65519};
  for (DType src : all)
    for (DType dst : all) {
      size_t ns = size_t(32 / ref::size(src)), nd = size_t(32 / ref::size(dst));
      std::vector<double> v(ns);
      for (size_t l = 0; l < ns; ++l) v[l] = probe[l % probe.size()];
      auto in = ref::encode_all(src, v);
      auto held = ref::decode_all(src, in);
      ref::Run r;
      r.go("",
           "vld v1, [l1: x0 + 0x1000]\nvcvt" + s(dst) + s(src) + " v2, v1\nvst" + s(dst) +
               " v2, [l1: x0 + 0x2000]",
           {{0x1000, in}});
      auto out = ref::decode_all(dst, r.l1(0x2000, 32));
      for (size_t l = 0; l < nd; ++l) {
        double want = 0;
        if (l < std::min(ns, nd)) {
          uint8_t buf[4];
          ref::encode(dst, held[l], buf);
          want = ref::decode(dst, buf);
        }
        ASSERT_TRUE(ref::same(out[l], want))
            << "vcvt" << s(dst) << s(src) << " lane " << l << " of " << held[l % ns];
      }
    }
}
