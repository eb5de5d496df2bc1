/*
 * src/ir/graph_op.cc — the graph-operator registry (graph_op.h) and its `ir.*`
 * registrations.
 */
#include "tilecore/ir/graph_op.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace ir {

using ffi::make_object;

namespace {
struct OpTable {
  std::shared_mutex mu;
  std::map<std::pair<std::string, std::string>, GraphOpDef> ops;  // (domain, name)
};
OpTable& Table() {
  static OpTable* t = new OpTable();  // never destroyed: ops may be looked up during exit
  return *t;
}
std::string NormDomain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }
}  // namespace

GraphOpDef::GraphOpDef(String name, String domain, Map<String, Any> attrs, int64_t min_inputs,
                       int64_t max_inputs, int64_t min_outputs, int64_t max_outputs,
                       int64_t since_version, Function infer, Function reference, String doc) {
  if (name.empty()) TILECORE_THROW(ValueError) << "GraphOpDef: empty op name";
  auto n = make_object<GraphOpDefNode>();
  n->name = std::move(name);
  n->domain = String(NormDomain(std::string(domain.view())));
  n->attrs = std::move(attrs);
  n->min_inputs = min_inputs;
  n->max_inputs = max_inputs;
  n->min_outputs = min_outputs;
  n->max_outputs = max_outputs;
  n->since_version = since_version;
  n->infer = std::move(infer);
  n->reference = std::move(reference);
  n->doc = std::move(doc);
  data_ = std::move(n);
}

void RegisterGraphOp(GraphOpDef def, bool override) {
  OpTable& t = Table();
  std::unique_lock lock(t.mu);
  auto key = std::make_pair(std::string(def->domain.view()), std::string(def->name.view()));
  if (t.ops.count(key) && !override) {
    TILECORE_THROW(ValueError) << "graph op " << (key.first.empty() ? "" : key.first + "::")
                               << key.second
                               << " is already registered (pass override=True to replace it)";
  }
  t.ops[key] = std::move(def);
}

GraphOpDef GetGraphOp(const std::string& name, const std::string& domain) {
  OpTable& t = Table();
  std::shared_lock lock(t.mu);
  auto it = t.ops.find({NormDomain(domain), name});
  return it == t.ops.end() ? GraphOpDef() : it->second;
}

Array<GraphOpDef> ListGraphOps(std::optional<std::string> domain) {
  OpTable& t = Table();
  std::shared_lock lock(t.mu);
  Array<GraphOpDef> out;
  for (const auto& [k, v] : t.ops) {
    if (!domain.has_value() || NormDomain(*domain) == k.first) out.push_back(v);
  }
  return out;
}

Map<String, Any> NodeAttrsForOp(const Node& node, const GraphOpDef& op, int64_t opset) {
  Map<String, Any> out;
  for (const auto& [k, v] : node->attrs.items()) out.Set(k, v);
  if (op.defined()) {
    for (const auto& [k, spec] : op->attrs.items()) {
      if (out.count(k)) continue;
      auto s = AsObject<Array<Any>>(spec);
      if (!s.has_value() || s->size() < 3) continue;
      bool required = s->raw(2).try_cast<bool>().value_or(false);
      if (required) {
        TILECORE_THROW(ValueError)
            << node.Where() << " needs the attribute `" << k.view() << "` ("
            << s->raw(0).try_cast<String>().value_or(String("?")).view() << ")";
      }
      out.Set(k, s->raw(1));
    }
  }
  if (!out.count(String("_opset"))) out.Set(String("_opset"), Any(opset));
  out.Set(String("_num_outputs"), Any(static_cast<int64_t>(node->outputs.size())));
  return out;
}

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<GraphOpDefNode>(kTCFFISEqualIdentity)
      .def_ro("name", &GraphOpDefNode::name)
      .def_ro("domain", &GraphOpDefNode::domain)
      .def_ro("attrs", &GraphOpDefNode::attrs, "name -> [kind, default, required]")
      .def_ro("min_inputs", &GraphOpDefNode::min_inputs)
      .def_ro("max_inputs", &GraphOpDefNode::max_inputs, "-1: variadic")
      .def_ro("min_outputs", &GraphOpDefNode::min_outputs)
      .def_ro("max_outputs", &GraphOpDefNode::max_outputs, "-1: variadic")
      .def_ro("since_version", &GraphOpDefNode::since_version)
      .def_ro("infer", &GraphOpDefNode::infer)
      .def_ro("reference", &GraphOpDefNode::reference)
      .def_ro("doc", &GraphOpDefNode::doc);
});

TILECORE_REGISTER_GLOBAL("ir.GraphOpDef")
    .set_body_typed([](String name, String domain, ffi::AnyView attrs, int64_t min_inputs,
                       int64_t max_inputs, int64_t min_outputs, int64_t max_outputs,
                       int64_t since_version, ffi::AnyView infer, ffi::AnyView reference,
                       String doc) {
      return GraphOpDef(name, domain,
                        attrs.is_none() ? Map<String, Any>() : attrs.cast<Map<String, Any>>(),
                        min_inputs, max_inputs, min_outputs, max_outputs, since_version,
                        infer.is_none() ? Function() : infer.cast<Function>(),
                        reference.is_none() ? Function() : reference.cast<Function>(), doc);
    });
TILECORE_REGISTER_GLOBAL("ir.RegisterGraphOp").set_body_typed([](GraphOpDef def, bool override) {
  RegisterGraphOp(def, override);
});
TILECORE_REGISTER_GLOBAL("ir.GetGraphOp").set_body_typed([](String name, String domain) -> Any {
  GraphOpDef d = GetGraphOp(std::string(name.view()), std::string(domain.view()));
  if (!d.defined()) return Any();
  return d;
});
TILECORE_REGISTER_GLOBAL("ir.ListGraphOps").set_body_typed([](ffi::AnyView domain) {
  if (domain.is_none()) return ListGraphOps();
  return ListGraphOps(std::string(domain.cast<String>().view()));
});

}  // namespace ir
}  // namespace tilecore
