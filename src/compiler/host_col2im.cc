/*
 * src/compiler/host_col2im.cc — the host kernels of Col2Im (the inverse of im2col: every
 * column's block values added into the image) and LRN (local response normalisation
 * across channels).
 *
 * Col2Im's image shape is the output's (static); its block shape is read from the
 * block_shape input when the kernel runs, so only the block's element count
 * (input dim 1 / C) must be static; a block shape that gives another block size or
 * column count than the input's fails the run.
 */
#include <algorithm>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

std::string CheckCol2Im(const std::string& op, const Map<String, Any>&,
                        const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 3, 3);
  if (!w.empty()) return w;
  if (in[0]->shape.size() != 3) return "Col2Im: the input must be [N, C * prod(block), L]";
  if (!in[2]->dtype.is_integer()) return "Col2Im: block_shape must be integers";
  return "";
}

PrimFunc LowerCol2Im(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  auto is = Shape(call.inputs[0]), os = Shape(call.outputs[0]);
  if (os.size() < 3 || os[0] != is[0] || is[1] % os[1] != 0)
    TILECORE_THROW(ValueError) << "LowerHostOp(Col2Im): the output shape does not fit the input";
  size_t S = os.size() - 2;
  int64_t N = is[0], CK = is[1], L = is[2], C = os[1], K = CK / C;
  std::vector<int64_t> img(os.begin() + 2, os.end());
  auto ints = [&](const char* name, int64_t dflt, size_t n) {
    auto v = AttrInts(call.attrs, name, std::vector<int64_t>(n, dflt));
    if (v.size() != n)
      TILECORE_THROW(ValueError) << "LowerHostOp(Col2Im): " << name << " needs " << n << " values";
    return v;
  };
  auto dil = ints("dilations", 1, S), stride = ints("strides", 1, S), pads = ints("pads", 0, 2 * S);
  Buffer X = Flat(p.in[0], "X"), Bk = Flat(p.in[2], "block"), Y = Flat(p.out[0], "Y");
  DataType i32 = DataType::Int(32);
  std::vector<PrimExpr> bd(S), nb(S);
  for (size_t d = 0; d < S; ++d) {
    bd[d] = cast(i32, BufferLoad(Bk, {I32(d)}));
    PrimExpr span = I32(dil[d]) * (bd[d] - I32(1)) + I32(1);
    nb[d] = floordiv(I32(img[d] + pads[d] + pads[d + S]) - span, I32(stride[d])) + I32(1);
  }
  // the block shape read must give the input's block size and column count (ONNX Runtime
  // fails such a run too); checked before any division by it
  std::vector<Stmt> check;
  PrimExpr block = I32(1), columns = I32(1);
  for (size_t d = 0; d < S; ++d) {
    check.push_back(IfThenElse(bd[d] < I32(1) || nb[d] < I32(1),
                               Fail("Col2Im: block_shape element " + std::to_string(d) +
                                        " is %d when the model runs, which gives %d blocks "
                                        "along spatial dim " +
                                        std::to_string(d) + "; each must be at least 1",
                                    {bd[d], nb[d]})));
    block = block * bd[d];
    columns = columns * nb[d];
  }
  std::vector<PrimExpr> read(bd.begin(), bd.end());
  read.push_back(block);
  read.push_back(columns);
  check.push_back(IfThenElse(
      ne(block, I32(K)) || ne(columns, I32(L)),
      Fail("Col2Im: block_shape is " + ValuesFormat(static_cast<int64_t>(S)) +
               " when the model runs: %d elements per block and %d columns, where the input has " +
               std::to_string(K) + " per channel and " + std::to_string(L) + " columns",
           read)));
  Stmt clear =
      Loop("o", Numel(os), [&](PrimExpr o) { return BufferStore(Y, make_zero(Y->dtype), {o}); });
  Stmt add = Loop("e", N * CK * L, [&](PrimExpr e) {
    PrimExpr n = floordiv(e, I32(CK * L)), r = floormod(floordiv(e, I32(L)), I32(CK)),
             l = floormod(e, I32(L));
    PrimExpr c = floordiv(r, I32(K)), k = floormod(r, I32(K));
    PrimExpr inside = make_const(DataType::Bool(), 1), at = n * I32(C) + c;
    // block offset and block index per spatial dim, the last varying fastest
    std::vector<PrimExpr> kd(S), ld(S);
    for (size_t d = S; d-- > 0;) {
      kd[d] = floormod(k, bd[d]);
      k = floordiv(k, bd[d]);
      ld[d] = floormod(l, nb[d]);
      l = floordiv(l, nb[d]);
    }
    for (size_t d = 0; d < S; ++d) {
      PrimExpr pos = ld[d] * I32(stride[d]) - I32(pads[d]) + kd[d] * I32(dil[d]);
      inside = inside && pos >= I32(0) && pos < I32(img[d]);
      at = at * I32(img[d]) + pos;
    }
    return IfThenElse(inside, BufferStore(Y, BufferLoad(Y, {at}) + BufferLoad(X, {e}), {at}));
  });
  return MakeFunc(call, p, Seq({Seq(check), clear, add}));
}

// LRN: x / (bias + alpha / size * (sum of x^2 over the size channels around))^beta
PrimFunc LowerLrn(const OpCall& call) {
  NeedOutputs(call, 1);
  Params p = MakeParams(call);
  auto s = Shape(call.inputs[0]);
  if (s.size() < 3) TILECORE_THROW(ValueError) << "LowerHostOp(LRN): the input must be [N, C, ...]";
  int64_t size = AttrInt(call.attrs, "size", 1), C = s[1], inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  double alpha = AttrFloat(call.attrs, "alpha", 1e-4), beta = AttrFloat(call.attrs, "beta", 0.75),
         bias = AttrFloat(call.attrs, "bias", 1.0);
  int64_t lo = (size - 1) / 2;
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  DataType f = DataType::Float(64);  // summed and raised in float64, rounded once
  Stmt body = Loop("o", Numel(s), [&](PrimExpr o) {
    PrimExpr c = floormod(floordiv(o, I32(inner)), I32(C));
    PrimExpr base = o - c * I32(inner);
    PrimExpr sum = make_const(f, 0.0);
    for (int64_t j = 0; j < size; ++j) {
      PrimExpr cc = c - I32(lo) + I32(j);
      PrimExpr safe = max(I32(0), min(cc, I32(C - 1)));  // (never read out of range)
      PrimExpr v = cast(f, BufferLoad(X, {base + safe * I32(inner)}));
      sum = sum + select(cc >= I32(0) && cc < I32(C), v * v, make_const(f, 0.0));
    }
    PrimExpr den = make_const(f, bias) + make_const(f, alpha / static_cast<double>(size)) * sum;
    PrimExpr powed = ir::call("tir.exp", {make_const(f, beta) * ir::call("tir.log", {den})});
    return BufferStore(Y, cast(Y->dtype, cast(f, BufferLoad(X, {o})) / powed), {o});
  });
  return MakeFunc(call, p, Seq({body}));
}

std::string CheckLrn(const std::string& op, const Map<String, Any>&,
                     const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  if (!in[0]->dtype.is_float()) return "LRN: the input must be a float tensor";
  return in[0]->shape.size() >= 3 ? "" : "LRN: the input must be [N, C, ...]";
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("Col2Im", HostKernel{host::CheckCol2Im, host::LowerCol2Im, 3});
  RegisterHostKernel("LRN", HostKernel{host::CheckLrn, host::LowerLrn, 1});
});

}  // namespace compiler
}  // namespace tilecore
