/*
 * src/compiler/host_value_counts.cc — host kernels whose output length the input values
 * decide: NonZero and Unique.
 *
 * tilecore compiles static shapes, so these kernels are compiled for the length the model
 * declares (the driver's RUN_TIME_SHAPES): each counts what the values give when the model
 * runs and fails the run, naming both lengths, when the count is another; it never writes
 * a result of another length into the buffers.
 *
 * NonZero: the coordinates of the non-zero elements in row-major order, int64 [rank, n].
 * Unique: the distinct elements (no `axis`: of the flattened input) or the distinct
 * slices along `axis`, sorted ascending (`sorted` 1, lexicographic for slices; NaN after
 * every number and equal to NaN, as numpy's unique) or in the order they first appear;
 * then the first index of each, the index in Y of every input element or slice, and the
 * count of each. The pairwise comparisons cost O(n^2) slice compares on the host: the op
 * appears on small tensors (token ids, labels), not on activations.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckNonZero(const std::string& op, const Map<String, Any>&,
                         const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  if (in[0]->shape.empty()) return "NonZero: a rank-0 input has no coordinates to list";
  return "";
}

PrimFunc LowerNonZero(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  if (out.size() != 2 || out[0] != rank)
    TILECORE_THROW(ValueError) << "LowerHostOp(NonZero): output " << ShapeText(out)
                               << " is not [rank, count] for an input of rank " << rank;
  int64_t n = out[1];
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Scalar count(DataType::Int(64), "count");
  PrimExpr zero = make_zero(X->dtype);
  auto nonzero = [&](PrimExpr i) { return ne(BufferLoad(X, {i}), zero); };
  std::vector<Stmt> s{count.set(I64(0))};
  s.push_back(Loop("i", Numel(in), [&](PrimExpr i) {
    return IfThenElse(nonzero(i), count.set(count.get() + I64(1)));
  }));
  s.push_back(
      IfThenElse(ne(count.get(), I64(n)),
                 Fail("NonZero: the input has %d non-zero elements when the model runs; the "
                      "model declares " +
                          std::to_string(n) + ", the count the kernel was compiled for",
                      {count.get()})));
  s.push_back(count.set(I64(0)));
  s.push_back(Loop("i", Numel(in), [&](PrimExpr i) {
    std::vector<PrimExpr> c = Unravel(i, in);
    std::vector<Stmt> put;
    PrimExpr k = cast(DataType::Int(32), count.get());
    for (int64_t d = 0; d < rank; ++d)
      put.push_back(BufferStore(Y, cast(Y->dtype, c[d]), {I32(d * n) + k}));
    put.push_back(count.set(count.get() + I64(1)));
    return IfThenElse(nonzero(i), Seq(put));
  }));
  return MakeFunc(call, p, Allocate(count.buf, Seq(s)));
}

std::string CheckUnique(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  if (HasAttr(attrs, "axis")) {
    int64_t r = static_cast<int64_t>(in[0]->shape.size()), a = AttrInt(attrs, "axis", 0);
    if (a < -r || a >= r) return "Unique: axis " + std::to_string(a) + " is out of range";
  }
  return "";
}

PrimFunc LowerUnique(const OpCall& call) {
  if (call.outputs.empty() || call.outputs.size() > 4)
    TILECORE_THROW(ValueError) << "LowerHostOp(Unique): expected 1 to 4 outputs";
  Params p = MakeParams(call);
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  int64_t rank = static_cast<int64_t>(in.size());
  bool has_axis = HasAttr(call.attrs, "axis");
  int64_t axis = has_axis ? Axis("Unique", AttrInt(call.attrs, "axis", 0), rank) : 0;
  bool sorted = AttrInt(call.attrs, "sorted", 1) != 0;
  // items: the elements (no axis) or the slices along the axis, each of L elements
  int64_t n = has_axis ? in[axis] : Numel(in), outer = 1, inner = 1;
  if (has_axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= in[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= in[d];
  }
  int64_t L = outer * inner;
  int64_t u = has_axis ? (static_cast<int64_t>(out.size()) == rank ? out[axis] : -1) : Numel(out);
  if (u < 0 || (has_axis && [&] {
        for (int64_t d = 0; d < rank; ++d)
          if (d != axis && out[d] != in[d]) return true;
        return false;
      }()))
    TILECORE_THROW(ValueError) << "LowerHostOp(Unique): output " << ShapeText(out)
                               << " does not fit the input " << ShapeText(in);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  auto at = [&](PrimExpr k, PrimExpr e, int64_t items) {  // element e of item k
    if (!has_axis) return k;
    return floordiv(e, I32(inner)) * I32(items * inner) + k * I32(inner) + floormod(e, I32(inner));
  };
  const DataType i32 = DataType::Int(32), i64 = DataType::Int(64);
  int64_t nn = std::max<int64_t>(n, 1);
  Buffer rep = Local({nn}, i32, "rep"), pos = Local({nn}, i32, "pos");
  Scalar cmp(i32, "cmp"), count(i64, "count"), k2(i32, "k2");
  // cmp = the order of items a and b (-1, 0, 1); NaN after numbers and equal to NaN
  auto compare = [&](PrimExpr a, PrimExpr b) -> Stmt {
    return Seq(
        {cmp.set(I32(0)), Loop("e", L, [&](PrimExpr e) {
           PrimExpr x = BufferLoad(X, {at(a, e, n)}), y = BufferLoad(X, {at(b, e, n)});
           PrimExpr xn = ne(x, x), yn = ne(y, y);
           Stmt decide = IfThenElse(
               xn && !yn, cmp.set(I32(1)),
               IfThenElse(yn && !xn, cmp.set(I32(-1)),
                          IfThenElse(x < y, cmp.set(I32(-1)), IfThenElse(x > y, cmp.set(I32(1))))));
           return IfThenElse(eq(cmp.get(), I32(0)), decide);
         })});
  };
  std::vector<Stmt> s;
  // rep[k]: the first item equal to item k
  s.push_back(Loop("k", n, [&](PrimExpr k) {
    return Seq({BufferStore(rep, k, {k}), Loop("j", n, [&](PrimExpr j) {
                  return IfThenElse(j < k && eq(BufferLoad(rep, {k}), k),
                                    Seq({compare(j, k), IfThenElse(eq(cmp.get(), I32(0)),
                                                                   BufferStore(rep, j, {k}))}));
                })});
  }));
  s.push_back(count.set(I64(0)));
  s.push_back(Loop("k", n, [&](PrimExpr k) {
    return IfThenElse(eq(BufferLoad(rep, {k}), k), count.set(count.get() + I64(1)));
  }));
  s.push_back(IfThenElse(
      ne(count.get(), I64(u)),
      Fail(std::string("Unique: the input has %d distinct ") + (has_axis ? "slices" : "elements") +
               " when the model runs; the model declares " + std::to_string(u) +
               ", the count the kernel was compiled for",
           {count.get()})));
  // pos[k] of a first item: its place in Y
  s.push_back(Loop("k", n, [&](PrimExpr k) {
    std::vector<Stmt> t{k2.set(I32(0))};
    t.push_back(Loop("j", n, [&](PrimExpr j) {
      PrimExpr first_j = eq(BufferLoad(rep, {j}), j);
      if (!sorted) return IfThenElse(first_j && j < k, k2.set(k2.get() + I32(1)));
      return IfThenElse(
          first_j && ne(j, k),
          Seq({compare(j, k), IfThenElse(eq(cmp.get(), I32(-1)), k2.set(k2.get() + I32(1)))}));
    }));
    t.push_back(BufferStore(pos, k2.get(), {k}));
    return IfThenElse(eq(BufferLoad(rep, {k}), k), Seq(t));
  }));
  // Y, and the first index of each distinct item
  s.push_back(Loop("k", n, [&](PrimExpr k) {
    PrimExpr q = BufferLoad(pos, {k});
    std::vector<Stmt> t{Loop("e", L, [&](PrimExpr e) {
      return BufferStore(Y, BufferLoad(X, {at(k, e, n)}), {at(q, e, u)});
    })};
    if (call.outputs.size() > 1 && call.outputs[1].defined()) {
      Buffer I = Flat(p.out[1], "I");
      t.push_back(BufferStore(I, cast(I->dtype, k), {q}));
    }
    return IfThenElse(eq(BufferLoad(rep, {k}), k), Seq(t));
  }));
  if (call.outputs.size() > 2 && call.outputs[2].defined()) {
    Buffer V = Flat(p.out[2], "V");
    s.push_back(Loop("k", n, [&](PrimExpr k) {
      return BufferStore(V, cast(V->dtype, BufferLoad(pos, {BufferLoad(rep, {k})})), {k});
    }));
  }
  if (call.outputs.size() > 3 && call.outputs[3].defined()) {
    Buffer C = Flat(p.out[3], "C");
    s.push_back(Loop("q", u, [&](PrimExpr q) { return BufferStore(C, make_zero(C->dtype), {q}); }));
    s.push_back(Loop("k", n, [&](PrimExpr k) {
      PrimExpr q = BufferLoad(pos, {BufferLoad(rep, {k})});
      return BufferStore(C, BufferLoad(C, {q}) + make_const(C->dtype, 1), {q});
    }));
  }
  Stmt body = Seq(s);
  for (const Buffer& b : {rep, pos, cmp.buf, count.buf, k2.buf}) body = Allocate(b, body);
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("NonZero", HostKernel{host::CheckNonZero, host::LowerNonZero, 1});
  RegisterHostKernel("Unique", HostKernel{host::CheckUnique, host::LowerUnique, 1});
});

}  // namespace compiler
}  // namespace tilecore
