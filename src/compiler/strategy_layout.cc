/*
 * src/compiler/strategy_layout.cc — ops that only move bytes: Concat, Split, Slice,
 * Transpose, Pad (constant, edge, reflect, wrap), Tile, DepthToSpace, SpaceToDepth,
 * and Dropout at inference (the output is the input; the optional mask is filled with true).
 *
 * Each op is a list of boxes: an N-D block of the output written from an N-D strided
 * window of an input (strides may be 0 to repeat, or negative to reverse) or filled
 * with a constant. Every box is one or more DMA copies straight from DDR to DDR (the
 * DMA engines do 1-4-D strided copies between any memories), so no data passes
 * through L1 and any shape fits. Adjacent dimensions that are contiguous on both
 * sides are merged first; dimensions beyond the four a descriptor holds become work
 * items, and the outermost DMA dimension is cut into chunks when there are fewer
 * items than cores. The items of all boxes go to the cores round robin. Boxes never
 * overlap in the output, so the cores need no ordering between them.
 *
 * Values known when compiling (Slice's starts/ends/axes/steps, Pad's pads and
 * constant value, Tile's repeats) are read from the attributes of the same name
 * (the attribute form of the older opsets): the partitioner folds constant inputs
 * there. Split and Concat need no values: the output and input shapes say it all.
 */
#include <algorithm>
#include <array>
#include <numeric>

#include "kernel_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/kernel_group.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {
constexpr size_t kDmaRank = 4;  // dims a DMA descriptor holds

using Dim = BoxDim;

/*! \brief Drops extents of 1 and merges neighbours contiguous on both sides; false when empty. */
bool Normalize(Box* b) {
  std::vector<Dim> d;
  for (const Dim& x : b->dims) {
    if (x.n == 0) return false;
    if (x.n != 1) d.push_back(x);
  }
  std::vector<Dim> m;
  for (const Dim& x : d) {
    if (!m.empty() && m.back().ss == x.ss * x.n && m.back().ds == x.ds * x.n) {
      m.back().n *= x.n;
      m.back().ss = x.ss;
      m.back().ds = x.ds;
    } else {
      m.push_back(x);
    }
  }
  if (m.empty()) m.push_back({1, 1, 1});
  b->dims = m;
  return true;
}

/*! \brief A view of `param` with a leading flat offset dimension and the box's strides. */
Buffer FlatBoxView(const Buffer& param, const std::vector<int64_t>& ext,
                   const std::vector<int64_t>& strides, int64_t numel, const std::string& name) {
  Array<PrimExpr> s{I32(std::max<int64_t>(numel, 1))}, st{I32(1)};
  for (size_t i = 0; i < ext.size(); ++i) {
    s.push_back(I32(ext[i]));
    st.push_back(I32(strides[i]));
  }
  return Buffer(param->data, param->dtype, s, st, I32(0), param->scope, String(name));
}

int64_t ParamNumel(const Buffer& b) {
  int64_t n = 1;
  for (const PrimExpr& d : b->shape) n *= *as_const_int(d);
  return n;
}

/*!
 * \brief A box that swaps a source-contiguous dim j with the destination-contiguous
 * innermost dim l (a transpose whose rows are too far apart to stage whole): tiles of
 * tj x tl go DDR -> L1 as tl rows of tj contiguous elements, are transposed L1 -> L1
 * and go back as tj rows of tl contiguous elements; the other dims and the tiles are
 * the work items. The tiles are cut down (tl first, then tj, to rows of at least a DMA
 * beat) until every core has two items, and a core with two or more loads its next tile
 * while it transposes and stores this one (two buffers of the load, on events of their
 * own). Stmt() when the box is not of that form.
 */
Stmt TiledTranspose(const OpCall& call, const Params& p, const Box& b, const PrimExpr& core,
                    int64_t* rotation, int bi) {
  size_t r = b.dims.size();
  if (r < 2 || r > kDmaRank || b.dims[r - 1].ds != 1) return Stmt();
  size_t j = r;
  for (size_t i = 0; i + 1 < r; ++i)
    if (b.dims[i].ss == 1) j = i;
  if (j == r) return Stmt();
  size_t l = r - 1;
  const Buffer& dp = p.out[b.dst];
  const Buffer& sp = p.in[b.src];
  std::vector<size_t> others;
  for (size_t i = 0; i < r; ++i)
    if (i != j && i != l) others.push_back(i);
  int64_t nother = 1;
  for (size_t i : others) nother *= b.dims[i].n;
  // tiles of at most 256 x 256, cut down while the cores would have fewer than two items
  // each: tl first (the store's rows), then tj (the load's), each to rows of at least a
  // DMA beat
  const int64_t es = std::max(1, (sp->dtype.bits() + 7) / 8);
  const int64_t min_row = std::max<int64_t>(1, int64_t(arch::tc1::kDmaBytesPerCycle) / es);
  int64_t TJ = std::min<int64_t>(b.dims[j].n, 256), TL = std::min<int64_t>(b.dims[l].n, 256);
  auto count = [&](int64_t tj, int64_t tl) {
    return nother * ((b.dims[j].n + tj - 1) / tj) * ((b.dims[l].n + tl - 1) / tl);
  };
  while (count(TJ, TL) < 2 * call.cores && TL / 2 >= min_row) TL = (TL + 1) / 2;
  while (count(TJ, TL) < 2 * call.cores && TJ / 2 >= min_row) TJ = (TJ + 1) / 2;
  // the vector engine copies every type but bool
  const bool vector_turn = sp->dtype == dp->dtype && !sp->dtype.is_bool();
  // (two loads in flight when a core has two items or more)
  const bool pipelined = count(TJ, TL) >= 2 * call.cores;
  std::vector<Buffer> Al;
  for (int k = 0; k < (pipelined ? 2 : 1); ++k)
    Al.push_back(Local({TL * TJ}, sp->dtype,
                       "Tl" + std::to_string(bi) + (pipelined ? std::to_string(k) : "")));
  Buffer Bl = Local({TJ * TL}, dp->dtype, "Tb" + std::to_string(bi));
  auto segs = [](int64_t n, int64_t t) {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> v;  // count, size, start
    if (n / t) v.push_back({n / t, t, 0});
    if (n % t) v.push_back({1, n % t, (n / t) * t});
    return v;
  };
  std::vector<Stmt> s;
  for (auto [jc, tj, j0] : segs(b.dims[j].n, TJ)) {
    for (auto [lc, tl, l0] : segs(b.dims[l].n, TL)) {
      // item t's source and destination offsets
      auto offsets = [&, j0 = j0, l0 = l0, jc = jc, lc = lc](PrimExpr t) {
        PrimExpr li = floormod(t, I32(lc)), ji = floormod(floordiv(t, I32(lc)), I32(jc));
        PrimExpr o = floordiv(t, I32(lc * jc));
        PrimExpr pj = I32(j0) + ji * I32(TJ), pl = I32(l0) + li * I32(TL);
        PrimExpr soff = I32(b.src_base) + pj * I32(b.dims[j].ss) + pl * I32(b.dims[l].ss);
        PrimExpr doff = I32(b.dst_base) + pj * I32(b.dims[j].ds) + pl * I32(b.dims[l].ds);
        for (size_t k = others.size(); k-- > 0;) {
          const BoxDim& d = b.dims[others[k]];
          PrimExpr idx = floormod(o, I32(d.n));
          o = floordiv(o, I32(d.n));
          soff = soff + idx * I32(d.ss);
          doff = doff + idx * I32(d.ds);
        }
        return std::make_pair(soff, doff);
      };
      // A[l, j] (rows of j contiguous in the source), B[j, l] (rows of l contiguous in the
      // destination)
      auto load = [&, tj = tj, tl = tl](PrimExpr t, int64_t k) {
        Buffer SV =
            FlatBoxView(sp, {tl, tj}, {b.dims[l].ss, 1}, ParamNumel(sp), "TS" + std::to_string(bi));
        const BufferRegion dst = Region(Al[size_t(k)], {I32(0)}, {tl * tj});
        const BufferRegion src = Region(SV, {offsets(t).first, I32(0), I32(0)}, {1, tl, tj});
        return pipelined ? Intrin("tile.dma_copy", {dst, src, I32(2 + k)}) : DmaWait(dst, src, 0);
      };
      auto turn_and_store = [&, tj = tj, tl = tl](PrimExpr t, int64_t k) {
        const Buffer& A = Al[size_t(k)];
        Buffer AV = FlatBoxView(A, {tj, tl}, {1, tj}, TL * TJ, "TA" + std::to_string(bi));
        Buffer DV =
            FlatBoxView(dp, {tj, tl}, {b.dims[j].ds, 1}, ParamNumel(dp), "TD" + std::to_string(bi));
        // the transpose in L1: a strided vector copy, at the engine's full rate (a DMA
        // reading every element apart moves a beat per element)
        Stmt turn = vector_turn ? CopyNest(StridedView(Bl, {tj, tl}, {tl, 1}, 0, "TBv"),
                                           StridedView(A, {tj, tl}, {1, tj}, 0, "TAv"), {tj, tl})
                                : DmaWait(Region(Bl, {I32(0)}, {tj * tl}),
                                          Region(AV, {I32(0), I32(0), I32(0)}, {1, tj, tl}), 0);
        std::vector<Stmt> st;
        if (pipelined) st.push_back(Intrin("tile.wait", {I32(2 + k)}));  // its tile has landed
        st.push_back(Intrin("tile.wait", {I32(1)}));  // the previous tile has left B
        st.push_back(turn);
        st.push_back(
            Intrin("tile.dma_copy", {Region(DV, {offsets(t).second, I32(0), I32(0)}, {1, tj, tl}),
                                     Region(Bl, {I32(0)}, {tj * tl}), I32(1)}));
        return Seq(st);
      };
      s.push_back(pipelined ? ForEachItemPipelined(core, call.cores, nother * jc * lc, rotation,
                                                   "t", load, turn_and_store)
                            : ForEachItem(core, call.cores, nother * jc * lc, rotation, "t",
                                          [&](PrimExpr t) {
                                            return Seq({load(t, 0), turn_and_store(t, 0)});
                                          }));
    }
  }
  s.push_back(Intrin("tile.wait", {I32(1)}));
  Stmt body = Allocate(Bl, Seq(s));
  for (const Buffer& a : Al) body = Allocate(a, body);
  return body;
}

/*!
 * \brief A box whose destination is contiguous but whose source is read element by
 * element (a transpose, a repeat, a strided slice) costs one DDR beat per element.
 * When chunks of its outermost dim read a dense enough contiguous source range, the
 * chunk goes DDR -> L1 whole, is rearranged L1 -> L1 by the strided DMA (L1 is not a
 * shared level) and goes back L1 -> DDR whole. Stmt() when the box does not qualify.
 */
Stmt Staged(const OpCall& call, const Params& p, const Box& b, const PrimExpr& core,
            int64_t* rotation, int bi) {
  size_t r = b.dims.size();
  if (b.fill || r > kDmaRank) return Stmt();
  if (b.dims.back().ss == 1 && b.dims.back().ds == 1) return Stmt();
  int64_t inner = 1, span = 1;
  for (size_t i = r; i-- > 0;) {
    if (b.dims[i].ss < 0) return Stmt();
    if (b.dims[i].ds != inner) return Stmt();  // destination not contiguous
    if (i > 0) {
      span += (b.dims[i].n - 1) * b.dims[i].ss;
      inner *= b.dims[i].n;
    }
  }
  const Buffer& dp = p.out[b.dst];
  const Buffer& sp = p.in[b.src];
  int64_t es = std::max(1, (sp->dtype.bits() + 7) / 8);
  int64_t budget = (384 * 1024) / es;
  int64_t n0 = b.dims[0].n, ss0 = b.dims[0].ss;
  auto footprint = [&](int64_t k) { return (k - 1) * ss0 + span; };
  int64_t kc = std::min(n0, (n0 + call.cores - 1) / call.cores);
  while (kc > 1 && (footprint(kc) > budget || kc * inner > budget)) kc = (kc + 1) / 2;
  if (footprint(kc) > budget || kc * inner > budget || footprint(kc) > 8 * kc * inner)
    return TiledTranspose(call, p, b, core, rotation, bi);
  // (a range each core loads mostly whole, as ConvNeXt's [C, H x W] -> [H x W, C] in L2:
  // the cores move several times the tensor through the shared level, where the tiles
  // read it once)
  if (footprint(kc) > 2 * kc * inner) {
    Stmt tiled = TiledTranspose(call, p, b, core, rotation, bi);
    if (tiled.defined()) return tiled;
  }
  int64_t nfull = n0 / kc, rem = n0 % kc;
  Buffer Sl = Local({footprint(kc)}, sp->dtype, "Sl" + std::to_string(bi));
  Buffer Dl = Local({kc * inner}, dp->dtype, "Dl" + std::to_string(bi));
  Buffer Sflat = View(sp, {ParamNumel(sp)}, "Sf" + std::to_string(bi));
  Buffer Dflat = View(dp, {ParamNumel(dp)}, "Df" + std::to_string(bi));
  std::vector<Stmt> s;
  for (const auto& part :
       std::vector<std::array<int64_t, 3>>{{nfull, kc, 0}, {rem ? 1 : 0, rem, nfull * kc}}) {
    const int64_t count = part[0], size = part[1], start = part[2];
    std::vector<int64_t> ext{size}, sst{ss0};
    for (size_t i = 1; i < r; ++i) {
      ext.push_back(b.dims[i].n);
      sst.push_back(b.dims[i].ss);
    }
    s.push_back(ForEachItem(core, call.cores, count, rotation, "t", [&](PrimExpr t) {
      PrimExpr pos = I32(start) + t * I32(kc);
      PrimExpr soff = I32(b.src_base) + pos * I32(ss0),
               doff = I32(b.dst_base) + pos * I32(b.dims[0].ds);
      int64_t fp = footprint(size), cnt = size * inner;
      Buffer SV = FlatBoxView(Sl, ext, sst, footprint(kc), "SV" + std::to_string(bi));
      std::vector<PrimExpr> zb(ext.size() + 1, I32(0));
      std::vector<int64_t> rext{1};
      rext.insert(rext.end(), ext.begin(), ext.end());
      // the rearrangement in L1: a strided vector copy at the engine's full rate (the
      // DMA reading elements apart moves a beat per element)
      Stmt turn = DmaWait(Region(Dl, {I32(0)}, {cnt}), Region(SV, zb, rext), 0);
      if (sp->dtype == dp->dtype && !sp->dtype.is_bool()) {
        std::vector<int64_t> dst_strides = RowMajorStrides(ext);
        turn = CopyNest(StridedView(Dl, ext, dst_strides, 0, "DVv" + std::to_string(bi)),
                        StridedView(Sl, ext, sst, 0, "SVv" + std::to_string(bi)), ext);
      }
      return Seq({DmaWait(Region(Sl, {I32(0)}, {fp}), Region(Sflat, {soff}, {fp}), 0),
                  Intrin("tile.wait", {I32(1)}),  // the previous chunk has left Dl
                  turn,
                  Intrin("tile.dma_copy",
                         {Region(Dflat, {doff}, {cnt}), Region(Dl, {I32(0)}, {cnt}), I32(1)})});
    }));
  }
  s.push_back(Intrin("tile.wait", {I32(1)}));
  return Allocate(Sl, Allocate(Dl, Seq(s)));
}

}  // namespace

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

Stmt EmitBoxes(const OpCall& call, const Params& p, std::vector<Box> boxes) {
  std::vector<Box> live;
  for (Box& b : boxes)
    if (Normalize(&b)) live.push_back(b);
  // Every box inside its buffers, and the boxes of each output adding up to it: shapes
  // that do not agree with the op are an error here, never a stray DMA.
  std::vector<int64_t> written(p.out.size(), 0);
  for (const Box& b : live) {
    int64_t slo = b.src_base, shi = b.src_base, dlo = b.dst_base, dhi = b.dst_base, n = 1;
    for (const BoxDim& d : b.dims) {
      (d.ss < 0 ? slo : shi) += (d.n - 1) * d.ss;
      (d.ds < 0 ? dlo : dhi) += (d.n - 1) * d.ds;
      n *= d.n;
    }
    bool ok = b.dst >= 0 && b.dst < static_cast<int>(p.out.size()) && dlo >= 0 &&
              dhi < ParamNumel(p.out[b.dst]);
    if (ok && !b.fill)
      ok = b.src >= 0 && b.src < static_cast<int>(p.in.size()) && slo >= 0 &&
           shi < ParamNumel(p.in[b.src]);
    if (!ok)
      TILECORE_THROW(ValueError)
          << "LowerOp(" << call.op_type
          << "): the output shapes do not agree with the inputs and attributes (a copy "
             "would leave its buffer)";
    written[b.dst] += n;
  }
  for (size_t i = 0; i < p.out.size(); ++i)
    if (written[i] != call.outputs[i]->numel())
      TILECORE_THROW(ValueError) << "LowerOp(" << call.op_type << "): output " << i << " has "
                                 << call.outputs[i]->numel() << " elements; the op writes "
                                 << written[i];
  int64_t rotation = 0;
  return OverCores(call.cores, [&](PrimExpr core) {
    std::vector<Stmt> s;
    int bi = 0;
    for (const Box& b : live) {
      ++bi;
      Stmt staged = Staged(call, p, b, core, &rotation, bi);
      if (staged.defined()) {
        s.push_back(staged);
        continue;
      }
      size_t r = b.dims.size();
      size_t k = r > kDmaRank ? r - kDmaRank : 0;  // dims [0, k) are items, [k, r) one DMA
      int64_t outer = 1;
      for (size_t i = 0; i < k; ++i) outer *= b.dims[i].n;
      int64_t nk = b.dims[k].n, ch = nk;
      if (outer < call.cores) {
        int64_t parts = std::min<int64_t>(nk, (call.cores + outer - 1) / outer);
        ch = (nk + parts - 1) / parts;
      }
      int64_t nfull = nk / ch, rem = nk % ch;
      const Buffer& dp = p.out[b.dst];
      const Buffer& sp = b.fill ? dp : p.in[b.src];
      for (const auto& part : std::vector<std::array<int64_t, 3>>{
               {outer * nfull, ch, 0}, {rem ? outer : 0, rem, nfull * ch}}) {
        const int64_t count = part[0], size = part[1], start = part[2];
        int64_t per = size == ch ? nfull : 1;
        std::vector<int64_t> ext{size}, sst{b.dims[k].ss}, dst{b.dims[k].ds};
        for (size_t i = k + 1; i < r; ++i) {
          ext.push_back(b.dims[i].n);
          sst.push_back(b.dims[i].ss);
          dst.push_back(b.dims[i].ds);
        }
        s.push_back(ForEachItem(core, call.cores, count, &rotation, "t", [&](PrimExpr t) {
          PrimExpr o = per == 1 ? t : floordiv(t, I32(per));
          PrimExpr j = per == 1 ? I32(0) : floormod(t, I32(per));
          PrimExpr soff = I32(b.src_base), doff = I32(b.dst_base);
          PrimExpr pos = I32(start) + j * I32(ch);
          soff = soff + pos * I32(b.dims[k].ss);
          doff = doff + pos * I32(b.dims[k].ds);
          for (size_t i = k; i-- > 0;) {
            PrimExpr idx = floormod(o, I32(b.dims[i].n));
            o = floordiv(o, I32(b.dims[i].n));
            soff = soff + idx * I32(b.dims[i].ss);
            doff = doff + idx * I32(b.dims[i].ds);
          }
          std::vector<PrimExpr> db{doff}, sb{soff};
          std::vector<int64_t> rext{1};
          for (int64_t e : ext) {
            db.push_back(I32(0));
            sb.push_back(I32(0));
            rext.push_back(e);
          }
          Buffer D = FlatBoxView(dp, ext, dst, ParamNumel(dp), "D" + std::to_string(bi));
          if (b.fill) {
            DataType t = dp->dtype;
            // a bool fill value goes as an int (dma_fill converts it to the dtype)
            PrimExpr v = t.is_float()  ? make_const(t, b.value)
                         : t.is_bool() ? I32(b.value != 0)
                                       : make_const(t, static_cast<int64_t>(b.value));
            return Intrin("tile.dma_fill", {Region(D, db, rext), v, I32(0)});
          }
          Buffer S = FlatBoxView(sp, ext, sst, ParamNumel(sp), "S" + std::to_string(bi));
          return Intrin("tile.dma_copy", {Region(D, db, rext), Region(S, sb, rext), I32(0)});
        }));
      }
    }
    s.push_back(Intrin("tile.wait", {I32(0)}));
    return Seq(s);
  });
}

namespace {

using Dim = BoxDim;
std::vector<int64_t> Strides(const std::vector<int64_t>& shape) { return RowMajorStrides(shape); }

/*! \brief A box copying the whole of a contiguous source shape with given strides and bases. */
Box Plain(const std::vector<int64_t>& shape, const std::vector<int64_t>& ss,
          const std::vector<int64_t>& ds, int64_t sbase, int64_t dbase, int src, int dst) {
  Box b;
  for (size_t i = 0; i < shape.size(); ++i) b.dims.push_back({shape[i], ss[i], ds[i]});
  b.src_base = sbase;
  b.dst_base = dbase;
  b.src = src;
  b.dst = dst;
  return b;
}

int64_t Axis(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }

// ---- the ops ----

std::vector<Box> ConcatBoxes(const OpCall& c) {
  auto os = Shape(c.outputs[0]);
  auto ost = Strides(os);
  int64_t axis = Axis(AttrInt(c.attrs, "axis", 0), os.size());
  std::vector<Box> out;
  int64_t at = 0;
  for (size_t i = 0; i < static_cast<size_t>(c.data_inputs); ++i) {
    auto is = Shape(c.inputs[i]);
    out.push_back(Plain(is, Strides(is), ost, 0, at * ost[axis], static_cast<int>(i), 0));
    at += is[axis];
  }
  return out;
}

std::vector<Box> SplitBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  auto ist = Strides(is);
  int64_t axis = Axis(AttrInt(c.attrs, "axis", 0), is.size());
  std::vector<Box> out;
  int64_t at = 0;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    auto os = Shape(c.outputs[i]);
    out.push_back(Plain(os, ist, Strides(os), at * ist[axis], 0, 0, static_cast<int>(i)));
    at += os[axis];
  }
  return out;
}

std::vector<int64_t> Perm(const Map<String, Any>& attrs, size_t rank) {
  std::vector<int64_t> rev(rank);
  for (size_t i = 0; i < rank; ++i) rev[i] = static_cast<int64_t>(rank - 1 - i);
  auto p = AttrInts(attrs, "perm", rev);
  for (int64_t& x : p) x = Axis(x, rank);
  return p;
}

std::vector<Box> TransposeBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  auto ist = Strides(is);
  auto perm = Perm(c.attrs, is.size());
  auto os = Shape(c.outputs[0]);
  std::vector<int64_t> ss;
  for (int64_t p : perm) ss.push_back(ist[p]);
  return {Plain(os, ss, Strides(os), 0, 0, 0, 0)};
}

struct SliceAxis {
  int64_t start, step, count;
};

/*! \brief Per input dim: first index, step, count (ONNX clamping). */
std::vector<SliceAxis> SliceAxes(const Map<String, Any>& attrs, const std::vector<int64_t>& is) {
  size_t r = is.size();
  std::vector<SliceAxis> ax;
  for (int64_t n : is) ax.push_back({0, 1, n});
  auto starts = AttrInts(attrs, "starts", {}), ends = AttrInts(attrs, "ends", {});
  std::vector<int64_t> dflt(starts.size());
  std::iota(dflt.begin(), dflt.end(), 0);
  auto axes = AttrInts(attrs, "axes", dflt);
  auto steps = AttrInts(attrs, "steps", std::vector<int64_t>(starts.size(), 1));
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = Axis(axes[i], r), n = is[a], st = steps[i];
    if (n == 0) {
      ax[a] = {0, 1, 0};
      continue;
    }
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += n;
    if (e < 0) e += n;
    int64_t cnt;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      cnt = e > b ? (e - b + st - 1) / st : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      cnt = b > e ? (b - e + (-st) - 1) / (-st) : 0;
    }
    ax[a] = {b, st, cnt};
  }
  return ax;
}

std::vector<Box> SliceBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  auto ist = Strides(is);
  auto ax = SliceAxes(c.attrs, is);
  Box b;
  for (size_t i = 0; i < is.size(); ++i) {
    b.dims.push_back({ax[i].count, ist[i] * ax[i].step, 0});
    b.src_base += ax[i].start * ist[i];
  }
  auto ost = Strides(Shape(c.outputs[0]));
  for (size_t i = 0; i < is.size(); ++i) b.dims[i].ds = ost[i];
  return {b};
}

/*! \brief Pads per dim (begins then ends); the optional `axes` name the dims. */
std::vector<int64_t> PadsOf(const Map<String, Any>& attrs, size_t r) {
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> dflt(pads.size() / 2);
  std::iota(dflt.begin(), dflt.end(), 0);
  auto axes = AttrInts(attrs, "axes", dflt);
  std::vector<int64_t> full(2 * r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = Axis(axes[i], r);
    full[a] = pads[i];
    full[a + r] = pads[i + axes.size()];
  }
  return full;
}

/*! \brief One dim of a pad box: output range [o, o + n) reads input index `i0 + k * step`. */
struct Seg {
  int64_t o, n, i0, step;
  bool pad;  // constant mode's padding
};

std::vector<Box> PadBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  auto ist = Strides(is);
  auto os = Shape(c.outputs[0]);
  auto ost = Strides(os);
  size_t r = is.size();
  auto pads = PadsOf(c.attrs, r);
  std::string mode = AttrStr(c.attrs, "mode", "constant");
  double value = AttrFloat(c.attrs, "value", AttrFloat(c.attrs, "constant_value", 0.0));
  std::vector<std::vector<Seg>> segs(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t lo = pads[d], hi = pads[d + r], n = is[d];
    int64_t ilo = std::max<int64_t>(0, -lo), ihi = n - std::max<int64_t>(0, -hi);  // input kept
    int64_t plo = std::max<int64_t>(0, lo), phi = std::max<int64_t>(0, hi);
    std::vector<Seg>& v = segs[d];
    // left padding, output [0, plo)
    if (plo > 0) {
      if (mode == "constant")
        v.push_back({0, plo, 0, 0, true});
      else if (mode == "edge")
        v.push_back({0, plo, 0, 0, false});
      else if (mode == "reflect")
        v.push_back({0, plo, plo, -1, false});
      else  // wrap, around the dimension as often as it takes
        for (int64_t o = 0; o < plo;) {
          int64_t i = ((o - plo) % n + n) % n, len = std::min(n - i, plo - o);
          v.push_back({o, len, i, 1, false});
          o += len;
        }
    }
    if (ihi > ilo) v.push_back({plo, ihi - ilo, ilo, 1, false});
    int64_t o = plo + std::max<int64_t>(0, ihi - ilo);
    if (phi > 0) {
      if (mode == "constant")
        v.push_back({o, phi, 0, 0, true});
      else if (mode == "edge")
        v.push_back({o, phi, n - 1, 0, false});
      else if (mode == "reflect")
        v.push_back({o, phi, n - 2, -1, false});
      else  // wrap
        for (int64_t k = 0; k < phi;) {
          int64_t i = k % n, len = std::min(n - i, phi - k);
          v.push_back({o + k, len, i, 1, false});
          k += len;
        }
    }
  }
  std::vector<Box> out;
  std::vector<size_t> idx(r, 0);
  for (size_t d = 0; d < r; ++d)
    if (segs[d].empty()) return out;
  while (true) {
    Box b;
    for (size_t d = 0; d < r; ++d) {
      const Seg& sg = segs[d][idx[d]];
      b.dims.push_back({sg.n, sg.step * ist[d], ost[d]});
      b.src_base += sg.i0 * ist[d];
      b.dst_base += sg.o * ost[d];
      if (sg.pad) b.fill = true;
    }
    b.value = value;
    out.push_back(b);
    size_t d = r;
    while (d > 0) {
      --d;
      if (++idx[d] < segs[d].size()) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
    if (r == 0) return out;
  }
}

std::vector<Box> TileBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  auto ist = Strides(is);
  auto os = Shape(c.outputs[0]);
  auto ost = Strides(os);
  Box b;
  for (size_t d = 0; d < is.size(); ++d) {
    int64_t rep = is[d] ? os[d] / is[d] : 0;
    b.dims.push_back({rep, 0, is[d] * ost[d]});
    b.dims.push_back({is[d], ist[d], ost[d]});
  }
  return {b};
}

/*! \brief DepthToSpace / SpaceToDepth: a 6-D transpose of reshaped views. */
std::vector<Box> SpaceBoxes(const OpCall& c) {
  auto is = Shape(c.inputs[0]);
  int64_t bs = AttrInt(c.attrs, "blocksize", 1);
  int64_t N = is[0], C = is[1], H = is[2], W = is[3];
  std::vector<int64_t> v, perm;
  if (c.op_type == "DepthToSpace") {
    if (AttrStr(c.attrs, "mode", "DCR") == "DCR") {
      v = {N, bs, bs, C / (bs * bs), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      v = {N, C / (bs * bs), bs, bs, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    }
  } else {  // SpaceToDepth (mode from opset 28): the inverse of DepthToSpace in that mode
    v = {N, C, H / bs, bs, W / bs, bs};
    if (AttrStr(c.attrs, "mode", "DCR") == "DCR")
      perm = {0, 3, 5, 1, 2, 4};
    else
      perm = {0, 1, 3, 5, 2, 4};
  }
  auto vst = Strides(v);
  std::vector<int64_t> os, ss;
  for (int64_t p : perm) {
    os.push_back(v[p]);
    ss.push_back(vst[p]);
  }
  return {Plain(os, ss, Strides(os), 0, 0, 0, 0)};
}

PrimFunc LowerLayout(const OpCall& call) {
  Params p = MakeParams(call);
  const std::string& op = call.op_type;
  for (const TensorSpec& o : call.outputs)
    if (o->shape.size() != call.inputs[0]->shape.size())
      TILECORE_THROW(ValueError) << "LowerOp(" << op << "): output of rank " << o->shape.size()
                                 << " for an input of rank " << call.inputs[0]->shape.size();
  for (const TensorSpec& o : call.outputs)
    if (o->dtype != call.inputs[0]->dtype)
      TILECORE_THROW(ValueError) << "LowerOp(" << op << "): output dtype " << o->dtype.str()
                                 << " differs from the input's " << call.inputs[0]->dtype.str();
  std::vector<Box> boxes = op == "Concat"      ? ConcatBoxes(call)
                           : op == "Split"     ? SplitBoxes(call)
                           : op == "Transpose" ? TransposeBoxes(call)
                           : op == "Slice"     ? SliceBoxes(call)
                           : op == "Pad"       ? PadBoxes(call)
                           : op == "Tile"      ? TileBoxes(call)
                                               : SpaceBoxes(call);
  PrimFunc f = MakeFunc(call, p, EmitBoxes(call, p, boxes));
  // A Concat whose dims before its axis are all 1 lays each input out as one run of the
  // output's bytes: a layer group may have the inputs' producers write there instead
  // (GroupKernels, kConcatOffsetsAttr).
  if (op == "Concat") {
    auto os = Shape(call.outputs[0]);
    const int64_t axis = Axis(AttrInt(call.attrs, "axis", 0), os.size());
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= os[i];
    if (outer == 1) {
      Array<int64_t> offsets;
      for (const Box& b : boxes) offsets.push_back(b.dst_base);
      f = f.WithAttr(kConcatOffsetsAttr, offsets);
    }
  }
  return f;
}

// Dropout at inference: one copy box, and a fill box of true for the mask
PrimFunc LowerDropout(const OpCall& call) {
  Params p = MakeParams(call);
  int64_t n = call.inputs[0]->numel();
  for (const TensorSpec& o : call.outputs)
    if (o->numel() != n)
      TILECORE_THROW(ValueError) << "LowerOp(Dropout): an output of " << o->numel()
                                 << " elements for an input of " << n;
  if (call.outputs[0]->dtype != call.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(Dropout): output dtype " << call.outputs[0]->dtype.str()
                               << " differs from the input's " << call.inputs[0]->dtype.str();
  std::vector<Box> boxes;
  if (n > 0) {
    boxes.push_back(Plain({n}, {1}, {1}, 0, 0, 0, 0));
    if (call.outputs.size() > 1) {
      Box mask = Plain({n}, {0}, {1}, 0, 0, 0, 1);
      mask.fill = true;
      mask.value = 1;
      boxes.push_back(mask);
    }
  }
  return MakeFunc(call, p, EmitBoxes(call, p, boxes));
}

std::string CheckDropout(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs) {
  if (inputs.empty() || !inputs[0].defined()) return "Dropout: input 0 is missing";
  // training_mode (an input from opset 12) is only known when running: the npu takes
  // the inference form only, where it is absent, or the attribute (the driver's, from a
  // constant input or a checked one) is 0
  if (AttrInt(attrs, "training_mode", 0) != 0 ||
      (inputs.size() > 2 && inputs[2].defined() && !HasAttr(attrs, "training_mode")))
    return "Dropout: training mode draws random numbers; only inference runs on the npu";
  return CheckDTypes(
      {inputs[0]},
      {DataType::Float(32), DataType::Int(32), DataType::UInt(32), DataType::Float(16),
       DataType::Int(16), DataType::Int(8), DataType::UInt(8), DataType::Bool()},
      op);
}

std::string CheckLayout(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs) {
  if (inputs.empty() || !inputs[0].defined()) return op + ": input 0 is missing";
  std::string why =
      CheckDTypes(op == "Concat" ? inputs : std::vector<TensorSpec>{inputs[0]},
                  {DataType::Float(32), DataType::Int(32), DataType::UInt(32), DataType::Float(16),
                   DataType::Int(16), DataType::Int(8), DataType::UInt(8), DataType::Bool()},
                  op);
  if (!why.empty()) return why;
  size_t r = inputs[0]->shape.size();
  int64_t rank = static_cast<int64_t>(r);
  auto axis_ok = [&](int64_t a) { return a >= -rank && a < rank; };
  if (op == "Concat" || op == "Split") {
    if (op == "Concat" && !HasAttr(attrs, "axis")) return "Concat: no axis";
    if (!axis_ok(AttrInt(attrs, "axis", 0))) return op + ": axis out of range";
  }
  if (op == "Transpose" && HasAttr(attrs, "perm")) {
    auto perm = AttrInts(attrs, "perm", {});
    std::vector<bool> seen(r, false);
    if (perm.size() != r) return "Transpose: perm of the wrong length";
    for (int64_t p : perm) {
      if (!axis_ok(p) || seen[Axis(p, r)]) return "Transpose: perm is not a permutation";
      seen[Axis(p, r)] = true;
    }
  }
  if (op == "Concat") {
    for (const TensorSpec& t : inputs)
      if (!t.defined() || t->dtype != inputs[0]->dtype || t->shape.size() != r)
        return "Concat: inputs of different dtypes or ranks";
  }
  if (op == "Slice" && (inputs.size() > 1 || HasAttr(attrs, "starts"))) {
    if (!HasAttr(attrs, "starts") || !HasAttr(attrs, "ends"))
      return "Slice: starts and ends must be known when compiling (constant inputs, given as "
             "attributes)";
    size_t n = AttrInts(attrs, "starts", {}).size();
    auto steps = AttrInts(attrs, "steps", std::vector<int64_t>(n, 1));
    std::vector<int64_t> dflt(n);
    std::iota(dflt.begin(), dflt.end(), 0);
    auto axes = AttrInts(attrs, "axes", dflt);
    if (AttrInts(attrs, "ends", {}).size() != n || steps.size() != n || axes.size() != n)
      return "Slice: starts, ends, axes and steps of different lengths";
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < n; ++i) {
      if (steps[i] == 0) return "Slice: a step of 0";
      if (!axis_ok(axes[i]) || seen[Axis(axes[i], r)])
        return "Slice: axes out of range or repeated";
      seen[Axis(axes[i], r)] = true;
    }
  }
  if (op == "Pad") {
    if (inputs.size() > 1 && inputs[1].defined() && !HasAttr(attrs, "pads"))
      return "Pad: pads must be known when compiling (a constant input, given as the attribute "
             "`pads`)";
    if (inputs.size() > 2 && inputs[2].defined() && !HasAttr(attrs, "value") &&
        !HasAttr(attrs, "constant_value"))
      return "Pad: constant_value must be known when compiling (given as the attribute `value`)";
    std::string mode = AttrStr(attrs, "mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      return "Pad: mode " + mode;
    auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * r, 0));
    std::vector<int64_t> dflt(pads.size() / 2);
    std::iota(dflt.begin(), dflt.end(), 0);
    auto axes = AttrInts(attrs, "axes", dflt);
    if (pads.size() != 2 * axes.size() || axes.size() > r)
      return "Pad: pads must hold a begin and an end per axis";
    std::vector<bool> seen(r, false);
    for (int64_t a : axes) {
      if (!axis_ok(a) || seen[Axis(a, r)]) return "Pad: axes out of range or repeated";
      seen[Axis(a, r)] = true;
    }
    if (mode != "constant") {
      auto pads = PadsOf(attrs, r);
      for (size_t d = 0; d < r; ++d) {
        int64_t n = inputs[0]->shape[d];
        for (int64_t pd : {pads[d], pads[d + r]}) {
          if (pd <= 0) continue;
          if (mode == "edge" && n == 0) return "Pad: edge padding of an empty dimension";
          if (mode == "reflect" && pd > n - 1)
            return "Pad: reflect padding wider than the dimension minus one";
          if (mode == "wrap" && n == 0) return "Pad: wrap padding of an empty dimension";
          if (pads[d] < 0 || pads[d + r] < 0) return "Pad: " + mode + " padding with cropping";
        }
      }
    }
  }
  if (op == "Tile" && !HasAttr(attrs, "repeats") && inputs.size() > 1) {
    // the output shape says the repeats; nothing to check
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    if (r != 4) return op + ": input must be 4-D";
    int64_t bs = AttrInt(attrs, "blocksize", 0);
    auto sh = Shape(inputs[0]);
    if (bs <= 0) return op + ": blocksize must be positive";
    if (op == "DepthToSpace" && sh[1] % (bs * bs) != 0)
      return "DepthToSpace: channels not a multiple of blocksize^2";
    if (op == "SpaceToDepth" && (sh[2] % bs != 0 || sh[3] % bs != 0))
      return "SpaceToDepth: height and width not multiples of blocksize";
    std::string mode = AttrStr(attrs, "mode", "DCR");
    if (mode != "DCR" && mode != "CRD") return op + ": mode " + mode + " is not DCR or CRD";
  }
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  for (const char* op : {"Concat", "Transpose", "DepthToSpace", "SpaceToDepth"})
    RegisterStrategy(op, Strategy{detail::CheckLayout, detail::LowerLayout, onnx, -1});
  RegisterStrategy("Dropout", Strategy{detail::CheckDropout, detail::LowerDropout, onnx, 1});
  for (const char* op : {"Split", "Slice", "Pad", "Tile"})
    RegisterStrategy(op, Strategy{detail::CheckLayout, detail::LowerLayout, onnx, 1});
});

}  // namespace compiler
}  // namespace tilecore
