/*
 * src/compiler/strategy_pool.cc — MaxPool, AveragePool and LpPool (1-D, 2-D and
 * 3-D: kernel, strides, dilations, pads or auto_pad, ceil_mode,
 * count_include_pad), and GlobalAveragePool / GlobalMaxPool (a ReduceMean /
 * ReduceMax over the spatial axes, strategy_reduce.cc; also of an int8 value with its
 * tc_x_scale, dequantised).
 *
 * Tiling: the output [N, C, OD, OH, OW] (OD = 1 below 3-D) is cut into tiles of one
 * depth plane x cc channels x r rows x tw columns (columns placed at compile time, channels and
 * rows in full tiles and one remainder); the tiles go to the cores round robin. Per tile the input
 * patch the windows read — [cc, (KD-1)*dd + 1, (r-1)*sh + (KH-1)*dh + 1, (tw-1)*sw + (KW-1)*dw + 1]
 * — is filled with the neutral value (-inf, or 0 for the average) and the input rows that exist are
 * DMAed into it, so what stays filled is the padding and the ceil_mode overhang. Each kernel tap
 * (kd, kh, kw) is then one vector command over the whole tile: the tap's view of the patch has
 * strides (sh x patch width, sw) and starts at (kd*dd x patch height + kh*dh) x patch width +
 * kw*dw, so `tile.vec_max` / `vec_add` read it directly. The average multiplies by 1 / count per
 * row and per column (the count separates), a `vec_muls` when every window counts the same. LpPool
 * squares the patch (|x| is its square root; p > 2: exp(p log |x|)), sums the taps and takes the
 * p-th root. An int8 MaxPool (between int8 Convs) keeps its tiles in int8 (the max is
 * exact in any type; a quarter of the f32 tiles' DMA beats and vector bytes).
 *
 * The tiles of a core run one after another, or pipelined (ForEachItemPipelined): two
 * patches, stage buffers and output tiles, the loads of tile i + 1 (their DMAs signal event
 * 2 + slot) issued before the taps of tile i (its store signals 4 + slot), with a half or a
 * quarter of the channels per tile. A 2-D max whose windows overlap enough is separable: the
 * max over the window's columns of every patch row, then over its rows. The cost model picks
 * the fastest plan that fits L1.
 */
#include <algorithm>

#include "kernel_util.h"
#include "rows_util.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace rows;  // NOLINT(build/namespaces)

constexpr int64_t kPatch = 49152;  // elements of the input patch (192 KiB of f32)
constexpr int64_t kOut = 16384;    // elements of the output tile

PrimExpr Math(const char* op, PrimExpr x) { return call(op, {x}); }

struct PoolGeom {
  int64_t N, C, D, H, W, OD, OH, OW;
  int64_t k[3], s[3], d[3], pb[3],
      pe[3];  // per spatial dim (D, H, W); 2-D pools have D = 1, 1-D also H = 1
  int64_t in[3], out[3];
  bool max, include_pad;
  int64_t lp = 0;  // LpPool's p (1 or 2), else 0
  int64_t Ek(int i) const { return (k[i] - 1) * d[i] + 1; }
};

bool Geometry(const std::string& op, const Map<String, Any>& attrs, const std::vector<int64_t>& xs,
              PoolGeom* g, std::string* why) {
  if (xs.size() < 3 || xs.size() > 5) {
    *why = op + ": only 1-D, 2-D and 3-D pooling (input of rank 3 to 5)";
    return false;
  }
  size_t nd = xs.size() - 2;
  auto kernel = AttrInts(attrs, "kernel_shape", {});
  auto strides = AttrInts(attrs, "strides", std::vector<int64_t>(nd, 1));
  auto dil = AttrInts(attrs, "dilations", std::vector<int64_t>(nd, 1));
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  if (kernel.size() != nd || strides.size() != nd || dil.size() != nd || pads.size() != 2 * nd) {
    *why = op + ": kernel_shape, strides, dilations or pads of the wrong length";
    return false;
  }
  g->max = op == "MaxPool";
  g->lp = op == "LpPool" ? AttrInt(attrs, "p", 2) : 0;
  if (op == "LpPool" && g->lp < 1) {
    *why = "LpPool: p = " + std::to_string(g->lp) + " must be at least 1";
    return false;
  }
  g->include_pad = AttrInt(attrs, "count_include_pad", 0) != 0;
  g->N = xs[0];
  g->C = xs[1];
  std::string ap = AttrStr(attrs, "auto_pad", "NOTSET");
  bool ceil_mode = AttrInt(attrs, "ceil_mode", 0) != 0;
  for (int i = 0; i < 3; ++i) {
    bool real = i >= 3 - static_cast<int>(nd);
    size_t j = real ? i - (3 - nd) : 0;
    g->in[i] = real ? xs[2 + j] : 1;
    g->k[i] = real ? kernel[j] : 1;
    g->s[i] = real ? strides[j] : 1;
    g->d[i] = real ? dil[j] : 1;
    g->pb[i] = real ? pads[j] : 0;
    g->pe[i] = real ? pads[nd + j] : 0;
    if (g->k[i] <= 0 || g->s[i] <= 0 || g->d[i] <= 0 || g->pb[i] < 0 || g->pe[i] < 0) {
      *why = op + ": kernel, strides and dilations must be positive, pads not negative";
      return false;
    }
    int64_t ek = g->Ek(i);
    if (real && (ap == "SAME_UPPER" || ap == "SAME_LOWER")) {
      int64_t o = (g->in[i] + g->s[i] - 1) / g->s[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * g->s[i] + ek - g->in[i]);
      g->pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      g->pe[i] = total - g->pb[i];
    } else if (ap == "VALID") {
      g->pb[i] = g->pe[i] = 0;
    }
    int64_t span = g->in[i] + g->pb[i] + g->pe[i] - ek;
    int64_t o;
    if (span < 0) {
      o = 0;
    } else if (ceil_mode) {
      o = (span + g->s[i] - 1) / g->s[i] + 1;
      if ((o - 1) * g->s[i] >= g->in[i] + g->pb[i]) --o;
    } else {
      o = span / g->s[i] + 1;
    }
    g->out[i] = o;
  }
  g->D = g->in[0];
  g->H = g->in[1];
  g->W = g->in[2];
  g->OD = g->out[0];
  g->OH = g->out[1];
  g->OW = g->out[2];
  if (g->OD <= 0 || g->OH <= 0 || g->OW <= 0) {
    *why = op + ": the kernel does not fit the padded input (no output)";
    return false;
  }
  if (g->Ek(0) * g->Ek(1) * g->Ek(2) > kPatch) {
    *why = op + ": kernel window of " + std::to_string(g->Ek(0) * g->Ek(1) * g->Ek(2)) +
           " elements exceeds the " + std::to_string(kPatch) + " the strategy keeps in L1";
    return false;
  }
  return true;
}

/*! \brief How many taps of output position o (dim i) read inside [lo, hi) of the input coordinates.
 */
int64_t Count(const PoolGeom& g, int i, int64_t o, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t t = 0; t < g.k[i]; ++t) {
    int64_t x = o * g.s[i] - g.pb[i] + t * g.d[i];
    if (x >= lo && x < hi) ++n;
  }
  return n;
}

/*! \brief The same count as an expression of o (runtime rows): first/last valid tap. */
PrimExpr CountExpr(const PoolGeom& g, int i, PrimExpr o, int64_t lo, int64_t hi) {
  PrimExpr start = o * I32(g.s[i]) - I32(g.pb[i]);
  PrimExpr d = I32(g.d[i]);
  // first tap t with start + t*d >= lo: ceil((lo - start) / d), at least 0
  PrimExpr first = max(I32(0), floordiv(I32(lo) - start + d - I32(1), d));
  // last tap with start + t*d <= hi - 1: floor((hi - 1 - start) / d), at most k - 1
  PrimExpr last = min(I32(g.k[i] - 1), floordiv(I32(hi - 1) - start, d));
  return max(I32(0), last - first + I32(1));
}

/*! \brief A strided view of an L1 allocation with logical dims `dims`, unit dims dropped. */
TileView Strided(const Buffer& alloc, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, int64_t offset, const std::string& name) {
  return TileView{StridedView(alloc, dims, strides, offset, name), dims};
}

PrimFunc LowerPool(const OpCall& call) {
  PoolGeom g;
  std::string why;
  if (!Geometry(call.op_type, call.attrs, Shape(call.inputs[0]), &g, &why))
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): " << why;
  if (call.outputs.size() != 1)
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type
                               << "): the Indices output has no npu strategy";
  if (call.outputs[0]->dtype != call.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): output dtype "
                               << call.outputs[0]->dtype.str() << " is not the input's "
                               << call.inputs[0]->dtype.str();
  Params p = MakeParams(call);
  DataType f32 = DataType::Float(32);
  // the tiles: int8 for an int8 MaxPool, else f32
  const DataType tile_t =
      g.max && call.inputs[0]->dtype == DataType::Int(8) ? call.inputs[0]->dtype : f32;
  Buffer X = View(p.in[0], {g.N, g.C, g.D, g.H, g.W}, "X");
  Buffer Y = View(p.out[0], {g.N, g.C, g.OD, g.OH, g.OW}, "Y");
  int64_t ekd = g.Ek(0);  // input depth planes per output plane
  auto win = [&](int64_t tw) { return (tw - 1) * g.s[2] + g.Ek(2); };
  auto rin = [&](int64_t r) { return (r - 1) * g.s[1] + g.Ek(1); };
  // tile sizes: columns, then rows, then channels; smaller while the cores lack work
  int64_t TW = std::min<int64_t>(g.OW, 1024);
  while (TW > 1 && win(TW) * g.Ek(1) * ekd > kPatch) TW = (TW + 1) / 2;
  int64_t ncol = (g.OW + TW - 1) / TW;
  int64_t R = std::max<int64_t>(1, std::min(g.OH, kOut / TW));
  R = std::max<int64_t>(1, std::min(R, (kPatch / (win(TW) * ekd) - g.Ek(1)) / g.s[1] + 1));
  auto channels = [&](int64_t r) {
    return std::max<int64_t>(1,
                             std::min({g.C, kPatch / (ekd * rin(r) * win(TW)), kOut / (r * TW)}));
  };
  auto items = [&](int64_t r, int64_t cc) {
    return g.N * g.OD * ((g.C + cc - 1) / cc) * ((g.OH + r - 1) / r) * ncol;
  };
  // rows per tile: the fewest estimated cycles per core, counting a DMA per patch row
  // (200 cycles of DDR latency plus 64 B/cycle), the output DMA and a command per tap
  auto cost = [&](int64_t r, int64_t cc) {
    int64_t per_core = (items(r, cc) + call.cores - 1) / call.cores;
    int64_t row_bytes = cc * std::min(win(TW), g.W) * 4, out = cc * r * TW;
    return per_core * (ekd * rin(r) * (200 + row_bytes / 64) + 200 + out * 4 / 64 +
                       g.k[0] * g.k[1] * g.k[2] * (8 + out / 64));
  };
  int64_t best = -1;
  for (int64_t r = R; r >= 1; --r) {
    int64_t c = cost(r, channels(r));
    if (best < 0 || c < best) best = c, R = r;
  }
  int64_t CC = channels(R);
  while (items(R, CC) < call.cores && CC > 1) CC = (CC + 1) / 2;
  // rows shorter than a DMA beat (a small map's; loaded through a buffer of their own, below):
  // tiles of whole maps, so that the loads and the stores are one run of bytes per tile, at
  // least two a core (a tile's store overlaps the next one's load), the channels of a tile
  // those that leave the busiest core the fewest
  if (ekd == 1 && g.D == 1 && ncol == 1 && g.W * tile_t.lane_bytes() < 64 && channels(g.OH) > 1) {
    R = g.OH;
    const int64_t most = channels(R);
    auto busiest = [&](int64_t cc) { return (items(R, cc) + call.cores - 1) / call.cores * cc; };
    CC = most;
    for (int64_t cc = most; cc >= 1; --cc) {
      if (items(R, cc) < 2 * call.cores && cc > 1) continue;
      if (items(R, CC) < 2 * call.cores || busiest(cc) < busiest(CC)) CC = cc;
    }
  }
  // the average's divisors: uniform when every window counts the same
  int64_t lo[3], hi[3];
  for (int i = 0; i < 3; ++i) {
    lo[i] = g.include_pad ? -g.pb[i] : 0;
    hi[i] = g.include_pad ? g.in[i] + g.pe[i] : g.in[i];
  }
  bool uniform[3];
  for (int i = 0; i < 3; ++i) {
    uniform[i] = true;
    for (int64_t o = 0; o < g.out[i]; ++o)
      uniform[i] = uniform[i] && Count(g, i, o, lo[i], hi[i]) == g.k[i];
  }
  // padding never wins a max: -inf, or int8's least value
  PrimExpr fill = g.max ? F32(tile_t == f32 ? -INFINITY : -128.0) : F32(0.0);
  // pipelined: a core's items in two stages (ForEachItemPipelined), the loads of item i + 1
  // into one of two patches while the taps of item i read the other; else one after another
  // separable (a 2-D max whose windows overlap enough): each row's max over the window's
  // columns first, then the max of those over its rows (k_w + k_h tap passes, not k_w x k_h;
  // the max is exact in any order)
  auto separates = [&](int64_t r) {  // (the fewer tap elements: columns, then rows)
    return g.max && ekd == 1 && g.k[1] > 1 && g.k[2] > 1 &&
           g.k[2] * rin(r) + g.k[1] * r < g.k[1] * g.k[2] * r;
  };
  auto build = [&](bool pipelined, bool separable) {
    int64_t rotation = 0;
    Stmt body = OverCores(call.cores, [&](PrimExpr core) {
      std::vector<Stmt> groups;
      for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
        int64_t tw = std::min(TW, g.OW - ow0);
        int64_t pw = win(tw);
        int64_t iw0 = ow0 * g.s[2] - g.pb[2];
        int64_t vlo = std::max<int64_t>(0, iw0), vhi = std::min<int64_t>(g.W, iw0 + pw);
        for (const Seg& sr : Segs(g.OH, R)) {
          for (const Seg& sc : Segs(g.C, CC)) {
            int64_t count = g.N * g.OD * sr.count * sc.count;
            // 2-D max or average: one patch for the core's items, filled once. The loads
            // write the same columns every time, so the padding columns keep the fill; a row
            // tile at the image's top or bottom fills its padding rows again.
            const bool fill_once = !g.lp && ekd == 1 && g.D == 1 && vhi > vlo;
            const Buffer Pcore[2] = {Local({sc.size * ekd * rin(sr.size) * pw}, tile_t, "Patch"),
                                     Local({sc.size * ekd * rin(sr.size) * pw}, tile_t, "Patch1")};
            const Buffer Oslot[2] = {Local({sc.size * sr.size * tw}, tile_t, "Ot"),
                                     Local({sc.size * sr.size * tw}, tile_t, "Ot1")};
            // (pipelined, rows shorter than a DMA beat: each slot's stage buffer, [cc, ph, wv])
            const bool staged_slots =
                pipelined && ekd == 1 && vhi > vlo && (vhi - vlo) * tile_t.lane_bytes() < 64;
            const Buffer Sslot[2] = {
                Local({sc.size * rin(sr.size) * std::max<int64_t>(1, vhi - vlo)}, tile_t, "Stage"),
                Local({sc.size * rin(sr.size) * std::max<int64_t>(1, vhi - vlo)}, tile_t,
                      "Stage1")};
            // part 0: the whole item; 1: its loads; 2: its taps and store (pipelined: slot's
            // buffers, its loads signal event 2 + slot and its store 4 + slot)
            auto item = [&, tw, pw, iw0, vlo, vhi](PrimExpr t, int64_t slot, int part) -> Stmt {
              int64_t r = sr.size, cc = sc.size, ph = rin(r);
              const int64_t ev_load = part == 0 ? 0 : 2 + slot;
              const int64_t ev_store = part == 0 ? 1 : 4 + slot;
              PrimExpr ci = floormod(t, I32(sc.count));
              PrimExpr ri = floormod(floordiv(t, I32(sc.count)), I32(sr.count));
              PrimExpr od = floormod(floordiv(t, I32(sc.count * sr.count)), I32(g.OD));
              PrimExpr n = floordiv(t, I32(sc.count * sr.count * g.OD));
              PrimExpr c0 = I32(sc.base) + ci * I32(CC);
              PrimExpr oh0 = I32(sr.base) + ri * I32(R);
              Buffer Pa = fill_once || part != 0 ? Pcore[slot]
                                                 : Local({cc * ekd * ph * pw}, tile_t, "Patch");
              Buffer Oa = part != 0 ? Oslot[slot] : Local({cc * r * tw}, tile_t, "Ot");
              TileView Pv = MakeView(Pa, {cc, ekd, ph, pw}, "Pv");
              TileView O = MakeView(Oa, {cc, r, tw}, "Ov");
              std::vector<Stmt> s;
              // the fill and the loads after it are one in-order DMA queue: no wait between
              if (part != 2 && !fill_once)
                s.push_back(Intrin("tile.dma_fill", {Pv.All(), fill, I32(ev_load)}));
              if (part != 1 && vhi <= vlo) s.push_back(Intrin("tile.wait", {I32(ev_load)}));
              const int64_t wv = vhi - vlo;
              const bool stage = ekd == 1 && wv * tile_t.lane_bytes() < 64;
              // the loads as `what` asks: 0 all of them; staged rows pipelined, 1 their DMAs
              // into the slot's stage buffer (and the fills), 2 their copies into the patch
              auto loads = [&](int what) -> Stmt {
                Buffer P4 = View(Pa, {cc, ekd, ph, pw}, "P4");
                // rows [x_row, x_row + nrows) of the channels into the patch from its row
                // `row`: one DMA; rows shorter than a DMA beat (64 bytes: a small map's) go
                // whole into a buffer of their own (one run of bytes per channel, or one for
                // all when the rows are all of them), then one vector copy into the patch:
                // into the patch directly, each row of 14 int8 took a beat of its own
                auto load_rows = [&](int64_t row, PrimExpr x_row, int64_t nrows) -> Stmt {
                  BufferRegion from =
                      Region(X, {n, c0, I32(0), x_row, I32(vlo)}, {1, cc, 1, nrows, wv});
                  if (!stage)
                    return Intrin(
                        "tile.dma_copy",
                        {Region(P4, {I32(0), I32(0), I32(row), I32(vlo - iw0)}, {cc, 1, nrows, wv}),
                         from, I32(ev_load)});
                  // the rows into a stage buffer St of st_rows rows, at its row st_row; from
                  // there into the patch
                  auto to_stage = [&](const Buffer& St, int64_t st_rows, int64_t st_row,
                                      int64_t event) {
                    return Intrin("tile.dma_copy", {Region(View(St, {cc, 1, st_rows, wv}, "St4"),
                                                           {I32(0), I32(0), I32(st_row), I32(0)},
                                                           {cc, 1, nrows, wv}),
                                                    from, I32(event)});
                  };
                  auto from_stage = [&](const Buffer& St, int64_t st_rows, int64_t st_row) {
                    return CopyNest(
                        StridedView(Pa, {cc, nrows, wv}, {ph * pw, pw, 1}, row * pw + (vlo - iw0),
                                    "Pin"),
                        StridedView(St, {cc, nrows, wv}, {st_rows * wv, wv, 1}, st_row * wv, "Sv"),
                        {cc, nrows, wv});
                  };
                  // (the slot's stage buffer, [cc, ph, wv]: the rows at `row`)
                  if (what == 1) return to_stage(Sslot[slot], ph, row, ev_load);
                  if (what == 2) return from_stage(Sslot[slot], ph, row);
                  Buffer St = Local({cc * nrows * wv}, tile_t, "Stage");
                  return Allocate(St, Seq({to_stage(St, nrows, 0, 0), Intrin("tile.wait", {I32(0)}),
                                           from_stage(St, nrows, 0)}));
                };
                // every row inside the image (2-D): one DMA of the block, not one per row
                // (each DMA pays the DDR latency)
                PrimExpr ih0 = oh0 * I32(g.s[1]) - I32(g.pb[1]);
                Stmt block = load_rows(0, ih0, ph);
                // (never staged: nothing to copy)
                Stmt rows = what == 2 ? Evaluate(I32(0)) : Loop("z", ekd, [&](PrimExpr z) {
                  PrimExpr id = od * I32(g.s[0]) - I32(g.pb[0]) + z;
                  return Loop("rr", ph, [&](PrimExpr rr) {
                    PrimExpr ih = oh0 * I32(g.s[1]) - I32(g.pb[1]) + rr;
                    return IfThenElse(
                        id >= I32(0) && id < I32(g.D) && ih >= I32(0) && ih < I32(g.H),
                        Intrin("tile.dma_copy",
                               {Region(P4, {I32(0), z, rr, I32(vlo - iw0)}, {cc, 1, 1, vhi - vlo}),
                                Region(X, {n, c0, id, ih, I32(vlo)}, {1, cc, 1, 1, vhi - vlo}),
                                I32(ev_load)}));
                  });
                });
                // the first and last row tiles: their valid rows, known here, in one DMA
                // (after filling their padding rows, which an earlier item wrote)
                auto edge = [&](int64_t tile_row) -> Stmt {
                  int64_t top = (sr.base + tile_row * R) * g.s[1] - g.pb[1];
                  int64_t lo = std::max<int64_t>(0, top), hi = std::min(g.H, top + ph);
                  std::vector<Stmt> e;
                  auto pad_rows = [&](int64_t from, int64_t to) {
                    if (fill_once && to > from && what != 2)
                      e.push_back(Intrin(
                          "tile.dma_fill",
                          {Region(P4, {I32(0), I32(0), I32(from), I32(0)}, {cc, 1, to - from, pw}),
                           fill, I32(ev_load)}));
                  };
                  pad_rows(0, std::min(ph, std::max<int64_t>(0, lo - top)));
                  pad_rows(std::max<int64_t>(0, hi - top), ph);
                  if (hi > lo) e.push_back(load_rows(lo - top, I32(lo), hi - lo));
                  return e.empty() ? Evaluate(I32(0)) : Seq(e);
                };
                // any other tile: filled whole, then its rows inside the image
                if (fill_once && what != 2)
                  rows = Seq({Intrin("tile.dma_fill", {Pv.All(), fill, I32(ev_load)}), rows});
                Stmt load = rows;
                if (ekd == 1 && g.D == 1) {
                  load = IfThenElse(eq(ri, I32(sr.count - 1)), edge(sr.count - 1), rows);
                  load = IfThenElse(eq(ri, I32(0)), edge(0), load);
                  load = IfThenElse(ih0 >= I32(0) && ih0 + I32(ph) <= I32(g.H), block, load);
                }
                return load;
              };
              const bool split = part != 0 && stage;  // staged rows copied in part 2
              if (part != 2 && vhi > vlo) s.push_back(loads(split ? 1 : 0));
              if (part == 1) return Seq(s);
              if (vhi > vlo) s.push_back(Intrin("tile.wait", {I32(ev_load)}));
              if (split && vhi > vlo) s.push_back(loads(2));
              auto apply = [&](const TileView& v, const char* fn) {
                s.push_back(MapTile(
                    v, [fn](PrimExpr x, const std::vector<PrimExpr>&) { return Math(fn, x); }));
              };
              auto scale = [&](const TileView& v, double k) {
                s.push_back(MapTile(
                    v, [k](PrimExpr x, const std::vector<PrimExpr>&) { return x * F32Exact(k); }));
              };
              if (g.lp) {  // |x|^p in place: x * x; |x| = its square root; other p: exp(p log|x|)
                s.push_back(
                    MapTile(Pv, [](PrimExpr v, const std::vector<PrimExpr>&) { return v * v; }));
                if (g.lp != 2) apply(Pv, "tir.sqrt");
                if (g.lp > 2)
                  apply(Pv, "tir.log"), scale(Pv, static_cast<double>(g.lp)), apply(Pv, "tir.exp");
              }
              bool first = true;
              s.push_back(Intrin("tile.wait", {I32(ev_store)}));  // the last store has left O
              const bool rows_first = separable && separates(r);
              Buffer rowmax;
              if (rows_first) {
                rowmax = Local({cc * ph * tw}, tile_t, "RowMax");
                TileView M = MakeView(rowmax, {cc, ph, tw}, "Mv");
                for (int64_t kw = 0; kw < g.k[2]; ++kw) {  // M[c, j, x] = max over kw
                  TileView tap =
                      Strided(Pa, {cc, ph, tw}, {ph * pw, pw, g.s[2]}, kw * g.d[2], "RowTap");
                  s.push_back(Nest(M.dims, [&](const std::vector<PrimExpr>& i) {
                    PrimExpr v = tap.Load(i);
                    return M.Store(kw == 0 ? v : max(M.Load(i), v), i);
                  }));
                }
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {  // O[c, y, x] = max over kh of M
                  TileView tap = Strided(rowmax, {cc, r, tw}, {ph * tw, g.s[1] * tw, 1},
                                         kh * g.d[1] * tw, "ColTap");
                  s.push_back(Nest(O.dims, [&](const std::vector<PrimExpr>& i) {
                    PrimExpr v = tap.Load(i);
                    return O.Store(kh == 0 ? v : max(O.Load(i), v), i);
                  }));
                }
              }
              for (int64_t kd = 0; kd < (rows_first ? 0 : g.k[0]); ++kd) {
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    TileView tap =
                        Strided(Pa, {cc, r, tw}, {ekd * ph * pw, g.s[1] * pw, g.s[2]},
                                (kd * g.d[0] * ph + kh * g.d[1]) * pw + kw * g.d[2], "Tap");
                    s.push_back(Nest(O.dims, [&](const std::vector<PrimExpr>& i) {
                      PrimExpr v = tap.Load(i);
                      if (!first) v = g.max ? max(O.Load(i), v) : O.Load(i) + v;
                      return O.Store(v, i);
                    }));
                    first = false;
                  }
                }
              }
              std::vector<Buffer> extra;
              if (rows_first) extra.push_back(rowmax);
              if (g.lp == 2) apply(O, "tir.sqrt");  // the p-th root
              if (g.lp > 2)
                apply(O, "tir.log"), scale(O, 1.0 / static_cast<double>(g.lp)), apply(O, "tir.exp");
              if (!g.max && !g.lp) {
                if (uniform[0] && uniform[1] && uniform[2]) {
                  s.push_back(MapTile(O, [&](PrimExpr v, const std::vector<PrimExpr>&) {
                    return v * F32Exact(1.0 / static_cast<double>(g.k[0] * g.k[1] * g.k[2]));
                  }));
                } else {
                  Buffer Fh = Local({r}, f32, "Fh"), Fw = Local({tw}, f32, "Fw");
                  extra = {Fh, Fw};
                  TileView Fhv = MakeView(Fh, {r}, "Fhv"), Fwv = MakeView(Fw, {tw}, "Fwv");
                  s.push_back(Loop("y", r, [&](PrimExpr y) {
                    // the depth's count rides on the rows'
                    PrimExpr cnt =
                        CountExpr(g, 1, oh0 + y, lo[1], hi[1]) * CountExpr(g, 0, od, lo[0], hi[0]);
                    return Fhv.Store(F32(1.0) / cast(f32, cnt), {y});
                  }));
                  std::vector<Stmt> cols;
                  for (int64_t x = 0; x < tw; ++x)
                    cols.push_back(Fwv.Store(
                        F32(1.0 / static_cast<double>(Count(g, 2, ow0 + x, lo[2], hi[2]))),
                        {I32(x)}));
                  s.push_back(Seq(cols));
                  s.push_back(MapTile(O, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                    return v * Fhv.Load({i[1]});
                  }));
                  s.push_back(MapTile(O, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                    return v * Fwv.Load({i[2]});
                  }));
                }
              }
              // the store runs while the next item loads
              s.push_back(
                  Intrin("tile.dma_copy", {Region(Y, {n, c0, od, oh0, I32(ow0)}, {1, cc, 1, r, tw}),
                                           O.All(), I32(ev_store)}));
              Stmt res = Seq(s);
              if (part == 0) res = Allocate(Oa, res);
              if (part == 0 && !fill_once) res = Allocate(Pa, res);
              for (const Buffer& b : extra) res = Allocate(b, res);
              return res;
            };
            Stmt each = pipelined ? ForEachItemPipelined(
                                        core, call.cores, count, &rotation, "t",
                                        [&](PrimExpr t, int64_t slot) { return item(t, slot, 1); },
                                        [&](PrimExpr t, int64_t slot) { return item(t, slot, 2); })
                                  : ForEachItem(core, call.cores, count, &rotation, "t",
                                                [&](PrimExpr t) { return item(t, 0, 0); });
            if (fill_once) {
              std::vector<Stmt> fills;
              for (int64_t k = 0; k < (pipelined ? 2 : 1); ++k) {
                TileView whole = MakeView(Pcore[k], {sc.size, ekd, rin(sr.size), pw}, "Pv");
                fills.push_back(Intrin("tile.dma_fill", {whole.All(), fill, I32(0)}));
              }
              fills.push_back(each);
              each = Seq(fills);
            }
            for (int64_t k = pipelined ? 1 : 0; k >= 0; --k) {
              if (pipelined) each = Allocate(Oslot[k], each);
              if (staged_slots) each = Allocate(Sslot[k], each);
              if (fill_once || pipelined) each = Allocate(Pcore[k], each);
              if (!pipelined) break;
            }
            groups.push_back(each);
            // the next group's buffers may take these addresses: the stores must be out first
            groups.push_back(Intrin("tile.wait", {I32(pipelined ? 4 : 1)}));
            if (pipelined) groups.push_back(Intrin("tile.wait", {I32(5)}));
          }
        }
      }
      return Seq(groups);
    });
    return MakeFunc(call, p, body);
  };
  // The plan: the tiles above one after another, or pipelined with the channels of a tile
  // halved or quartered (more items, each core's loads of one beside the taps of the one
  // before): the fastest the cost model finds among those whose two slots fit L1
  // (tc_pool_pipeline 0 or 1 overrides it: never pipelined, or the fastest pipelined)
  const int64_t want = AttrInt(call.attrs, "tc_pool_pipeline", -1);
  const int64_t cc_tiles = CC;
  PrimFunc chosen = build(false, false);
  if (want == 0) return chosen;
  const int cores = static_cast<int>(call.cores);
  int64_t best_cycles = -1;
  if (want != 1) {
    try {
      best_cycles = EstimateStrategy(chosen, call.l1_bytes, cores).cycles;
    } catch (const ffi::Error&) {
      return chosen;  // (not priced: the plan as it always was)
    }
  }
  // (split 0: the plain plan separable)
  for (int64_t split : {0, 1, 2, 4}) {
    if (split == 0 && (want == 1 || !separates(R))) continue;
    CC = std::max<int64_t>(
        1, (cc_tiles + std::max<int64_t>(split, 1) - 1) / std::max<int64_t>(split, 1));
    if (split > 1 && CC == std::max<int64_t>(1, (cc_tiles + split / 2 - 1) / (split / 2)))
      continue;  // (as many channels as the split before)
    PrimFunc f = build(split > 0, true);
    if (NestedLocalBytes(f->body) > call.l1_bytes - (int64_t{8} << 10)) continue;
    int64_t cycles = 0;
    try {
      cycles = EstimateStrategy(f, call.l1_bytes, cores).cycles;
    } catch (const ffi::Error&) {
      continue;  // the two slots do not fit once the buffers are placed in banks
    }
    if (best_cycles < 0 || cycles < best_cycles) chosen = f, best_cycles = cycles;
  }
  return chosen;
}

std::string CheckPool(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  if (ins.size() != 1 || !ins[0].defined()) return op + ": expects one input";
  // MaxPool also between int8 Convs (docs/precision.md, "int8 between ops"): the max of
  // quantised values is the quantised max
  std::vector<DataType> types{DataType::Float(32)};
  if (op == "MaxPool") types.push_back(DataType::Int(8));
  std::string why = CheckDTypes(ins, types, op);
  if (!why.empty()) return why;
  if (AttrInt(attrs, "storage_order", 0) != 0)
    return op + ": storage_order (of the Indices output) has no npu strategy";
  PoolGeom g;
  if (!Geometry(op, attrs, Shape(ins[0]), &g, &why)) return why;
  return "";
}

std::string CheckGlobal(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& ins) {
  if (ins.size() != 1 || !ins[0].defined()) return op + ": expects one input";
  // also an int8 value with its code (docs/precision.md, "int8 between ops"): the result
  // is float32, dequantised
  std::string why = CheckDTypes(ins, {DataType::Float(32), DataType::Int(8)}, op);
  if (!why.empty()) return why;
  const bool has_scale = HasAttr(attrs, "tc_x_scale");
  if ((ins[0]->dtype == DataType::Int(8)) != has_scale)
    return op + ": an int8 input goes with tc_x_scale (its code), a float32 one without";
  if (has_scale) {
    why = CheckInt8Code(attrs, "tc_x_scale", "tc_x_zero_point", op);
    if (!why.empty()) return why;
  }
  if (ins[0]->shape.size() < 2) return op + ": input of rank < 2";
  return "";
}

PrimFunc LowerGlobal(const OpCall& call) {
  OpCall c = call;
  Array<Any> axes;
  for (size_t d = 2; d < call.inputs[0]->shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  Map<String, Any> attrs;
  attrs.Set("axes", axes);
  attrs.Set("keepdims", int64_t{1});
  attrs.Set("noop_with_empty_axes", int64_t{1});  // (N, C) alone: a copy
  attrs.Set("_opset", int64_t{18});
  // (a layer group's; an override; an int8 input's code)
  for (const char* kept :
       {"tc_in_l2", "tc_reduce_pipeline", "tc_reduce_matrix", "tc_x_scale", "tc_x_zero_point"})
    if (auto v = call.attrs.Get(kept)) attrs.Set(kept, *v);
  c.attrs = attrs;
  c.data_inputs = 1;
  return LowerReduction(c, call.op_type == "GlobalMaxPool" ? "ReduceMax" : "ReduceMean");
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    RegisterStrategy(op, Strategy{detail::CheckPool, detail::LowerPool,
                                  [](const OpCall&, int) { return std::string("onnx"); }});
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    RegisterStrategy(op, Strategy{detail::CheckGlobal, detail::LowerGlobal,
                                  [](const OpCall&, int) { return std::string("onnx"); }});
  }
});

}  // namespace compiler
}  // namespace tilecore
