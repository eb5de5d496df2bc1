/*
 * src/transform/eliminate_dead_code.cc — EliminateDeadCode (eliminate_dead_code.h).
 */
#include "tilecore/transform/eliminate_dead_code.h"

#include <vector>

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

Graph Eliminate(const Graph& g, PassContext ctx) {
  std::unordered_set<std::string> live;
  for (const Value& v : g->outputs) live.insert(Name(v));
  std::vector<bool> keep(g->nodes.size(), false);
  for (size_t k = g->nodes.size(); k-- > 0;) {
    Node n = g->nodes[k];
    bool used = false;
    for (const Value& o : n->outputs) used = used || live.count(Name(o)) > 0;
    if (!used) continue;
    keep[k] = true;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Value v = n.input(i);
      if (v.defined()) live.insert(Name(v));
    }
    if (HasSubgraph(n)) {
      Array<Node> one;
      one.push_back(n);
      CollectSubgraphUses(Graph(String(""), Array<Value>(), Array<Value>(), one), &live);
    }
  }
  Array<Node> nodes;
  int64_t removed = 0;
  for (size_t k = 0; k < g->nodes.size(); ++k) {
    if (keep[k]) {
      nodes.push_back(g->nodes[k]);
    } else {
      ++removed;
    }
  }
  if (removed == 0) return g;
  ctx->AddStat("transform.EliminateDeadCode.removed", removed);
  return g.WithBody(nodes, g->outputs);
}

}  // namespace

Pass EliminateDeadCode() { return CreateGraphPass(Eliminate, 0, String("EliminateDeadCode")); }

TILECORE_REGISTER_GLOBAL("transform.EliminateDeadCode").set_body_typed([]() {
  return EliminateDeadCode();
});

}  // namespace transform
}  // namespace tilecore
