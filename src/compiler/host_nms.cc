/*
 * src/compiler/host_nms.cc — the host kernel of NonMaxSuppression.
 *
 * Per batch and class, greedily: the best-scoring box not yet taken (the lowest index on
 * ties) whose score is above score_threshold is selected, then every remaining box whose
 * IoU with it exceeds iou_threshold is dropped; at most max_output_boxes_per_class per
 * class (0 when absent, as ONNX says). Rows [batch, class, box] in that order. The
 * number of rows is the model's (static) output length, which the inputs' values decide:
 * a run that selects another number of boxes fails saying so.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckNms(const std::string& op, const Map<String, Any>&,
                     const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 2, 5);
  if (!w.empty()) return w;
  if (in[0]->dtype != DataType::Float(32) || in[1]->dtype != DataType::Float(32))
    return "NonMaxSuppression: boxes and scores must be float32";
  auto b = Shape(in[0]), s = Shape(in[1]);
  if (b.size() != 3 || b[2] != 4 || s.size() != 3 || s[0] != b[0] || s[2] != b[1])
    return "NonMaxSuppression: boxes must be [B, N, 4] and scores [B, C, N]";
  return "";
}

/*! \brief A scalar variable: a one-element local buffer. */
struct Var1 {
  Buffer buf;
  Var1(DataType t, const std::string& name) : buf(Local({1}, t, name)) {}
  PrimExpr get() const { return BufferLoad(buf, {I32(0)}); }
  Stmt set(PrimExpr v) const { return BufferStore(buf, cast(buf->dtype, v), {I32(0)}); }
};

PrimFunc LowerNms(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  auto bs = Shape(call.inputs[0]), ss = Shape(call.inputs[1]), os = Shape(call.outputs[0]);
  int64_t B = bs[0], N = bs[1], C = ss[1];
  int64_t K = os.empty() ? 0 : os[0];
  bool center = AttrInt(call.attrs, "center_point_box", 0) != 0;
  auto has = [&](size_t i) { return call.inputs.size() > i && call.inputs[i].defined(); };
  Buffer X = Flat(p.in[0], "boxes"), S = Flat(p.in[1], "scores"), Y = Flat(p.out[0], "Y");
  auto scalar = [&](size_t i, DataType t, PrimExpr dflt) {
    return has(i) ? cast(t, BufferLoad(Flat(p.in[i], "arg" + std::to_string(i)), {I32(0)})) : dflt;
  };
  PrimExpr max_out = scalar(2, DataType::Int(64), I64(0));
  PrimExpr iou_th = scalar(3, DataType::Float(32), F32(0.0));
  bool has_score_th = has(4);
  PrimExpr score_th = scalar(4, DataType::Float(32), F32(0.0));

  Buffer taken = Local({std::max<int64_t>(N, 1)}, DataType::Int(32), "taken");
  Var1 best(DataType::Float(32), "best"), at(DataType::Int(32), "at"),
      count(DataType::Int(32), "count"), picked(DataType::Int(64), "picked"),
      over(DataType::Int(32), "over");
  // box n of batch b as (ymin, xmin, ymax, xmax)
  auto corners = [&](PrimExpr b, PrimExpr n) {
    auto c = [&](int k) { return BufferLoad(X, {(b * I32(N) + n) * I32(4) + I32(k)}); };
    if (center) {  // [x_center, y_center, width, height]
      PrimExpr hw = c(2) / F32(2.0), hh = c(3) / F32(2.0);
      return std::vector<PrimExpr>{c(1) - hh, c(0) - hw, c(1) + hh, c(0) + hw};
    }
    return std::vector<PrimExpr>{min(c(0), c(2)), min(c(1), c(3)), max(c(0), c(2)),
                                 max(c(1), c(3))};
  };
  auto overlaps = [&](PrimExpr b, PrimExpr i, PrimExpr j) {
    auto p1 = corners(b, i), p2 = corners(b, j);
    PrimExpr ih = max(F32(0.0), min(p1[2], p2[2]) - max(p1[0], p2[0]));
    PrimExpr iw = max(F32(0.0), min(p1[3], p2[3]) - max(p1[1], p2[1]));
    PrimExpr a1 = (p1[2] - p1[0]) * (p1[3] - p1[1]), a2 = (p2[2] - p2[0]) * (p2[3] - p2[1]);
    PrimExpr inter = ih * iw, uni = a1 + a2 - inter;
    // (no overlap when either box is empty; inter > th * union is IoU > th for union > 0)
    return a1 > F32(0.0) && a2 > F32(0.0) && uni > F32(0.0) && inter > iou_th * uni;
  };
  Stmt clear_out =
      Loop("o", Numel(os), [&](PrimExpr o) { return BufferStore(Y, make_zero(Y->dtype), {o}); });
  Stmt body = Loop("bc", B * C, [&](PrimExpr bc) {
    PrimExpr b = floordiv(bc, I32(C)), c = floormod(bc, I32(C));
    auto score = [&](PrimExpr n) { return BufferLoad(S, {bc * I32(N) + n}); };
    Stmt init = Loop("n", N, [&](PrimExpr n) {
      PrimExpr out =
          has_score_th ? (score(n) <= score_th) : ne(score(n), score(n));  // (NaN scores never win)
      return BufferStore(taken, select(out, I32(1), I32(0)), {n});
    });
    Stmt rounds = Loop("r", N, [&](PrimExpr) {
      Stmt scan = Loop("n", N, [&](PrimExpr n) {
        PrimExpr better = at.get() < I32(0) || score(n) > best.get();
        return IfThenElse(eq(BufferLoad(taken, {n}), I32(0)) && better,
                          Seq({best.set(score(n)), at.set(n)}));
      });
      Stmt suppress = Loop("m", N, [&](PrimExpr m) {
        return IfThenElse(eq(BufferLoad(taken, {m}), I32(0)) && overlaps(b, at.get(), m),
                          BufferStore(taken, I32(1), {m}));
      });
      Stmt emit = Seq({BufferStore(Y, cast(Y->dtype, b), {count.get() * I32(3)}),
                       BufferStore(Y, cast(Y->dtype, c), {count.get() * I32(3) + I32(1)}),
                       BufferStore(Y, cast(Y->dtype, at.get()), {count.get() * I32(3) + I32(2)}),
                       count.set(count.get() + I32(1)), picked.set(picked.get() + I64(1)),
                       BufferStore(taken, I32(1), {at.get()}), suppress});
      return Seq({at.set(I32(-1)), scan,
                  IfThenElse(at.get() >= I32(0) && picked.get() < max_out,
                             IfThenElse(count.get() < I32(K), emit, over.set(I32(1))))});
    });
    return Seq({init, picked.set(I64(0)), rounds});
  });
  std::string rows =
      std::to_string(K) + " rows, the number the model declares and the kernel was compiled for";
  Stmt check = Seq(
      {IfThenElse(ne(over.get(), I32(0)),
                  Fail("NonMaxSuppression: more boxes are selected than " + rows, {})),
       IfThenElse(count.get() < I32(K),
                  Fail("NonMaxSuppression: %d boxes are selected, not " + rows, {count.get()}))});
  Stmt all = Seq({clear_out, count.set(I32(0)), over.set(I32(0)), body, check});
  for (const Buffer& b : {taken, best.buf, at.buf, count.buf, picked.buf, over.buf})
    all = Allocate(b, all);
  return MakeFunc(call, p, all);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("NonMaxSuppression", HostKernel{host::CheckNms, host::LowerNms, 5});
});

}  // namespace compiler
}  // namespace tilecore
