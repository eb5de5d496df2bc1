/*
 * src/transform/graph_pass_internal.h — helpers shared by the graph passes: value
 * substitution by name, use counts, and calling an op's infer/reference.
 */
#ifndef TILECORE_SRC_TRANSFORM_GRAPH_PASS_INTERNAL_H_
#define TILECORE_SRC_TRANSFORM_GRAPH_PASS_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilecore/ffi/structural.h"
#include "tilecore/ir/graph.h"
#include "tilecore/ir/graph_op.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {
namespace graph_internal {

using ir::Graph;
using ir::Node;
using ir::Value;

/*! \brief Value name -> its replacement. */
using ValueMap = std::unordered_map<std::string, Value>;

inline std::string Name(const Value& v) { return std::string(v->name.view()); }

/*! \brief `v` replaced through `map` (unchanged when absent or undefined). */
inline Value Subst(const Value& v, const ValueMap& map) {
  if (!v.defined()) return v;
  auto it = map.find(Name(v));
  return it == map.end() ? v : it->second;
}

inline ffi::Array<Value> SubstOutputs(const ffi::Array<Value>& outs, const ValueMap& map) {
  ffi::Array<Value> r;
  for (const Value& v : outs) r.push_back(Subst(v, map));
  return r;
}

inline Node SubstInputs(const Node& node, const ValueMap& map);

/*!
 * \brief Subgraph `g` with the values it reads from the graphs around it replaced through
 * `map` (the same graph when nothing changes). A name the subgraph defines itself is never
 * replaced (ONNX forbids the shadowing; a model that does it keeps its inner value).
 */
inline Graph SubstOuterReads(const Graph& g, const ValueMap& map) {
  const ValueMap* use = &map;
  ValueMap narrowed;
  auto defined_inside = [&](const Value& v) { return v.defined() && map.count(Name(v)) > 0; };
  bool shadows = false;
  for (const Value& v : g->inputs) shadows = shadows || defined_inside(v);
  for (const Node& n : g->nodes)
    for (const Value& v : n->outputs) shadows = shadows || defined_inside(v);
  if (shadows) {
    narrowed = map;
    for (const Value& v : g->inputs) narrowed.erase(Name(v));
    for (const Node& n : g->nodes)
      for (const Value& v : n->outputs) narrowed.erase(Name(v));
    use = &narrowed;
  }
  bool changed = false;
  ffi::Array<Node> nodes;
  for (const Node& n : g->nodes) {
    Node m = SubstInputs(n, *use);
    changed = changed || !m.same_as(n);
    nodes.push_back(m);
  }
  ffi::Array<Value> outs = SubstOutputs(g->outputs, *use);
  for (size_t i = 0; i < outs.size(); ++i) changed = changed || !outs[i].same_as(g->outputs[i]);
  if (!changed) return g;
  return Graph(g->name, g->inputs, outs, nodes, g->opsets);
}

/*!
 * \brief `node` with its inputs, and what its subgraphs read from outside them, replaced
 * through `map` (the same node when nothing changes): a pass that replaces a value (folds
 * it, retypes it) replaces it in the bodies of If, Loop and Scan too, which read it by name.
 */
inline Node SubstInputs(const Node& node, const ValueMap& map) {
  if (map.empty()) return node;
  bool changed = false;
  ffi::Array<ffi::Any> ins;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    Value v = node.input(i);
    Value w = Subst(v, map);
    if (!w.same_as(v)) changed = true;
    ins.push_back(w.defined() ? ffi::Any(w) : ffi::Any());
  }
  ffi::Map<ffi::String, ffi::Any> attrs = node->attrs;
  bool attrs_changed = false;
  for (const auto& [k, v] : node->attrs.items()) {
    auto sub = ir::AsObject<Graph>(v);
    if (!sub.has_value()) continue;
    Graph replaced = SubstOuterReads(*sub, map);
    if (replaced.same_as(*sub)) continue;
    if (!attrs_changed) {
      attrs = ffi::Map<ffi::String, ffi::Any>();
      for (const auto& [k2, v2] : node->attrs.items()) attrs.Set(k2, v2);
      attrs_changed = true;
    }
    attrs.Set(k, ffi::Any(replaced));
  }
  if (!changed && !attrs_changed) return node;
  return Node(node->op_type, node->domain, node->name, attrs, ins, node->outputs);
}

/*! \brief Whether a node has a subgraph attribute. */
inline bool HasSubgraph(const Node& node) {
  for (const auto& [k, v] : node->attrs.items()) {
    if (ir::AsObject<Graph>(v).has_value()) return true;
  }
  return false;
}

/*! \brief Names of every value used (as a node input or output) inside subgraph attributes, at any
 * depth. */
inline void CollectSubgraphUses(const Graph& g, std::unordered_set<std::string>* out,
                                bool inside = false) {
  for (const Node& n : g->nodes) {
    if (inside) {
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        Value v = n.input(i);
        if (v.defined()) out->insert(Name(v));
      }
    }
    for (const auto& [k, v] : n->attrs.items()) {
      if (auto sub = ir::AsObject<Graph>(v)) {
        for (const Value& o : (*sub)->outputs) out->insert(Name(o));
        CollectSubgraphUses(*sub, out, true);
      }
    }
  }
}

/*! \brief Ops whose results change between runs: never folded or merged. */
inline bool IsNondeterministic(const Node& n) {
  std::string_view op = n->op_type.view();
  return op.substr(0, 6) == "Random" || op == "Multinomial" || op == "Bernoulli" || op == "Dropout";
}

/*! \brief The registered op of `node`, or a ValueError naming op type, node, opset and domain. */
inline ir::GraphOpDef RequireOp(const Node& node, int64_t opset) {
  ir::GraphOpDef op =
      ir::GetGraphOp(std::string(node->op_type.view()), std::string(node->domain.view()));
  if (!op.defined()) {
    std::string domain = node->domain.empty() ? "ai.onnx" : std::string(node->domain.view());
    size_t n = ir::ListGraphOps(std::string(node->domain.view())).size();
    TILECORE_THROW(NotImplementedError)
        << "unsupported op " << node->op_type.view() << ": " << node.Where() << ", opset " << opset
        << " of domain " << domain << "; " << n << " op types are registered in that domain"
        << " (tilecore.ir.ops.list_ops() lists them)";
  }
  return op;
}

/*! \brief `e` rethrown with `prefix` before its message, kind kept. */
[[noreturn]] inline void RethrowWith(const ffi::Error& e, const std::string& prefix) {
  throw ffi::Error(std::string(e.kind()), prefix + std::string(e.message()),
                   std::string(e.backtrace()));
}

/*! \brief The TensorType of a host array. */
inline ir::Type TypeOfArray(const ffi::Any& a, const ir::Type& fallback) {
  auto nd = ir::AsObject<ffi::NDArray>(a);
  if (!nd.has_value()) return fallback;
  ffi::Array<ffi::Any> dims;
  for (int64_t d : nd->shape()) dims.push_back(ffi::Any(d));
  ffi::String layout("");
  ir::QuantParams quant;
  if (const auto* t = fallback.as<ir::TensorTypeNode>()) {
    layout = t->layout;
    quant = t->quant;
  }
  return ir::TensorType(dims, ffi::String(ir::DtypeOfNDArray(*nd)), layout, quant);
}

/*! \brief Producers and use counts of a graph's values, and node-level rewriting:
 * matched nodes are marked dead and replacement nodes are placed at the position of
 * the pattern's root (its last node), so the order stays topological. */
class Rewriter {
 public:
  explicit Rewriter(const Graph& g) : g_(g), dead_(g->nodes.size(), false) {
    for (size_t k = 0; k < g->nodes.size(); ++k) {
      Node n = g->nodes[k];
      for (const Value& o : n->outputs) {
        if (!o->name.empty()) producer_[Name(o)] = static_cast<int>(k);
        names_.insert(Name(o));
      }
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        Value v = n.input(i);
        if (v.defined()) {
          ++uses_[Name(v)];
          names_.insert(Name(v));
        }
      }
    }
    for (const Value& v : g->inputs) names_.insert(Name(v));
    std::unordered_set<std::string> pinned;
    for (const Value& v : g->outputs) pinned.insert(Name(v));
    CollectSubgraphUses(g, &pinned);
    for (const auto& n : pinned) uses_[n] += 1000000;  // never "single use"
  }
  /*! \brief The live node producing `v`, or an undefined Node. */
  Node Producer(const Value& v) const {
    if (!v.defined()) return Node();
    auto it = producer_.find(Name(v));
    if (it == producer_.end() || dead_[static_cast<size_t>(it->second)]) return Node();
    return g_->nodes[static_cast<size_t>(it->second)];
  }
  /*! \brief Producer of `v` if it has op type `op` (default domain) and `v` is used once. */
  Node ProducerIf(const Value& v, const char* op, bool single_use = true) const {
    Node n = Producer(v);
    if (!n.defined() || n->op_type != op || !n->domain.empty()) return Node();
    if (single_use && Uses(v) != 1) return Node();
    return n;
  }
  int Uses(const Value& v) const {
    auto it = uses_.find(Name(v));
    return it == uses_.end() ? 0 : it->second;
  }
  /*!
   * \brief Marks the matched nodes dead and `root` replaced by `with`. The named nodes that
   * go (matched and root, except one whose name a new node keeps) are recorded on the new
   * node that writes root's outputs, the last of `with`, in its attribute `_merged`:
   * [[name, op type], ...], with those the gone nodes had merged before; so debuggers and
   * profiles can still name every node of the model (a BatchNormalization folded into its
   * Conv, the Div, Erf, Add and Mul recognised as one Gelu).
   */
  void Replace(const std::vector<Node>& matched, const Node& root, std::vector<Node> with) {
    for (const Node& m : matched) dead_[Index(m)] = true;
    dead_[Index(root)] = true;
    std::vector<Node> gone = matched;
    gone.push_back(root);
    RecordMerged(gone, &with);
    replacement_[Index(root)] = std::move(with);
  }
  static void RecordMerged(const std::vector<Node>& gone, std::vector<Node>* with) {
    if (with->empty()) return;
    std::unordered_set<std::string> kept, seen;
    for (const Node& n : *with)
      if (!n->name.empty()) kept.insert(std::string(n->name.view()));
    Array<Any> merged;
    auto add = [&](const std::string& name, const std::string& op) {
      if (name.empty() || kept.count(name) || !seen.insert(name).second) return;
      Array<Any> pair;
      pair.push_back(Any(String(name)));
      pair.push_back(Any(String(op)));
      merged.push_back(Any(pair));
    };
    auto add_recorded = [&](const Node& n) {
      auto prev = n->attrs.Get(String("_merged"));
      if (!prev) return;
      auto list = prev->try_cast<Array<Any>>();
      for (size_t i = 0; list && i < list->size(); ++i) {
        auto pair = (*list)[i].try_cast<Array<Any>>();
        if (pair && pair->size() == 2)
          add(std::string((*pair)[0].cast<String>().view()),
              std::string((*pair)[1].cast<String>().view()));
      }
    };
    Node& host = with->back();
    add_recorded(host);
    for (const Node& g : gone) {
      add_recorded(g);
      add(std::string(g->name.view()), std::string(g->op_type.view()));
    }
    if (merged.empty()) return;
    Map<String, Any> attrs;
    for (const auto& [k, v] : host->attrs.items()) attrs.Set(k, v);
    attrs.Set(String("_merged"), Any(merged));
    host = Node(host->op_type, host->domain, host->name, attrs, host->inputs, host->outputs);
  }
  bool IsDead(const Node& n) const { return dead_[Index(n)]; }
  std::string Fresh(const std::string& hint) {
    std::string name = hint;
    int k = 0;
    while (names_.count(name)) name = hint + "_" + std::to_string(++k);
    names_.insert(name);
    return name;
  }
  Graph Build() const {
    Array<Node> nodes;
    for (size_t k = 0; k < g_->nodes.size(); ++k) {
      auto it = replacement_.find(k);
      if (it != replacement_.end()) {
        for (const Node& n : it->second) nodes.push_back(n);
      } else if (!dead_[k]) {
        nodes.push_back(g_->nodes[k]);
      }
    }
    return g_.WithBody(nodes, g_->outputs);
  }
  bool changed() const { return !replacement_.empty(); }

 private:
  size_t Index(const Node& n) const {
    // the first named output: an optional one (LSTM's Y) may be omitted
    for (const Value& o : n->outputs) {
      if (o->name.empty()) continue;
      auto it = producer_.find(Name(o));
      TILECORE_ICHECK(it != producer_.end()) << "node has no registered output";
      return static_cast<size_t>(it->second);
    }
    TILECORE_ICHECK(false) << "node has no named output";
    return 0;
  }
  Graph g_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, int> uses_;
  std::unordered_set<std::string> names_;
  std::vector<bool> dead_;
  std::unordered_map<size_t, std::vector<Node>> replacement_;
};

/*! \brief The static shape of a typed value, or nullopt. */
inline std::optional<std::vector<int64_t>> StaticShapeOf(const Value& v) {
  if (!v.defined()) return std::nullopt;
  const auto* t = v->type.as<ir::TensorTypeNode>();
  if (t == nullptr || !t->rank_known) return std::nullopt;
  std::vector<int64_t> s;
  for (size_t i = 0; i < t->shape.size(); ++i) {
    auto d = t->shape.raw(i).as<int64_t>();
    if (!d.has_value()) return std::nullopt;
    s.push_back(*d);
  }
  return s;
}

/*! \brief The shape of a float32 host constant, or nullopt. */
inline std::optional<std::vector<int64_t>> Float32ConstShape(const Value& v) {
  if (!v.defined() || !v->is_constant()) return std::nullopt;
  auto a = ir::AsObject<ffi::NDArray>(v->data);
  if (!a.has_value() || a->dtype().code != kDLFloat || a->dtype().bits != 32) return std::nullopt;
  return a->shape();
}

inline bool IsFloat32Const(const Value& v) { return Float32ConstShape(v).has_value(); }

/*! \brief A constant's elements as doubles (float/int dtypes on the host), or nullopt. */
inline std::optional<std::vector<double>> ConstValues(const Value& v) {
  if (!v.defined() || !v->is_constant()) return std::nullopt;
  auto a = ir::AsObject<ffi::NDArray>(v->data);
  if (!a.has_value() || a->device().device_type != kDLCPU || !a->IsContiguous())
    return std::nullopt;
  DLDataType t = a->dtype();
  const size_t n = static_cast<size_t>(a->NumElements());
  const char* base = static_cast<const char*>(a->tensor().data) + a->tensor().byte_offset;
  // (one converting copy per dtype: the weights of a whole model pass through here)
  auto widen = [&](auto* first) {
    return std::optional<std::vector<double>>(std::in_place, first, first + n);
  };
  if (n == 0) return std::vector<double>();  // (whatever the dtype)
  if (t.code == kDLFloat && t.bits == 32) return widen(reinterpret_cast<const float*>(base));
  if (t.code == kDLFloat && t.bits == 64) return widen(reinterpret_cast<const double*>(base));
  if (t.code == kDLInt && t.bits == 64) return widen(reinterpret_cast<const int64_t*>(base));
  if (t.code == kDLInt && t.bits == 32) return widen(reinterpret_cast<const int32_t*>(base));
  return std::nullopt;
}

/*! \brief The value of a one-element constant, or nullopt. */
inline std::optional<double> ScalarConst(const Value& v) {
  auto vals = ConstValues(v);
  if (!vals.has_value() || vals->size() != 1) return std::nullopt;
  return (*vals)[0];
}

inline bool Near(std::optional<double> v, double want, double tol = 1e-4) {
  return v.has_value() && std::abs(*v - want) <= tol * std::max(1.0, std::abs(want));
}

/*! \brief A float32 host array of `shape` holding `vals`. */
inline ffi::NDArray Float32Array(const std::vector<int64_t>& shape,
                                 const std::vector<double>& vals) {
  ffi::NDArray a = ffi::NDArray::Empty(shape, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  float* p = a.data<float>();
  for (size_t i = 0; i < vals.size(); ++i) p[i] = static_cast<float>(vals[i]);
  return a;
}

/*! \brief A constant Value named `name` holding a float32 array. */
inline Value Float32Const(const std::string& name, const std::vector<int64_t>& shape,
                          const std::vector<double>& vals) {
  ffi::NDArray a = Float32Array(shape, vals);
  return Value(String(name), TypeOfArray(ffi::Any(a), ir::Type()), ffi::Any(a));
}

/*! \brief The dtype of a value's TensorType ("" when unknown). */
inline std::string DtypeOf(const Value& v) {
  const auto* t = v.defined() ? v->type.as<ir::TensorTypeNode>() : nullptr;
  return t == nullptr ? std::string() : std::string(t->dtype.view());
}

/*! \brief A node of the default domain with "_opset" set. */
inline Node MakeNode(const std::string& op, Array<ffi::Any> inputs, Array<Value> outputs,
                     Map<String, ffi::Any> attrs, const String& name, int64_t opset) {
  attrs.Set(String("_opset"), ffi::Any(opset));
  return Node(String(op), String(""), name, attrs, inputs, outputs);
}

/*! \brief Whether every named output of `node` is a constant (its value known: InferTypes
 * computed it, or FoldConstants). (fold_constants.cc) */
bool AllOutputsKnown(const Node& node);

/*!
 * \brief The values of `node`'s outputs run once with its reference implementation, when
 * every input it reads is a constant, it has no subgraph, it is deterministic and each
 * output is a tensor; nullopt otherwise. A reference that raises is an error naming the node
 * (`raise`; without it, only an interrupt or MemoryError is) or nullopt. (fold_constants.cc)
 */
std::optional<ffi::Array<ffi::Any>> FoldedOutputs(const Graph& g, const Node& node, bool raise);

}  // namespace graph_internal
}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_SRC_TRANSFORM_GRAPH_PASS_INTERNAL_H_
