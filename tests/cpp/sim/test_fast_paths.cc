// tests/cpp/sim/test_fast_paths.cc — the engines' fast paths (unit-stride f32 rows,
// sources read in place, padded same-dtype DMA rows as one copy) against reference
// loops written here, on odd shapes and strides that also take the generic paths:
// both must give the element-by-element result of the specification.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "reference.h"

using tilecore::arch::DType;

namespace {

std::vector<double> random_f32(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = double(int(g() % 2001) - 1000) / 37.0;  // rounded to f32 by encode
  v[n / 3] = NAN;
  v[n / 2] = 0.0;
  return v;
}

double round_f32(double x) {
  uint8_t b[4];
  ref::encode(DType::F32, x, b);
  return ref::decode(DType::F32, b);
}

std::string list(const std::array<int, 3>& s) {
  return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) +
         "]";
}

TEST(FastPaths, QuantiseIntoColumnsAgreesWithReference) {
  // tcvt.i8.f32 and tquant.i8.f32 (a transposed product quantised into its rows) whose
  // destination is written down its columns, against the reference conversion; and a
  // destination walk that writes an element twice keeps its order (the later write stays)
  const int rows = 37, cols = 21;  // [rows, cols] source rows -> [cols, rows] destination
  std::vector<double> src = random_f32(size_t(rows * cols), 7);
  for (double& x : src) x *= 5.0;  // past the int8 range too
  src[5] = 127.5, src[6] = -128.5, src[7] = 0.5, src[8] = INFINITY;
  const std::vector<uint8_t> in = ref::encode_all(DType::F32, src);
  const std::vector<double> held = ref::decode_all(DType::F32, in);
  const float scale = 0.75f;
  const int zp = -3;
  for (bool quant : {false, true}) {
    ref::Run r;
    r.go("d: .vecdesc shape=[" + std::to_string(rows) + ", " + std::to_string(cols) +
             "] d_stride=[1, " + std::to_string(rows) + "] a_stride=[" + std::to_string(cols) +
             ", 1] scale=" + std::to_string(scale) + " zp=" + std::to_string(zp),
         "li x1, 0x30000\nli x2, 0x10000\n" + std::string(quant ? "tquant" : "tcvt") +
             ".i8.f32 x1, x2, [x0 + d]\nwait sc, vec, 1",
         {{0x10000, in}});
    auto out = ref::decode_all(DType::I8, r.l1(0x30000, uint32_t(rows * cols)));
    for (int i = 0; i < rows; ++i)
      for (int k = 0; k < cols; ++k) {
        double x = held[size_t(i * cols + k)];
        if (quant) x = round_f32(round_f32(x * double(scale)) + zp);
        uint8_t want[1];
        ref::encode(DType::I8, x, want);
        ASSERT_TRUE(ref::same(out[size_t(k * rows + i)], ref::decode(DType::I8, want)))
            << (quant ? "tquant" : "tcvt") << " [" << i << "," << k << "] of " << x;
      }
  }
  // shape [3, 2], d_stride [1, 2]: element (2, 0) rewrites what (0, 1) wrote (walked
  // down the columns instead, (0, 1) would come last)
  ref::Run r;
  r.go("d: .vecdesc shape=[3, 2] d_stride=[1, 2] a_stride=[2, 1]",
       "li x1, 0x30000\nli x2, 0x10000\ntcvt.i8.f32 x1, x2, [x0 + d]\nwait sc, vec, 1",
       {{0x10000, ref::encode_all(DType::F32, {1, 2, 3, 4, 5, 6})}});
  EXPECT_EQ(ref::decode_all(DType::I8, r.l1(0x30000, 5)), (std::vector<double>{1, 3, 5, 4, 6}));
}

struct Layout {
  const char* what;
  std::array<int, 3> d, a, b;
  bool in_place;  // destination at a's address (the sources overlap it)
};

}  // namespace

namespace {
// Every f32 binary and scalar op over `shape` in each layout (sources of `elems` and
// `b_elems` values) against the specification's element-by-element result.
void CheckVectorF32(const std::array<int, 3>& shape, const std::vector<Layout>& layouts,
                    size_t elems, size_t b_elems) {
  const char* ops[] = {"tadd", "tsub",  "tmul",  "tdiv",  "tmax",
                       "tmin", "tadds", "tmuls", "tmaxs", "tmins"};
  const uint32_t kA = 0x10000, kB = 0x20000, kD = 0x30000;
  const double s = -1.75;
  for (const Layout& l : layouts)
    for (const char* op : ops) {
      std::string n = op;
      bool scalar = n.back() == 's';
      auto a = random_f32(elems, 5), b = random_f32(b_elems, 6);
      uint32_t dst = l.in_place ? kA : kD;
      std::string desc = "d: .vecdesc shape=" + list(shape) + " d_stride=" + list(l.d) +
                         " a_stride=" + list(l.a) + " b_stride=" + list(l.b) +
                         " scalar=" + std::to_string(s);
      std::string body = "li x1, " + std::to_string(dst) + "\nli x2, " + std::to_string(kA) +
                         "\nli x3, " + std::to_string(kB) + "\n" + n + ".f32 x1, x2, " +
                         (scalar ? "" : "x3, ") + "[x0 + d]\nwait sc, vec, 1";
      ref::Run r;
      r.go(desc, body,
           {{kA, ref::encode_all(DType::F32, a)}, {kB, ref::encode_all(DType::F32, b)}});
      auto out = ref::decode_all(DType::F32, r.l1(dst, uint32_t(elems * 4)));
      for (int i = 0; i < shape[0]; ++i)
        for (int j = 0; j < shape[1]; ++j)
          for (int k = 0; k < shape[2]; ++k) {
            double x = round_f32(a[size_t(i * l.a[0] + j * l.a[1] + k * l.a[2])]);
            double y = scalar ? s : round_f32(b[size_t(i * l.b[0] + j * l.b[1] + k * l.b[2])]);
            std::string base = scalar ? n.substr(0, n.size() - 1) : n;
            double e = base == "tadd"                   ? x + y
                       : base == "tsub"                 ? x - y
                       : base == "tmul"                 ? x * y
                       : base == "tdiv"                 ? x / y
                       : std::isnan(x) || std::isnan(y) ? NAN
                       : base == "tmax"                 ? std::max(x, y)
                                                        : std::min(x, y);
            double got = out[size_t(i * l.d[0] + j * l.d[1] + k * l.d[2])];
            ASSERT_TRUE(ref::same(got, round_f32(e)))
                << op << " " << l.what << " [" << i << "," << j << "," << k << "] " << x << ", "
                << y << " -> " << got;
          }
    }
}
}  // namespace

namespace {
// Layouts of a [3, 5, 7] walk over sources of 210 and 105 elements: the fast paths' (unit
// strides, broadcasts, in place) and the generic ones' (strides, partial overlap).
const std::vector<Layout> kOddShapeLayouts = {
    {"contiguous", {35, 7, 1}, {35, 7, 1}, {35, 7, 1}, false},
    {"b broadcast along rows", {35, 7, 1}, {35, 7, 1}, {5, 1, 0}, false},
    {"a strided", {35, 7, 1}, {70, 14, 2}, {0, 7, 1}, false},
    {"destination strided", {70, 14, 2}, {35, 7, 1}, {35, 7, 1}, false},
    {"in place", {35, 7, 1}, {35, 7, 1}, {35, 7, 1}, true},
    {"in place, b broadcast", {35, 7, 1}, {35, 7, 1}, {0, 0, 0}, true},
    {"in place, strided", {70, 14, 2}, {70, 14, 2}, {35, 7, 1}, true},
    {"in place, a shifted", {35, 7, 1}, {35, 7, 2}, {35, 7, 1}, true},
};
}  // namespace

TEST(FastPaths, VectorF32AgreesWithReferenceOnOddShapesAndStrides) {
  CheckVectorF32({3, 5, 7}, kOddShapeLayouts, 210, 105);
}

// Rows longer than a vector with a remainder (37 = 2 x 16 + 5), as the widest path takes them
// (a's rows also of stride 2: a stride-2 Conv's taps).
TEST(FastPaths, VectorF32LongRowsWithARemainder) {
  CheckVectorF32({2, 3, 37},
                 {{"contiguous", {111, 37, 1}, {111, 37, 1}, {111, 37, 1}, false},
                  {"b broadcast along rows", {111, 37, 1}, {111, 37, 1}, {3, 1, 0}, false},
                  {"in place", {111, 37, 1}, {111, 37, 1}, {111, 37, 1}, true},
                  {"a strided by 2", {111, 37, 1}, {222, 74, 2}, {111, 37, 1}, false},
                  {"a strided by 2, b broadcast", {111, 37, 1}, {222, 74, 2}, {3, 1, 0}, false}},
                 444, 222);
}

namespace {
// int8 values with every extreme pair among them (127 + 127, -128 - 127, -128 x -128, ...)
std::vector<double> random_i8(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  const double edges[] = {-128, -127, -1, 0, 1, 126, 127};
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? edges[g() % 7] : double(int(g() % 256) - 128);
  return v;
}

double sat_i8(int64_t v) { return double(std::clamp<int64_t>(v, -128, 127)); }
}  // namespace

// int8 element-wise commands (typed loops) in every layout the f32 ones take: sums,
// differences and products saturate as a store does.
TEST(FastPaths, VectorInt8SaturatesOnOddShapesAndStrides) {
  const std::array<int, 3> shape{3, 5, 7};
  const uint32_t kA = 0x10000, kB = 0x20000, kD = 0x30000;
  const size_t elems = 210, b_elems = 105;
  for (const Layout& l : kOddShapeLayouts)
    for (std::string op : {"tadd", "tsub", "tmul", "tmax", "tmin"}) {
      auto a = random_i8(elems, 7), b = random_i8(b_elems, 8);
      const uint32_t dst = l.in_place ? kA : kD;
      ref::Run r;
      r.go("d: .vecdesc shape=" + list(shape) + " d_stride=" + list(l.d) +
               " a_stride=" + list(l.a) + " b_stride=" + list(l.b),
           "li x1, " + std::to_string(dst) + "\nli x2, " + std::to_string(kA) + "\nli x3, " +
               std::to_string(kB) + "\n" + op + ".i8 x1, x2, x3, [x0 + d]\nwait sc, vec, 1",
           {{kA, ref::encode_all(DType::I8, a)}, {kB, ref::encode_all(DType::I8, b)}});
      auto out = ref::decode_all(DType::I8, r.l1(dst, uint32_t(elems)));
      for (int i = 0; i < shape[0]; ++i)
        for (int j = 0; j < shape[1]; ++j)
          for (int k = 0; k < shape[2]; ++k) {
            const auto x = int64_t(a[size_t(i * l.a[0] + j * l.a[1] + k * l.a[2])]);
            const auto y = int64_t(b[size_t(i * l.b[0] + j * l.b[1] + k * l.b[2])]);
            const double want = op == "tadd"   ? sat_i8(x + y)
                                : op == "tsub" ? sat_i8(x - y)
                                : op == "tmul" ? sat_i8(x * y)
                                : op == "tmax" ? double(std::max(x, y))
                                               : double(std::min(x, y));
            const double got = out[size_t(i * l.d[0] + j * l.d[1] + k * l.d[2])];
            ASSERT_EQ(got, want) << op << ".i8 " << l.what << " [" << i << "," << j << "," << k
                                 << "] " << x << ", " << y;
          }
    }
}

// int8 reductions over a strided innermost axis (a max pool's taps), the sums saturating
// both ways at the store.
TEST(FastPaths, ReduceInt8OverStridedRows) {
  const uint32_t kA = 0x10000, kD = 0x30000;
  const int rows = 4, n = 9;
  std::vector<double> a = random_i8(size_t(rows * n * 2), 9);
  for (int k = 0; k < n; ++k) a[size_t(2 * k)] = 127, a[size_t(2 * n + 2 * k)] = -128;  // rows 0, 1
  for (std::string op : {"tredsum", "tredmax", "tredmin"}) {
    ref::Run r;
    r.go("d: .vecdesc shape=[4, 9] d_stride=[1, 0] a_stride=[18, 2]",
         "li x1, " + std::to_string(kD) + "\nli x2, " + std::to_string(kA) + "\n" + op +
             ".i8 x1, x2, [x0 + d]\nwait sc, vec, 1",
         {{kA, ref::encode_all(DType::I8, a)}});
    auto out = ref::decode_all(DType::I8, r.l1(kD, uint32_t(rows)));
    for (int i = 0; i < rows; ++i) {
      int64_t acc = op == "tredsum" ? 0 : op == "tredmax" ? -128 : 127;
      for (int k = 0; k < n; ++k) {
        const auto x = int64_t(a[size_t(i * 2 * n + 2 * k)]);
        acc = op == "tredsum" ? acc + x : op == "tredmax" ? std::max(acc, x) : std::min(acc, x);
      }
      ASSERT_EQ(out[size_t(i)], sat_i8(acc)) << op << ".i8 row " << i;
    }
  }
}

TEST(FastPaths, PaddedDmaRowsAgreeWithReference) {
  // dst[i][j] = src[i - lo0][j - lo1] inside the window, else the fill value; unit and
  // non-unit innermost strides (one copy per row, or element by element), f32, i16 and u8.
  struct Case {
    DType t;
    std::array<int, 2> shape, lo, hi, ss, ds;
  };
  const Case cases[] = {
      {DType::F32, {4, 7}, {1, 2}, {0, 1}, {4, 1}, {7, 1}},
      {DType::F32, {4, 7}, {1, 2}, {0, 1}, {9, 2}, {7, 1}},
      {DType::F32, {5, 6}, {0, 0}, {2, 3}, {3, 1}, {16, 2}},
      {DType::I16, {3, 9}, {2, 4}, {0, 0}, {5, 1}, {9, 1}},
      {DType::I16, {3, 9}, {0, 1}, {1, 5}, {3, 1}, {9, 1}},
      {DType::U8, {3, 9}, {1, 2}, {1, 3}, {5, 1}, {9, 1}},
      {DType::U8, {4, 5}, {2, 1}, {0, 1}, {3, 1}, {11, 2}},
  };
  const double fill = 7.0;
  for (const Case& c : cases) {
    int es = ref::size(c.t);
    std::vector<double> src(64);
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = double(int(i * 37 % 101) - (c.t == DType::U8 ? 0 : 50));
    auto l2 = [](const std::array<int, 2>& v) {
      return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
    };
    std::string desc = "d: .dmadesc dtype=" + std::string(tilecore::arch::dtype_name(c.t)) +
                       " shape=" + l2(c.shape) + " pad_lo=" + l2(c.lo) + " pad_hi=" + l2(c.hi) +
                       " src_stride=" + l2(c.ss) + " dst_stride=" + l2(c.ds) + " fill=7";
    ref::Run r;
    std::vector<double> sentinel(256, 99.0);
    r.go(desc, "li x1, 0x2000\nli x2, 0x1000\ndma.in l1:x1, l1:x2, [x0 + d]\nwait sc, din, 1",
         {{0x2000, ref::encode_all(c.t, sentinel)}, {0x1000, ref::encode_all(c.t, src)}});
    auto out = ref::decode_all(c.t, r.l1(0x2000, size_t(256 * es)));
    int win0 = c.shape[0] - c.lo[0] - c.hi[0], win1 = c.shape[1] - c.lo[1] - c.hi[1];
    for (int i = 0; i < c.shape[0]; ++i)
      for (int j = 0; j < c.shape[1]; ++j) {
        int si = i - c.lo[0], sj = j - c.lo[1];
        bool inside = si >= 0 && si < win0 && sj >= 0 && sj < win1;
        double want = inside ? src[size_t(si * c.ss[0] + sj * c.ss[1])] : fill;
        EXPECT_EQ(out[size_t(i * c.ds[0] + j * c.ds[1])], want)
            << tilecore::arch::dtype_name(c.t) << " case ss=" << l2(c.ss) << " ds=" << l2(c.ds)
            << " [" << i << "," << j << "]";
      }
    if (c.ds[1] == 2) {
      EXPECT_EQ(out[1], 99.0) << "gaps between strided destination elements stay untouched";
    }
  }
}

TEST(FastPaths, SameTypeConvertIsACopyOnAnyStrides) {
  // tcvt.t.t moves the bytes unchanged (NaN payloads included): rows at once when both
  // sides are unit-stride, element by element otherwise.
  const uint32_t kA = 0x10000, kD = 0x30000;
  const Layout layouts[] = {
      {"contiguous", {35, 7, 1}, {35, 7, 1}, {0, 0, 0}, false},
      {"a strided", {35, 7, 1}, {70, 14, 2}, {0, 0, 0}, false},
      {"destination strided, rows transposed", {1, 21, 3}, {35, 7, 1}, {0, 0, 0}, false},
  };
  for (DType t : {DType::F32, DType::I16, DType::U8})
    for (const Layout& l : layouts) {
      int es = ref::size(t);
      std::vector<uint8_t> a(size_t(210 * es));
      for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 131 + 7);
      std::string desc =
          "d: .vecdesc shape=[3, 5, 7] d_stride=" + list(l.d) + " a_stride=" + list(l.a);
      std::string sfx = "." + std::string(tilecore::arch::dtype_name(t));
      ref::Run r;
      r.go(desc,
           "li x1, " + std::to_string(kD) + "\nli x2, " + std::to_string(kA) + "\ntcvt" + sfx +
               sfx + " x1, x2, [x0 + d]\nwait sc, vec, 1",
           {{kA, a}});
      auto out = r.l1(kD, size_t(210 * es));
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j)
          for (int k = 0; k < 7; ++k)
            for (int byte = 0; byte < es; ++byte)
              ASSERT_EQ(out[size_t((i * l.d[0] + j * l.d[1] + k * l.d[2]) * es + byte)],
                        a[size_t((i * l.a[0] + j * l.a[1] + k * l.a[2]) * es + byte)])
                  << tilecore::arch::dtype_name(t) << " " << l.what << " [" << i << "," << j << ","
                  << k << "]";
    }
}

TEST(FastPaths, SameTypeByteCopyThatTransposesIsACopyOnAnyShape) {
  // An int8 im2col reads a column of each source row: dst[i][j][k] = src[i][k][j] (a source
  // row pitch of `pitch`), taken in 8 x 8 blocks where both sides have 8; every shape around
  // the block edges against the element-by-element copy.
  const uint32_t kA = 0x10000, kD = 0x30000;
  for (DType t : {DType::I8, DType::U8})
    for (int rows : {7, 8, 13, 16, 29})
      for (int cols : {5, 8, 19, 24}) {
        const int outer = 2, pitch = rows + 3;
        std::vector<uint8_t> a(size_t(outer * cols * pitch));
        for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 37 + 11);
        const std::array<int, 3> shape{outer, rows, cols}, d{rows * cols, cols, 1},
            as{cols * pitch, 1, pitch};
        std::string sfx = "." + std::string(tilecore::arch::dtype_name(t));
        ref::Run r;
        r.go("d: .vecdesc shape=" + list(shape) + " d_stride=" + list(d) + " a_stride=" + list(as),
             "li x1, " + std::to_string(kD) + "\nli x2, " + std::to_string(kA) + "\ntcvt" + sfx +
                 sfx + " x1, x2, [x0 + d]\nwait sc, vec, 1",
             {{kA, a}});
        auto out = r.l1(kD, size_t(outer * rows * cols));
        for (int i = 0; i < outer; ++i)
          for (int j = 0; j < rows; ++j)
            for (int k = 0; k < cols; ++k)
              ASSERT_EQ(out[size_t(i * d[0] + j * d[1] + k)], a[size_t(i * as[0] + j + k * pitch)])
                  << rows << "x" << cols << " [" << i << "," << j << "," << k << "]";
      }
}

TEST(FastPaths, QuantiseToInt8AndWidenAgreeWithReferenceOnStrides) {
  // tcvt.i8.f32 (quantisation: ties to even, saturation, NaN to 0) and tcvt.i32.i8 (the
  // depthwise Conv's widening) on a strided source, against the reference conversion
  const std::vector<double> probe = {
      0.5,    1.5,  2.5,   -0.5, -1.5,     -2.5,      126.5,     127.49, 127.5,      128.0, -128.5,
      -129.0, 1e30, -1e30, NAN,  INFINITY, -INFINITY, 3.4999998, -0.0,   0.49999997, 64.5};
  const int n = int(probe.size());
  for (auto [dst, src] : {std::pair{DType::I8, DType::F32}, std::pair{DType::I32, DType::I8}}) {
    std::vector<double> spread(size_t(2 * n), 0.0);  // every other element: a_stride 2
    for (int i = 0; i < n; ++i) spread[size_t(2 * i)] = probe[size_t(i)];
    std::vector<uint8_t> in = ref::encode_all(src, spread);
    std::vector<double> held = ref::decode_all(src, in);
    ref::Run r;
    r.go("d: .vecdesc shape=[" + std::to_string(n) + "] d_stride=[1] a_stride=[2]",
         "li x1, 0x30000\nli x2, 0x10000\ntcvt." + std::string(tilecore::arch::dtype_name(dst)) +
             "." + std::string(tilecore::arch::dtype_name(src)) +
             " x1, x2, [x0 + d]\nwait sc, vec, 1",
         {{0x10000, in}});
    auto out = ref::decode_all(dst, r.l1(0x30000, size_t(n * ref::size(dst))));
    for (int i = 0; i < n; ++i) {
      uint8_t buf[4];
      ref::encode(dst, held[size_t(2 * i)], buf);
      EXPECT_TRUE(ref::same(out[size_t(i)], ref::decode(dst, buf)))
          << tilecore::arch::dtype_name(dst) << " of " << held[size_t(2 * i)] << " gave "
          << out[size_t(i)];
    }
  }
}
