// tests/cpp/sim/test_exp_rows.cc — texp, tsigmoid and ttanh's f32 rows (src/sim/exp_rows.h)
// against the specification's formula written here: in double with std::exp (std::tanh),
// rounded once to f32,
// bit for bit, on random bit patterns (NaN, infinities, subnormals), the edges of the range
// the fast path takes, unaligned and in-place rows; and through the vector engine on strides.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "sim/exp_rows.h"

using tilecore::arch::DType;
using tilecore::sim::ExpRow;

namespace {

float formula(ExpRow kind, float x) {
  const double xd = x;
  return float(kind == ExpRow::Exp       ? std::exp(xd)
               : kind == ExpRow::Sigmoid ? 1.0 / (1.0 + std::exp(-xd))
                                         : std::tanh(xd));
}

const char* kind_name(ExpRow kind) {
  return kind == ExpRow::Exp ? "exp" : kind == ExpRow::Sigmoid ? "sigmoid" : "tanh";
}

std::vector<float> inputs() {
  std::mt19937 g(7);
  std::vector<float> v;
  for (int i = 0; i < 200000; ++i) {  // any bit pattern
    uint32_t bits = g();
    float x;
    std::memcpy(&x, &bits, 4);
    v.push_back(x);
  }
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-12.0f, 12.0f),
      small(-0.25f, 0.25f);
  for (int i = 0; i < 300000; ++i)
    v.push_back(i % 3 == 0 ? wide(g) : i % 3 == 1 ? narrow(g) : small(g));
  for (float edge : {80.0f, 87.0f, 88.0f, 88.72f, 89.0f, 103.97f, 104.0f, 0.0f, 1e-30f, 1e-45f,
                     0.0625f, 9.0f, 9.1f, 40.0f}) {
    for (float s : {1.0f, -1.0f}) {
      float x = s * edge;
      for (int k = 0; k < 4; ++k) {
        v.push_back(x);
        v.push_back(std::nextafter(x, 2.0f * x + 1.0f));
        v.push_back(std::nextafter(x, -2.0f * x - 1.0f));
        x = std::nextafter(x, 0.0f);
      }
    }
  }
  for (float special : {INFINITY, -INFINITY, NAN, -NAN}) v.push_back(special);
  return v;
}

void expect_formula(ExpRow kind, const std::vector<float>& in, const std::vector<float>& out,
                    const std::string& what) {
  long bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = formula(kind, in[i]);
    if (std::memcmp(&want, &out[i], 4) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": x = " << in[i] << " gives " << out[i] << ", the formula " << want;
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace

TEST(ExpRows, BitIdenticalToTheFormula) {
  const std::vector<float> in = inputs();
  for (ExpRow kind : {ExpRow::Exp, ExpRow::Sigmoid, ExpRow::Tanh}) {
    const std::string name = kind_name(kind);
    std::vector<float> out(in.size());
    tilecore::sim::exp_row_f32(kind, reinterpret_cast<uint8_t*>(out.data()),
                               reinterpret_cast<const uint8_t*>(in.data()), int64_t(in.size()));
    expect_formula(kind, in, out, name);
    std::vector<float> same = in;  // in place
    tilecore::sim::exp_row_f32(kind, reinterpret_cast<uint8_t*>(same.data()),
                               reinterpret_cast<const uint8_t*>(same.data()), int64_t(same.size()));
    expect_formula(kind, in, same, name + " in place");
    for (int64_t n : {1, 255, 256, 257, 1000}) {  // unaligned bytes, lengths around a chunk
      std::vector<uint8_t> src(size_t(n) * 4 + 3), dst(size_t(n) * 4 + 5);
      std::memcpy(src.data() + 3, in.data() + 1000, size_t(n) * 4);
      tilecore::sim::exp_row_f32(kind, dst.data() + 5, src.data() + 3, n);
      const std::vector<float> part(in.begin() + 1000, in.begin() + 1000 + n);
      std::vector<float> got(static_cast<size_t>(n));
      std::memcpy(got.data(), dst.data() + 5, size_t(n) * 4);
      expect_formula(kind, part, got, name + " unaligned, n = " + std::to_string(n));
    }
  }
}

TEST(ExpRows, VectorEngineRowsAndStridesAgree) {
  // texp / tsigmoid / ttanh through the engine: contiguous rows take the fast path, strided
  // ones the element loop; both the formula.
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  std::vector<double> a(2 * 6 * 40);
  for (auto& x : a) x = u(g);
  a[7] = NAN, a[9] = 95.0, a[11] = -95.0;
  struct Layout {
    const char* what;
    std::string d, a;
    int rows, cols;
  };
  const Layout layouts[] = {{"rows", "[240, 40, 1]", "[240, 40, 1]", 6, 40},
                            {"a strided", "[240, 20, 1]", "[480, 40, 2]", 6, 20}};
  for (const char* op : {"texp", "tsigmoid", "ttanh"}) {
    const ExpRow kind = std::string(op) == "texp"       ? ExpRow::Exp
                        : std::string(op) == "tsigmoid" ? ExpRow::Sigmoid
                                                        : ExpRow::Tanh;
    for (const Layout& l : layouts) {
      const uint32_t kA = 0x10000, kD = 0x30000;
      std::string desc = "d: .vecdesc shape=[1, " + std::to_string(l.rows) + ", " +
                         std::to_string(l.cols) + "] d_stride=" + l.d + " a_stride=" + l.a +
                         " b_stride=[0, 0, 0]";
      std::string body = "li x1, " + std::to_string(kD) + "\nli x2, " + std::to_string(kA) + "\n" +
                         op + ".f32 x1, x2, [x0 + d]\nwait sc, vec, 1";
      ref::Run r;
      r.go(desc, body, {{kA, ref::encode_all(DType::F32, a)}});
      const int astride = std::string(l.what) == "rows" ? 1 : 2;
      auto out = ref::decode_all(DType::F32, r.l1(kD, uint32_t(l.rows * l.cols * 4)));
      for (int i = 0; i < l.rows; ++i)
        for (int j = 0; j < l.cols; ++j) {
          const float x = float(a[size_t(i * 40 + j * astride)]);
          const float want = formula(kind, x);
          ASSERT_TRUE(ref::same(out[size_t(i * l.cols + j)], double(want)))
              << op << " " << l.what << " [" << i << "," << j << "] x = " << x;
        }
    }
  }
}
