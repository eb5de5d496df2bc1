/*
 * src/compiler/strategy_scatter.cc — ScatterElements (reduction none, add, mul, max,
 * min), the older Scatter, and ScatterND (below), with run-time int32 or int64 indices.
 *
 * Data and updates are viewed as (outer, A, inner) and (outer, K, inner) around the
 * axis, the indices as the updates (the strategy takes indices as wide as the data off
 * the axis). An item is one `outer` index and a block of `inner` columns: the data's
 * (A, block) slab, the indices' and the updates' (K, block) go to L1, the front end
 * applies the updates in index order (so with duplicate indices the last one wins, or
 * all of them combine), and the slab goes to the output. Items own disjoint columns, so
 * the cores need no ordering. Negative indices wrap; an out-of-range index (an error
 * in ONNX) is clamped into the axis, never written outside it. int64 indices are read
 * as two words and narrowed (NarrowIndex, kernel_util.h).
 */
#include <algorithm>
#include <tuple>

#include "kernel_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kScatterBytes = 768 * 1024;  // L1 for one item's buffers

struct ScGeom {
  int64_t outer = 1, A = 1, K = 1, inner = 1, es = 4, iw = 1;
};

int64_t ColumnBytes(const ScGeom& g) { return g.A * g.es + g.K * (g.es + 4 * g.iw); }

std::string Geometry(const std::string& op, const std::vector<TensorSpec>& ins,
                     const Map<String, Any>& attrs, ScGeom* g) {
  auto ds = Shape(ins[0]), is = Shape(ins[1]), us = Shape(ins[2]);
  int64_t r = static_cast<int64_t>(ds.size());
  int64_t axis = AttrInt(attrs, "axis", 0);
  if (r == 0 || axis < -r || axis >= r)
    return op + ": axis " + std::to_string(axis) + " out of range";
  if (axis < 0) axis += r;
  if (is != us) return op + ": indices and updates of different shapes";
  if (static_cast<int64_t>(is.size()) != r) return op + ": indices of another rank than data";
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && is[d] != ds[d])
      return op + ": indices narrower than data off the axis (the npu strategy needs them equal)";
  for (int64_t d = 0; d < axis; ++d) g->outer *= ds[d];
  for (int64_t d = axis + 1; d < r; ++d) g->inner *= ds[d];
  g->A = ds[axis];
  g->K = is[axis];
  g->es = std::max(1, (ins[0]->dtype.bits() + 7) / 8);
  g->iw = ins[1]->dtype == DataType::Int(64) ? 2 : 1;
  if (ColumnBytes(*g) > kScatterBytes)
    return op + ": the axis is too long for one column of data, indices and updates in L1";
  return "";
}

PrimFunc LowerScatter(const OpCall& c) {
  const std::string& op = c.op_type;
  Params p = MakeParams(c);
  ScGeom g;
  std::string why = Geometry(op, c.inputs, c.attrs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != c.inputs[0]->numel() ||
      c.outputs[0]->dtype != c.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): the output must be like the data";
  if (g.outer * g.A * g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  std::string red = AttrStr(c.attrs, "reduction", "none");
  DataType dt = c.inputs[0]->dtype, i32 = DataType::Int(32);
  bool wide = g.iw == 2;
  Buffer X = View(p.in[0], {g.outer, g.A, g.inner}, "X");
  Buffer I = wide ? Words(p.in[1], {g.outer, g.K, g.inner}, "I")
                  : View(p.in[1], {g.outer, g.K, g.inner}, "I");
  Buffer U = View(p.in[2], {g.outer, g.K, g.inner}, "U");
  Buffer Y = View(p.out[0], {g.outer, g.A, g.inner}, "Y");
  int64_t ic = std::min(g.inner, kScatterBytes / ColumnBytes(g));
  if (g.outer < c.cores)
    ic = std::min(ic, std::max<int64_t>(1, (g.inner * g.outer + c.cores - 1) / c.cores));
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer D = Local({g.A, ic}, dt, "Dl"), L = Local({g.K, ic * g.iw}, i32, "Il"),
           V = Local({g.K, ic}, dt, "Ul");
    std::vector<Stmt> s;
    int64_t nfull = g.inner / ic, rem = g.inner % ic;
    for (auto [count, size, start] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {g.outer * nfull, ic, 0}, {rem ? g.outer : 0, rem, nfull * ic}}) {
      int64_t per = size == ic ? nfull : 1;
      s.push_back(ForEachItem(
          core, c.cores, count, &rotation, "t",
          [&, size = size, start = start, per = per](PrimExpr t) {
            PrimExpr o = floordiv(t, I32(per)), i0 = I32(start) + floormod(t, I32(per)) * I32(ic);
            std::vector<Stmt> st;
            st.push_back(Intrin("tile.wait", {I32(1)}));  // the previous item has left D
            st.push_back(DmaWait(Region(D, {I32(0), I32(0)}, {g.A, size}),
                                 Region(X, {o, I32(0), i0}, {1, g.A, size}), 0));
            st.push_back(DmaWait(Region(L, {I32(0), I32(0)}, {g.K, size * g.iw}),
                                 Region(I, {o, I32(0), i0 * I32(g.iw)}, {1, g.K, size * g.iw}), 0));
            st.push_back(DmaWait(Region(V, {I32(0), I32(0)}, {g.K, size}),
                                 Region(U, {o, I32(0), i0}, {1, g.K, size}), 0));
            // k outer: the updates of one column apply in index order
            st.push_back(Loop("k", g.K, [&](PrimExpr k) {
              return Loop("i", size, [&](PrimExpr i) {
                Var v("v", i32);
                PrimExpr raw = wide ? NarrowIndex(BufferLoad(L, {k, i * I32(2)}),
                                                  BufferLoad(L, {k, i * I32(2) + I32(1)}))
                                    : BufferLoad(L, {k, i});
                PrimExpr idx = max(min(v, I32(g.A - 1)), I32(0));
                PrimExpr cur = BufferLoad(D, {idx, i}), u = BufferLoad(V, {k, i});
                PrimExpr val = red == "add"   ? cur + u
                               : red == "mul" ? cur * u
                               : red == "max" ? max(cur, u)
                               : red == "min" ? min(cur, u)
                                              : u;
                return Stmt(LetStmt(v, select(raw < I32(0), raw + I32(g.A), raw),
                                    BufferStore(D, val, {idx, i})));
              });
            }));
            st.push_back(
                Intrin("tile.dma_copy", {Region(Y, {o, I32(0), i0}, {1, g.A, size}),
                                         Region(D, {I32(0), I32(0)}, {g.A, size}), I32(1)}));
            return Seq(st);
          }));
    }
    s.push_back(Intrin("tile.wait", {I32(1)}));
    return Allocate(D, Allocate(L, Allocate(V, Seq(s))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckScatter(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 3 || !inputs[0].defined() || !inputs[1].defined() || !inputs[2].defined())
    return op + ": expects data, indices and updates";
  std::vector<DataType> arith = {DataType::Float(32), DataType::Int(32)};
  std::vector<DataType> any = {DataType::Float(32), DataType::Int(32), DataType::UInt(32),
                               DataType::Float(16), DataType::Int(16), DataType::Int(8),
                               DataType::UInt(8),   DataType::Bool()};
  std::string red = AttrStr(attrs, "reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return op + ": reduction " + red;
  std::string why = CheckDTypes({inputs[0]}, red == "none" ? any : arith, op);
  if (!why.empty()) return why;
  if (inputs[2]->dtype != inputs[0]->dtype) return op + ": updates of another dtype than data";
  if (inputs[1]->dtype != DataType::Int(32) && inputs[1]->dtype != DataType::Int(64))
    return op + ": indices are " + inputs[1]->dtype.str() +
           "; the npu reads int32 and int64 indices";
  ScGeom g;
  return Geometry(op, inputs, attrs, &g);
}

// ScatterND: data (S, inner) with S the q indexed dims flattened, T index tuples, the
// updates (T, inner). One core works through the tuples in order (duplicate tuples must
// apply in order): the data is first copied to the output DDR to DDR; a tuple without a
// reduction is one DMA of its update slice into the output, with one its output slice
// and update slice go to L1 in pieces, are combined, and go back.
constexpr int64_t kNdChunk = 4096;   // index words per chunk in L1
constexpr int64_t kNdPiece = 16384;  // elements of a slice combined at once

PrimFunc LowerScatterND(const OpCall& c) {
  Params p = MakeParams(c);
  auto ds = Shape(c.inputs[0]), is = Shape(c.inputs[1]);
  int64_t q = is.back(), T = c.inputs[1]->numel() / std::max<int64_t>(q, 1), S = 1, inner = 1;
  std::vector<int64_t> dims(ds.begin(), ds.begin() + q);
  for (int64_t d : dims) S *= d;
  for (size_t d = q; d < ds.size(); ++d) inner *= ds[d];
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != c.inputs[0]->numel() ||
      c.outputs[0]->dtype != c.inputs[0]->dtype || c.inputs[2]->numel() != T * inner)
    TILECORE_THROW(ValueError) << "LowerOp(ScatterND): the output must be like the data and the "
                                  "updates one slice per index tuple";
  int64_t N = c.inputs[0]->numel();
  if (N == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  std::string red = AttrStr(c.attrs, "reduction", "none");
  DataType dt = c.inputs[0]->dtype, i32 = DataType::Int(32);
  bool wide = c.inputs[1]->dtype == DataType::Int(64);
  int64_t w = wide ? 2 : 1, tw = q * w;
  Buffer X = View(p.in[0], {N}, "X"), Y = View(p.out[0], {N}, "Y");
  Buffer Yr = View(p.out[0], {S, inner}, "Yr");
  Buffer I = wide ? Words(p.in[1], {T * q}, "I") : View(p.in[1], {T * q}, "I");
  Buffer U = View(p.in[2], {std::max<int64_t>(T, 1), inner}, "U");
  int64_t ck = std::max<int64_t>(1, std::min(T, kNdChunk / tw));
  int64_t piece = std::min(inner, kNdPiece);
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ck * tw}, i32, "Il"), A = Local({piece}, dt, "Al"),
           B = Local({piece}, dt, "Bl");
    std::vector<Stmt> s{DmaWait(Region(Y, {I32(0)}, {N}), Region(X, {I32(0)}, {N}), 1)};
    for (auto [count, size] :
         std::vector<std::pair<int64_t, int64_t>>{{T / ck, ck}, {T % ck ? 1 : 0, T % ck}}) {
      int64_t base = size == ck ? 0 : (T / ck) * ck;
      s.push_back(Loop("t", count, [&, size = size, base = base](PrimExpr t) {
        PrimExpr start = I32(base) + t * I32(ck);
        Stmt load =
            DmaWait(Region(L, {I32(0)}, {size * tw}), Region(I, {start * I32(tw)}, {size * tw}), 0);
        Stmt apply = Loop("j", size, [&](PrimExpr j) {
          PrimExpr off = I32(0);
          int64_t stride = S;
          for (int64_t k = 0; k < q; ++k) {
            PrimExpr at = j * I32(tw) + I32(k * w);
            PrimExpr raw = wide ? NarrowIndex(BufferLoad(L, {at}), BufferLoad(L, {at + I32(1)}))
                                : BufferLoad(L, {at});
            int64_t n = dims[k];
            stride /= n;
            off = off + max(min(select(raw < I32(0), raw + I32(n), raw), I32(n - 1)), I32(0)) *
                            I32(stride);
          }
          Var o("off", i32);
          PrimExpr row = start + j;
          Stmt st;
          if (red == "none") {
            st = DmaWait(Region(Yr, {o, I32(0)}, {1, inner}), Region(U, {row, I32(0)}, {1, inner}),
                         1);
          } else {
            std::vector<Stmt> pieces;
            for (int64_t p0 = 0; p0 < inner; p0 += piece) {
              int64_t n = std::min(piece, inner - p0);
              pieces.push_back(
                  DmaWait(Region(A, {I32(0)}, {n}), Region(Yr, {o, I32(p0)}, {1, n}), 0));
              pieces.push_back(
                  DmaWait(Region(B, {I32(0)}, {n}), Region(U, {row, I32(p0)}, {1, n}), 0));
              pieces.push_back(Loop("e", n, [&](PrimExpr e) {
                PrimExpr a = BufferLoad(A, {e}), b = BufferLoad(B, {e});
                PrimExpr v = red == "add"   ? a + b
                             : red == "mul" ? a * b
                             : red == "max" ? max(a, b)
                                            : min(a, b);
                return BufferStore(A, v, {e});
              }));
              pieces.push_back(
                  DmaWait(Region(Yr, {o, I32(p0)}, {1, n}), Region(A, {I32(0)}, {n}), 1));
            }
            st = Seq(pieces);
          }
          return Stmt(LetStmt(o, off, st));
        });
        return Seq({load, apply});
      }));
    }
    // one core: duplicate tuples apply in order
    return IfThenElse(eq(core, I32(0)), Allocate(L, Allocate(A, Allocate(B, Seq(s)))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckScatterND(const std::string& op, const Map<String, Any>& attrs,
                           const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 3 || !inputs[0].defined() || !inputs[1].defined() || !inputs[2].defined())
    return "ScatterND: expects data, indices and updates";
  std::string red = AttrStr(attrs, "reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return "ScatterND: reduction " + red;
  std::string why =
      CheckDTypes({inputs[0]},
                  red == "none" ? std::vector<DataType>{DataType::Float(32), DataType::Int(32),
                                                        DataType::UInt(32), DataType::Float(16),
                                                        DataType::Int(16), DataType::Int(8),
                                                        DataType::UInt(8), DataType::Bool()}
                                : std::vector<DataType>{DataType::Float(32), DataType::Int(32)},
                  op);
  if (!why.empty()) return why;
  if (inputs[2]->dtype != inputs[0]->dtype) return "ScatterND: updates of another dtype than data";
  if (inputs[1]->dtype != DataType::Int(32) && inputs[1]->dtype != DataType::Int(64))
    return "ScatterND: indices are " + inputs[1]->dtype.str() +
           "; the npu reads int32 and int64 indices";
  auto ds = Shape(inputs[0]), is = Shape(inputs[1]), us = Shape(inputs[2]);
  if (is.empty() || is.back() < 1 || is.back() > static_cast<int64_t>(ds.size()))
    return "ScatterND: the index depth does not fit the data rank";
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + is.back(), ds.end());
  if (us != want) return "ScatterND: updates not of the shape indices and data give";
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("ScatterND", Strategy{detail::CheckScatterND,
                                         detail::LowerScatterND,
                                         [](const OpCall&, int) { return std::string("onnx"); },
                                         -1,
                                         {1}});
  for (const char* op : {"ScatterElements", "Scatter"})
    RegisterStrategy(op, Strategy{detail::CheckScatter,
                                  detail::LowerScatter,
                                  [](const OpCall&, int) { return std::string("onnx"); },
                                  -1,
                                  {1}});
});

}  // namespace compiler
}  // namespace tilecore
