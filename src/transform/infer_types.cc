/*
 * src/transform/infer_types.cc — InferTypes (infer_types.h).
 */
#include "tilecore/transform/infer_types.h"

#include <sstream>

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)
using ir::TensorType;
using ir::TensorTypeNode;
using ir::Type;

namespace {

/*! \brief Binds the inputs' symbols from `input_shapes`; returns the typed inputs. */
Array<Value> BindInputs(const Graph& g, const Map<String, Any>& input_shapes, ValueMap* map) {
  std::unordered_map<std::string, int64_t> symbols;
  std::unordered_set<std::string> known;
  for (const Value& in : g->inputs) known.insert(Name(in));
  for (const auto& [name, shape_any] : input_shapes.items()) {
    if (!known.count(std::string(name.view()))) {
      std::string names;
      for (const Value& in : g->inputs) names += (names.empty() ? "" : ", ") + Name(in);
      TILECORE_THROW(KeyError) << "input_shapes: the graph has no input `" << name.view()
                               << "` (its inputs: " << (names.empty() ? "none" : names) << ")";
    }
  }
  Array<Value> out;
  for (const Value& in : g->inputs) {
    auto given = input_shapes.Get(in->name);
    const auto* t = in->type.as<TensorTypeNode>();
    if (!given.has_value()) {
      out.push_back(in);
      continue;
    }
    auto dims = given->try_cast<Array<Any>>();
    if (!dims.has_value()) {
      TILECORE_THROW(TypeError) << "input_shapes[`" << in->name.view()
                                << "`] must be a list of ints";
    }
    if (t != nullptr && t->rank_known && t->shape.size() != dims->size()) {
      TILECORE_THROW(ValueError) << "input_shapes[`" << in->name.view() << "`] has rank "
                                 << dims->size() << " but the input is "
                                 << ir::TypeToText(in->type);
    }
    for (size_t i = 0; i < dims->size(); ++i) {
      auto v = dims->raw(i).try_cast<int64_t>();
      if (!v.has_value() || *v < 0) {
        TILECORE_THROW(TypeError) << "input_shapes[`" << in->name.view() << "`]: dimension " << i
                                  << " must be a non-negative int";
      }
      if (t == nullptr || !t->rank_known) continue;
      const Any& decl = t->shape.raw(i);
      if (auto s = decl.as<int64_t>(); s.has_value() && *s != *v) {
        TILECORE_THROW(ValueError) << "input_shapes[`" << in->name.view() << "`]: dimension " << i
                                   << " is " << *v << " but the model fixes it to " << *s;
      }
      if (auto sym = decl.try_cast<String>()) {
        auto [it, fresh] = symbols.emplace(std::string(sym->view()), *v);
        if (!fresh && it->second != *v) {
          TILECORE_THROW(ValueError) << "input_shapes: symbol `" << sym->view()
                                     << "` is bound to both " << it->second << " and " << *v;
        }
      }
    }
  }
  // Second sweep: every input gets its given shape, or its symbols replaced.
  Array<Value> bound;
  for (const Value& in : g->inputs) {
    auto given = input_shapes.Get(in->name);
    const auto* t = in->type.as<TensorTypeNode>();
    if (t == nullptr || !t->rank_known) {
      bound.push_back(in);
      continue;
    }
    Array<Any> dims;
    bool changed = false;
    for (size_t i = 0; i < t->shape.size(); ++i) {
      Any d = t->shape.raw(i);
      if (given.has_value()) {
        Any gd(given->cast<Array<Any>>().raw(i).cast<int64_t>());
        changed = true;
        dims.push_back(gd);
        continue;
      }
      if (auto sym = d.try_cast<String>()) {
        auto it = symbols.find(std::string(sym->view()));
        if (it != symbols.end()) {
          d = Any(it->second);
          changed = true;
        }
      }
      dims.push_back(d);
    }
    if (!changed) {
      bound.push_back(in);
      continue;
    }
    Value nv(in->name, TensorType(dims, t->dtype, t->layout, t->quant), in->data);
    (*map)[Name(in)] = nv;
    bound.push_back(nv);
  }
  (void)out;
  return bound;
}

/*! \brief The inferred type checked against the declared one and completed by it. */
Type Merge(const Type& inferred, const Type& declared, const Node& node, size_t index) {
  if (!inferred.defined()) return declared;
  if (!declared.defined()) return inferred;
  const auto* a = inferred.as<TensorTypeNode>();
  const auto* b = declared.as<TensorTypeNode>();
  if (a == nullptr || b == nullptr) return inferred;
  auto mismatch = [&](const std::string& what) {
    TILECORE_THROW(ValueError) << "inconsistent shape: " << node.Where() << " output " << index
                               << " `" << node->outputs[index]->name.view() << "` is inferred as "
                               << ir::TypeToText(inferred) << " but the model declares "
                               << ir::TypeToText(declared) << " (" << what << ")";
  };
  if (!a->dtype.empty() && !b->dtype.empty() && a->dtype != b->dtype) mismatch("dtype");
  if (!a->rank_known) {
    return TensorType(b->shape, a->dtype.empty() ? b->dtype : a->dtype, b->layout, b->quant,
                      b->rank_known);
  }
  if (!b->rank_known) return inferred;
  if (a->shape.size() != b->shape.size()) mismatch("rank");
  Array<Any> dims;
  for (size_t i = 0; i < a->shape.size(); ++i) {
    auto x = a->shape.raw(i).as<int64_t>();
    auto y = b->shape.raw(i).as<int64_t>();
    if (x.has_value() && y.has_value() && *x != *y) mismatch("dimension " + std::to_string(i));
    if (x.has_value()) {
      dims.push_back(a->shape.raw(i));
    } else if (y.has_value() || a->shape.raw(i).is_none()) {
      dims.push_back(b->shape.raw(i));
    } else {
      dims.push_back(a->shape.raw(i));
    }
  }
  return TensorType(dims, a->dtype.empty() ? b->dtype : a->dtype,
                    a->layout.empty() ? b->layout : a->layout,
                    a->quant.defined() ? a->quant : b->quant);
}

/*! \brief Whether `t` is a tensor type with every dimension a number. */
bool IsStatic(const Type& t) {
  const auto* a = t.defined() ? t.as<TensorTypeNode>() : nullptr;
  if (a == nullptr || !a->rank_known) return false;
  for (size_t i = 0; i < a->shape.size(); ++i)
    if (!a->shape.raw(i).as<int64_t>().has_value()) return false;
  return true;
}

/*! \brief Whether a value of type `t` may have the static shape of `s` (rank and known dims). */
bool Fits(const Type& t, const TensorTypeNode* s) {
  const auto* a = t.defined() ? t.as<TensorTypeNode>() : nullptr;
  if (a == nullptr) return t.defined() == false;
  if (!a->rank_known) return true;
  if (a->shape.size() != s->shape.size()) return false;
  for (size_t i = 0; i < a->shape.size(); ++i) {
    auto x = a->shape.raw(i).as<int64_t>();
    if (x.has_value() && *x != *s->shape.raw(i).as<int64_t>()) return false;
  }
  return true;
}

// Ops whose output has the shape of input 0 whatever the values (element-wise maps, casts,
// normalisations along an axis); a binary element-wise op whose other operand is a rank-0
// constant is one too.
const std::unordered_set<std::string>& ShapeOfInput0() {
  static const std::unordered_set<std::string> ops = {
      "Abs",     "Acos",        "Acosh",     "Asin",       "Asinh",
      "Atan",    "Atanh",       "Cast",      "CastLike",   "Ceil",
      "Celu",    "Clip",        "Cos",       "Cosh",       "CumSum",
      "CumProd", "Elu",         "Erf",       "Exp",        "Floor",
      "Gelu",    "HardSigmoid", "HardSwish", "Hardmax",    "Identity",
      "IsInf",   "IsNaN",       "LeakyRelu", "Log",        "LogSoftmax",
      "Mish",    "Neg",         "Not",       "Reciprocal", "Relu",
      "Round",   "Selu",        "Shrink",    "Sigmoid",    "Sign",
      "Sin",     "Sinh",        "Softmax",   "Softplus",   "Softsign",
      "Sqrt",    "Swish",       "Tan",       "Tanh",       "ThresholdedRelu"};
  return ops;
}
const std::unordered_set<std::string>& Broadcasting() {
  static const std::unordered_set<std::string> ops = {"Add", "Sub", "Mul", "Div",  "Pow",
                                                      "Mod", "Max", "Min", "PRelu"};
  return ops;
}

/*!
 * \brief Shapes known only downstream, carried back: a computed value whose shape inference
 * left open and that an op of ShapeOfInput0 (or a broadcasting op with a rank-0 constant
 * beside it) maps to a static value has that value's shape (the shape a reduction with a
 * run-time axes input, a Range, ... gives, known from the model's declaration of what
 * follows). Such a shape is a declaration, not a fact: the compiler checks it as it checks
 * any declared shape (a kernel that checks it when the model runs, or a refusal).
 */
std::unordered_map<std::string, Type> ShapesFromReaders(const Graph& g) {
  std::unordered_map<std::string, Type> from_readers;
  std::unordered_set<std::string> computed;
  for (const Node& n : g->nodes)
    for (const Value& v : n->outputs)
      if (!v->name.empty() && !v->is_constant()) computed.insert(Name(v));
  auto type_of = [&](const Value& v) -> Type {
    auto it = from_readers.find(Name(v));
    return it == from_readers.end() ? v->type : it->second;
  };
  for (size_t k = g->nodes.size(); k-- > 0;) {
    const Node& n = g->nodes[k];
    if (!n->domain.empty() || n->outputs.size() != 1 || n->inputs.empty()) continue;
    std::string op(n->op_type.view());
    Value in;
    if (ShapeOfInput0().count(op)) {
      in = n.input(0);
    } else if (Broadcasting().count(op) && n->inputs.size() == 2) {
      for (size_t i = 0; i < 2; ++i) {
        Value other = n.input(1 - i);
        const auto* t = other.defined() ? other->type.as<TensorTypeNode>() : nullptr;
        if (other.defined() && other->is_constant() && t != nullptr && t->rank_known &&
            t->shape.empty())
          in = n.input(i);
      }
    }
    if (!in.defined() || in->name.empty() || !computed.count(Name(in))) continue;
    Type out = type_of(n->outputs[0]);
    if (!IsStatic(out) || IsStatic(type_of(in))) continue;
    const auto* o = out.as<TensorTypeNode>();
    if (!Fits(type_of(in), o)) continue;
    const auto* t = in->type.as<TensorTypeNode>();
    from_readers[Name(in)] = TensorType(o->shape, t == nullptr ? String("") : t->dtype,
                                        t == nullptr ? String("") : t->layout,
                                        t == nullptr ? ir::QuantParams() : t->quant);
  }
  return from_readers;
}

/*! \brief `g` with the outputs named in `types` retyped (their readers see the new Values). */
Graph Retype(const Graph& g, const std::unordered_map<std::string, Type>& types) {
  ValueMap map;
  Array<Node> nodes;
  for (const Node& node0 : g->nodes) {
    Node node = SubstInputs(node0, map);
    bool changed = !node.same_as(node0);
    Array<Value> outs;
    for (const Value& v : node->outputs) {
      auto it = v->name.empty() ? types.end() : types.find(Name(v));
      if (it == types.end()) {
        outs.push_back(v);
        continue;
      }
      Value nv(v->name, it->second, v->data);
      map[Name(v)] = nv;
      outs.push_back(nv);
      changed = true;
    }
    nodes.push_back(
        changed ? Node(node->op_type, node->domain, node->name, node->attrs, node->inputs, outs)
                : node);
  }
  return Graph(g->name, g->inputs, SubstOutputs(g->outputs, map), nodes, g->opsets);
}

ir::Graph InferForward(const ir::Graph& g, const Map<String, Any>& input_shapes, bool fold);

}  // namespace

ir::Graph InferGraphTypes(const ir::Graph& g, const Map<String, Any>& input_shapes,
                          bool fold_constants) {
  Graph typed = InferForward(g, input_shapes, fold_constants);
  // shapes known only from what reads a value, then inferred forward again (a few rounds:
  // each carries shapes back past one more op whose forward inference they complete)
  for (int round = 0; round < 4; ++round) {
    auto from_readers = ShapesFromReaders(typed);
    if (from_readers.empty()) break;
    typed = InferForward(Retype(typed, from_readers), Map<String, Any>(), fold_constants);
  }
  return typed;
}

namespace {

ir::Graph InferForward(const ir::Graph& g, const Map<String, Any>& input_shapes, bool fold) {
  ValueMap map;
  Array<Value> inputs = BindInputs(g, input_shapes, &map);
  // Nodes see the graph's input Values by name (a subgraph re-typed by its op's
  // inference holds new input Values that its nodes do not point to yet).
  for (const Value& in : inputs) map.emplace(Name(in), in);
  Array<Node> nodes;
  bool changed = !map.empty();
  for (const Node& node0 : g->nodes) {
    Node node = SubstInputs(node0, map);
    if (fold && AllOutputsKnown(node)) {
      // (computed in an earlier sweep: FoldConstants drops it, as it would have before this
      // sweep ran; typed again, a reference whose dtype is not its inference's would disagree)
      changed = changed || !node.same_as(node0);
      nodes.push_back(node);
      continue;
    }
    int64_t opset = g.Opset(std::string(node->domain.view()));
    ir::GraphOpDef op = RequireOp(node, opset);
    Array<Any> results;
    if (op->infer.defined()) {
      Map<String, Any> attrs = ir::NodeAttrsForOp(node, op, opset);
      Array<Any> ins;
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        Value v = node.input(i);
        ins.push_back(v.defined() ? Any(v) : Any());
      }
      try {
        Any r = op->infer(attrs, ins);
        if (auto arr = ir::AsObject<Array<Any>>(r)) results = *arr;
      } catch (const ffi::Error& e) {
        RethrowWith(e, node.Where() + " (opset " + std::to_string(opset) + "): ");
      }
    }
    Array<Value> outs;
    bool node_changed = !node.same_as(node0);
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const Value& old = node->outputs[i];
      Type inferred;
      Any data;
      if (i < results.size()) {
        const Any& r = results.raw(i);
        if (auto v = ir::AsObject<Value>(r)) {
          inferred = (*v)->type;
          data = (*v)->data;
        } else if (auto t = ir::AsObject<Type>(r)) {
          inferred = *t;
        }
      }
      Type merged = Merge(inferred, old->type, node, i);
      if (!data.is_none()) merged = TypeOfArray(data, merged);
      bool same_type = merged.same_as(old->type) || ffi::StructuralEqual(merged, old->type);
      if (same_type && data.is_none() == old->data.is_none()) {
        outs.push_back(old);
        continue;
      }
      Value nv(old->name, merged, data.is_none() ? old->data : data);
      if (!old->name.empty()) map[Name(old)] = nv;
      outs.push_back(nv);
      node_changed = true;
    }
    if (node_changed) {
      node = Node(node->op_type, node->domain, node->name, node->attrs, node->inputs, outs);
      changed = true;
    }
    // (fold: the values of a node of constant inputs, so that what reads them is typed
    // from them in this same sweep; a reference that raises is left to FoldConstants)
    std::optional<Array<Any>> folded;
    if (fold && !AllOutputsKnown(node)) folded = FoldedOutputs(g, node, false);
    if (folded.has_value()) {
      Array<Value> known;
      for (size_t i = 0; i < node->outputs.size(); ++i) {
        const Value& v = node->outputs[i];
        if (v->name.empty() || v->is_constant()) {
          known.push_back(v);
          continue;
        }
        Value nv(v->name, TypeOfArray(folded->raw(i), v->type), folded->raw(i));
        map[Name(v)] = nv;
        known.push_back(nv);
      }
      node = Node(node->op_type, node->domain, node->name, node->attrs, node->inputs, known);
      changed = true;
    }
    nodes.push_back(node);
  }
  if (!changed) return g;
  return Graph(g->name, inputs, SubstOutputs(g->outputs, map), nodes, g->opsets);
}

}  // namespace

Pass InferTypes(Map<String, Any> input_shapes, bool fold_constants) {
  return CreateGraphPass(
      [input_shapes, fold_constants](ir::Graph g, PassContext) {
        return InferGraphTypes(g, input_shapes, fold_constants);
      },
      0, String("InferTypes"));
}

TILECORE_REGISTER_GLOBAL("transform.InferTypes")
    .set_body_typed([](ffi::AnyView input_shapes, bool fold_constants) {
      return InferTypes(
          input_shapes.is_none() ? Map<String, Any>() : input_shapes.cast<Map<String, Any>>(),
          fold_constants);
    });

}  // namespace transform
}  // namespace tilecore
