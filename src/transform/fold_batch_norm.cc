/*
 * src/transform/fold_batch_norm.cc — FoldBatchNorm (fold_batch_norm.h).
 */
#include "tilecore/transform/fold_batch_norm.h"

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

Graph Fold(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t folded = 0;
  for (const Node& bn : g->nodes) {
    if (bn->op_type != "BatchNormalization" || !bn->domain.empty() || rw.IsDead(bn)) continue;
    if (bn->outputs.size() != 1 || IntAttr(bn, "training_mode", 0) != 0) continue;
    Value x = bn.input(0);
    Node prod = rw.Producer(x);
    if (!prod.defined() || rw.Uses(x) != 1 || !prod->domain.empty() || prod->outputs.size() != 1)
      continue;
    bool conv = prod->op_type == "Conv";
    bool gemm = prod->op_type == "Gemm";
    if (!conv && !gemm) continue;
    Value w = prod.input(1);
    Value b = prod.input(2);
    bool params = IsFloat32Const(w) && (!b.defined() || IsFloat32Const(b));
    for (int i = 1; i < 5; ++i) params = params && IsFloat32Const(bn.input(static_cast<size_t>(i)));
    if (!params) continue;
    auto scale = *ConstValues(bn.input(1));
    auto beta = *ConstValues(bn.input(2));
    auto mean = *ConstValues(bn.input(3));
    auto var = *ConstValues(bn.input(4));
    double eps = FloatAttr(bn, "epsilon", 1e-5);
    size_t c = scale.size();
    if (beta.size() != c || mean.size() != c || var.size() != c) continue;
    std::vector<double> s(c);
    for (size_t i = 0; i < c; ++i) s[i] = scale[i] / std::sqrt(var[i] + eps);
    std::vector<int64_t> wshape = *Float32ConstShape(w);
    std::vector<double> wv = *ConstValues(w);
    std::vector<double> bias(c, 0.0);
    if (b.defined()) {
      auto bv = *ConstValues(b);
      if (bv.size() != c) continue;
      bias = bv;
    }
    double beta_gemm = 1.0;
    if (conv) {
      if (wshape.empty() || static_cast<size_t>(wshape[0]) != c) continue;
      size_t per = wv.size() / c;
      for (size_t o = 0; o < c; ++o) {
        for (size_t k = 0; k < per; ++k) wv[o * per + k] *= s[o];
      }
    } else {
      bool trans_b = IntAttr(prod, "transB", 0) != 0;
      if (wshape.size() != 2) continue;
      size_t n = static_cast<size_t>(trans_b ? wshape[0] : wshape[1]);
      size_t k = static_cast<size_t>(trans_b ? wshape[1] : wshape[0]);
      if (n != c) continue;
      if (b.defined()) {
        std::vector<int64_t> bshape = *Float32ConstShape(b);
        bool ok = (bshape.size() == 1 && bshape[0] == static_cast<int64_t>(c)) ||
                  (bshape.size() == 2 && bshape[0] == 1 && bshape[1] == static_cast<int64_t>(c));
        if (!ok) continue;
      }
      beta_gemm = FloatAttr(prod, "beta", 1.0);
      for (size_t i = 0; i < k; ++i) {
        for (size_t j = 0; j < n; ++j) wv[trans_b ? j * k + i : i * n + j] *= s[j];
      }
    }
    std::vector<double> nb(c);
    for (size_t i = 0; i < c; ++i) nb[i] = (beta_gemm * bias[i] - mean[i]) * s[i] + beta[i];
    Value nw = Float32Const(rw.Fresh(Name(w) + "_bnfold"), wshape, wv);
    Value nbias = Float32Const(rw.Fresh((b.defined() ? Name(b) : Name(w)) + "_bnfold_bias"),
                               {static_cast<int64_t>(c)}, nb);
    Array<Any> ins;
    ins.push_back(prod->inputs.raw(0));
    ins.push_back(nw);
    ins.push_back(nbias);
    Map<String, Any> attrs;
    for (const auto& [k, v] : prod->attrs.items()) attrs.Set(k, v);
    if (gemm) attrs.Set(String("beta"), Any(1.0));
    Node fused(prod->op_type, prod->domain, prod->name, attrs, ins, bn->outputs);
    rw.Replace({prod}, bn, {fused});
    ++folded;
  }
  if (folded == 0) return g;
  ctx->AddStat("transform.FoldBatchNorm.folded", folded);
  return rw.Build();
}

}  // namespace

Pass FoldBatchNorm() { return CreateGraphPass(Fold, 0, String("FoldBatchNorm")); }

TILECORE_REGISTER_GLOBAL("transform.FoldBatchNorm").set_body_typed([]() {
  return FoldBatchNorm();
});

}  // namespace transform
}  // namespace tilecore
