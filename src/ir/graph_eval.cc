/*
 * src/ir/graph_eval.cc — EvaluateGraph (graph_op.h): runs a Graph node by node with
 * the registry's reference implementations; the reference every later stage of
 * compilation is compared with.
 *
 * Values live in a name -> array environment; a subgraph (If/Loop/Scan body) runs
 * in a child environment that sees its enclosing graphs' values, handed to the op as
 * a Function body(*arrays) -> Array. Arrays are whatever the references return:
 * NDArrays (shared with numpy without copies through DLPack), Arrays for sequences,
 * opaque host objects for dtypes DLPack cannot carry (strings).
 */
#include <memory>
#include <unordered_map>

#include "tilecore/ffi/error.h"
#include "tilecore/ir/graph_op.h"

namespace tilecore {
namespace ir {

namespace {

struct Env {
  std::unordered_map<std::string, Any> values;
  const Env* parent{nullptr};
  const Any* Find(const std::string& name) const {
    for (const Env* e = this; e != nullptr; e = e->parent) {
      auto it = e->values.find(name);
      if (it != e->values.end()) return &it->second;
    }
    return nullptr;
  }
};

[[noreturn]] void Rethrow(const ffi::Error& e, const std::string& prefix) {
  throw ffi::Error(std::string(e.kind()), prefix + std::string(e.message()),
                   std::string(e.backtrace()));
}

void RunGraph(const Graph& graph, Env* env, bool keep, Map<String, Any>* intermediates);

Function MakeBody(const Graph& body, const Env* outer) {
  return Function::FromPacked([body, outer](ffi::PackedArgs args, Any* rv) {
    if (static_cast<size_t>(args.size()) > body->inputs.size()) {
      TILECORE_THROW(ValueError) << "subgraph `" << body->name.view() << "` takes "
                                 << body->inputs.size() << " inputs, got " << args.size();
    }
    Env env;
    env.parent = outer;
    for (int i = 0; i < args.size(); ++i)
      env.values[std::string(body->inputs[i]->name.view())] = Any(args[i]);
    RunGraph(body, &env, false, nullptr);
    Array<Any> outs;
    for (const Value& v : body->outputs) {
      const Any* a = v->is_constant() ? &v->data : env.Find(std::string(v->name.view()));
      if (a == nullptr) {
        TILECORE_THROW(ValueError) << "subgraph `" << body->name.view() << "`: output `"
                                   << v->name.view() << "` is never computed";
      }
      outs.push_back(*a);
    }
    *rv = outs;
  });
}

void RunGraph(const Graph& graph, Env* env, bool keep, Map<String, Any>* intermediates) {
  for (const Node& node : graph->nodes) {
    GraphOpDef op = GetGraphOp(std::string(node->op_type.view()), std::string(node->domain.view()));
    int64_t opset = graph.Opset(std::string(node->domain.view()));
    if (!op.defined() || !op->reference.defined()) {
      TILECORE_THROW(NotImplementedError)
          << node.Where() << ": no reference implementation of "
          << (node->domain.empty() ? "" : std::string(node->domain.view()) + "::")
          << node->op_type.view() << " (opset " << opset << ") is registered";
    }
    Map<String, Any> attrs = NodeAttrsForOp(node, op, opset);
    for (const auto& [k, v] : attrs.items()) {
      if (auto g = AsObject<Graph>(v)) attrs.Set(k, MakeBody(*g, env));
    }
    Array<Any> args;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      Value v = node.input(i);
      if (!v.defined() || v->name.empty()) {
        args.push_back(Any());
        continue;
      }
      if (v->is_constant()) {
        args.push_back(v->data);
        continue;
      }
      const Any* a = env->Find(std::string(v->name.view()));
      if (a == nullptr) {
        TILECORE_THROW(ValueError)
            << node.Where() << ": input " << i << " `" << v->name.view()
            << "` is neither a graph input, a constant nor computed by an earlier node";
      }
      args.push_back(*a);
    }
    Any result;
    try {
      result = op->reference(attrs, args);
    } catch (const ffi::Error& e) {
      Rethrow(e, node.Where() + ": ");
    }
    auto outs = AsObject<Array<Any>>(result);
    if (!outs.has_value()) {
      TILECORE_THROW(TypeError) << node.Where() << ": the reference returned `"
                                << result.GetTypeKey() << "`, expected an Array of outputs";
    }
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const std::string name(node->outputs[i]->name.view());
      if (name.empty()) continue;
      if (i >= outs->size()) {
        TILECORE_THROW(ValueError) << node.Where() << ": the reference returned " << outs->size()
                                   << " outputs, the node has " << node->outputs.size();
      }
      env->values[name] = outs->raw(i);
      if (keep && intermediates != nullptr) intermediates->Set(String(name), outs->raw(i));
    }
  }
}

}  // namespace

Map<String, Any> EvaluateGraph(const Graph& graph, const Map<String, Any>& feed,
                               bool keep_intermediates) {
  Env env;
  for (const Value& in : graph->inputs) {
    auto v = feed.Get(in->name);
    if (!v.has_value()) {
      if (in->is_constant()) {
        env.values[std::string(in->name.view())] = in->data;
        continue;
      }
      TILECORE_THROW(ValueError) << "EvaluateGraph: graph `" << graph->name.view()
                                 << "` needs the input `" << in->name.view()
                                 << "`, which is not given";
    }
    env.values[std::string(in->name.view())] = *v;
  }
  Map<String, Any> out;
  RunGraph(graph, &env, keep_intermediates, &out);
  for (const Value& v : graph->outputs) {
    const Any* a = v->is_constant() ? &v->data : env.Find(std::string(v->name.view()));
    if (a == nullptr) {
      TILECORE_THROW(ValueError) << "EvaluateGraph: output `" << v->name.view()
                                 << "` is never computed";
    }
    out.Set(v->name, *a);
  }
  return out;
}

TILECORE_REGISTER_GLOBAL("ir.EvaluateGraph")
    .set_body_typed([](Graph graph, ffi::AnyView feed, bool keep_intermediates) {
      return EvaluateGraph(graph,
                           feed.is_none() ? Map<String, Any>() : feed.cast<Map<String, Any>>(),
                           keep_intermediates);
    });

}  // namespace ir
}  // namespace tilecore
