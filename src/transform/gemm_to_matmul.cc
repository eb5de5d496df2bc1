/*
 * src/transform/gemm_to_matmul.cc — GemmToMatMul (gemm_to_matmul.h).
 */
#include "tilecore/transform/gemm_to_matmul.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

int64_t IntAttr(const Node& n, const char* key, int64_t fallback) {
  auto v = n->attrs.Get(String(key));
  return v.has_value() ? v->try_cast<int64_t>().value_or(fallback) : fallback;
}
double FloatAttr(const Node& n, const char* key, double fallback) {
  auto v = n->attrs.Get(String(key));
  return v.has_value() ? v->try_cast<double>().value_or(fallback) : fallback;
}

bool IsFloat32Const2D(const Value& v) {
  if (!v.defined() || !v->is_constant()) return false;
  auto a = ir::AsObject<ffi::NDArray>(v->data);
  return a.has_value() && a->dtype().code == kDLFloat && a->dtype().bits == 32 &&
         a->shape().size() == 2;
}

Graph Rewrite(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t rewritten = 0;
  for (const Node& gemm : g->nodes) {
    if (gemm->op_type != "Gemm" || !gemm->domain.empty() || gemm->outputs.size() != 1) continue;
    std::string dtype = DtypeOf(gemm->outputs[0]);
    std::string base = Name(gemm->outputs[0]);
    const String& loc = gemm->name;
    std::vector<Node> out;
    double alpha = FloatAttr(gemm, "alpha", 1.0);
    double beta = FloatAttr(gemm, "beta", 1.0);
    bool scaled = alpha != 1.0 || beta != 1.0;
    if (scaled && dtype != "float32") continue;  // constants for alpha/beta are made as float32
    auto transpose = [&](const Value& v) -> Value {
      if (IsFloat32Const2D(v)) {
        auto shape = v->data.cast<ffi::NDArray>().shape();
        auto vals = *ConstValues(v);
        std::vector<double> t(vals.size());
        for (int64_t i = 0; i < shape[0]; ++i) {
          for (int64_t j = 0; j < shape[1]; ++j) t[j * shape[0] + i] = vals[i * shape[1] + j];
        }
        return Float32Const(rw.Fresh(Name(v) + "_T"), {shape[1], shape[0]}, t);
      }
      Value r(String(rw.Fresh(Name(v) + "_T")), ir::Type());
      Map<String, Any> attrs;
      attrs.Set(String("perm"), Array<Any>({Any(int64_t{1}), Any(int64_t{0})}));
      out.push_back(MakeNode("Transpose", {v}, {r}, attrs, loc, 13));
      return r;
    };
    Value a = gemm.input(0);
    Value b = gemm.input(1);
    Value c = gemm.input(2);
    if (IntAttr(gemm, "transA", 0)) a = transpose(a);
    if (IntAttr(gemm, "transB", 0)) b = transpose(b);
    bool last_is_matmul = !c.defined() && alpha == 1.0;
    Value prod =
        last_is_matmul ? gemm->outputs[0] : Value(String(rw.Fresh(base + "_matmul")), ir::Type());
    out.push_back(MakeNode("MatMul", {a, b}, {prod}, Map<String, Any>(), loc, 13));
    if (alpha != 1.0) {
      Value k = Float32Const(rw.Fresh(base + "_alpha"), {}, {alpha});
      Value r =
          !c.defined() ? gemm->outputs[0] : Value(String(rw.Fresh(base + "_scaled")), ir::Type());
      out.push_back(MakeNode("Mul", {prod, k}, {r}, Map<String, Any>(), loc, 14));
      prod = r;
    }
    if (c.defined()) {
      if (beta != 1.0) {
        Value k = Float32Const(rw.Fresh(base + "_beta"), {}, {beta});
        Value r(String(rw.Fresh(base + "_c")), ir::Type());
        out.push_back(MakeNode("Mul", {c, k}, {r}, Map<String, Any>(), loc, 14));
        c = r;
      }
      out.push_back(MakeNode("Add", {prod, c}, {gemm->outputs[0]}, Map<String, Any>(), loc, 14));
    }
    rw.Replace({}, gemm, out);
    ++rewritten;
  }
  if (rewritten == 0) return g;
  ctx->AddStat("transform.GemmToMatMul.rewritten", rewritten);
  return rw.Build();
}

}  // namespace

Pass GemmToMatMul() { return CreateGraphPass(Rewrite, 0, String("GemmToMatMul")); }

TILECORE_REGISTER_GLOBAL("transform.GemmToMatMul").set_body_typed([]() { return GemmToMatMul(); });

}  // namespace transform
}  // namespace tilecore
