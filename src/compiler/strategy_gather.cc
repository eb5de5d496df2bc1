/*
 * src/compiler/strategy_gather.cc — Gather, GatherElements and GatherND with run-time
 * int32 or int64 indices.
 *
 * GatherElements: data and indices are viewed as (outer, A, inner) and (outer, K,
 * inner) around the axis (indices as wide as data off the axis); an item is one
 * `outer` index and a block of `inner` columns: the data's (A, block) and the
 * indices' (K, block) go to L1, the front end picks each element (negative indices
 * wrap, out-of-range ones clamp), and the (K, block) result goes back.
 *
 * Gather:
 * Data is viewed as (outer, A, inner) around `axis`, the output as (outer, K, inner)
 * with K the number of indices. The indices are cut into chunks that go to the cores
 * round robin; a chunk is DMAed to L1, and for each index the front end reads it,
 * wraps a negative one (ONNX counts it from the end), clamps it into [0, A) (an index
 * out of range is an error in ONNX; here it reads the nearest slice and never
 * touches memory outside the data) and issues one strided DMA of the (outer, 1,
 * inner) slice straight from DDR to DDR. No data passes through L1, so any shape fits.
 *
 * int64 indices (what exporters emit): TC1 has no 64-bit integers, so the kernel DMAs
 * both int32 words of each index and narrows it (NarrowIndex, kernel_util.h): exact
 * when it fits int32, saturated otherwise, which keeps an index beyond int32 out of
 * range (docs/compiler.md, "int64 indices").
 */
#include <algorithm>

#include "axis_blocks.h"
#include "kernel_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kChunk = 4096;  // indices per chunk (16 KiB of L1)

PrimFunc LowerGather(const OpCall& c) {
  Params p = MakeParams(c);
  auto ds = Shape(c.inputs[0]);
  int64_t r = static_cast<int64_t>(ds.size());
  int64_t axis = AttrInt(c.attrs, "axis", 0);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1, A = ds[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= ds[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= ds[d];
  int64_t K = c.inputs[1]->numel();
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != outer * K * inner ||
      c.outputs[0]->dtype != c.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(Gather): the output must be " << outer * K * inner
                               << " elements of " << c.inputs[0]->dtype.str();
  if (outer == 0 || inner == 0 || K == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  if (A == 0) TILECORE_THROW(ValueError) << "LowerOp(Gather): indices into an empty axis " << axis;
  Buffer X = View(p.in[0], {outer, A, inner}, "X");
  bool wide = c.inputs[1]->dtype == DataType::Int(64);  // two words per index
  int64_t w = wide ? 2 : 1;
  Buffer I = IndexView(p.in[1], {K}, wide, "I");
  Buffer Y = View(p.out[0], {outer, K, inner}, "Y");
  int64_t ck = std::min(kChunk, std::max<int64_t>(1, (K + c.cores - 1) / c.cores));
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ck * w}, DataType::Int(32), "Il");
    Stmt chunks = ForEachChunk(core, c.cores, K, ck, &rotation, [&](PrimExpr start, int64_t size) {
      Stmt load =
          DmaWait(Region(L, {I32(0)}, {size * w}), Region(I, {start * I32(w)}, {size * w}), 0);
      Stmt copies = Loop("j", size, [&](PrimExpr j) {
        Var v("v", DataType::Int(32));
        Stmt cp =
            Intrin("tile.dma_copy",
                   {Region(Y, {I32(0), start + j, I32(0)}, {outer, 1, inner}),
                    Region(X, {I32(0), ClampIndex(v, A), I32(0)}, {outer, 1, inner}), I32(0)});
        return LetStmt(v, WrapIndex(LoadIndex(L, {}, j, wide), A), cp);
      });
      return Seq({load, copies});
    });
    return Allocate(L, Seq({chunks, Intrin("tile.wait", {I32(0)})}));
  });
  return MakeFunc(c, p, body);
}

std::string CheckGather(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 2 || !inputs[0].defined() || !inputs[1].defined())
    return "Gather: expects data and indices";
  std::string why = CheckDTypes({inputs[0]}, MovableDTypes(), op);
  if (!why.empty()) return why;
  why = CheckIndexDType(op, inputs[1]);
  if (!why.empty()) return why;
  int64_t r = static_cast<int64_t>(inputs[0]->shape.size());
  int64_t axis = AttrInt(attrs, "axis", 0);
  if (r == 0 || axis < -r || axis >= r)
    return "Gather: axis " + std::to_string(axis) + " out of range";
  return "";
}

constexpr int64_t kElementsBytes = 768 * 1024;  // L1 for one GatherElements item

/*! \brief GatherElements as (outer, A, inner) data and (outer, K, inner) indices. */
struct GeGeom {
  int64_t outer = 1, A = 1, K = 1, inner = 1, es = 4;
};

std::string GeGeometry(const std::vector<TensorSpec>& ins, const Map<String, Any>& attrs,
                       GeGeom* g) {
  auto ds = Shape(ins[0]), is = Shape(ins[1]);
  int64_t r = static_cast<int64_t>(ds.size());
  int64_t axis = AttrInt(attrs, "axis", 0);
  if (r == 0 || axis < -r || axis >= r)
    return "GatherElements: axis " + std::to_string(axis) + " out of range";
  if (axis < 0) axis += r;
  if (static_cast<int64_t>(is.size()) != r)
    return "GatherElements: indices of another rank than data";
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && is[d] != ds[d])
      return "GatherElements: indices narrower than data off the axis (the npu strategy needs them "
             "equal)";
  for (int64_t d = 0; d < axis; ++d) g->outer *= ds[d];
  for (int64_t d = axis + 1; d < r; ++d) g->inner *= ds[d];
  g->A = ds[axis];
  g->K = is[axis];
  g->es = std::max(1, (ins[0]->dtype.bits() + 7) / 8);
  if ((g->A + g->K) * g->es + g->K * 8 > kElementsBytes)
    return "GatherElements: the axis is too long for one column of data and indices in L1";
  return "";
}

PrimFunc LowerGatherElements(const OpCall& c) {
  Params p = MakeParams(c);
  GeGeom g;
  std::string why = GeGeometry(c.inputs, c.attrs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(GatherElements): " << why;
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != c.inputs[1]->numel() ||
      c.outputs[0]->dtype != c.inputs[0]->dtype)
    TILECORE_THROW(ValueError)
        << "LowerOp(GatherElements): the output must have the indices' shape and the data's dtype";
  if (g.outer * g.K * g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  if (g.A == 0) TILECORE_THROW(ValueError) << "LowerOp(GatherElements): indices into an empty axis";
  DataType dt = c.inputs[0]->dtype, i32 = DataType::Int(32);
  Buffer X = View(p.in[0], {g.outer, g.A, g.inner}, "X");
  bool wide = c.inputs[1]->dtype == DataType::Int(64);  // two words per index
  int64_t w = wide ? 2 : 1;
  Buffer I = IndexView(p.in[1], {g.outer, g.K, g.inner}, wide, "I");
  Buffer Y = View(p.out[0], {g.outer, g.K, g.inner}, "Y");
  int64_t ic =
      BlockColumns(g.outer, g.inner, c.cores, (g.A + g.K) * g.es + g.K * 4 * w, kElementsBytes);
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer D = Local({g.A, ic}, dt, "Dl"), L = Local({g.K, ic * w}, i32, "Il"),
           O = Local({g.K, ic}, dt, "Ol");
    Stmt items = ForEachColumnBlock(
        core, c.cores, g.outer, g.inner, ic, &rotation, [&](PrimExpr o, PrimExpr i0, int64_t size) {
          Stmt pick = Loop("k", g.K, [&](PrimExpr k) {
            return Loop("i", size, [&](PrimExpr i) {
              Var v("v", i32);
              return Stmt(LetStmt(v, WrapIndex(LoadIndex(L, {k}, i, wide), g.A),
                                  BufferStore(O, BufferLoad(D, {ClampIndex(v, g.A), i}), {k, i})));
            });
          });
          return Seq({Intrin("tile.wait", {I32(1)}),  // the previous item has left O
                      LoadSlab(D, X, o, i0, g.A, size),
                      LoadSlab(L, I, o, i0 * I32(w), g.K, size * w), pick,
                      StoreSlab(Y, O, o, i0, g.K, size)});
        });
    return Allocate(D, Allocate(L, Allocate(O, Seq({items, Intrin("tile.wait", {I32(1)})}))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckGatherElements(const std::string& op, const Map<String, Any>& attrs,
                                const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 2 || !inputs[0].defined() || !inputs[1].defined())
    return "GatherElements: expects data and indices";
  std::string why = CheckDTypes({inputs[0]}, MovableDTypes(), op);
  if (!why.empty()) return why;
  why = CheckIndexDType(op, inputs[1]);
  if (!why.empty()) return why;
  GeGeom g;
  return GeGeometry(inputs, attrs, &g);
}

/*! \brief GatherND as B batches of T index tuples of depth q into (B, S, inner) data. */
struct NdGeom {
  int64_t B = 1, T = 1, q = 1, S = 1, inner = 1;
  std::vector<int64_t> dims;  // the q indexed dims
};

std::string NdGeometry(const std::vector<TensorSpec>& ins, const Map<String, Any>& attrs,
                       NdGeom* g) {
  auto ds = Shape(ins[0]), is = Shape(ins[1]);
  int64_t b = AttrInt(attrs, "batch_dims", 0);
  if (is.empty()) return "GatherND: indices must have rank >= 1";
  g->q = is.back();
  int64_t r = static_cast<int64_t>(ds.size()), m = static_cast<int64_t>(is.size());
  if (b < 0 || b >= m || g->q < 1 || b + g->q > r)
    return "GatherND: batch_dims " + std::to_string(b) + " and index depth " +
           std::to_string(g->q) + " do not fit the data rank " + std::to_string(r);
  for (int64_t d = 0; d < b; ++d) {
    if (is[d] != ds[d]) return "GatherND: batch dims of indices and data differ";
    g->B *= ds[d];
  }
  for (int64_t d = b; d < m - 1; ++d) g->T *= is[d];
  for (int64_t d = b; d < b + g->q; ++d) {
    g->dims.push_back(ds[d]);
    g->S *= ds[d];
  }
  for (int64_t d = b + g->q; d < r; ++d) g->inner *= ds[d];
  return "";
}

// Each index tuple becomes one DMA of its (1, inner) slice, DDR to DDR, as in Gather:
// chunks of tuples go to L1 on the cores round robin; every index wraps when negative
// and clamps into its dim (int64 ones narrowed first).
PrimFunc LowerGatherND(const OpCall& c) {
  Params p = MakeParams(c);
  NdGeom g;
  std::string why = NdGeometry(c.inputs, c.attrs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(GatherND): " << why;
  int64_t N = g.B * g.T;
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != N * g.inner ||
      c.outputs[0]->dtype != c.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(GatherND): the output must be " << N * g.inner
                               << " elements of " << c.inputs[0]->dtype.str();
  if (N == 0 || g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  for (int64_t d : g.dims)
    if (d == 0) TILECORE_THROW(ValueError) << "LowerOp(GatherND): indices into an empty dim";
  bool wide = c.inputs[1]->dtype == DataType::Int(64);
  int64_t w = wide ? 2 : 1, tw = g.q * w;  // words per tuple
  Buffer X = View(p.in[0], {g.B, g.S, g.inner}, "X");
  Buffer I = IndexView(p.in[1], {N * g.q}, wide, "I");
  Buffer Y = View(p.out[0], {N, g.inner}, "Y");
  int64_t ck = std::min(kChunk / g.q + 1, std::max<int64_t>(1, (N + c.cores - 1) / c.cores));
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ck * tw}, DataType::Int(32), "Il");
    Stmt chunks = ForEachChunk(core, c.cores, N, ck, &rotation, [&](PrimExpr start, int64_t size) {
      Stmt load =
          DmaWait(Region(L, {I32(0)}, {size * tw}), Region(I, {start * I32(tw)}, {size * tw}), 0);
      Stmt copies = Loop("j", size, [&](PrimExpr j) {
        Var o("off", DataType::Int(32));
        PrimExpr row = start + j;
        Stmt cp =
            Intrin("tile.dma_copy",
                   {Region(Y, {row, I32(0)}, {1, g.inner}),
                    Region(X, {floordiv(row, I32(g.T)), o, I32(0)}, {1, 1, g.inner}), I32(0)});
        return LetStmt(o, TupleOffset(L, j, g.dims, wide), cp);
      });
      return Seq({load, copies});
    });
    return Allocate(L, Seq({chunks, Intrin("tile.wait", {I32(0)})}));
  });
  return MakeFunc(c, p, body);
}

std::string CheckGatherND(const std::string& op, const Map<String, Any>& attrs,
                          const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 2 || !inputs[0].defined() || !inputs[1].defined())
    return "GatherND: expects data and indices";
  std::string why = CheckDTypes({inputs[0]}, MovableDTypes(), op);
  if (!why.empty()) return why;
  why = CheckIndexDType(op, inputs[1]);
  if (!why.empty()) return why;
  NdGeom g;
  return NdGeometry(inputs, attrs, &g);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  RegisterStrategy("GatherND",
                   Strategy{detail::CheckGatherND, detail::LowerGatherND, onnx, -1, {1}});
  RegisterStrategy(
      "GatherElements",
      Strategy{detail::CheckGatherElements, detail::LowerGatherElements, onnx, -1, {1}});
  RegisterStrategy("Gather", Strategy{detail::CheckGather, detail::LowerGather, onnx, -1, {1}});
});

}  // namespace compiler
}  // namespace tilecore
