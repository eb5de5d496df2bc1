/*
 * src/compiler/strategy_conv_transpose.cc — ConvTranspose (1-D and 2-D; strides,
 * pads, dilations, output_padding, group, bias, auto_pad and output_shape) as an
 * implicit GEMM on the matrix engine.
 *
 * A transposed convolution is a stride-1 convolution of the zero-inserted input
 * Z (input pixel i at z = pad' + i * stride, pad' = dilation * (K - 1) - pad_begin,
 * zeros between and around) with the flipped kernel, whose weight matrix per group
 * is W[c, m, k] read as (m, (c, k)). The output is tiled as Conv's (R rows x TW
 * columns <= 256 positions, TM <= 128 output channels, chunks of CC input channels
 * with CC * KH * KW <= 256). Per chunk the L1 patch of Z the tile needs is
 * zero-filled and the input rows that land in it are DMAed with a destination
 * column stride of `stride` (the zero insertion is done by the DMA); im2col reads
 * the patch with the flipped kernel offsets, the weight tile is DMAed with the
 * (c, m) axes swapped, and tile.mm accumulates. Nothing is computed for the output
 * padding but zeros times weights; output_padding and output_shape only change the
 * output size and the begin padding.
 */
#include <algorithm>

#include "kernel_util.h"
#include "matrix_precision.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kMaxP = 256, kMaxK = 256, kMaxTM = 128;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

struct TGeom {
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, Cg, Mg;
  int64_t sh, sw, dh, dw, zh, zw;  // zh, zw: pad' of the zero-inserted input
};

/*! \brief The begin pads as ONNX computes them (output_shape / SAME split the total). */
std::vector<int64_t> BeginPads(const Map<String, Any>& attrs, const std::vector<int64_t>& in,
                               const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                               const std::vector<int64_t>& d) {
  size_t nd = in.size();
  std::string ap = AttrStr(attrs, "auto_pad", "NOTSET");
  auto op = AttrInts(attrs, "output_padding", std::vector<int64_t>(nd, 0));
  auto os = AttrInts(attrs, "output_shape", {});
  if (os.size() > nd) os.erase(os.begin(), os.end() - static_cast<int64_t>(nd));
  if (os.empty() && (ap == "SAME_UPPER" || ap == "SAME_LOWER"))
    for (size_t i = 0; i < nd; ++i) os.push_back(in[i] * s[i]);
  std::vector<int64_t> b(nd, 0);
  if (!os.empty()) {
    for (size_t i = 0; i < nd; ++i) {
      int64_t full = (in[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1;
      int64_t total = full + op[i] - os[i];
      b[i] = ap == "SAME_UPPER" ? FloorDiv(total, 2) : total - FloorDiv(total, 2);
    }
    return b;
  }
  if (ap == "VALID") return b;
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  for (size_t i = 0; i < nd; ++i) b[i] = pads[i];
  return b;
}

bool Geometry(const std::vector<TensorSpec>& ins, const std::vector<TensorSpec>* outs,
              const Map<String, Any>& attrs, TGeom* g, std::string* why) {
  auto xs = Shape(ins[0]), ws = Shape(ins[1]);
  if (xs.size() != ws.size() || (xs.size() != 3 && xs.size() != 4)) {
    *why = "ConvTranspose: only 1-D and 2-D (X and W of rank 3 or 4)";
    return false;
  }
  size_t nd = xs.size() - 2;
  g->G = AttrInt(attrs, "group", 1);
  if (g->G <= 0 || xs[1] % g->G != 0 || ws[0] != xs[1]) {
    *why = "ConvTranspose: channels do not match the group count";
    return false;
  }
  auto s = AttrInts(attrs, "strides", std::vector<int64_t>(nd, 1));
  auto d = AttrInts(attrs, "dilations", std::vector<int64_t>(nd, 1));
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  auto op = AttrInts(attrs, "output_padding", std::vector<int64_t>(nd, 0));
  if (s.size() != nd || d.size() != nd || pads.size() != 2 * nd || op.size() != nd) {
    *why = "ConvTranspose: strides, dilations, pads or output_padding of the wrong length";
    return false;
  }
  for (size_t i = 0; i < nd; ++i)
    if (s[i] <= 0 || d[i] <= 0) {
      *why = "ConvTranspose: strides and dilations must be positive";
      return false;
    }
  if (HasAttr(attrs, "output_shape") && AttrInts(attrs, "output_shape", {}).size() < nd) {
    *why = "ConvTranspose: output_shape of the wrong length";
    return false;
  }
  std::vector<int64_t> in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end());
  auto b = BeginPads(attrs, in, k, s, d);
  if (nd == 1) {
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
    s.insert(s.begin(), 1);
    d.insert(d.begin(), 1);
    b.insert(b.begin(), 0);
  }
  g->N = xs[0];
  g->C = xs[1];
  g->H = xs[2];
  g->W = xs[3];
  g->Cg = g->C / g->G;
  g->Mg = ws[1];
  g->M = g->Mg * g->G;
  g->KH = ws[2];
  g->KW = ws[3];
  g->sh = s[0];
  g->sw = s[1];
  g->dh = d[0];
  g->dw = d[1];
  g->zh = g->dh * (g->KH - 1) - b[0];
  g->zw = g->dw * (g->KW - 1) - b[1];
  if (g->KH * g->KW > kMaxK) {
    *why = "ConvTranspose: kernel window larger than " + std::to_string(kMaxK) + " taps";
    return false;
  }
  if (outs) {
    auto ys = Shape((*outs)[0]);
    if (nd == 1) ys.insert(ys.begin() + 2, 1);
    g->OH = ys[2];
    g->OW = ys[3];
  }
  return true;
}

PrimFunc LowerConvTranspose(const OpCall& call) {
  TGeom g;
  std::string why;
  Geometry(call.inputs, &call.outputs, call.attrs, &g, &why);
  Params p = MakeParams(call);
  DataType f32 = DataType::Float(32);
  // f16/bf16 (tc_precision): the patch, col and weight tiles in the narrow type (the DMA
  // converts), f32 accumulation
  const DataType ot = GetMatrixPrecision(call.attrs).operand;
  if (g.N == 0 || g.M == 0 || g.OH <= 0 || g.OW <= 0) return MakeFunc(call, p, Evaluate(I32(0)));
  Buffer X = View(p.in[0], {g.N, g.C, g.H, g.W}, "X");
  int64_t KK = g.KH * g.KW;
  int64_t wnumel = g.C * g.Mg * KK;
  bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  Buffer Bv = has_bias ? View(p.in[2], {g.M, 1}, "Bias") : Buffer();
  Buffer Y = View(p.out[0], {g.N, g.M, g.OH, g.OW}, "Y");
  int64_t TW = std::min(g.OW, kMaxP);
  int64_t R = TW == g.OW ? std::max<int64_t>(1, std::min(g.OH, kMaxP / g.OW)) : 1;
  int64_t CC = std::max<int64_t>(1, std::min(g.Cg, kMaxK / KK));
  int64_t TM = std::min(g.Mg, kMaxTM);
  {
    int64_t rin = (R - 1) + (g.KH - 1) * g.dh + 1, win = (TW - 1) + (g.KW - 1) * g.dw + 1;
    int64_t bytes = 4 * (CC * rin * win + 2 * CC * KK * R * TW + TM * CC * KK + TM * R * TW + TM);
    if (bytes > call.l1_bytes - 64 * 1024)
      TILECORE_THROW(ValueError) << "LowerOp(ConvTranspose): a tile needs " << bytes
                                 << " bytes of L1 (dilation " << g.dh << "x" << g.dw << ")";
  }
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> groups;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
      int64_t tw = std::min(TW, g.OW - ow0);
      int64_t win = (tw - 1) + (g.KW - 1) * g.dw + 1;  // patch columns: z in [ow0, ow0 + win)
      // input columns landing in the patch: z = zw + iw * sw
      int64_t iwlo = std::max<int64_t>(0, FloorDiv(ow0 - g.zw + g.sw - 1, g.sw));
      int64_t iwhi = std::min<int64_t>(g.W - 1, FloorDiv(ow0 + win - 1 - g.zw, g.sw));
      int64_t ncols = iwhi - iwlo + 1, col0 = g.zw + iwlo * g.sw - ow0;
      for (auto [rcount, r] : Segments(g.OH, R)) {
        int64_t rbase = r == R ? 0 : (g.OH / R) * R;
        int64_t rin = (r - 1) + (g.KH - 1) * g.dh + 1;
        for (auto [mcount, tm] : Segments(g.Mg, TM)) {
          int64_t mbase = tm == TM ? 0 : (g.Mg / TM) * TM;
          int64_t items = g.N * g.G * rcount * mcount;
          groups.push_back(ForEachItem(
              core, call.cores, items, &rotation, "t",
              [&, r = r, rbase = rbase, rin = rin, tm = tm, mbase = mbase, rcount = rcount,
               mcount = mcount](PrimExpr t) {
                PrimExpr mi = floormod(t, I32(mcount));
                PrimExpr ri = floormod(floordiv(t, I32(mcount)), I32(rcount));
                PrimExpr gi = floormod(floordiv(t, I32(mcount * rcount)), I32(g.G));
                PrimExpr n = floordiv(t, I32(mcount * rcount * g.G));
                PrimExpr m0 = I32(mbase) + mi * I32(TM);
                PrimExpr oh0 = I32(rbase) + ri * I32(R);
                int64_t P = r * tw, kcmax = CC * KK;
                Buffer Xp = Local({CC, rin, win}, ot, "Xp");
                // Xp with a leading flat offset and a column stride of sw: where input columns land
                // (rank 4, unlike Xp: the engine ordering tracks Xp's slabs by the outermost index
                // of views of Xp's rank)
                Buffer Xs(Xp->data, ot,
                          {I32(CC * rin * win), I32(1), I32(CC), I32(std::max<int64_t>(ncols, 1))},
                          {I32(1), I32(1), I32(rin * win), I32(g.sw)}, I32(0), "local", "Xs");
                Buffer Col = Local({kcmax, r, tw}, ot, "Col");
                Buffer Colm = Buffer(Col->data, ot, {I32(kcmax), I32(P)}, Array<PrimExpr>(), I32(0),
                                     "local", "Colm");
                Buffer Al3 = Local({tm, CC, KK}, ot, "Al3");
                Buffer Al = Buffer(Al3->data, ot, {I32(tm), I32(kcmax)}, Array<PrimExpr>(), I32(0),
                                   "local", "Al");
                Buffer Cl = Local({tm, P}, f32, "Cl");
                Buffer Cl3 = Buffer(Cl->data, f32, {I32(tm), I32(r), I32(tw)}, Array<PrimExpr>(),
                                    I32(0), "local", "Cl3");
                std::vector<Stmt> s;
                bool first = true;
                for (auto [ccount, cc] : Segments(g.Cg, CC)) {
                  int64_t cbase = cc == CC ? 0 : (g.Cg / CC) * CC;
                  auto chunk = [&, cc = cc, cbase = cbase](PrimExpr ci, bool acc) {
                    PrimExpr c0 = I32(cbase) + ci * I32(CC);
                    int64_t kc = cc * KK;
                    std::vector<Stmt> st;
                    st.push_back(Intrin(
                        "tile.dma_fill",
                        {Region(Xp, {I32(0), I32(0), I32(0)}, {cc, rin, win}), F32(0), I32(0)}));
                    // (the copies after the fill are one in-order DMA queue: the wait after
                    // them covers it)
                    if (ncols == 0) st.push_back(Intrin("tile.wait", {I32(0)}));
                    if (ncols > 0) {
                      st.push_back(Loop("rr", rin, [&](PrimExpr rr) {
                        PrimExpr q = oh0 + rr - I32(g.zh);
                        PrimExpr ih = floordiv(q, I32(g.sh));
                        PrimExpr ok =
                            eq(floormod(q, I32(g.sh)), I32(0)) && q >= I32(0) && ih < I32(g.H);
                        return IfThenElse(
                            ok,
                            Intrin("tile.dma_copy",
                                   {Region(Xs, {rr * I32(win) + I32(col0), I32(0), I32(0), I32(0)},
                                           {1, 1, cc, ncols}),
                                    Region(X, {n, gi * I32(g.Cg) + c0, ih, I32(iwlo)},
                                           {1, cc, 1, ncols}),
                                    I32(0)}));
                      }));
                      st.push_back(Intrin("tile.wait", {I32(0)}));
                    }
                    // im2col with the flipped kernel: Col[(c, kh, kw), y, x] = Xp[c, y + (KH-1-kh)
                    // dh, x + (KW-1-kw) dw]
                    st.push_back(Loop("c", cc, [&](PrimExpr c) {
                      return Loop("kh", g.KH, [&](PrimExpr kh) {
                        return Loop("kw", g.KW, [&](PrimExpr kw) {
                          return Loop("y", r, [&](PrimExpr y) {
                            return Loop("x", tw, [&](PrimExpr x) {
                              // kh, kw walk the patch offsets; the weight tap they meet is flipped
                              PrimExpr row = (c * I32(g.KH) + I32(g.KH - 1) - kh) * I32(g.KW) +
                                             I32(g.KW - 1) - kw;
                              return BufferStore(
                                  Col, BufferLoad(Xp, {c, y + kh * I32(g.dh), x + kw * I32(g.dw)}),
                                  {row, y, x});
                            });
                          });
                        });
                      });
                    }));
                    // the weight tile: Al[m, (c, k)] = W[g * Cg + c0 + c, m0 + m, k]
                    Buffer Ws(
                        p.in[1]->data, p.in[1]->dtype, {I32(wnumel), I32(tm), I32(cc), I32(KK)},
                        {I32(1), I32(KK), I32(g.Mg * KK), I32(1)}, I32(0), p.in[1]->scope, "Ws");
                    PrimExpr woff = ((gi * I32(g.Cg) + c0) * I32(g.Mg) + m0) * I32(KK);
                    st.push_back(
                        DmaWait(Region(Al3, {I32(0), I32(0), I32(0)}, {tm, cc, KK}),
                                Region(Ws, {woff, I32(0), I32(0), I32(0)}, {1, tm, cc, KK}), 0));
                    st.push_back(Intrin("tile.mm", {Region(Cl, {I32(0), I32(0)}, {tm, P}),
                                                    Region(Al, {I32(0), I32(0)}, {tm, kc}),
                                                    Region(Colm, {I32(0), I32(0)}, {kc, P}),
                                                    IntImm(DataType::Bool(), acc ? 1 : 0)}));
                    return Seq(st);
                  };
                  SumChunks(
                      &s, "ci", ccount, &first, [&](PrimExpr ci) { return chunk(ci, false); },
                      chunk);
                }
                if (has_bias) {
                  Buffer Bl = Local({tm, 1}, f32, "Bl");
                  s.push_back(Allocate(
                      Bl, Seq({DmaWait(Region(Bl, {I32(0), I32(0)}, {tm, 1}),
                                       Region(Bv, {gi * I32(g.Mg) + m0, I32(0)}, {tm, 1}), 0),
                               Loop("i", tm, [&](PrimExpr i) {
                                 return Loop("j", P, [&](PrimExpr j) {
                                   return BufferStore(
                                       Cl, BufferLoad(Cl, {i, j}) + BufferLoad(Bl, {i, I32(0)}),
                                       {i, j});
                                 });
                               })})));
                }
                s.push_back(
                    DmaWait(Region(Y, {n, gi * I32(g.Mg) + m0, oh0, I32(ow0)}, {1, tm, r, tw}),
                            Region(Cl3, {I32(0), I32(0), I32(0)}, {tm, r, tw}), 1));
                return Allocate(Xp, Allocate(Col, Allocate(Al3, Allocate(Cl, Seq(s)))));
              }));
        }
      }
    }
    return Seq(groups);
  });
  return MakeFunc(call, p, body);
}

std::string CheckConvTranspose(const std::string& op, const Map<String, Any>& attrs,
                               const std::vector<TensorSpec>& ins) {
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined())
    return "ConvTranspose: expects X and W";
  if (GetMatrixPrecision(attrs).int8()) return "ConvTranspose: no int8 strategy (f32, f16 or bf16)";
  std::string why = CheckMatrixInputs(op, attrs, ins);
  if (!why.empty()) return why;
  TGeom g;
  if (!Geometry(ins, nullptr, attrs, &g, &why)) return why;
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("ConvTranspose",
                   Strategy{detail::CheckConvTranspose, detail::LowerConvTranspose,
                            [](const OpCall&, int) { return std::string("onnx"); }});
});

}  // namespace compiler
}  // namespace tilecore
