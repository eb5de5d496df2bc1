/*
 * src/ir/graph.cc — constructors and reflection of the Graph IR (graph.h), the C++
 * GraphBuilder, and the `ir.<Kind>` constructors for Python.
 */
#include "tilecore/ir/graph.h"

#include <unordered_set>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace ir {

using ffi::make_object;

QuantParams::QuantParams(NDArray scale, NDArray zero_point, int64_t axis, String dtype) {
  auto n = make_object<QuantParamsNode>();
  n->scale = std::move(scale);
  n->zero_point = std::move(zero_point);
  n->axis = axis;
  n->dtype = std::move(dtype);
  data_ = std::move(n);
}

TensorType::TensorType(Array<Any> shape, String dtype, String layout, QuantParams quant,
                       bool rank_known) {
  for (size_t i = 0; i < shape.size(); ++i) {
    const Any& d = shape.raw(i);
    bool ok = d.is_none() || d.as<int64_t>().has_value() || d.try_cast<String>().has_value();
    if (!ok) {
      TILECORE_THROW(TypeError) << "TensorType: dimension " << i
                                << " must be an int, a symbol (str) or None, got `"
                                << d.GetTypeKey() << "`";
    }
    if (auto v = d.as<int64_t>(); v.has_value() && *v < 0) {
      TILECORE_THROW(ValueError) << "TensorType: dimension " << i << " is negative (" << *v << ")";
    }
  }
  auto n = make_object<TensorTypeNode>();
  n->shape = std::move(shape);
  n->rank_known = rank_known;
  n->dtype = std::move(dtype);
  n->layout = std::move(layout);
  n->quant = std::move(quant);
  data_ = std::move(n);
}

bool TensorType::StaticShape(std::vector<int64_t>* out) const {
  if (!get()->rank_known) return false;
  out->clear();
  for (size_t i = 0; i < get()->shape.size(); ++i) {
    auto v = get()->shape.raw(i).as<int64_t>();
    if (!v.has_value()) return false;
    out->push_back(*v);
  }
  return true;
}

SequenceType::SequenceType(Type elem) {
  auto n = make_object<SequenceTypeNode>();
  n->elem = std::move(elem);
  data_ = std::move(n);
}

OptionalType::OptionalType(Type elem) {
  auto n = make_object<OptionalTypeNode>();
  n->elem = std::move(elem);
  data_ = std::move(n);
}

Value::Value(String name, Type type, Any data) {
  auto n = make_object<ValueNode>();
  n->name = std::move(name);
  n->type = std::move(type);
  n->data = std::move(data);
  data_ = std::move(n);
}

Node::Node(String op_type, String domain, String name, Map<String, Any> attrs, Array<Any> inputs,
           Array<Value> outputs) {
  if (op_type.empty()) TILECORE_THROW(ValueError) << "Node `" << name.view() << "`: empty op_type";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Any& v = inputs.raw(i);
    if (!v.is_none() && !AsObject<Value>(v).has_value()) {
      TILECORE_THROW(TypeError) << "Node `" << name.view() << "` (" << op_type.view() << "): input "
                                << i << " must be a Value or None, got `" << v.GetTypeKey() << "`";
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      TILECORE_THROW(ValueError) << "Node `" << name.view() << "` (" << op_type.view()
                                 << "): output " << i << " is undefined";
    }
  }
  auto n = make_object<NodeObj>();
  n->op_type = std::move(op_type);
  n->domain = std::move(domain);
  n->name = std::move(name);
  n->attrs = std::move(attrs);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  data_ = std::move(n);
}

Value Node::input(size_t i) const {
  if (i >= get()->inputs.size()) return Value();
  auto v = AsObject<Value>(get()->inputs.raw(i));
  return v.has_value() ? *v : Value();
}

std::string Node::Where() const {
  std::string s = "node `" + std::string(get()->name.view()) + "` (";
  if (!get()->domain.empty()) s += std::string(get()->domain.view()) + "::";
  return s + std::string(get()->op_type.view()) + ")";
}

Graph::Graph(String name, Array<Value> inputs, Array<Value> outputs, Array<Node> nodes,
             Map<String, int64_t> opsets) {
  auto n = make_object<GraphNode>();
  n->name = std::move(name);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->nodes = std::move(nodes);
  n->opsets = std::move(opsets);
  data_ = std::move(n);
}

Graph Graph::WithBody(Array<Node> nodes, Array<Value> outputs) const {
  return Graph(get()->name, get()->inputs, std::move(outputs), std::move(nodes), get()->opsets);
}

int64_t Graph::Opset(const std::string& domain) const {
  auto v = get()->opsets.Get(String(domain));
  if (!v.has_value() && domain.empty()) v = get()->opsets.Get(String("ai.onnx"));
  return v.has_value() ? *v : 0;
}

std::string DtypeOfNDArray(const NDArray& a) {
  DLDataType t = a.dtype();
  if (t.code == kDLBool) return "bool";
  if (t.code == kDLBfloat && t.bits == 16) return "bfloat16";
  return ffi::DLDataTypeToString(t);
}

// ---------------------------------------------------------------------------
// GraphBuilder
// ---------------------------------------------------------------------------
GraphBuilder::GraphBuilder(std::string name, Map<String, int64_t> opsets)
    : name_(std::move(name)), opsets_(std::move(opsets)) {}

std::string GraphBuilder::FreshName(const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  std::string name = base;
  while (used_.count(name)) name = base + "_" + std::to_string(++counters_[base]);
  used_.insert(name);
  return name;
}

Value GraphBuilder::Input(const std::string& name, Type type) {
  Value v(String(FreshName(name)), std::move(type));
  inputs_.push_back(v);
  return v;
}

Value GraphBuilder::Constant(const std::string& name, NDArray data) {
  std::vector<int64_t> shape = data.shape();
  Array<Any> dims;
  for (int64_t d : shape) dims.push_back(Any(d));
  return Value(String(FreshName(name)), TensorType(dims, String(DtypeOfNDArray(data))), Any(data));
}

Array<Value> GraphBuilder::Add(const std::string& op_type, Array<Any> inputs,
                               Map<String, Any> attrs, int num_outputs, std::string name,
                               std::string domain) {
  std::string node_name = FreshName(name.empty() ? op_type : name);
  Array<Value> outs;
  for (int i = 0; i < num_outputs; ++i) {
    outs.push_back(
        Value(String(FreshName(num_outputs == 1 ? node_name + "_out"
                                                : node_name + "_out" + std::to_string(i))),
              Type()));
  }
  nodes_.push_back(Node(String(op_type), String(domain), String(node_name), attrs, inputs, outs));
  return outs;
}

Graph GraphBuilder::Build() const {
  return Graph(String(name_), inputs_, outputs_, nodes_, opsets_);
}

// ---------------------------------------------------------------------------
// Reflection and registration
// ---------------------------------------------------------------------------
TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<QuantParamsNode>()
      .def_ro("scale", &QuantParamsNode::scale)
      .def_ro("zero_point", &QuantParamsNode::zero_point)
      .def_ro("axis", &QuantParamsNode::axis, "per-channel axis, -1 per tensor")
      .def_ro("dtype", &QuantParamsNode::dtype, "quantised storage dtype");
  refl::ObjectDef<TensorTypeNode>()
      .def_ro("shape", &TensorTypeNode::shape, "int | str (symbol) | None (unknown) per dimension")
      .def_ro("rank_known", &TensorTypeNode::rank_known, "false when not even the rank is known")
      .def_ro("dtype", &TensorTypeNode::dtype, "numpy spelling")
      .def_ro("layout", &TensorTypeNode::layout)
      .def_ro("quant", &TensorTypeNode::quant, "QuantParams or None", kTCFFIFieldMayBeNone);
  refl::ObjectDef<SequenceTypeNode>().def_ro("elem", &SequenceTypeNode::elem, "",
                                             kTCFFIFieldMayBeNone);
  refl::ObjectDef<OptionalTypeNode>().def_ro("elem", &OptionalTypeNode::elem, "",
                                             kTCFFIFieldMayBeNone);
  refl::ObjectDef<ValueNode>()
      .def_ro("name", &ValueNode::name)
      .def_ro("type", &ValueNode::type, "TensorType | SequenceType | OptionalType | None (unknown)",
              kTCFFIFieldMayBeNone)
      .def_ro("data", &ValueNode::data, "the constant, or None");
  refl::ObjectDef<NodeObj>()
      .def_ro("op_type", &NodeObj::op_type)
      .def_ro("domain", &NodeObj::domain, "\"\" for ai.onnx")
      .def_ro("name", &NodeObj::name, "the ONNX node name (location)")
      .def_ro("attrs", &NodeObj::attrs)
      .def_ro("inputs", &NodeObj::inputs, "Value or None per input")
      .def_ro("outputs", &NodeObj::outputs);
  refl::ObjectDef<GraphNode>()
      .def_ro("name", &GraphNode::name)
      .def_ro("inputs", &GraphNode::inputs)
      .def_ro("outputs", &GraphNode::outputs)
      .def_ro("nodes", &GraphNode::nodes, "topological order")
      .def_ro("opsets", &GraphNode::opsets, "domain -> version");
});

namespace {
Array<Any> ShapeArg(const ffi::AnyView& shape, bool* rank_known) {
  *rank_known = !shape.is_none();
  if (shape.is_none()) return Array<Any>();
  return shape.cast<Array<Any>>();
}
}  // namespace

TILECORE_REGISTER_GLOBAL("ir.QuantParams")
    .set_body_typed([](NDArray scale, NDArray zero_point, int64_t axis, String dtype) {
      return QuantParams(scale, zero_point, axis, dtype);
    });
TILECORE_REGISTER_GLOBAL("ir.TensorType")
    .set_body_typed([](ffi::AnyView shape, String dtype, ffi::AnyView layout, ffi::AnyView quant) {
      bool rank_known = true;
      Array<Any> dims = ShapeArg(shape, &rank_known);
      return TensorType(dims, dtype, layout.is_none() ? String("") : layout.cast<String>(),
                        quant.is_none() ? QuantParams() : quant.cast<QuantParams>(), rank_known);
    });
TILECORE_REGISTER_GLOBAL("ir.SequenceType").set_body_typed([](ffi::AnyView elem) {
  return SequenceType(elem.is_none() ? Type() : elem.cast<Type>());
});
TILECORE_REGISTER_GLOBAL("ir.OptionalType").set_body_typed([](ffi::AnyView elem) {
  return OptionalType(elem.is_none() ? Type() : elem.cast<Type>());
});
TILECORE_REGISTER_GLOBAL("ir.Value")
    .set_body_typed([](String name, ffi::AnyView type, ffi::AnyView data) {
      return Value(name, type.is_none() ? Type() : type.cast<Type>(), Any(data));
    });
TILECORE_REGISTER_GLOBAL("ir.Node").set_body_typed([](String op_type, String domain, String name,
                                                      ffi::AnyView attrs, Array<Any> inputs,
                                                      Array<Value> outputs) {
  return Node(op_type, domain, name,
              attrs.is_none() ? Map<String, Any>() : attrs.cast<Map<String, Any>>(), inputs,
              outputs);
});
TILECORE_REGISTER_GLOBAL("ir.Graph")
    .set_body_typed([](String name, Array<Value> inputs, Array<Value> outputs, Array<Node> nodes,
                       ffi::AnyView opsets) {
      return Graph(name, inputs, outputs, nodes,
                   opsets.is_none() ? Map<String, int64_t>() : opsets.cast<Map<String, int64_t>>());
    });
TILECORE_REGISTER_GLOBAL("ir.GraphToText").set_body_typed([](Graph g) { return GraphToText(g); });
TILECORE_REGISTER_GLOBAL("ir.TypeToText").set_body_typed([](ffi::AnyView t) {
  return TypeToText(t.is_none() ? Type() : t.cast<Type>());
});

}  // namespace ir
}  // namespace tilecore
