/*
 * src/compiler/strategy_onehot.cc — OneHot with run-time indices (int32, int64 or
 * float32) and values ([off, on], read at run time); depth is the output's axis length.
 *
 * The indices are viewed as (outer, inner) and the output as (outer, depth, inner)
 * around `axis`. An item is one `outer` index and a block of `inner` columns: the
 * block's indices go to L1, the front end writes the (depth, block) slab (on where the
 * row is the index, negative indices counted from the end, off elsewhere, so an index
 * out of range gives a row of off), and the slab goes to the output. int64 indices are
 * read as two words and narrowed (NarrowIndex, kernel_util.h): one beyond int32 stays
 * out of range. Float indices are truncated toward zero, as ONNX converts them.
 */
#include <algorithm>

#include "axis_blocks.h"
#include "kernel_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kOneHotBytes = 768 * 1024;  // L1 for one item's buffers

struct OhGeom {
  int64_t outer = 1, depth = 1, inner = 1, es = 4, iw = 1;
};

std::string Geometry(const std::vector<TensorSpec>& ins, const std::vector<int64_t>& out,
                     const Map<String, Any>& attrs, OhGeom* g) {
  auto is = Shape(ins[0]);
  int64_t r = static_cast<int64_t>(is.size()) + 1;
  int64_t axis = AttrInt(attrs, "axis", -1);
  if (axis < -r || axis >= r) return "OneHot: axis " + std::to_string(axis) + " out of range";
  if (axis < 0) axis += r;
  for (int64_t d = 0; d < axis; ++d) g->outer *= is[d];
  for (int64_t d = axis; d < r - 1; ++d) g->inner *= is[d];
  if (!out.empty()) g->depth = out[axis];
  g->es = std::max(1, (ins[2]->dtype.bits() + 7) / 8);
  g->iw = ins[0]->dtype == DataType::Int(64) ? 2 : 1;
  if (g->depth * g->es + 4 * g->iw > kOneHotBytes)
    return "OneHot: depth too large for one column in L1";
  return "";
}

PrimFunc LowerOneHot(const OpCall& c) {
  Params p = MakeParams(c);
  OhGeom g;
  if (c.outputs.size() != 1 || c.outputs[0]->dtype != c.inputs[2]->dtype ||
      c.outputs[0]->shape.size() != c.inputs[0]->shape.size() + 1)
    TILECORE_THROW(ValueError)
        << "LowerOp(OneHot): the output must have one axis more than the indices and the "
           "values' dtype";
  std::string why = Geometry(c.inputs, Shape(c.outputs[0]), c.attrs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(OneHot): " << why;
  if (g.outer * g.depth * g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  DataType it = c.inputs[0]->dtype, vt = c.inputs[2]->dtype, i32 = DataType::Int(32);
  bool wide = g.iw == 2;
  Buffer I = IndexView(p.in[0], {g.outer, g.inner}, wide, "I");
  Buffer Vg = View(p.in[2], {2}, "V");
  Buffer Y = View(p.out[0], {g.outer, g.depth, g.inner}, "Y");
  int64_t ic = BlockColumns(g.outer, g.inner, c.cores, g.depth * g.es + 4 * g.iw, kOneHotBytes);
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ic * g.iw}, wide ? i32 : it, "Il"), V = Local({2}, vt, "Vl"),
           O = Local({g.depth, ic}, vt, "Ol");
    std::vector<Stmt> s{DmaWait(Region(V, {I32(0)}, {2}), Region(Vg, {I32(0)}, {2}), 0)};
    s.push_back(ForEachColumnBlock(
        core, c.cores, g.outer, g.inner, ic, &rotation, [&](PrimExpr o, PrimExpr i0, int64_t size) {
          std::vector<Stmt> st;
          st.push_back(Intrin("tile.wait", {I32(1)}));  // the previous item has left O
          st.push_back(DmaWait(Region(L, {I32(0)}, {size * g.iw}),
                               Region(I, {o, i0 * I32(g.iw)}, {1, size * g.iw}), 0));
          st.push_back(Loop("i", size, [&](PrimExpr i) {
            Var v("v", i32);
            PrimExpr raw;
            if (wide) {
              raw = LoadIndex(L, {}, i, true);
            } else if (it.is_float()) {
              // truncation toward zero (the conversion rounds to nearest even), within
              // int32 (beyond it the index is out of range either way)
              PrimExpr x = max(min(BufferLoad(L, {i}), F32(2e9)), F32(-2e9));
              PrimExpr r = cast(i32, x), back = cast(DataType::Float(32), r);
              raw = r - select(x >= F32(0) && back > x, I32(1), I32(0)) +
                    select(x < F32(0) && back < x, I32(1), I32(0));
            } else {
              raw = cast(i32, BufferLoad(L, {i}));
            }
            Stmt rows = Loop("d", g.depth, [&](PrimExpr d) {
              return BufferStore(
                  O, select(eq(v, d), BufferLoad(V, {I32(1)}), BufferLoad(V, {I32(0)})), {d, i});
            });
            return Stmt(LetStmt(v, WrapIndex(raw, g.depth), rows));
          }));
          st.push_back(StoreSlab(Y, O, o, i0, g.depth, size));
          return Seq(st);
        }));
    s.push_back(Intrin("tile.wait", {I32(1)}));
    return Allocate(L, Allocate(V, Allocate(O, Seq(s))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckOneHot(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 3 || !inputs[0].defined() || !inputs[2].defined())
    return "OneHot: expects indices, depth and values";
  DataType it = inputs[0]->dtype;
  if (it != DataType::Int(32) && it != DataType::Int(64) && it != DataType::Float(32))
    return "OneHot: indices are " + it.str() + "; the npu reads int32, int64 and float32 indices";
  if (inputs[2]->numel() != 2) return "OneHot: values must hold two elements";
  std::string why = CheckDTypes({inputs[2]}, MovableDTypes(), op);
  if (!why.empty()) return why;
  OhGeom g;
  return Geometry(inputs, {}, attrs, &g);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  // depth (input 1) is never read: the output shape carries it
  RegisterStrategy("OneHot", Strategy{detail::CheckOneHot, detail::LowerOneHot, onnx, -1, {0, 1}});
});

}  // namespace compiler
}  // namespace tilecore
