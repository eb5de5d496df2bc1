/*
 * src/compiler/strategy_axis_scan.cc — ops that walk one axis: the running sums and
 * products (CumSum, CumProd: exclusive, reverse), the arg-reductions (ArgMax, ArgMin:
 * keepdims, select_last_index) and TopK (largest or smallest, sorted; K from the output
 * shape), on float32 and int32 data.
 *
 * The input is viewed as (outer, A, inner) around the axis. An item is one `outer`
 * index and a block of `inner` columns: the (A, block) slab goes to L1, the front end
 * walks the axis row by row (each step a whole row of the block, so the inner loop runs
 * along contiguous columns), and the result goes back. The blocks are as wide as L1
 * allows and there are at least as many items as cores when the shape permits.
 *
 * ArgMax, ArgMin and TopK write int64 indices: TC1 has no 64-bit integers, so the kernel
 * writes each index as two int32 words, the index and 0 (an index is never negative).
 */
#include <algorithm>

#include "axis_blocks.h"
#include "kernel_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kSlabBytes = 768 * 1024;  // L1 for one item's buffers

struct ScanGeom {
  int64_t outer = 1, A = 1, inner = 1, es = 4;
};

bool IsArg(const std::string& op) { return op == "ArgMax" || op == "ArgMin"; }

// bytes of L1 per column of a block: the input slab and the output (a slab for the
// scans; the best value, its index and the two output words for the arg-reductions)
int64_t ColumnBytes(const std::string& op, const ScanGeom& g) {
  if (op == "TopK") return g.A * (2 * g.es + 4 + 8) + g.es + 4;  // K <= A rows out
  return IsArg(op) ? g.A * g.es + g.es + 4 + 8 : 2 * g.A * g.es;
}

std::string Geometry(const std::string& op, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& ins, ScanGeom* g) {
  auto s = Shape(ins[0]);
  int64_t r = static_cast<int64_t>(s.size());
  if (!IsArg(op) && op != "TopK" && !HasAttr(attrs, "axis"))
    return op + ": the axis must be a constant (given as the attribute axis)";
  int64_t axis = AttrInt(attrs, "axis", op == "TopK" ? -1 : 0);
  if (r == 0 || axis < -r || axis >= r)
    return op + ": axis " + std::to_string(axis) + " out of range";
  if (axis < 0) axis += r;
  for (int64_t d = 0; d < axis; ++d) g->outer *= s[d];
  for (int64_t d = axis + 1; d < r; ++d) g->inner *= s[d];
  g->A = s[axis];
  g->es = std::max(1, (ins[0]->dtype.bits() + 7) / 8);
  if (ColumnBytes(op, *g) > kSlabBytes) return op + ": the axis is too long for one column in L1";
  return "";
}

PrimFunc LowerAxisScan(const OpCall& c) {
  const std::string& op = c.op_type;
  Params p = MakeParams(c);
  ScanGeom g;
  std::string why = Geometry(op, c.attrs, c.inputs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(" << op << "): " << why;
  bool arg = IsArg(op);
  int64_t out_rows = arg ? 1 : g.A;
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != g.outer * out_rows * g.inner ||
      c.outputs[0]->dtype != (arg ? DataType::Int(64) : c.inputs[0]->dtype))
    TILECORE_THROW(ValueError) << "LowerOp(" << op << "): the output must be "
                               << g.outer * out_rows * g.inner << " elements of "
                               << (arg ? "int64" : c.inputs[0]->dtype.str());
  if (g.outer * g.A * g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  DataType dt = c.inputs[0]->dtype, i32 = DataType::Int(32);
  Buffer X = View(p.in[0], {g.outer, g.A, g.inner}, "X");
  Buffer Y = arg ? Words(p.out[0], {g.outer, 1, g.inner}, "Y")
                 : View(p.out[0], {g.outer, g.A, g.inner}, "Y");
  int64_t w = arg ? 2 : 1;  // output words per element
  int64_t ic = BlockColumns(g.outer, g.inner, c.cores, ColumnBytes(op, g), kSlabBytes);
  bool excl = AttrInt(c.attrs, "exclusive", 0) != 0, rev = AttrInt(c.attrs, "reverse", 0) != 0;
  bool prod = op == "CumProd", last = AttrInt(c.attrs, "select_last_index", 0) != 0;
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer D = Local({g.A, ic}, dt, "Dl");
    Buffer O = Local({out_rows, ic * w}, arg ? i32 : dt, "Ol");
    Buffer V = Local({ic}, dt, "Vl"), J = Local({ic}, i32, "Jl");  // arg: best value, index
    Stmt items = ForEachColumnBlock(
        core, c.cores, g.outer, g.inner, ic, &rotation, [&](PrimExpr o, PrimExpr i0, int64_t size) {
          std::vector<Stmt> st;
          st.push_back(Intrin("tile.wait", {I32(1)}));  // the previous item has left O
          st.push_back(LoadSlab(D, X, o, i0, g.A, size));
          auto row = [&](const std::function<Stmt(PrimExpr)>& f) { return Loop("i", size, f); };
          if (arg) {
            st.push_back(row([&](PrimExpr i) {
              return Seq(
                  {BufferStore(V, BufferLoad(D, {I32(0), i}), {i}), BufferStore(J, I32(0), {i})});
            }));
            st.push_back(Loop("k", g.A - 1, [&](PrimExpr k0) {
              PrimExpr k = k0 + I32(1);
              return row([&](PrimExpr i) {
                PrimExpr x = BufferLoad(D, {k, i}), v = BufferLoad(V, {i});
                PrimExpr better =
                    op == "ArgMax" ? (last ? x >= v : x > v) : (last ? x <= v : x < v);
                return Seq({BufferStore(J, select(better, k, BufferLoad(J, {i})), {i}),
                            BufferStore(V, select(better, x, v), {i})});
              });
            }));
            st.push_back(row([&](PrimExpr i) {
              return Seq({BufferStore(O, BufferLoad(J, {i}), {I32(0), i * I32(2)}),
                          BufferStore(O, I32(0), {I32(0), i * I32(2) + I32(1)})});
            }));
          } else {
            // row k of the output from row k -+ 1 (reverse walks from the end)
            auto at = [&](int64_t k) { return rev ? g.A - 1 - k : k; };
            PrimExpr id = prod ? make_const(dt, 1) : make_zero(dt);
            st.push_back(row([&](PrimExpr i) {
              return BufferStore(O, excl ? id : BufferLoad(D, {I32(at(0)), i}), {I32(at(0)), i});
            }));
            st.push_back(Loop("k", g.A - 1, [&](PrimExpr k0) {
              PrimExpr k = rev ? I32(g.A - 2) - k0 : k0 + I32(1);
              PrimExpr before = rev ? k + I32(1) : k - I32(1);
              PrimExpr src = excl ? before : k;
              return row([&](PrimExpr i) {
                PrimExpr a = BufferLoad(O, {before, i}), x = BufferLoad(D, {src, i});
                return BufferStore(O, prod ? a * x : a + x, {k, i});
              });
            }));
          }
          st.push_back(StoreSlab(Y, O, o, i0 * I32(w), out_rows, size * w));
          return Seq(st);
        });
    Stmt r = Allocate(D, Allocate(O, Seq({items, Intrin("tile.wait", {I32(1)})})));
    return arg ? Allocate(V, Allocate(J, r)) : r;
  });
  return MakeFunc(c, p, body);
}

// TopK: K (from the output shape) passes over the column, each taking the best value
// not yet taken (ties: the lower index), so the output is sorted
PrimFunc LowerTopK(const OpCall& c) {
  Params p = MakeParams(c);
  ScanGeom g;
  std::string why = Geometry("TopK", c.attrs, c.inputs, &g);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(TopK): " << why;
  int64_t cols = g.outer * g.inner;
  int64_t K = cols > 0 ? c.outputs[0]->numel() / cols : 0;
  if (c.outputs.size() != 2 || K > g.A || c.outputs[0]->numel() != g.outer * K * g.inner ||
      c.outputs[1]->numel() != c.outputs[0]->numel() || c.outputs[0]->dtype != c.inputs[0]->dtype ||
      c.outputs[1]->dtype != DataType::Int(64))
    TILECORE_THROW(ValueError) << "LowerOp(TopK): the outputs must be K <= " << g.A
                               << " values and int64 indices along the axis";
  if (g.outer * K * g.inner == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  bool largest = AttrInt(c.attrs, "largest", 1) != 0;
  DataType dt = c.inputs[0]->dtype, i32 = DataType::Int(32);
  Buffer X = View(p.in[0], {g.outer, g.A, g.inner}, "X");
  Buffer Yv = View(p.out[0], {g.outer, K, g.inner}, "Yv");
  Buffer Yi = Words(p.out[1], {g.outer, K, g.inner}, "Yi");
  int64_t ic = BlockColumns(g.outer, g.inner, c.cores, ColumnBytes("TopK", g), kSlabBytes);
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer D = Local({g.A, ic}, dt, "Dl"), T = Local({g.A, ic}, i32, "Tl");
    Buffer V = Local({ic}, dt, "Vl"), J = Local({ic}, i32, "Jl");
    Buffer OV = Local({K, ic}, dt, "OVl"), OI = Local({K, 2 * ic}, i32, "OIl");
    Stmt items = ForEachColumnBlock(
        core, c.cores, g.outer, g.inner, ic, &rotation, [&](PrimExpr o, PrimExpr i0, int64_t size) {
          std::vector<Stmt> st;
          st.push_back(Intrin("tile.wait", {I32(1)}));  // the previous item has left OV, OI
          st.push_back(LoadSlab(D, X, o, i0, g.A, size));
          st.push_back(Loop("a", g.A, [&](PrimExpr a) {
            return Loop("i", size, [&](PrimExpr i) { return BufferStore(T, I32(0), {a, i}); });
          }));
          st.push_back(Loop("j", K, [&](PrimExpr j) {
            std::vector<Stmt> pass;
            pass.push_back(
                Loop("i", size, [&](PrimExpr i) { return BufferStore(J, I32(-1), {i}); }));
            pass.push_back(Loop("a", g.A, [&](PrimExpr a) {
              return Loop("i", size, [&](PrimExpr i) {
                PrimExpr x = BufferLoad(D, {a, i}), v = BufferLoad(V, {i}), at = BufferLoad(J, {i});
                // bound once: the stores below change what J and V read
                Var take("take", DataType::Bool());
                PrimExpr cond =
                    eq(BufferLoad(T, {a, i}), I32(0)) && (at < I32(0) || (largest ? x > v : x < v));
                return Stmt(LetStmt(take, cond,
                                    Seq({BufferStore(J, select(take, a, at), {i}),
                                         BufferStore(V, select(take, x, v), {i})})));
              });
            }));
            pass.push_back(Loop("i", size, [&](PrimExpr i) {
              PrimExpr at = BufferLoad(J, {i});
              return Seq({BufferStore(T, I32(1), {at, i}),
                          BufferStore(OV, BufferLoad(V, {i}), {j, i}),
                          BufferStore(OI, at, {j, i * I32(2)}),
                          BufferStore(OI, I32(0), {j, i * I32(2) + I32(1)})});
            }));
            return Seq(pass);
          }));
          st.push_back(StoreSlab(Yv, OV, o, i0, K, size));
          st.push_back(StoreSlab(Yi, OI, o, i0 * I32(2), K, size * 2));
          return Seq(st);
        });
    Stmt s = Seq({items, Intrin("tile.wait", {I32(1)})});
    return Allocate(D, Allocate(T, Allocate(V, Allocate(J, Allocate(OV, Allocate(OI, s))))));
  });
  return MakeFunc(c, p, body);
}

std::string CheckAxisScan(const std::string& op, const Map<String, Any>& attrs,
                          const std::vector<TensorSpec>& inputs) {
  if (inputs.empty() || !inputs[0].defined()) return op + ": input 0 is missing";
  std::string why = CheckDTypes({inputs[0]}, {DataType::Float(32), DataType::Int(32)}, op);
  if (!why.empty()) return why;
  ScanGeom g;
  return Geometry(op, attrs, inputs, &g);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  auto onnx = [](const OpCall&, int) { return std::string("onnx"); };
  for (const char* op : {"CumSum", "CumProd"})
    RegisterStrategy(op, Strategy{detail::CheckAxisScan, detail::LowerAxisScan, onnx, 1});
  for (const char* op : {"ArgMax", "ArgMin"})
    RegisterStrategy(op, Strategy{detail::CheckAxisScan, detail::LowerAxisScan, onnx, 1, {}, true});
  RegisterStrategy("TopK", Strategy{detail::CheckAxisScan, detail::LowerTopK, onnx, 1, {}, true});
});

}  // namespace compiler
}  // namespace tilecore
