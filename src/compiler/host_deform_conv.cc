/*
 * src/compiler/host_deform_conv.cc — the host kernel of DeformConv (2-D): a convolution
 * whose every kernel tap samples the input at its position plus a learned offset
 * (bilinear, corners outside the image read 0), scaled by the optional mask; groups and
 * offset groups as ONNX defines them. Accumulated in float64.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckDeformConv(const std::string& op, const Map<String, Any>& attrs,
                            const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 3, 5);
  if (!w.empty()) return w;
  if (in[0]->shape.size() != 4 || in[1]->shape.size() != 4)
    return "DeformConv: only 2-D (X and W of rank 4)";
  for (const TensorSpec& t : in)
    if (t.defined() && !t->dtype.is_float()) return "DeformConv: the inputs must be float tensors";
  return "";
}

PrimFunc LowerDeformConv(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  auto xs = Shape(call.inputs[0]), ws = Shape(call.inputs[1]), os = Shape(call.outputs[0]);
  int64_t C = xs[1], H = xs[2], W = xs[3], OC = ws[0], ICg = ws[1], KH = ws[2], KW = ws[3],
          OH = os[2], OW = os[3];
  int64_t group = AttrInt(call.attrs, "group", 1), og_n = AttrInt(call.attrs, "offset_group", 1);
  if (group <= 0 || og_n <= 0 || C != ICg * group || OC % group != 0 || C % og_n != 0)
    TILECORE_THROW(ValueError) << "LowerHostOp(DeformConv): channels, group and offset_group "
                                  "do not fit";
  auto st = AttrInts(call.attrs, "strides", {1, 1}), dl = AttrInts(call.attrs, "dilations", {1, 1}),
       pd = AttrInts(call.attrs, "pads", {0, 0, 0, 0});
  int64_t OCg = OC / group, ICog = C / og_n;
  auto has = [&](size_t i) { return call.inputs.size() > i && call.inputs[i].defined(); };
  DataType f = DataType::Float(64), i32 = DataType::Int(32);
  Buffer X = Flat(p.in[0], "X"), Wt = Flat(p.in[1], "W"), Off = Flat(p.in[2], "offset"),
         Y = Flat(p.out[0], "Y");
  Buffer acc = Local({1}, f, "acc");
  auto ld = [&](const Buffer& b, PrimExpr i) { return cast(f, BufferLoad(b, {i})); };
  auto floor_ = [&](PrimExpr v) {  // float64 -> int32, toward -inf
    PrimExpr t = cast(i32, v);
    return select(cast(f, t) > v, t - I32(1), t);
  };
  Stmt body = Loop("o", Numel(os), [&](PrimExpr o) {
    PrimExpr ow = floormod(o, I32(OW)), oh = floormod(floordiv(o, I32(OW)), I32(OH)),
             oc = floormod(floordiv(o, I32(OW * OH)), I32(OC)), n = floordiv(o, I32(OW * OH * OC));
    PrimExpr g = floordiv(oc, I32(OCg));
    Stmt taps = Loop("t", ICg * KH * KW, [&](PrimExpr t) {
      PrimExpr icl = floordiv(t, I32(KH * KW)), i = floormod(floordiv(t, I32(KW)), I32(KH)),
               j = floormod(t, I32(KW));
      PrimExpr ic = g * I32(ICg) + icl, og = floordiv(ic, I32(ICog));
      PrimExpr tap = i * I32(KW) + j;
      auto plane = [&](PrimExpr ch, PrimExpr chans) {  // [n, ch, oh, ow] of an [N, chans, OH, OW]
        return ((n * chans + ch) * I32(OH) + oh) * I32(OW) + ow;
      };
      PrimExpr och = og * I32(2 * KH * KW) + tap * I32(2);
      PrimExpr h = cast(f, oh * I32(st[0]) - I32(pd[0]) + i * I32(dl[0])) +
                   ld(Off, plane(och, I32(og_n * 2 * KH * KW)));
      PrimExpr w = cast(f, ow * I32(st[1]) - I32(pd[1]) + j * I32(dl[1])) +
                   ld(Off, plane(och + I32(1), I32(og_n * 2 * KH * KW)));
      PrimExpr m =
          has(4) ? ld(Flat(p.in[4], "mask"), plane(og * I32(KH * KW) + tap, I32(og_n * KH * KW)))
                 : make_const(f, 1.0);
      PrimExpr h0 = floor_(h), w0 = floor_(w);
      PrimExpr lh = h - cast(f, h0), lw = w - cast(f, w0);
      PrimExpr chan = (n * I32(C) + ic) * I32(H * W);
      auto corner = [&](PrimExpr y, PrimExpr x) {
        PrimExpr inside = y >= I32(0) && y < I32(H) && x >= I32(0) && x < I32(W);
        PrimExpr yc = max(I32(0), min(y, I32(H - 1))), xc = max(I32(0), min(x, I32(W - 1)));
        return select(inside, ld(X, chan + yc * I32(W) + xc), make_const(f, 0.0));
      };
      PrimExpr one = make_const(f, 1.0);
      PrimExpr v =
          (one - lh) * (one - lw) * corner(h0, w0) + (one - lh) * lw * corner(h0, w0 + I32(1)) +
          lh * (one - lw) * corner(h0 + I32(1), w0) + lh * lw * corner(h0 + I32(1), w0 + I32(1));
      PrimExpr wt = ld(Wt, ((oc * I32(ICg) + icl) * I32(KH) + i) * I32(KW) + j);
      return BufferStore(acc, BufferLoad(acc, {I32(0)}) + wt * m * v, {I32(0)});
    });
    PrimExpr b0 = has(3) ? ld(Flat(p.in[3], "B"), oc) : make_const(f, 0.0);
    return Seq({BufferStore(acc, b0, {I32(0)}), taps,
                BufferStore(Y, cast(Y->dtype, BufferLoad(acc, {I32(0)})), {o})});
  });
  return MakeFunc(call, p, Allocate(acc, body));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("DeformConv", HostKernel{host::CheckDeformConv, host::LowerDeformConv, 5});
});

}  // namespace compiler
}  // namespace tilecore
