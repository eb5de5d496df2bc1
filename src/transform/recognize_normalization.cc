/*
 * src/transform/recognize_normalization.cc — RecognizeNormalization
 * (recognize_normalization.h).
 */
#include "tilecore/transform/recognize_normalization.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

bool SameValue(const Value& a, const Value& b) {
  return a.defined() && b.defined() && a->name == b->name;
}

int64_t Rank(const Value& v) {
  const auto* t = v.defined() ? v->type.as<ir::TensorTypeNode>() : nullptr;
  return t != nullptr && t->rank_known ? static_cast<int64_t>(t->shape.size()) : -1;
}

/*! \brief The single reduction axis of a keepdims reduce node (normalised when the rank is known),
 * or nullopt. */
std::optional<int64_t> ReduceAxis(const Node& n, const Value& x) {
  auto keep = n->attrs.Get(String("keepdims"));
  if (keep.has_value() && keep->try_cast<int64_t>().value_or(1) != 1) return std::nullopt;
  std::vector<double> axes;
  if (auto a = n->attrs.Get(String("axes"))) {
    auto arr = a->try_cast<Array<Any>>();
    if (!arr.has_value()) return std::nullopt;
    for (size_t i = 0; i < arr->size(); ++i)
      axes.push_back(static_cast<double>(arr->raw(i).cast<int64_t>()));
  } else if (n->inputs.size() >= 2) {
    auto v = ConstValues(n.input(1));
    if (!v.has_value()) return std::nullopt;
    axes = *v;
  }
  if (axes.size() != 1) return std::nullopt;
  auto axis = static_cast<int64_t>(axes[0]);
  int64_t rank = Rank(x);
  if (axis < 0 && rank > 0) axis += rank;
  if (rank > 0 && axis == rank - 1) return -1;
  return axis;
}

/*! \brief What `add_eps` = ReduceMean(v^2, last axis) + eps (v^2 a Pow by 2 or v * v; eps a
 * scalar constant, on either side) is made of: the reduction, the square and eps. */
struct MeanSquare {
  Node var, sq;
  double eps = 0;
};
std::optional<MeanSquare> MeanSquarePlusEps(const Rewriter& rw, const Node& add_eps,
                                            const Value& v) {
  MeanSquare m;
  std::optional<double> eps;
  for (int es = 0; es < 2 && !m.var.defined(); ++es) {
    eps = ScalarConst(add_eps.input(static_cast<size_t>(1 - es)));
    if (eps.has_value())
      m.var = rw.ProducerIf(add_eps.input(static_cast<size_t>(es)), "ReduceMean");
  }
  if (!m.var.defined()) return std::nullopt;
  m.sq = rw.ProducerIf(m.var.input(0), "Pow");
  bool square =
      m.sq.defined() && SameValue(m.sq.input(0), v) && Near(ScalarConst(m.sq.input(1)), 2.0);
  if (!square) {
    m.sq = rw.ProducerIf(m.var.input(0), "Mul");
    square = m.sq.defined() && SameValue(m.sq.input(0), v) && SameValue(m.sq.input(1), v);
  }
  auto axis = ReduceAxis(m.var, v);
  if (!square || !axis || *axis != -1) return std::nullopt;
  m.eps = *eps;
  return m;
}

Graph Recognize(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t ln = 0, rms = 0, sm = 0;
  for (const Node& root : g->nodes) {
    if (rw.IsDead(root) || !root->domain.empty() || root->outputs.size() != 1 ||
        root->inputs.size() != 2)
      continue;
    const String& loc = root->name;
    if (root->op_type == "Add") {
      for (int side = 0; side < 2; ++side) {
        Value beta = root.input(static_cast<size_t>(1 - side));
        Node mul = rw.ProducerIf(root.input(static_cast<size_t>(side)), "Mul");
        if (!mul.defined()) continue;
        for (int ms = 0; ms < 2; ++ms) {
          Value gamma = mul.input(static_cast<size_t>(1 - ms));
          Node div = rw.ProducerIf(mul.input(static_cast<size_t>(ms)), "Div");
          if (!div.defined()) continue;
          Value d = div.input(0);
          Node sub = rw.ProducerIf(d, "Sub", false);
          Node sqrt = rw.ProducerIf(div.input(1), "Sqrt");
          if (!sub.defined() || !sqrt.defined() || rw.Uses(d) != 2) continue;
          Value x = sub.input(0);
          Node mean = rw.ProducerIf(sub.input(1), "ReduceMean");
          Node add_eps = rw.ProducerIf(sqrt.input(0), "Add");
          if (!mean.defined() || !add_eps.defined() || !SameValue(mean.input(0), x)) continue;
          std::optional<MeanSquare> sq = MeanSquarePlusEps(rw, add_eps, d);
          auto a1 = ReduceAxis(mean, x);
          if (!sq || !a1 || *a1 != -1) continue;
          Map<String, Any> attrs;
          attrs.Set(String("axis"), Any(int64_t{-1}));
          attrs.Set(String("epsilon"), Any(sq->eps));
          rw.Replace(
              {mul, div, sub, sqrt, mean, add_eps, sq->var, sq->sq}, root,
              {MakeNode("LayerNormalization", {x, gamma, beta}, root->outputs, attrs, loc, 17)});
          ++ln;
          side = 2;
          break;
        }
      }
      continue;
    }
    if (root->op_type == "Mul") {
      // gamma * (x * Reciprocal(Sqrt(ReduceMean(x^2) + eps))), either operand order
      for (int side = 0; side < 2; ++side) {
        Value gamma = root.input(static_cast<size_t>(1 - side));
        Node scaled = rw.ProducerIf(root.input(static_cast<size_t>(side)), "Mul");
        if (!scaled.defined() || Rank(gamma) != 1) continue;
        for (int xs = 0; xs < 2; ++xs) {
          Value x = scaled.input(static_cast<size_t>(xs));
          Node recip = rw.ProducerIf(scaled.input(static_cast<size_t>(1 - xs)), "Reciprocal");
          Node sqrt = recip.defined() ? rw.ProducerIf(recip.input(0), "Sqrt") : Node();
          Node add_eps = sqrt.defined() ? rw.ProducerIf(sqrt.input(0), "Add") : Node();
          std::optional<MeanSquare> ms =
              add_eps.defined() ? MeanSquarePlusEps(rw, add_eps, x) : std::nullopt;
          if (!ms) continue;
          Map<String, Any> attrs;
          attrs.Set(String("axis"), Any(int64_t{-1}));
          attrs.Set(String("epsilon"), Any(ms->eps));
          rw.Replace({scaled, recip, sqrt, add_eps, ms->var, ms->sq}, root,
                     {MakeNode("RMSNormalization", {x, gamma}, root->outputs, attrs, loc, 23)});
          ++rms;
          side = 2;
          break;
        }
      }
      continue;
    }
    if (root->op_type == "Div") {
      Value e = root.input(0);
      Node exp = rw.ProducerIf(e, "Exp", false);
      Node sum = rw.ProducerIf(root.input(1), "ReduceSum");
      if (!exp.defined() || !sum.defined() || rw.Uses(e) != 2 || !SameValue(sum.input(0), e))
        continue;
      Value y = exp.input(0);
      Value x = y;
      std::vector<Node> matched = {exp, sum};
      Node sub = rw.ProducerIf(y, "Sub");
      std::optional<int64_t> max_axis;
      if (sub.defined()) {
        Node mx = rw.ProducerIf(sub.input(1), "ReduceMax");
        if (mx.defined() && SameValue(mx.input(0), sub.input(0))) {
          x = sub.input(0);
          max_axis = ReduceAxis(mx, x);
          if (!max_axis) continue;
          matched.push_back(sub);
          matched.push_back(mx);
        }
      }
      auto axis = ReduceAxis(sum, e);
      if (!axis || (max_axis && *max_axis != *axis)) continue;
      Map<String, Any> attrs;
      attrs.Set(String("axis"), Any(*axis));
      rw.Replace(matched, root, {MakeNode("Softmax", {x}, root->outputs, attrs, loc, 13)});
      ++sm;
    }
  }
  if (!rw.changed()) return g;
  if (ln) ctx->AddStat("transform.RecognizeNormalization.layer_norm", ln);
  if (rms) ctx->AddStat("transform.RecognizeNormalization.rms_norm", rms);
  if (sm) ctx->AddStat("transform.RecognizeNormalization.softmax", sm);
  return rw.Build();
}

}  // namespace

Pass RecognizeNormalization() {
  return CreateGraphPass(Recognize, 0, String("RecognizeNormalization"));
}

TILECORE_REGISTER_GLOBAL("transform.RecognizeNormalization").set_body_typed([]() {
  return RecognizeNormalization();
});

}  // namespace transform
}  // namespace tilecore
