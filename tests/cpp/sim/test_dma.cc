// tests/cpp/sim/test_dma.cc — dma.in / dma.out: strides, transpose, padding,
// fill, casts, overlap, and the bandwidth model.
#include <gtest/gtest.h>

#include "reference.h"

using tilecore::arch::DType;
using tilecore::arch::Space;

namespace {

std::vector<uint8_t> iota_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 7 + 1);
  return v;
}

}  // namespace

TEST(Dma, StridedTileFromDdrAndBack) {
  // A 4 x 6 tile at row stride 10 in DDR -> contiguous L1 -> row stride 8 in L2.
  tilecore::sim::Simulator s(tilecore::sim::SimConfig{.cores = 1});
  auto src = iota_bytes(64);
  s.load(tilecore::arch::assemble(R"(
.core 0
.data l1, 0xF0000
din:  .dmadesc dtype=i8 shape=[4, 6] src_stride=[10, 1]
dout: .dmadesc dtype=i8 shape=[4, 6] dst_stride=[8, 1]
.text
    li x1, 0x100
    li x2, 0x1000
    li x3, 0x200
    dma.in l1:x1, ddr:x2, [x0 + din]
    wait dout, din, 1
    dma.out l2:x3, l1:x1, [x0 + dout]
    wait sc, dout, 1
    halt
)"));
  s.write(Space::DDR, 0x1000, src);
  s.run();
  auto l1 = s.read(Space::L1, 0x100, 24);
  auto l2 = s.read(Space::L2, 0x200, 32);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) {
      EXPECT_EQ(l1[size_t(r * 6 + c)], src[size_t(r * 10 + c)]);
      EXPECT_EQ(l2[size_t(r * 8 + c)], src[size_t(r * 10 + c)]);
    }
  EXPECT_EQ(l2[6], 0);  // gaps untouched
}

TEST(Dma, TransposeThroughStrides) {
  // dst[j][i] = src[i][j] for a 3 x 5 i16 matrix: walk dst shape [5, 3], src strides [1, 5].
  ref::Run r;
  std::vector<double> m(15);
  for (int i = 0; i < 15; ++i) m[size_t(i)] = i * 100 - 700;
  r.go("d: .dmadesc dtype=i16 shape=[5, 3] src_stride=[1, 5]",
       "li x1, 0x2000\nli x2, 0x1000\ndma.in l1:x1, l1:x2, [x0 + d]\nwait sc, din, 1",
       {{0x1000, ref::encode_all(DType::I16, m)}});
  auto t = ref::decode_all(DType::I16, r.l1(0x2000, 30));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(t[size_t(j * 3 + i)], m[size_t(i * 5 + j)]);
}

TEST(Dma, PaddingAndFill) {
  // A 2 x 3 f32 source placed in a 4 x 5 destination with one pad row/column on
  // each side, pad value -1.5.
  ref::Run r;
  std::vector<double> src = {1, 2, 3, 4, 5, 6};
  r.go(
      "d: .dmadesc dtype=f32 shape=[4, 5] pad_lo=[1, 1] pad_hi=[1, 1] fill=-1.5\n"
      "f: .dmadesc dtype=u16 shape=[7] fill=513 fill_only=1",
      "li x1, 0x2000\nli x2, 0x1000\nli x3, 0x3000\ndma.in l1:x1, l1:x2, [x0 + d]\n"
      "dma.out l1:x3, l1:x0, [x0 + f]\nwait sc, din, 1\nwait sc, dout, 1",
      {{0x1000, ref::encode_all(DType::F32, src)}});
  auto d = ref::decode_all(DType::F32, r.l1(0x2000, 80));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      bool inside = i >= 1 && i <= 2 && j >= 1 && j <= 3;
      EXPECT_EQ(d[size_t(i * 5 + j)], inside ? src[size_t((i - 1) * 3 + (j - 1))] : -1.5)
          << i << "," << j;
    }
  auto f = ref::decode_all(DType::U16, r.l1(0x3000, 16));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(f[size_t(i)], 513);
  EXPECT_EQ(f[7], 0);
}

TEST(Dma, CastsWithSaturationAndRounding) {
  std::vector<double> v = {1.5, 2.5, -2.5, 300.0, -300.0, NAN, INFINITY, 0.49};
  ref::Run r;
  r.go("d: .dmadesc src=f32 dst=i8 shape=[8]\nh: .dmadesc src=f32 dst=f16 shape=[8]",
       "li x1, 0x2000\nli x2, 0x1000\nli x3, 0x3000\ndma.in l1:x1, l1:x2, [x0 + d]\ndma.in l1:x3, "
       "l1:x2, [x0 + h]\nwait sc, din, 2",
       {{0x1000, ref::encode_all(DType::F32, v)}});
  auto i8 = ref::decode_all(DType::I8, r.l1(0x2000, 8));
  const double want[] = {2, 2, -2, 127, -128, 0, 127, 0};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(i8[size_t(i)], want[i]) << "f32 " << v[size_t(i)] << " -> i8";
  auto f16 = ref::decode_all(DType::F16, r.l1(0x3000, 16));
  for (int i = 0; i < 8; ++i) {
    uint8_t b[2];
    ref::encode(DType::F16, v[size_t(i)], b);
    EXPECT_TRUE(ref::same(f16[size_t(i)], ref::decode(DType::F16, b)));
  }
}

TEST(Dma, OverlappingCopyReadsSourceFirst) {
  ref::Run r;
  std::vector<uint8_t> src = {1, 2, 3, 4, 5, 6, 7, 8};
  r.go("d: .dmadesc dtype=u8 shape=[8]",
       "li x1, 0x1002\nli x2, 0x1000\ndma.in l1:x1, l1:x2, [x0 + d]\nwait sc, din, 1",
       {{0x1000, src}});
  auto d = r.l1(0x1000, 10);
  EXPECT_EQ(d, (std::vector<uint8_t>{1, 2, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(Dma, CyclesAndSharedDdrBandwidth) {
  // One core: 4 KiB DDR -> L1 contiguous = 64 beats + 200 latency. li x3 (1),
  // issue at t = 1 (cost 1); ends at 1 + 64 + 200 = 265; wait -> 266; halt -> 267.
  {
    ref::Run r;
    r.go("d: .dmadesc dtype=i8 shape=[64, 64]",
         "li x1, 0\ndma.in l1:x1, ddr:x0, [x0 + d]\nwait sc, din, 1", {});
    EXPECT_EQ(r.sim.stats().cycles, 267u);
    EXPECT_EQ(r.sim.stats().ddr_read, 4096u);
    EXPECT_EQ(r.sim.stats().l1_written, 4096u);
  }
  // From L2: 64 beats + 20 latency -> 1 + 84 = 85, wait 86, halt 87.
  {
    ref::Run r;
    r.go("d: .dmadesc dtype=i8 shape=[64, 64]",
         "li x1, 0\ndma.in l1:x1, l2:x0, [x0 + d]\nwait sc, din, 1", {});
    EXPECT_EQ(r.sim.stats().cycles, 87u);
  }
  // A strided (transposing) read costs one beat per element: 4096 beats + 2 (L1) -> 1 + 4098 + 2.
  {
    ref::Run r;
    r.go("d: .dmadesc dtype=i8 shape=[64, 64] src_stride=[1, 64]",
         "li x1, 0x10000\ndma.in l1:x1, l1:x0, [x0 + d]\nwait sc, din, 1", {});
    EXPECT_EQ(r.sim.stats().cycles, 4101u);
  }
  // Four cores each pull 4 KiB from DDR at t = 1: DDR (64 B/cycle shared) drains
  // them at 65, 129, 193, 257; each ends 200 later. The last core finishes at
  // 457 + wait + halt = 459; cores 1..3 stall 64, 128, 192 cycles on bandwidth.
  {
    tilecore::sim::Simulator s(tilecore::sim::SimConfig{.cores = 4});
    s.load(tilecore::arch::assemble(
        ".data l1, 0xF0000\nd: .dmadesc dtype=i8 shape=[64, 64]\n.text\n"
        "li x1, 0\ndma.in l1:x1, ddr:x0, [x0 + d]\nwait sc, din, 1\nhalt\n"));
    s.run();
    auto st = s.stats();
    EXPECT_EQ(st.cycles, 459u);
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(st.cores[size_t(c)].agents[1].stalled_bw, uint64_t(64 * c)) << "core " << c;
  }
}

TEST(Dma, CastBetweenEveryPairOfTypes) {
  const DType all[] = {DType::I8,  DType::U8,  DType::I16,  DType::U16, DType::I32,
                       DType::U32, DType::F16, DType::BF16, DType::F32, DType::Bool};
  const std::vector<double> probe = {0.0,    1.0,   -1.0,    0.5,     1.5,  -2.5, 127.0,
                                     -129.0, 300.0, 65535.0, 70000.0, -1e9, NAN,  -INFINITY};
  for (DType src : all)
    for (DType dst : all) {
      auto in = ref::encode_all(src, probe);
      auto held = ref::decode_all(src, in);
      ref::Run r;
      r.go("d: .dmadesc src=" + std::string(tilecore::arch::dtype_name(src)) +
               " dst=" + std::string(tilecore::arch::dtype_name(dst)) + " shape=[" +
               std::to_string(probe.size()) + "]",
           "li x1, 0x2000\nli x2, 0x1000\ndma.in l1:x1, l1:x2, [x0 + d]\nwait sc, din, 1",
           {{0x1000, in}});
      auto out = ref::decode_all(dst, r.l1(0x2000, probe.size() * size_t(ref::size(dst))));
      for (size_t i = 0; i < probe.size(); ++i) {
        uint8_t b[4];
        ref::encode(dst, held[i], b);
        ASSERT_TRUE(ref::same(out[i], ref::decode(dst, b)))
            << "dma " << tilecore::arch::dtype_name(src) << " -> "
            << tilecore::arch::dtype_name(dst) << " of " << held[i];
      }
    }
}
