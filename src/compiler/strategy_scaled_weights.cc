/*
 * src/compiler/strategy_scaled_weights.cc — ChannelScaledWeights: an int8 Conv's weights
 * times a per-input-channel scale, for one image (docs/compiler.md, "Channel scale on the
 * weights"). A squeeze-excite multiplies a Conv's input by s[c] in [0, 1]; for a Conv
 * whose weights are fewer than its input's elements the product is moved onto the
 * weights: W x (s * X) = (W * s) x X.
 *
 *   inputs:  W  int8 [M, C, ...]  (the Conv's quantised weights, K = C x kernel per row)
 *            s  f32, C elements    (the scale, one per input channel)
 *            B  int32 [M]          (the Conv's bias in the units of X's code, no zero-point
 *                                   correction)
 *   attrs:   zero_point            (X's, in [-128, 127])
 *   outputs: W' int8, W's shape:   W'[m, c, k] = i8(f32(W[m, c, k]) * s[c])
 *                                  (nearest even, saturating: |W'| <= |W| where |s| <= 1)
 *            B' int32 [M]:         B'[m] = B[m] - zero_point * sum_{c,k} W'[m, c, k]
 *
 * The Conv then reads X as its producer stored it, with W' and B' for its weights and
 * bias. Rows of W are items, as many on every core as divide M. On the vector engine:
 * the int8 row widened to f32, multiplied by s (broadcast down the rows), converted back;
 * the converted row widened again and summed (f32: exact, integers below 2^24), times the
 * zero point (exact below 2^24: hence K <= 516), converted, subtracted from B in int32
 * (|B| < 2^31 - 2^24 by the driver: no saturation).
 */
#include <algorithm>
#include <string>

#include "kernel_util.h"
#include "rows_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

/*! \brief The most weights of a row: zero_point (|.| <= 128) x a row's sum (|.| <= 127 K)
 * stays below 2^23, exact in f32 and within the int32 bias's headroom. */
constexpr int64_t kMaxRow = (int64_t{1} << 23) / (128 * 127);
/*! \brief The L1 the rows of one item take at most (their four tiles). */
constexpr int64_t kItemBytes = int64_t{256} << 10;

std::string CheckScaledWeights(const std::string& op, const Map<String, Any>& attrs,
                               const std::vector<TensorSpec>& in) {
  if (in.size() != 3 || !in[0].defined() || !in[1].defined() || !in[2].defined())
    return op + ": expects the weights, the channel scale and the bias";
  const std::vector<int64_t> w = Shape(in[0]);
  if (in[0]->dtype != DataType::Int(8) || w.size() < 2)
    return op + ": the weights must be int8 [M, C, ...], got " + in[0]->dtype.str();
  if (in[1]->dtype != DataType::Float(32) || in[1]->numel() != w[1])
    return op + ": the scale must be float32 with the weights' " + std::to_string(w[1]) +
           " input channels";
  if (in[2]->dtype != DataType::Int(32) || in[2]->numel() != w[0])
    return op + ": the bias must be int32 with the weights' " + std::to_string(w[0]) + " rows";
  const int64_t k = Numel(w) / std::max<int64_t>(w[0], 1);
  if (k > kMaxRow)
    return op + ": rows of " + std::to_string(k) + " weights (at most " + std::to_string(kMaxRow) +
           ": the zero point's correction stays exact)";
  const int64_t zp = AttrInt(attrs, "zero_point", 0);
  if (zp < -128 || zp > 127) return op + ": zero_point out of the int8 range";
  return "";
}

PrimFunc LowerScaledWeights(const OpCall& call) {
  const DataType f32 = DataType::Float(32), i32 = DataType::Int(32), i8 = DataType::Int(8);
  if (call.outputs.size() != 2)
    TILECORE_THROW(ValueError) << "ChannelScaledWeights: expects two outputs (W', B'), given "
                               << call.outputs.size();
  Params p = MakeParams(call);
  const std::vector<int64_t> w = Shape(call.inputs[0]);
  const int64_t M = w[0], C = w[1], K = Numel(w) / M, KK = K / C;
  const double zp = static_cast<double>(AttrInt(call.attrs, "zero_point", 0));
  // rows per item: the most that divide M, give every core an item and fit kItemBytes
  const int64_t row_bytes = K * (1 + 4 + 1) + 16;
  int64_t T =
      std::max<int64_t>(1, std::min((M + call.cores - 1) / call.cores, kItemBytes / row_bytes));
  while (M % T != 0) --T;
  Buffer W = View(p.in[0], {M, K}, "W"), S = View(p.in[1], {C}, "S");
  Buffer B = View(p.in[2], {M}, "B");
  Buffer Wo = View(p.out[0], {M, K}, "Wo"), Bo = View(p.out[1], {M}, "Bo");
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Sl = Local({C}, f32, "Sl");
    Buffer Wl = Local({T, K}, i8, "Wl"), Wf = Local({T, K}, f32, "Wf");
    Buffer Wq = Local({T, K}, i8, "Wq");
    Buffer Bl = Local({T}, i32, "Bl"), Sum = Local({T}, f32, "Sum");
    Buffer Ci = Local({T}, i32, "Ci");
    // [row, channel, tap] views without their unit dims (a loop of extent 1 leaves the IR):
    // the scale broadcast down the rows and the taps
    const rows::TileView wf3 = rows::MakeView(Wf, {T, C, KK}, "Wf3");
    const rows::TileView s3 = rows::MakeView(Sl, {1, C, 1}, "S3");
    // (the [row, weight] tiles so too: Nest leaves out their unit dims)
    const rows::TileView wl = rows::MakeView(Wl, {T, K}, "Wlv"),
                         wf = rows::MakeView(Wf, {T, K}, "Wfv");
    const rows::TileView wq = rows::MakeView(Wq, {T, K}, "Wqv");
    // item t's rows: their loads, then what is made of them
    auto loads = [&](PrimExpr t) {
      PrimExpr r0 = t * I32(T);
      return Seq(
          {Intrin("tile.dma_copy",
                  {Region(Wl, {I32(0), I32(0)}, {T, K}), Region(W, {r0, I32(0)}, {T, K}), I32(0)}),
           Intrin("tile.dma_copy", {Region(Bl, {I32(0)}, {T}), Region(B, {r0}, {T}), I32(0)})});
    };
    auto compute = [&](PrimExpr t) {
      PrimExpr r0 = t * I32(T);
      std::vector<Stmt> s;
      s.push_back(Nest({T, K}, [&](const Array<PrimExpr>& i) {
        return BufferStore(wf.buf, cast(f32, BufferLoad(wl.buf, i)), i);
      }));
      s.push_back(rows::Nest({T, C, KK}, [&](const std::vector<PrimExpr>& i) {
        return wf3.Store(wf3.Load(i) * s3.Load({I32(0), i[1], I32(0)}), i);
      }));
      for (Stmt& q : QuantiseSteps(wq.buf, wf.buf, 1.0, 0, [&](const auto& f) {
             return Nest({T, K}, f);
           }))
        s.push_back(q);
      s.push_back(Intrin("tile.dma_copy", {Region(Wo, {r0, I32(0)}, {T, K}),
                                           Region(Wq, {I32(0), I32(0)}, {T, K}), I32(1)}));
      // the row sums of W' (widened again: the f32 products are not the rounded values)
      s.push_back(Nest({T, K}, [&](const Array<PrimExpr>& i) {
        return BufferStore(wf.buf, cast(f32, BufferLoad(wq.buf, i)), i);
      }));
      s.push_back(rows::ReduceTile(rows::MakeView(Sum, {T, 1}, "Sumv"),
                                   rows::MakeView(Wf, {T, K, 1}, "Wfv"), rows::Red::kSum));
      s.push_back(Loop("r", T, [&](PrimExpr r) {
        return BufferStore(Sum, BufferLoad(Sum, {r}) * F32(zp), {r});
      }));
      s.push_back(Loop("r", T, [&](PrimExpr r) {
        return BufferStore(Ci, cast(i32, BufferLoad(Sum, {r})), {r});
      }));
      s.push_back(BoundedNest(
          {T},
          [&](const Array<PrimExpr>& i) {
            return BufferStore(Bl, BufferLoad(Bl, i) - BufferLoad(Ci, i), i);
          },
          "ChannelScaledWeights: |B| < 2^31 - 2^24 and |zero point x row sum| < 2^23"));
      s.push_back(
          Intrin("tile.dma_copy", {Region(Bo, {r0}, {T}), Region(Bl, {I32(0)}, {T}), I32(1)}));
      s.push_back(Intrin("tile.wait", {I32(1)}));
      return Seq(s);
    };
    const Stmt scale =
        Intrin("tile.dma_copy", {Region(Sl, {I32(0)}, {C}), Region(S, {I32(0)}, {C}), I32(0)});
    Stmt r;
    if (M / T == call.cores) {
      // an item a core: its loads open the body, where the layer group's member before
      // issues them (member_handoff.h)
      r = Seq({loads(core), scale, Intrin("tile.wait", {I32(0)}), compute(core)});
    } else {
      r = Seq({scale, ForEachItem(core, call.cores, M / T, &rotation, "t", [&](PrimExpr t) {
                 return Seq({loads(t), Intrin("tile.wait", {I32(0)}), compute(t)});
               })});
    }
    for (const Buffer& b : {Wl, Wf, Wq, Bl, Sum, Ci}) r = Allocate(b, r);
    return Allocate(Sl, r);
  });
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("ChannelScaledWeights",
                   Strategy{detail::CheckScaledWeights, detail::LowerScaledWeights,
                            [](const OpCall&, int) { return std::string("onnx"); }, -1});
});

}  // namespace compiler
}  // namespace tilecore
