/*
 * src/compiler/strategy_norm.cc — LayerNormalization (axis, epsilon, Scale, optional
 * B; the Mean and InvStdDev outputs too), RMSNormalization (the same without the
 * mean), GroupNormalization (scale and bias per channel, or per group before opset
 * 21), InstanceNormalization, BatchNormalization in inference mode, and
 * MeanVarianceNormalization (when its axes are the trailing dims).
 *
 * The input is seen as rows [A, R] (rows_util.h with B = 1): LayerNormalization
 * normalises over the dims from `axis` on, InstanceNormalization over the spatial
 * dims of each (n, c), GroupNormalization over each (n, group) (chunks of whole
 * channels when a group does not fit one tile); BatchNormalization has rows (n, c)
 * too but fixed statistics.
 * Per tile of rows: the mean is a tile.vec_redsum times 1/R, the centred tile a
 * vec_sub with the mean broadcast, the variance the vec_redsum of its square
 * (two-pass, as the reference), 1/sqrt(var + eps) a vec_adds, vec_sqrt and
 * vec_recip. LayerNormalization then multiplies by the inverse deviation (per row)
 * and by Scale and adds B (per column, loaded once per tile); the per-channel ops
 * fold everything into y = x * k[row] + b[row], whose per-row values are gathered from
 * the channel vectors in front-end code; a BatchNormalization whose tiles are
 * consecutive channels of one image reads them in place, its tiles pipelined
 * (BatchNormTiles).
 * A row that does not fit one tile is
 * read in chunks: three passes (mean, variance, output), BatchNormalization one.
 * With `tc_skip` (a residual Add fused by the driver) LayerNormalization normalises
 * X + S, S its input 3: each load of X loads S beside it and adds it in one vector pass.
 * A LayerNormalization or RMSNormalization with Y alone and rows enough for several tiles
 * per core pipelines its tiles (LowerRowNormPipelined). float32.
 * With `tc_activation` Relu or Clip (the node after it, fused by the driver) BatchNormalization
 * applies it to each tile before the store: the same max and min the separate node would.
 * With `tc_q_scale` (and `tc_q_zero_point`, set by the driver when an int8 matrix op reads
 * Y) the pipelined form has a second output, Y in int8 as that reader would quantise it on
 * load (QuantiseSteps): the reader loads a quarter of the bytes and quantises nothing; with
 * `tc_q_alone` too that int8 Y is its only output (nothing reads Y in f32: it is not stored).
 * With `tc_x_scale` (and `tc_x_zero_point`, set by Int8Edges when a Conv's int8 output reaches
 * it, through a Transpose: ConvNeXt's) a LayerNormalization's X is int8, read as the codes q of
 * (q - zero point) x scale: LayerNorm is shift- and scale-invariant, so it normalises f32(q)
 * (exact) with epsilon / scale^2 (f32): the pipelined form loads a quarter of the bytes and
 * converts them in one vector pass.
 */
#include <algorithm>
#include <cmath>
#include <set>

#include "fused_epilogue.h"
#include "kernel_util.h"
#include "matrix_precision.h"
#include "plan_choice.h"
#include "rows_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace rows;  // NOLINT(build/namespaces)

PrimExpr Math(const char* op, PrimExpr x) { return call(op, {x}); }

struct NormGeom {
  int64_t A, R, C;  // rows, row length, channels (per-channel ops)
  int64_t G = 1, S = 1,
          P = 0;  // GroupNormalization: groups, spatial size, scale/bias length (C or G)
};

bool Geometry(const std::string& op, const Map<String, Any>& attrs,
              const std::vector<TensorSpec>& ins, NormGeom* g, std::string* why) {
  auto s = Shape(ins[0]);
  int64_t rank = static_cast<int64_t>(s.size());
  if (op == "MeanVarianceNormalization") {
    // over `axes`: the reduced dims (size-1 dims aside) must be the trailing ones
    std::set<int64_t> red;
    for (int64_t a : AttrInts(attrs, "axes", {0, 2, 3})) {
      int64_t ax;
      if (!NormAxis(a, rank, &ax)) {
        *why =
            op + ": axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
        return false;
      }
      red.insert(ax);
    }
    g->A = g->R = 1;
    g->C = 0;
    bool in_red = false;
    for (int64_t d = 0; d < rank; ++d) {
      if (s[d] == 1) continue;
      bool r = red.count(d) != 0;
      if (!r && in_red) {
        *why = op + ": the normalised axes are not the trailing ones (after dropping size-1 dims)";
        return false;
      }
      in_red = in_red || r;
      (r ? g->R : g->A) *= s[d];
    }
    return true;
  }
  if (op == "LayerNormalization" || op == "RMSNormalization") {
    int64_t axis = AttrInt(attrs, "axis", -1), ax;
    if (rank == 0 || !NormAxis(axis, rank, &ax)) {
      *why =
          op + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank);
      return false;
    }
    g->A = Prod(s, 0, ax);
    g->R = Prod(s, ax, s.size());
    g->C = 0;
    for (size_t i = 1; i < std::min<size_t>(ins.size(), 3); ++i) {  // input 3: tc_skip's S
      if (ins[i].defined() && ins[i]->numel() != g->R) {
        *why = op + ": " + (i == 1 ? "Scale" : "B") + " of " + std::to_string(ins[i]->numel()) +
               " elements, not the normalised " + std::to_string(g->R) +
               " (broadcast parameters have no npu strategy)";
        return false;
      }
    }
    return true;
  }
  if (rank < 2) {
    *why = op + ": input of rank < 2";
    return false;
  }
  g->C = s[1];
  g->A = s[0] * s[1];
  g->R = Prod(s, 2, s.size());
  if (op == "GroupNormalization") {
    g->G = AttrInt(attrs, "num_groups", 0);
    if (g->G <= 0 || g->C % g->G != 0) {
      *why = op + ": " + std::to_string(g->C) +
             " channels do not split into num_groups = " + std::to_string(g->G);
      return false;
    }
    g->S = g->R;
    g->A = s[0] * g->G;
    g->R = (g->C / g->G) * g->S;
    g->P = ins[1]->numel();
    for (size_t i = 1; i < 3; ++i) {
      if (ins[i]->shape.size() != 1 || (ins[i]->shape[0] != g->C && ins[i]->shape[0] != g->G) ||
          ins[i]->shape[0] != g->P) {
        *why = op +
               ": scale and bias must hold one value per channel (or, before opset 21, per group)";
        return false;
      }
    }
    if (g->S > kRowTile && g->R > kRowTile) {
      *why = op + ": a channel of more than " + std::to_string(kRowTile) +
             " elements in a group that does not fit one tile";
      return false;
    }
    if (g->C > kRowTile) {
      *why = op + ": more than " + std::to_string(kRowTile) + " channels";
      return false;
    }
    return true;
  }
  for (size_t i = 1; i < ins.size(); ++i) {
    if (!ins[i].defined() || ins[i]->shape.size() != 1 || ins[i]->shape[0] != g->C) {
      *why = op + ": input " + std::to_string(i) + " must hold one value per channel";
      return false;
    }
  }
  if (g->C > kRowTile) {
    *why = op + ": more than " + std::to_string(kRowTile) + " channels";
    return false;
  }
  return true;
}

std::string CheckNorm(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  bool ln = op == "LayerNormalization";
  size_t need = ln || op == "RMSNormalization"
                    ? 2
                    : (op == "InstanceNormalization" || op == "GroupNormalization" ? 3 : 5);
  if (op == "MeanVarianceNormalization") need = 1;
  // tc_skip: a LayerNormalization of X + S, S appended as input 3 (a residual Add fused)
  const bool skip = ln && AttrInt(attrs, "tc_skip", 0) != 0;
  if (skip) {
    if (ins.size() != 4 || !ins[3].defined() || !ins[0].defined() ||
        ins[3]->shape.size() != ins[0]->shape.size() || ins[3]->numel() != ins[0]->numel())
      return op + ": tc_skip needs input 3 of X's shape";
    for (size_t d = 0; d < ins[0]->shape.size(); ++d)
      if (ins[3]->shape[d] != ins[0]->shape[d]) return op + ": tc_skip needs input 3 of X's shape";
  } else if (ins.size() < need || (!ln && ins.size() != need) || ins.size() > need + 1) {
    return op + ": unexpected number of inputs " + std::to_string(ins.size());
  }
  for (size_t i = 0; i < need; ++i)
    if (!ins[i].defined()) return op + ": input " + std::to_string(i) + " is missing";
  // an int8 X: a LayerNormalization's, read as the codes of tc_x_scale (header)
  const bool x_i8 = ins[0]->dtype == DataType::Int(8);
  std::string why = CheckInt8Input(attrs, ins[0], op);
  if (!why.empty()) return why;
  if (x_i8) {
    if (!ln || skip)
      return op + ": an int8 X (tc_x_scale) is a LayerNormalization's, without tc_skip";
    const double s = AttrFloat(attrs, "tc_x_scale", 1.0);
    if (!std::isfinite(static_cast<float>(AttrFloat(attrs, "epsilon", 1e-5) / (s * s))))
      return op + ": epsilon / tc_x_scale^2 is beyond float32";
    std::vector<TensorSpec> rest(ins.begin() + 1, ins.end());
    why = CheckDTypes(rest, {DataType::Float(32)}, op);
  } else {
    why = CheckDTypes(ins, {DataType::Float(32)}, op);
  }
  if (!why.empty()) return why;
  if (HasAttr(attrs, "tc_q_scale")) {
    double qs = AttrFloat(attrs, "tc_q_scale", 0);
    int64_t zp = AttrInt(attrs, "tc_q_zero_point", 0);
    if ((op != "LayerNormalization" && op != "RMSNormalization") || !(qs > 0) || !std::isfinite(qs))
      return op +
             ": tc_q_scale needs a LayerNormalization or RMSNormalization and a positive scale";
    if (zp < -128 || zp > 127) return op + ": tc_q_zero_point is outside int8";
  }
  if (AttrInt(attrs, "tc_q_alone", 0) != 0 && !HasAttr(attrs, "tc_q_scale"))
    return op + ": tc_q_alone needs tc_q_scale";
  if (op == "BatchNormalization" && AttrInt(attrs, "training_mode", 0) != 0)
    return "BatchNormalization: training mode has no npu strategy";
  if (HasAttr(attrs, "tc_activation")) {  // (the driver's fusion: docs/compiler.md)
    FusedEpilogue e = GetFusedEpilogue(attrs, ins.size());
    if (op != "BatchNormalization" || (e.activation != "Relu" && e.activation != "Clip"))
      return op + ": tc_activation `" + e.activation +
             "` (a BatchNormalization takes Relu or Clip after it)";
    std::vector<TensorSpec> operands = ins;
    std::string bad = CheckFusedEpilogue(op, attrs, &operands);
    if (!bad.empty()) return bad;
  }
  if (op != "InstanceNormalization" && op != "BatchNormalization" &&
      AttrInt(attrs, "stash_type", 1) != 1)
    return op + ": stash_type other than float32 has no npu strategy";
  NormGeom g;
  if (!Geometry(op, attrs, ins, &g, &why)) return why;
  // (the pipelined form takes it: every core two tiles of whole rows, on any target)
  if (x_i8 && (g.R > kRowTile / 2 || g.A < 2 * int64_t(arch::tc1::kMaxCores)))
    return op + ": an int8 X needs rows of at most " + std::to_string(kRowTile / 2) + " and " +
           std::to_string(2 * arch::tc1::kMaxCores) + " rows or more";
  return "";
}

/*!
 * \brief The rows of a LayerNormalization or RMSNormalization in tiles of `ta` whole rows,
 * several per core, software-pipelined in three stages over two slots: the load of tile
 * i + 1 (X, and S with tc_skip), the vector passes of tile i and the store of tile i - 1
 * overlap, so a core's time is its slowest engine's rather than their sum. Scale and B
 * are loaded once per core, on the DMA-out engine beside the first tile's load. When the
 * cores have equal shares of two tiles or more, a core's first tile goes in two halves.
 */
PrimFunc LowerRowNormPipelined(const OpCall& call, int64_t A, int64_t R, int64_t ta) {
  const bool rms = call.op_type == "RMSNormalization";
  const bool skip = !rms && AttrInt(call.attrs, "tc_skip", 0) != 0;
  const bool has_bias = call.inputs.size() > 2 && call.inputs[2].defined();
  const bool quant = HasAttr(call.attrs, "tc_q_scale");  // output 1: Y quantised
  // tc_q_alone: Y quantised is the only output (no reader takes Y in f32): Y is not stored
  const bool q_alone = quant && AttrInt(call.attrs, "tc_q_alone", 0) != 0;
  const double q_inv = InverseScale(AttrFloat(call.attrs, "tc_q_scale", 1.0));
  const int64_t q_zp = AttrInt(call.attrs, "tc_q_zero_point", 0);
  Params p = MakeParams(call);
  DataType f32 = DataType::Float(32);
  // an int8 X: its codes, normalised with epsilon / scale^2 (header)
  const bool x_i8 = call.inputs[0]->dtype == DataType::Int(8);
  const double x_scale = AttrFloat(call.attrs, "tc_x_scale", 1.0);
  Buffer X = View(p.in[0], {A, R}, "X");
  Buffer Y = q_alone ? Buffer() : View(p.out[0], {A, R}, "Y");
  Buffer Yq = quant ? View(p.out[q_alone ? 0 : 1], {A, R}, "Yq") : Buffer();
  Buffer Sk = skip ? View(p.in[3], {A, R}, "Skip") : Buffer();
  Buffer Sc = View(p.in[1], {R}, "Scale");
  Buffer Bi = has_bias ? View(p.in[2], {R}, "Bias") : Buffer();
  const double epsilon = AttrFloat(call.attrs, "epsilon", 1e-5) / (x_i8 ? x_scale * x_scale : 1.0);
  constexpr int kParams = 4;  // the DMA event of Scale and B; 0-1 load the slots, 2-3 store
  int64_t rotation = 0;
  // every core has the same number of tiles, two or more, of an even number of rows: its
  // first tile goes in halves (below)
  const int64_t tiles = A / ta;
  const bool lead = ta % 2 == 0 && tiles % call.cores == 0 && tiles >= 2 * call.cores;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Ga = Local({R}, f32, "Gamma"), Ba = Local({R}, f32, "Beta");
    Buffer Xs[2], Es[2], Ys[2], Ms[2], Vs[2], Qs[2], Cs[2];
    for (int s = 0; s < 2; ++s) {
      std::string k = std::to_string(s);
      Xs[s] = Local({ta * R}, f32, "Xt" + k), Es[s] = Local({ta * R}, f32, "Et" + k);
      if (x_i8) Cs[s] = Local({ta * R}, DataType::Int(8), "Ct" + k);  // the codes as loaded
      Ys[s] = Local({ta * R}, f32, "Yt" + k);
      if (quant) Qs[s] = Local({ta * R}, DataType::Int(8), "Qt" + k);
      Ms[s] = Local({ta}, f32, "Mean" + k), Vs[s] = Local({ta}, f32, "Inv" + k);
    }
    TileView Gv = MakeView(Ga, {R}, "Gv"), Bv = MakeView(Ba, {R}, "Bv");
    auto rows = [&](PrimExpr t) { return t * I32(ta); };
    // rows [r0, r0 + n) of X (and S) into slot s; the slot's n rows normalised; stored
    auto load_rows = [&](PrimExpr r0, int64_t n, int64_t s) {
      // (the DMA waits for the vector passes of the tile before that read the slot)
      std::vector<Stmt> c{Intrin("tile.dma_copy", {Region(x_i8 ? Cs[s] : Xs[s], {I32(0)}, {n * R}),
                                                   Region(X, {r0, I32(0)}, {n, R}), I32(s)})};
      if (skip)
        c.push_back(Intrin("tile.dma_copy", {Region(Es[s], {I32(0)}, {n * R}),
                                             Region(Sk, {r0, I32(0)}, {n, R}), I32(s)}));
      return Seq(c);
    };
    auto compute_rows = [&](int64_t n, int64_t s, bool slot_stored) {
      TileView x = MakeView(Xs[s], {n, R, 1}, "Xv"), e = MakeView(Es[s], {n, R, 1}, "Ev");
      TileView y = MakeView(Ys[s], {n, R, 1}, "Yv");
      TileView M = MakeView(Ms[s], {n, 1}, "Mv"), V = MakeView(Vs[s], {n, 1}, "Vv");
      // the result goes to a buffer of its own, once the slot's last store has read it (the
      // next tile's load overwrites X while this one's store may still be waiting); Scale
      // and B are first used there: the statistics need neither (each a DDR latency). The
      // first tile's halves (slot_stored false) have no store before them.
      Stmt before_y =
          slot_stored
              ? Seq({Intrin("tile.wait", {I32(2 + s)}), Intrin("tile.wait", {I32(kParams)})})
              : Intrin("tile.wait", {I32(kParams)});
      std::vector<Stmt> c{Intrin("tile.wait", {I32(s)})};
      if (x_i8)  // the codes in f32 (exact)
        c.push_back(Nest({n * R}, [&](const std::vector<PrimExpr>& i) {
          return BufferStore(Xs[s], Cast(f32, BufferLoad(Cs[s], {i[0]})), {i[0]});
        }));
      c.push_back(LayerNormRows(x, e, y, M, V, Gv, has_bias ? Bv : TileView{}, rms, skip, epsilon,
                                quant ? Qs[s] : Buffer(), q_inv, q_zp, before_y));
      return Seq(c);
    };
    auto store_rows = [&](PrimExpr r0, int64_t n, int64_t s) {
      Stmt q = quant ? Intrin("tile.dma_copy", {Region(Yq, {r0, I32(0)}, {n, R}),
                                                Region(Qs[s], {I32(0)}, {n * R}), I32(2 + s)})
                     : Stmt();
      if (q_alone) return q;
      Stmt y = Intrin("tile.dma_copy", {Region(Y, {r0, I32(0)}, {n, R}),
                                        Region(Ys[s], {I32(0)}, {n * R}), I32(2 + s)});
      return quant ? Seq({y, q}) : y;
    };
    auto load = [&](PrimExpr t, int64_t s) { return load_rows(rows(t), ta, s); };
    auto compute = [&](PrimExpr, int64_t s) { return compute_rows(ta, s, true); };
    auto post = [&](PrimExpr t, int64_t s) { return store_rows(rows(t), ta, s); };
    // on the DMA-out engine, idle until the first store: the loads of X start at once
    std::vector<Stmt> s{
        Intrin("tile.dma_prefetch", {Gv.All(), Region(Sc, {I32(0)}, {R}), I32(kParams)})};
    if (has_bias)
      s.push_back(Intrin("tile.dma_prefetch", {Bv.All(), Region(Bi, {I32(0)}, {R}), I32(kParams)}));
    if (!lead) {
      s.push_back(
          ForEachItemThreeStage(core, call.cores, A / ta, &rotation, "t", load, compute, post));
    } else {
      // Core c's first tile (tile c) in two halves, one per slot, each stored as soon as it
      // is normalised: the first store leaves after half a tile's loads and passes rather
      // than a whole tile's (the DDR that takes the stores idles less); then its other
      // tiles, pipelined as above.
      const int64_t hr = ta / 2;
      for (int64_t h = 0; h < 2; ++h) s.push_back(load_rows(core * I32(ta) + I32(h * hr), hr, h));
      for (int64_t h = 0; h < 2; ++h) {
        s.push_back(compute_rows(hr, h, false));
        s.push_back(store_rows(core * I32(ta) + I32(h * hr), hr, h));
      }
      // (the other tiles: ForEachItemThreeStage's items shifted past every core's first)
      auto shift = [&](const std::function<Stmt(PrimExpr, int64_t)>& f) {
        return [&, f](PrimExpr t, int64_t sl) { return f(t + I32(call.cores), sl); };
      };
      s.push_back(ForEachItemThreeStage(core, call.cores, tiles - call.cores, &rotation, "t",
                                        shift(load), shift(compute), shift(post)));
    }
    for (int e : {2, 3, kParams}) s.push_back(Intrin("tile.wait", {I32(e)}));
    Stmt r = Seq(s);
    for (int k = 0; k < 2; ++k) {
      r = Allocate(Xs[k], Allocate(Es[k], Allocate(Ys[k], Allocate(Ms[k], Allocate(Vs[k], r)))));
      if (quant) r = Allocate(Qs[k], r);
      if (x_i8) r = Allocate(Cs[k], r);
    }
    return Allocate(Ga, Allocate(Ba, r));
  });
  return MakeFunc(call, p, body);
}

/*! \brief The rows per tile the pipelined row normalisation may take (each a divisor of A near
 * what gives each core four, two or one tiles, at least half of it; each of a slot's three
 * buffers within 32 KiB), the four tiles' first; none when the op is not of that form or the
 * rows are too few to pipeline. */
std::vector<int64_t> PipelinedRows(const OpCall& call, const NormGeom& g) {
  const std::string& op = call.op_type;
  // (Y and Y quantised; tc_q_alone: the latter alone)
  const size_t outputs =
      HasAttr(call.attrs, "tc_q_scale") && AttrInt(call.attrs, "tc_q_alone", 0) == 0 ? 2 : 1;
  if ((op != "LayerNormalization" && op != "RMSNormalization") || call.outputs.size() != outputs)
    return {};
  if (g.R <= 0 || g.R > kRowTile / 2 || g.A < 2 * call.cores) return {};
  std::vector<int64_t> rows;
  for (int64_t per_core : {4, 2, 1}) {
    const int64_t target = std::min<int64_t>(
        (g.A + call.cores * per_core - 1) / (call.cores * per_core), kRowTile / 2 / g.R);
    const int64_t ta = PipelineRows(g.A, target);
    if (ta > 0 && std::find(rows.begin(), rows.end(), ta) == rows.end()) rows.push_back(ta);
  }
  return rows;
}

/*!
 * \brief The pipelined row normalisation in the rows per tile the cost model (cost_model.h)
 * finds fastest: four tiles a core overlap more loads and stores with the vector passes,
 * fewer tiles pay a vector command's fill fewer times (a vision transformer's 65 rows of 128
 * were 13 tiles of 5 rows, 12 passes each). Every choice computes each row alike: the same
 * bits. (None priced: the four tiles' rows, as before the ranking.)
 */
PrimFunc LowerRowNormRanked(const OpCall& call, const NormGeom& g,
                            const std::vector<int64_t>& rows) {
  auto lower = [&](size_t i) { return LowerRowNormPipelined(call, g.A, g.R, rows[i]); };
  if (rows.size() == 1) return lower(0);
  const std::string key = "norm rows;" + PlanKey(call);
  if (auto chosen = ChosenBefore(key); chosen && *chosen < rows.size()) return lower(*chosen);
  Fastest fastest{call, ""};
  size_t best = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (fastest.Offer(lower(i))) best = i;
  if (!fastest.best.defined()) return lower(0);
  Choose(key, best);
  return fastest.best;
}

/*! \brief BatchNormalization's per-channel affine, in place over its parameter vectors `ch`
 * (0 scale, 1 B, 2 mean, 3 var): k = scale / sqrt(var + eps) into 0, b = B - mean * k into 1. */
std::vector<Stmt> FoldChannelAffine(const std::vector<TileView>& ch, const PrimExpr& eps_c) {
  return {
      MapTile(ch[3], [&](PrimExpr v, const std::vector<PrimExpr>&) { return v + eps_c; }),
      MapTile(ch[3], [](PrimExpr v, const std::vector<PrimExpr>&) { return Math("tir.sqrt", v); }),
      MapTile(ch[0], [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v / ch[3].Load(i); }),
      MapTile(ch[2], [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v * ch[0].Load(i); }),
      MapTile(ch[1],
              [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v - ch[2].Load(i); })};
}

/*!
 * \brief BatchNormalization whose tiles of rows [ta, R] are consecutive channels of one image
 * (one image, or tiles that divide the channels): per core once, the four parameters of
 * every channel loaded and folded into k = scale / sqrt(var + eps) and b = B - mean * k
 * (the steps of LowerNorm's per-channel form); then the tiles pipelined over two slots, the
 * load of tile i + 1 beside y = x * k[c] + b[c] (and a fused Relu or Clip) and the store of
 * tile i, each tile reading k and b at its first channel.
 */
Stmt BatchNormTiles(const OpCall& call, const Params& p, const NormGeom& g, const Tiles& t,
                    const PrimExpr& eps_c) {
  DataType f32 = DataType::Float(32);
  const int64_t A = g.A, R = g.R, C = g.C;
  Buffer X = View(p.in[0], {A, R}, "X");
  Buffer Y = View(p.out[0], {A, R}, "Y");
  const FusedEpilogue act = GetFusedEpilogue(call.attrs, call.inputs.size());
  std::vector<Buffer> chans;
  for (int i = 0; i < 4; ++i) chans.push_back(Local({C}, f32, "Chan" + std::to_string(i)));
  auto ch = [&](int i) { return chans[size_t(i)]; };
  std::vector<TileView> views;
  for (const Buffer& b : chans) views.push_back(TileView{b, {C}});
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> s;
    // ch: 0 scale, 1 B, 2 mean, 3 var
    for (int i = 0; i < 4; ++i)
      s.push_back(
          Intrin("tile.dma_copy",
                 {Region(ch(i), {I32(0)}, {C}),
                  Region(View(p.in[1 + i], {C}, "P" + std::to_string(i)), {I32(0)}, {C}), I32(0)}));
    s.push_back(Intrin("tile.wait", {I32(0)}));
    for (const Stmt& x : FoldChannelAffine(views, eps_c)) s.push_back(x);
    std::vector<Buffer> slots;
    for (int k = 0; k < 2; ++k) slots.push_back(Local({t.ta, R}, f32, "Xt" + std::to_string(k)));
    for (const Seg& sa : Segs(A, t.ta)) {
      const int64_t ta = sa.size;
      auto a0_of = [&](PrimExpr it) { return I32(sa.base) + it * I32(t.ta); };
      auto front = [&](PrimExpr it, int64_t k) {        // tile it's rows into slot k, once its last
        return Seq({Intrin("tile.wait", {I32(2 + k)}),  // store has drained
                    Intrin("tile.dma_copy", {Region(slots[size_t(k)], {I32(0), I32(0)}, {ta, R}),
                                             Region(X, {a0_of(it), I32(0)}, {ta, R}), I32(k)})});
      };
      auto back = [&](PrimExpr it, int64_t k) {
        PrimExpr a0 = a0_of(it);
        PrimExpr c0 = A == C ? a0 : floormod(a0, I32(C));
        Buffer x = slots[size_t(k)];
        auto over = [&](const std::function<PrimExpr(PrimExpr, PrimExpr, PrimExpr)>& f) {
          return Nest({ta, R}, [&](const std::vector<PrimExpr>& i) {
            return BufferStore(x, f(BufferLoad(x, {i[0], i[1]}), i[0], i[1]), {i[0], i[1]});
          });
        };
        std::vector<Stmt> st{Intrin("tile.wait", {I32(k)})};
        st.push_back(over(
            [&](PrimExpr v, PrimExpr r, PrimExpr) { return v * BufferLoad(ch(0), {c0 + r}); }));
        st.push_back(over(
            [&](PrimExpr v, PrimExpr r, PrimExpr) { return v + BufferLoad(ch(1), {c0 + r}); }));
        if (!act.activation.empty())
          st.push_back(ApplyActivation(act, x, [&](const auto& body) {
            return Nest({ta, R}, [&](const std::vector<PrimExpr>& i) {
              return body(Array<PrimExpr>{i[0], i[1]});
            });
          }));
        st.push_back(Intrin("tile.dma_copy", {Region(Y, {a0, I32(0)}, {ta, R}),
                                              Region(x, {I32(0), I32(0)}, {ta, R}), I32(2 + k)}));
        return Seq(st);
      };
      s.push_back(ForEachItemPipelined(core, call.cores, sa.count, &rotation, "t", front, back));
    }
    s.push_back(Intrin("tile.wait", {I32(2)}));
    s.push_back(Intrin("tile.wait", {I32(3)}));
    Stmt body = Seq(s);
    for (const Buffer& b : slots) body = Allocate(b, body);
    for (const Buffer& b : chans) body = Allocate(b, body);
    return body;
  });
}

PrimFunc LowerNorm(const OpCall& call) {
  const std::string& op = call.op_type;
  NormGeom g;
  std::string why;
  Geometry(op, call.attrs, call.inputs, &g, &why);
  bool rms = op == "RMSNormalization";
  bool ln = op == "LayerNormalization" || rms, bn = op == "BatchNormalization",
       gn = op == "GroupNormalization";
  bool mvn = op == "MeanVarianceNormalization";
  if (bn && call.outputs.size() > 1)
    TILECORE_THROW(ValueError) << "LowerOp(" << op
                               << "): the running statistics outputs have no npu strategy";
  if (HasAttr(call.attrs, "tc_q_scale") && !call.outputs.empty() &&
      call.outputs.back()->dtype != DataType::Int(8))
    TILECORE_THROW(ValueError) << "LowerOp(" << op
                               << "): the output tc_q_scale quantises to is int8";
  if (g.A * g.R > 0)
    if (std::vector<int64_t> rows = PipelinedRows(call, g); !rows.empty())
      return LowerRowNormRanked(call, g, rows);
  if (HasAttr(call.attrs, "tc_q_scale"))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): tc_q_scale needs Y and its int8 "
                               << "output alone and rows enough for several tiles per core";
  if (call.inputs[0]->dtype == DataType::Int(8))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): an int8 X needs Y alone (and its int8 "
                               << "form) and rows enough for several tiles per core";
  Params p = MakeParams(call);
  DataType f32 = DataType::Float(32);
  int64_t A = g.A, R = g.R, C = g.C;
  if (A * R == 0) return MakeFunc(call, p, Evaluate(I32(0)));
  double eps = AttrFloat(call.attrs, "epsilon", 1e-5);
  Buffer X = View(p.in[0], {A, R, 1}, "X");
  Buffer Y = View(p.out[0], {A, R, 1}, "Y");
  const bool skip = op == "LayerNormalization" && AttrInt(call.attrs, "tc_skip", 0) != 0;
  Buffer Sk = skip ? View(p.in[3], {A, R, 1}, "Skip") : Buffer();
  bool has_bias = ln && call.inputs.size() > 2 && call.inputs[2].defined();
  int64_t plen = ln ? R : (gn ? g.P : C);
  Buffer Sc = mvn ? Buffer() : View(p.in[1], {plen}, "Scale");
  Buffer Bi = !mvn && (has_bias || !ln) ? View(p.in[2], {plen}, "Bias") : Buffer();
  bool stats = ln && call.outputs.size() > 1;
  Tiles t = ChooseTiles(A, R, 1, call.cores);
  if (gn && t.tr < R)
    t.tr = std::max<int64_t>(1, kRowTile / g.S) * g.S, t.ta = 1;  // chunks of whole channels
  bool resident = t.tr == R;
  PrimExpr inv_r = F32Exact(1.0 / static_cast<double>(R));
  PrimExpr eps_c = F32Exact(eps);
  if (bn && resident && (A == C || C % t.ta == 0))
    return MakeFunc(call, p, BatchNormTiles(call, p, g, t, eps_c));
  Stmt body = ForTiles(call, A, 1, t, [&](PrimExpr a0, int64_t ta, PrimExpr, int64_t) {
    Buffer Xa = Local({ta * t.tr}, f32, "Xt");
    Buffer Ea = Local({ta * t.tr}, f32, "Et");
    Buffer Ma = Local({ta}, f32, "Mean"), Va = Local({ta}, f32, "Inv"), Pa = Local({ta}, f32, "P");
    TileView M = MakeView(Ma, {ta, 1}, "Mv"), V = MakeView(Va, {ta, 1}, "Vv"),
             P = MakeView(Pa, {ta, 1}, "Pv");
    auto xt = [&](int64_t n) { return MakeView(Xa, {ta, n, 1}, "Xv"); };
    auto et = [&](int64_t n) { return MakeView(Ea, {ta, n, 1}, "Ev"); };
    auto load = [&](PrimExpr r0, int64_t n) {
      BufferRegion x = Region(X, {a0, r0, I32(0)}, {ta, n, 1});
      if (!skip) return DmaWait(xt(n).All(), x, 0);
      // X + S: both loaded, then one vector add (the Add the residual was)
      TileView e = et(n);
      return Seq({Intrin("tile.dma_copy", {xt(n).All(), x, I32(0)}),
                  DmaWait(e.All(), Region(Sk, {a0, r0, I32(0)}, {ta, n, 1}), 0),
                  MapTile(xt(n), [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                    return v + e.Load(i);
                  })});
    };
    auto store = [&](PrimExpr r0, int64_t n) {
      return DmaWait(Region(Y, {a0, r0, I32(0)}, {ta, n, 1}), xt(n).All(), 1);
    };
    auto fold = [&](const TileView& src, bool first, const TileView& into) {
      if (first) return ReduceTile(into, src, Red::kSum);
      return Seq({ReduceTile(P, src, Red::kSum),
                  MapTile(into, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
                    return v + P.Load(i);
                  })});
    };
    auto by_row = [](const TileView& v, bool sub) {
      return [v, sub](PrimExpr x, const std::vector<PrimExpr>& i) {
        return sub ? x - v.Load({i[0], I32(0)}) : x * v.Load({i[0], I32(0)});
      };
    };
    auto sq = [&](int64_t n) {  // Et = Xt * Xt
      TileView x = xt(n), e = et(n);
      return Nest(x.dims, [&](const std::vector<PrimExpr>& i) {
        return e.Store(x.Load(i) * x.Load(i), i);
      });
    };
    std::vector<Stmt> s;
    std::vector<Buffer> extra;
    // the per-row affine of the per-channel ops: K (scale) and Bk (shift) per row
    Buffer Ka = Local({ta}, f32, "K"), Bka = Local({ta}, f32, "Bk");
    TileView K = MakeView(Ka, {ta, 1}, "Kv"), Bk = MakeView(Bka, {ta, 1}, "Bkv");
    auto gather = [&](const Buffer& from, int64_t row,
                      const TileView& to) {  // to[a] = from[row, (a0 + a) % C]
      return Loop("a", ta, [&](PrimExpr a) {
        return to.Store(BufferLoad(from, {I32(row), floormod(a0 + a, I32(C))}), {a, I32(0)});
      });
    };
    if (bn) {
      // k = scale / sqrt(var + eps), b = B - mean * k, per channel, then per row
      Buffer Ch = Local({4 * C}, f32, "Chan");
      extra.push_back(Ch);
      Buffer Ch2 = View(Ch, {4, C}, "Ch2");
      std::vector<TileView> ch;
      for (int i = 0; i < 4; ++i) {
        Buffer v = Buffer(Ch->data, f32, {I32(C)}, Array<PrimExpr>(), I32(i * C), "local",
                          "Ch" + std::to_string(i));
        ch.push_back(TileView{v, {C}});
        s.push_back(DmaWait(Region(Ch2, {I32(i), I32(0)}, {1, C}),
                            Region(View(p.in[1 + i], {C}, "P" + std::to_string(i)), {I32(0)}, {C}),
                            0));
      }
      for (const Stmt& x : FoldChannelAffine(ch, eps_c)) s.push_back(x);
      s.push_back(gather(Ch2, 0, K));
      s.push_back(gather(Ch2, 1, Bk));
      // then a fused Relu or Clip (tc_activation): max, then min, as the separate node would
      const FusedEpilogue act = GetFusedEpilogue(call.attrs, call.inputs.size());
      s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) {
        std::vector<Stmt> c{load(r0, n), MapTile(xt(n), by_row(K, false)),
                            MapTile(xt(n), [&](PrimExpr x, const std::vector<PrimExpr>& i) {
                              return x + Bk.Load({i[0], I32(0)});
                            })};
        if (!act.activation.empty()) {
          const TileView x = xt(n);
          c.push_back(ApplyActivation(act, x.buf, [&](const auto& body) {
            return Nest(x.dims, [&](const std::vector<PrimExpr>& i) { return body(x.Idx(i)); });
          }));
        }
        c.push_back(store(r0, n));
        return Seq(c);
      }));
    } else {
      // statistics: mean, then 1 / sqrt(mean((x - mean)^2) + eps); RMS: 1 / sqrt(mean(x^2) + eps)
      if (rms) {
        // no mean: the square's fold is the only statistics pass
      } else if (resident) {
        s.push_back(load(I32(0), R));
        s.push_back(ReduceTile(M, xt(R), Red::kSum));
      } else {
        s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
          return Seq({load(r0, n), fold(xt(n), first, M)});
        }));
      }
      if (!rms)
        s.push_back(
            MapTile(M, [&](PrimExpr v, const std::vector<PrimExpr>&) { return v * inv_r; }));
      if (resident) {
        if (rms)
          s.push_back(load(I32(0), R));
        else
          s.push_back(MapTile(xt(R), by_row(M, true)));
        s.push_back(sq(R));
        s.push_back(ReduceTile(V, et(R), Red::kSum));
      } else {
        s.push_back(ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool first) {
          if (rms) return Seq({load(r0, n), sq(n), fold(et(n), first, V)});
          return Seq({load(r0, n), MapTile(xt(n), by_row(M, true)), sq(n), fold(et(n), first, V)});
        }));
      }
      s.push_back(MapTile(V, [&](PrimExpr v, const std::vector<PrimExpr>&) { return v * inv_r; }));
      if (!mvn)
        s.push_back(
            MapTile(V, [&](PrimExpr v, const std::vector<PrimExpr>&) { return v + eps_c; }));
      s.push_back(
          MapTile(V, [](PrimExpr v, const std::vector<PrimExpr>&) { return Math("tir.sqrt", v); }));
      if (mvn)
        s.push_back(MapTile(
            V, [](PrimExpr v, const std::vector<PrimExpr>&) { return v + F32Exact(1e-9); }));
      s.push_back(
          MapTile(V, [](PrimExpr v, const std::vector<PrimExpr>&) { return F32(1.0) / v; }));
      if (stats) {
        for (size_t o = 1; o < call.outputs.size() && o < 3; ++o) {
          Buffer out = View(p.out[o], {A, 1}, o == 1 ? "MeanOut" : "InvOut");
          s.push_back(DmaWait(Region(out, {a0, I32(0)}, {ta, 1}), (o == 1 ? M : V).All(), 1));
        }
      }
      if (mvn) {  // (x - mean) / (sqrt(var) + 1e-9)
        auto out = [&](PrimExpr r0, int64_t n, bool reload) {
          std::vector<Stmt> c;
          if (reload) c.push_back(load(r0, n)), c.push_back(MapTile(xt(n), by_row(M, true)));
          c.push_back(MapTile(xt(n), by_row(V, false)));
          c.push_back(store(r0, n));
          return Seq(c);
        };
        if (resident)
          s.push_back(out(I32(0), R, false));
        else
          s.push_back(
              ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) { return out(r0, n, true); }));
      } else if (gn) {
        // y = x * k[a, c] + b[a, c] over the tile seen as [ta, channels, S]:
        // k = inv[a] * scale, b = bias (resident: x is centred already) or bias - mean * k
        int64_t Cg = C / g.G, cmax = t.tr / g.S;
        bool per_channel = g.P == C;
        Buffer Ch = Local({2 * g.P}, f32, "Chan"), Kc = Local({ta * cmax}, f32, "Kc"),
               Bc = Local({ta * cmax}, f32, "Bc");
        extra.insert(extra.end(), {Ch, Kc, Bc});
        Buffer Ch2 = View(Ch, {2, g.P}, "Ch2");
        s.push_back(
            DmaWait(Region(Ch2, {I32(0), I32(0)}, {1, g.P}), Region(Sc, {I32(0)}, {g.P}), 0));
        s.push_back(
            DmaWait(Region(Ch2, {I32(1), I32(0)}, {1, g.P}), Region(Bi, {I32(0)}, {g.P}), 0));
        auto out = [&](PrimExpr r0, int64_t n, bool reload) {
          int64_t nc = n / g.S;
          TileView x3 = MakeView(Xa, {ta, nc, g.S}, "X3"), K = MakeView(Kc, {ta, nc}, "Kv"),
                   B = MakeView(Bc, {ta, nc}, "Bv");
          PrimExpr c0 = floordiv(r0, I32(g.S));  // the tile's first channel within its group
          std::vector<Stmt> c;
          if (reload) c.push_back(load(r0, n));
          c.push_back(
              Nest({ta, nc}, [&](const std::vector<PrimExpr>& i) {  // front end: gather per row
                PrimExpr grp = floormod(a0 + i[0], I32(g.G));
                PrimExpr idx = per_channel ? grp * I32(Cg) + c0 + i[1] : grp;
                PrimExpr k = BufferLoad(Ch2, {I32(0), idx}) * V.Load({i[0], I32(0)});
                PrimExpr b = BufferLoad(Ch2, {I32(1), idx});
                if (reload) b = b - M.Load({i[0], I32(0)}) * k;
                return Seq({K.Store(k, i), B.Store(b, i)});
              }));
          c.push_back(MapTile(x3, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
            return v * K.Load({i[0], i[1]});
          }));
          c.push_back(MapTile(x3, [&](PrimExpr v, const std::vector<PrimExpr>& i) {
            return v + B.Load({i[0], i[1]});
          }));
          c.push_back(store(r0, n));
          return Seq(c);
        };
        if (resident)
          s.push_back(out(I32(0), R, false));
        else
          s.push_back(
              ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) { return out(r0, n, true); }));
      } else if (ln) {
        // y = (x - mean) * inv * Scale[r] + B[r]; Scale and B per chunk
        Buffer Ga = Local({t.tr}, f32, "Gamma"), Ba = Local({t.tr}, f32, "Beta");
        extra.push_back(Ga);
        extra.push_back(Ba);
        auto out = [&](PrimExpr r0, int64_t n, bool reload) {
          TileView Gv = MakeView(Ga, {n}, "Gv"), Bv = MakeView(Ba, {n}, "Bv");
          std::vector<Stmt> c;
          if (reload) c.push_back(load(r0, n));
          if (reload && !rms) c.push_back(MapTile(xt(n), by_row(M, true)));
          c.push_back(DmaWait(Gv.All(), Region(Sc, {r0}, {n}), 0));
          if (has_bias) c.push_back(DmaWait(Bv.All(), Region(Bi, {r0}, {n}), 0));
          c.push_back(MapTile(xt(n), by_row(V, false)));
          c.push_back(MapTile(xt(n), [&](PrimExpr x, const std::vector<PrimExpr>& i) {
            return x * Gv.Load({i[1]});
          }));
          if (has_bias)
            c.push_back(MapTile(xt(n), [&](PrimExpr x, const std::vector<PrimExpr>& i) {
              return x + Bv.Load({i[1]});
            }));
          c.push_back(store(r0, n));
          return Seq(c);
        };
        if (resident)
          s.push_back(out(I32(0), R, false));
        else
          s.push_back(
              ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) { return out(r0, n, true); }));
      } else {
        // instance norm: k = inv * scale[c], b = B[c] - mean * k; y = x * k + b
        Buffer Ch = Local({2 * C}, f32, "Chan");
        extra.push_back(Ch);
        Buffer Ch2 = View(Ch, {2, C}, "Ch2");
        s.push_back(DmaWait(Region(Ch2, {I32(0), I32(0)}, {1, C}), Region(Sc, {I32(0)}, {C}), 0));
        s.push_back(DmaWait(Region(Ch2, {I32(1), I32(0)}, {1, C}), Region(Bi, {I32(0)}, {C}), 0));
        s.push_back(gather(Ch2, 0, K));
        s.push_back(gather(Ch2, 1, Bk));
        s.push_back(
            MapTile(K, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v * V.Load(i); }));
        if (!resident) {  // from x itself: the shift absorbs the mean
          s.push_back(MapTile(
              P, [&](PrimExpr, const std::vector<PrimExpr>& i) { return M.Load(i) * K.Load(i); }));
          s.push_back(MapTile(
              Bk, [&](PrimExpr v, const std::vector<PrimExpr>& i) { return v - P.Load(i); }));
        }
        auto out = [&](PrimExpr r0, int64_t n,
                       bool reload) {  // resident: the tile holds x - mean already
          std::vector<Stmt> c;
          if (reload) c.push_back(load(r0, n));
          c.push_back(MapTile(xt(n), by_row(K, false)));
          c.push_back(MapTile(xt(n), [&](PrimExpr x, const std::vector<PrimExpr>& i) {
            return x + Bk.Load({i[0], I32(0)});
          }));
          c.push_back(store(r0, n));
          return Seq(c);
        };
        if (resident)
          s.push_back(out(I32(0), R, false));
        else
          s.push_back(
              ForChunks(R, t.tr, [&](PrimExpr r0, int64_t n, bool) { return out(r0, n, true); }));
      }
    }
    Stmt res = Allocate(
        Xa, Allocate(
                Ea, Allocate(Ma, Allocate(Va, Allocate(Pa, Allocate(Ka, Allocate(Bka, Seq(s))))))));
    for (const Buffer& b : extra) res = Allocate(b, res);
    return res;
  });
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* op :
       {"LayerNormalization", "RMSNormalization", "GroupNormalization", "InstanceNormalization",
        "BatchNormalization", "MeanVarianceNormalization"}) {
    RegisterStrategy(op, Strategy{detail::CheckNorm, detail::LowerNorm,
                                  [](const OpCall&, int) { return std::string("onnx"); }});
  }
});

}  // namespace compiler
}  // namespace tilecore
