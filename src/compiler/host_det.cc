/*
 * src/compiler/host_det.cc — the host kernel of Det: the determinant of each trailing
 * M x M matrix, by Gaussian elimination with partial pivoting in float64.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckDet(const std::string& op, const Map<String, Any>&,
                     const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  auto s = Shape(in[0]);
  if (!in[0]->dtype.is_float()) return "Det: the input must be a float tensor";
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return "Det: the input must be [..., M, M]";
  return "";
}

PrimFunc LowerDet(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  auto s = Shape(call.inputs[0]);
  int64_t M = s.back(), batch = Numel(s) / std::max<int64_t>(M * M, 1);
  DataType f = DataType::Float(64);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Buffer A = Local({std::max<int64_t>(M * M, 1)}, f, "A");
  Buffer det = Local({1}, f, "det"), best = Local({1}, f, "best");
  Buffer at = Local({1}, DataType::Int(32), "at");
  auto a = [&](PrimExpr i, PrimExpr j) { return BufferLoad(A, {i * I32(M) + j}); };
  auto set_a = [&](PrimExpr i, PrimExpr j, PrimExpr v) {
    return BufferStore(A, v, {i * I32(M) + j});
  };
  auto absf = [&](PrimExpr v) { return select(v < make_const(f, 0.0), make_const(f, 0.0) - v, v); };
  PrimExpr d = BufferLoad(det, {I32(0)}), piv = BufferLoad(at, {I32(0)});
  Stmt body = Loop("b", batch, [&](PrimExpr b) {
    Stmt load = Loop("e", M * M, [&](PrimExpr e) {
      return BufferStore(A, cast(f, BufferLoad(X, {b * I32(M * M) + e})), {e});
    });
    Stmt steps = Loop("k", M, [&](PrimExpr k) {
      Stmt find = Loop("i", M, [&](PrimExpr i) {
        return IfThenElse(
            i >= k && (eq(i, k) || absf(a(i, k)) > BufferLoad(best, {I32(0)})),
            Seq({BufferStore(best, absf(a(i, k)), {I32(0)}), BufferStore(at, i, {I32(0)})}));
      });
      Stmt swap = IfThenElse(
          ne(piv, k),
          Seq({Loop("j", M,
                    [&](PrimExpr j) {
                      // (A[k][j], A[p][j]) = (A[p][j], A[k][j]) through best
                      return Seq({BufferStore(best, a(k, j), {I32(0)}), set_a(k, j, a(piv, j)),
                                  set_a(piv, j, BufferLoad(best, {I32(0)}))});
                    }),
               BufferStore(det, make_const(f, 0.0) - d, {I32(0)})}));
      Stmt eliminate = Loop("i", M, [&](PrimExpr i) {
        return IfThenElse(
            i > k,
            Seq({BufferStore(best, a(i, k) / a(k, k), {I32(0)}), Loop("j", M, [&](PrimExpr j) {
                   return set_a(i, j, a(i, j) - BufferLoad(best, {I32(0)}) * a(k, j));
                 })}));
      });
      return Seq({find, swap, BufferStore(det, d * a(k, k), {I32(0)}),
                  IfThenElse(ne(a(k, k), make_const(f, 0.0)), eliminate)});
    });
    return Seq({load, BufferStore(det, make_const(f, 1.0), {I32(0)}), steps,
                BufferStore(Y, cast(Y->dtype, d), {b})});
  });
  Stmt all = body;
  for (const Buffer& buf : {A, det, best, at}) all = Allocate(buf, all);
  return MakeFunc(call, p, all);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("Det", HostKernel{host::CheckDet, host::LowerDet, 1});
});

}  // namespace compiler
}  // namespace tilecore
