/*
 * src/transform/eliminate_common_subexpr.cc — EliminateCommonSubexpr
 * (eliminate_common_subexpr.h).
 */
#include "tilecore/transform/eliminate_common_subexpr.h"

#include <vector>

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

std::string Key(const Node& n) {
  std::string k = std::string(n->domain.view()) + "::" + std::string(n->op_type.view()) + "(";
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    Value v = n.input(i);
    k += v.defined() ? Name(v) : std::string("<none>");
    k += ",";
  }
  k +=
      ")" + std::to_string(n->outputs.size()) + "#" + std::to_string(ffi::StructuralHash(n->attrs));
  return k;
}

Graph Eliminate(const Graph& g, PassContext ctx) {
  std::unordered_set<std::string> pinned;
  for (const Value& v : g->outputs) pinned.insert(Name(v));
  CollectSubgraphUses(g, &pinned);
  std::unordered_map<std::string, std::vector<Node>> seen;
  ValueMap map;
  Array<Node> nodes;
  int64_t merged = 0;
  for (const Node& node0 : g->nodes) {
    Node node = SubstInputs(node0, map);
    bool eligible = !HasSubgraph(node) && !IsNondeterministic(node);
    for (const Value& o : node->outputs) eligible = eligible && !pinned.count(Name(o));
    if (!eligible) {
      nodes.push_back(node);
      continue;
    }
    std::vector<Node>& bucket = seen[Key(node)];
    const Node* same = nullptr;
    for (const Node& c : bucket) {
      if (ffi::StructuralEqual(c->attrs, node->attrs)) {
        same = &c;
        break;
      }
    }
    if (same == nullptr) {
      bucket.push_back(node);
      nodes.push_back(node);
      continue;
    }
    for (size_t i = 0; i < node->outputs.size(); ++i)
      map[Name(node->outputs[i])] = (*same)->outputs[i];
    ++merged;
  }
  if (merged == 0) return g;
  ctx->AddStat("transform.EliminateCommonSubexpr.merged", merged);
  return g.WithBody(nodes, g->outputs);
}

}  // namespace

Pass EliminateCommonSubexpr() {
  return CreateGraphPass(Eliminate, 0, String("EliminateCommonSubexpr"));
}

TILECORE_REGISTER_GLOBAL("transform.EliminateCommonSubexpr").set_body_typed([]() {
  return EliminateCommonSubexpr();
});

}  // namespace transform
}  // namespace tilecore
