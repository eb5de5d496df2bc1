/*
 * src/transform/recognize_activations.cc — RecognizeActivations
 * (recognize_activations.h).
 */
#include "tilecore/transform/recognize_activations.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

bool SameValue(const Value& a, const Value& b) {
  return a.defined() && b.defined() && a->name == b->name;
}

/*! \brief For a binary node: the operand that is a constant ~= `c` -> the other operand. */
Value OtherThanConst(const Node& n, double c) {
  if (!n.defined() || n->inputs.size() != 2) return Value();
  if (Near(ScalarConst(n.input(1)), c)) return n.input(0);
  if (Near(ScalarConst(n.input(0)), c)) return n.input(1);
  return Value();
}

std::optional<double> FloatAttrOr(const Node& n, const char* key, double fallback) {
  auto v = n->attrs.Get(String(key));
  if (!v.has_value()) return fallback;
  return v->try_cast<double>();
}

struct GeluCore {
  Value x;
  bool tanh{false};
  std::vector<Node> nodes;
};

/*! \brief t = 1 + Erf(x / sqrt 2) or 1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)). */
std::optional<GeluCore> MatchCore(const Rewriter& rw, const Value& t) {
  Node add = rw.ProducerIf(t, "Add");
  Value e = OtherThanConst(add, 1.0);
  if (!e.defined()) return std::nullopt;
  if (Node erf = rw.ProducerIf(e, "Erf"); erf.defined()) {
    Value d = erf.input(0);
    Node div = rw.ProducerIf(d, "Div");
    if (div.defined() && Near(ScalarConst(div.input(1)), std::sqrt(2.0))) {
      return GeluCore{div.input(0), false, {add, erf, div}};
    }
    Node mul = rw.ProducerIf(d, "Mul");
    Value x = OtherThanConst(mul, 1.0 / std::sqrt(2.0));
    if (x.defined()) return GeluCore{x, false, {add, erf, mul}};
    return std::nullopt;
  }
  Node th = rw.ProducerIf(e, "Tanh");
  if (!th.defined()) return std::nullopt;
  Node scale = rw.ProducerIf(th.input(0), "Mul");
  Value inner = OtherThanConst(scale, std::sqrt(2.0 / M_PI));
  Node sum = rw.ProducerIf(inner, "Add");
  if (!sum.defined()) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Value x = sum.input(static_cast<size_t>(side));
    Node cubic = rw.ProducerIf(sum.input(static_cast<size_t>(1 - side)), "Mul");
    Value cube = OtherThanConst(cubic, 0.044715);
    Node pow = rw.ProducerIf(cube, "Pow");
    if (pow.defined() && SameValue(pow.input(0), x) && Near(ScalarConst(pow.input(1)), 3.0)) {
      return GeluCore{x, true, {add, th, scale, sum, cubic, pow}};
    }
  }
  return std::nullopt;
}

Graph Recognize(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t silu = 0, hswish = 0, gelu_erf = 0, gelu_tanh = 0, nan_masks = 0;
  for (const Node& root : g->nodes) {
    if (rw.IsDead(root) || !root->domain.empty() || root->outputs.size() != 1) continue;
    const String& loc = root->name;
    // Where(IsNaN(x), c, x) with a constant c: attention's mask of fully masked rows.
    if (root->op_type == "Where" && root->inputs.size() == 3) {
      Node isnan = rw.ProducerIf(root.input(0), "IsNaN");
      std::optional<double> c = ScalarConst(root.input(1));
      // (a one-element c of higher rank would broadcast x to more dims: not the same op)
      const auto* tx = root.input(2)->type.as<ir::TensorTypeNode>();
      const auto* tc = root.input(1)->type.as<ir::TensorTypeNode>();
      const bool same_rank =
          tx && tc && tx->rank_known && tc->rank_known && tc->shape.size() <= tx->shape.size();
      if (isnan.defined() && c.has_value() && same_rank &&
          SameValue(isnan.input(0), root.input(2)) && DtypeOf(root.input(2)) == "float32" &&
          DtypeOf(root->outputs[0]) == "float32") {
        Map<String, Any> attrs;
        attrs.Set(String("value"), Any(*c));
        Node n(String("ReplaceNaN"), String("tilecore"), loc, attrs,
               Array<Any>({Any(root.input(2))}), root->outputs);
        rw.Replace({isnan}, root, {n});
        ++nan_masks;
      }
      continue;
    }
    if (root->inputs.size() != 2) continue;
    if (root->op_type == "Mul") {
      bool done = false;
      // SiLU and HardSwish (HardSigmoid form).
      for (int side = 0; side < 2 && !done; ++side) {
        Value x = root.input(static_cast<size_t>(1 - side));
        Value y = root.input(static_cast<size_t>(side));
        if (Node s = rw.ProducerIf(y, "Sigmoid"); s.defined() && SameValue(s.input(0), x)) {
          Node n(String("SiLU"), String("tilecore"), loc, Map<String, Any>(), Array<Any>({Any(x)}),
                 root->outputs);
          rw.Replace({s}, root, {n});
          ++silu;
          done = true;
        } else if (Node h = rw.ProducerIf(y, "HardSigmoid");
                   h.defined() && SameValue(h.input(0), x) &&
                   Near(FloatAttrOr(h, "alpha", 0.2), 1.0 / 6) &&
                   Near(FloatAttrOr(h, "beta", 0.5), 0.5)) {
          rw.Replace({h}, root,
                     {MakeNode("HardSwish", {x}, root->outputs, Map<String, Any>(), loc, 14)});
          ++hswish;
          done = true;
        }
      }
      if (done) continue;
      // GELU: the factor 0.5 outside, on x, or on (1 + erf).
      std::optional<GeluCore> core;
      std::vector<Node> extra;
      if (Value m1v = OtherThanConst(root, 0.5); m1v.defined()) {  // (x * t) * 0.5
        Node m1 = rw.ProducerIf(m1v, "Mul");
        for (int side = 0; m1.defined() && side < 2 && !core; ++side) {
          auto c = MatchCore(rw, m1.input(static_cast<size_t>(side)));
          if (c && SameValue(c->x, m1.input(static_cast<size_t>(1 - side)))) {
            core = c;
            extra = {m1};
          }
        }
      }
      for (int side = 0; side < 2 && !core; ++side) {
        Value a = root.input(static_cast<size_t>(side));
        Value b = root.input(static_cast<size_t>(1 - side));
        auto c = MatchCore(rw, b);  // (x * 0.5) * t
        Node h = rw.ProducerIf(a, "Mul");
        if (c && h.defined() && SameValue(OtherThanConst(h, 0.5), c->x)) {
          core = c;
          extra = {h};
          break;
        }
        Node m2 = rw.ProducerIf(b, "Mul");  // x * (t * 0.5)
        Value t = OtherThanConst(m2, 0.5);
        if (t.defined()) {
          auto c2 = MatchCore(rw, t);
          if (c2 && SameValue(c2->x, a)) {
            core = c2;
            extra = {m2};
          }
        }
      }
      if (core) {
        std::vector<Node> matched = core->nodes;
        matched.insert(matched.end(), extra.begin(), extra.end());
        Map<String, Any> attrs;
        attrs.Set(String("approximate"), String(core->tanh ? "tanh" : "none"));
        rw.Replace(matched, root, {MakeNode("Gelu", {core->x}, root->outputs, attrs, loc, 20)});
        ++(core->tanh ? gelu_tanh : gelu_erf);
      }
      continue;
    }
    // HardSwish, Clip form: (x * Clip(x + 3, 0, 6)) / 6  or  * (1/6).
    Value m;
    if (root->op_type == "Div" && Near(ScalarConst(root.input(1)), 6.0)) m = root.input(0);
    if (root->op_type == "Mul") m = OtherThanConst(root, 1.0 / 6);
    Node mul = rw.ProducerIf(m, "Mul");
    if (!mul.defined()) continue;
    for (int side = 0; side < 2; ++side) {
      Value x = mul.input(static_cast<size_t>(1 - side));
      Node clip = rw.ProducerIf(mul.input(static_cast<size_t>(side)), "Clip");
      if (!clip.defined()) continue;
      bool bounds = clip->inputs.size() >= 3 ? Near(ScalarConst(clip.input(1)), 0.0, 1e-6) &&
                                                   Near(ScalarConst(clip.input(2)), 6.0)
                                             : Near(FloatAttrOr(clip, "min", -1), 0.0, 1e-6) &&
                                                   Near(FloatAttrOr(clip, "max", -1), 6.0);
      Node add = rw.ProducerIf(clip.input(0), "Add");
      if (!bounds || !add.defined() || !SameValue(OtherThanConst(add, 3.0), x)) continue;
      rw.Replace({mul, clip, add}, root,
                 {MakeNode("HardSwish", {x}, root->outputs, Map<String, Any>(), loc, 14)});
      ++hswish;
      break;
    }
  }
  if (!rw.changed()) return g;
  if (silu) ctx->AddStat("transform.RecognizeActivations.silu", silu);
  if (hswish) ctx->AddStat("transform.RecognizeActivations.hardswish", hswish);
  if (gelu_erf) ctx->AddStat("transform.RecognizeActivations.gelu_erf", gelu_erf);
  if (gelu_tanh) ctx->AddStat("transform.RecognizeActivations.gelu_tanh", gelu_tanh);
  if (nan_masks) ctx->AddStat("transform.RecognizeActivations.nan_mask", nan_masks);
  return rw.Build();
}

}  // namespace

Pass RecognizeActivations() {
  return CreateGraphPass(Recognize, 0, String("RecognizeActivations"));
}

TILECORE_REGISTER_GLOBAL("transform.RecognizeActivations").set_body_typed([]() {
  return RecognizeActivations();
});

}  // namespace transform
}  // namespace tilecore
