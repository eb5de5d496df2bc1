/*
 * src/transform/hoist_activations.cc — HoistActivations (hoist_activations.h).
 */
#include "tilecore/transform/hoist_activations.h"

#include <deque>

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

bool IsActivation(const Node& n) {
  const std::string op(n->op_type.view());
  if (n->domain == "tilecore") return op == "SiLU";
  return n->domain.empty() &&
         (op == "Relu" || op == "Sigmoid" || op == "HardSigmoid" || op == "HardSwish");
}

bool IsLayout(const Node& n) {
  const std::string op(n->op_type.view());
  return n->domain.empty() && n->outputs.size() == 1 && n->inputs.size() >= 1 &&
         (op == "Reshape" || op == "Transpose" || op == "Flatten" || op == "Squeeze" ||
          op == "Unsqueeze");
}

/*! \brief `n` reading `in` as input 0 and writing `out` (its other inputs, attributes and
 * name kept). */
Node Rewired(const Node& n, const Value& in, const Value& out) {
  Array<Any> inputs;
  inputs.push_back(Any(in));
  for (size_t i = 1; i < n->inputs.size(); ++i) inputs.push_back(n->inputs[i]);
  return Node(n->op_type, n->domain, n->name, n->attrs, inputs, Array<Value>({out}));
}

Graph Rewrite(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t hoisted = 0;
  for (const Node& act : g->nodes) {
    if (!IsActivation(act) || act->inputs.size() != 1 || act->outputs.size() != 1 || rw.IsDead(act))
      continue;
    // the layout ops between the activation and the Conv, first to last
    std::deque<Node> chain;
    Value v = act.input(0);
    for (Node n = rw.Producer(v); n.defined() && IsLayout(n) && rw.Uses(v) == 1 && !rw.IsDead(n);
         n = rw.Producer(v)) {
      chain.push_front(n);
      v = n.input(0);
    }
    Node conv = rw.ProducerIf(v, "Conv");
    if (chain.empty() || !conv.defined() || rw.IsDead(conv) || DtypeOf(v) != "float32") continue;
    std::vector<Node> with;
    Value y(String(rw.Fresh(Name(v) + "_" + std::string(act->op_type.view()))), v->type);
    with.push_back(Rewired(act, v, y));
    for (size_t k = 0; k < chain.size(); ++k) {
      const Value& old = chain[k]->outputs[0];
      Value out = k + 1 == chain.size()
                      ? act->outputs[0]
                      : Value(String(rw.Fresh(Name(old) + "_" + std::string(act->op_type.view()))),
                              old->type);
      with.push_back(Rewired(chain[k], y, out));
      y = out;
    }
    rw.Replace(std::vector<Node>(chain.begin(), chain.end()), act, with);
    ++hoisted;
  }
  if (hoisted == 0) return g;
  ctx->AddStat("transform.HoistActivations.hoisted", hoisted);
  return rw.Build();
}

}  // namespace

Pass HoistActivations() { return CreateGraphPass(Rewrite, 0, String("HoistActivations")); }

TILECORE_REGISTER_GLOBAL("transform.HoistActivations").set_body_typed([]() {
  return HoistActivations();
});

}  // namespace transform
}  // namespace tilecore
