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

#include "axis_blocks.h"
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

/*! \brief What an update `u` leaves of `cur` under `reduction` ("none": u). */
PrimExpr Combine(const std::string& reduction, const PrimExpr& cur, const PrimExpr& u) {
  if (reduction == "add") return cur + u;
  if (reduction == "mul") return cur * u;
  if (reduction == "max") return max(cur, u);
  if (reduction == "min") return min(cur, u);
  return u;
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
  Buffer I = IndexView(p.in[1], {g.outer, g.K, g.inner}, wide, "I");
  Buffer U = View(p.in[2], {g.outer, g.K, g.inner}, "U");
  Buffer Y = View(p.out[0], {g.outer, g.A, g.inner}, "Y");
  int64_t ic = BlockColumns(g.outer, g.inner, c.cores, ColumnBytes(g), kScatterBytes);
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer D = Local({g.A, ic}, dt, "Dl"), L = Local({g.K, ic * g.iw}, i32, "Il"),
           V = Local({g.K, ic}, dt, "Ul");
    Stmt items = ForEachColumnBlock(
        core, c.cores, g.outer, g.inner, ic, &rotation, [&](PrimExpr o, PrimExpr i0, int64_t size) {
          // k outer: the updates of one column apply in index order
          Stmt apply = Loop("k", g.K, [&](PrimExpr k) {
            return Loop("i", size, [&](PrimExpr i) {
              Var v("v", i32);
              PrimExpr idx = ClampIndex(v, g.A);
              PrimExpr val = Combine(red, BufferLoad(D, {idx, i}), BufferLoad(V, {k, i}));
              return Stmt(LetStmt(v, WrapIndex(LoadIndex(L, {k}, i, wide), g.A),
                                  BufferStore(D, val, {idx, i})));
            });
          });
          return Seq({Intrin("tile.wait", {I32(1)}),  // the previous item has left D
                      LoadSlab(D, X, o, i0, g.A, size),
                      LoadSlab(L, I, o, i0 * I32(g.iw), g.K, size * g.iw),
                      LoadSlab(V, U, o, i0, g.K, size), apply, StoreSlab(Y, D, o, i0, g.A, size)});
        });
    return Allocate(D, Allocate(L, Allocate(V, Seq({items, Intrin("tile.wait", {I32(1)})}))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckScatter(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 3 || !inputs[0].defined() || !inputs[1].defined() || !inputs[2].defined())
    return op + ": expects data, indices and updates";
  std::vector<DataType> arith = {DataType::Float(32), DataType::Int(32)};
  std::string red = AttrStr(attrs, "reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return op + ": reduction " + red;
  std::string why = CheckDTypes({inputs[0]}, red == "none" ? MovableDTypes() : arith, op);
  if (!why.empty()) return why;
  if (inputs[2]->dtype != inputs[0]->dtype) return op + ": updates of another dtype than data";
  why = CheckIndexDType(op, inputs[1]);
  if (!why.empty()) return why;
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
  Buffer I = IndexView(p.in[1], {T * q}, wide, "I");
  Buffer U = View(p.in[2], {std::max<int64_t>(T, 1), inner}, "U");
  int64_t ck = std::max<int64_t>(1, std::min(T, kNdChunk / tw));
  int64_t piece = std::min(inner, kNdPiece);
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ck * tw}, i32, "Il"), A = Local({piece}, dt, "Al"),
           B = Local({piece}, dt, "Bl");
    std::vector<Stmt> s{DmaWait(Region(Y, {I32(0)}, {N}), Region(X, {I32(0)}, {N}), 1)};
    // no rotation: this core takes every chunk, in order
    s.push_back(ForEachChunk(core, c.cores, T, ck, nullptr, [&](PrimExpr start, int64_t size) {
      Stmt load =
          DmaWait(Region(L, {I32(0)}, {size * tw}), Region(I, {start * I32(tw)}, {size * tw}), 0);
      Stmt apply = Loop("j", size, [&](PrimExpr j) {
        PrimExpr off = TupleOffset(L, j, dims, wide);
        Var o("off", i32);
        PrimExpr row = start + j;
        Stmt st;
        if (red == "none") {
          st =
              DmaWait(Region(Yr, {o, I32(0)}, {1, inner}), Region(U, {row, I32(0)}, {1, inner}), 1);
        } else {
          std::vector<Stmt> pieces;
          for (int64_t p0 = 0; p0 < inner; p0 += piece) {
            int64_t n = std::min(piece, inner - p0);
            pieces.push_back(
                DmaWait(Region(A, {I32(0)}, {n}), Region(Yr, {o, I32(p0)}, {1, n}), 0));
            pieces.push_back(
                DmaWait(Region(B, {I32(0)}, {n}), Region(U, {row, I32(p0)}, {1, n}), 0));
            pieces.push_back(Loop("e", n, [&](PrimExpr e) {
              return BufferStore(A, Combine(red, BufferLoad(A, {e}), BufferLoad(B, {e})), {e});
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
                  red == "none" ? MovableDTypes()
                                : std::vector<DataType>{DataType::Float(32), DataType::Int(32)},
                  op);
  if (!why.empty()) return why;
  if (inputs[2]->dtype != inputs[0]->dtype) return "ScatterND: updates of another dtype than data";
  why = CheckIndexDType("ScatterND", inputs[1]);
  if (!why.empty()) return why;
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
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  RegisterStrategy("ScatterND",
                   Strategy{detail::CheckScatterND, detail::LowerScatterND, onnx, -1, {1}});
  for (const char* op : {"ScatterElements", "Scatter"})
    RegisterStrategy(op, Strategy{detail::CheckScatter, detail::LowerScatter, onnx, -1, {1}});
});

}  // namespace compiler
}  // namespace tilecore
