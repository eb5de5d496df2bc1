/*
 * include/tilecore/ir/graph.h — the Graph IR: typed values and the operator nodes
 * that connect them, as imported from ONNX and rewritten by the graph passes.
 *
 *   Graph  = name, inputs (Values), outputs (Values), nodes (topological order), opsets
 *   Node   = op_type, domain, name (the ONNX node name, kept as the location), attrs,
 *            inputs (Value or None for an omitted optional input), outputs (Values)
 *   Value  = name, type (TensorType | SequenceType | OptionalType | None = unknown),
 *            data (the constant, or None)
 *
 * A Value has no pointer to the node that produces it: nodes refer to values, never
 * the other way, so the object graph is as deep as the nesting of subgraphs and
 * printing, JSON save/load and structural equality never recurse along a chain of
 * nodes (a graph of 20,000 chained nodes is as shallow as one of two).
 *
 * TensorType::shape holds an int per static dimension, a String per symbolic one
 * ("batch") and None per unknown one; an undefined shape means the rank is unknown.
 * TensorType::dtype is the numpy spelling ("float32", "int64", "bool", "bfloat16",
 * "float8_e4m3fn", "string", ...): the graph carries types the Kernel IR's DataType
 * cannot spell. Attribute values are int, float, String, Array of them, NDArray
 * (a tensor attribute) and Graph (a subgraph: If/Loop/Scan bodies); a subgraph may
 * use values of the graphs that enclose it by name.
 *
 * Values are compared by their fields (name, type, data), so two graphs are equal
 * when they have the same names, types, constants, nodes and attributes.
 */
#ifndef TILECORE_IR_GRAPH_H_
#define TILECORE_IR_GRAPH_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ir/type.h"

namespace tilecore {
namespace ir {

using ffi::Any;
using ffi::Array;
using ffi::Map;
using ffi::NDArray;

/*! \brief `v` as object kind T, or nullopt when it is None or another kind. */
template <typename T>
std::optional<T> AsObject(const ffi::AnyView& v) {
  if (v.is_none()) return std::nullopt;
  std::optional<T> r = v.as<T>();
  if (r.has_value() && !r->defined()) return std::nullopt;
  return r;
}

/*! \brief Quantisation parameters of a tensor: real = (q - zero_point) * scale. */
class QuantParamsNode : public Object {
 public:
  NDArray scale;
  NDArray zero_point;
  /*! \brief The per-channel axis, or -1 for per-tensor parameters. */
  int64_t axis{-1};
  /*! \brief The quantised storage dtype ("int8", "uint8", ...). */
  String dtype;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.QuantParams", QuantParamsNode, Object);
};
class QuantParams : public ObjectRef {
 public:
  QuantParams(NDArray scale, NDArray zero_point, int64_t axis, String dtype);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(QuantParams, ObjectRef, QuantParamsNode);
};

/*! \brief A tensor: shape (int | String | None per dim; undefined = unknown rank), dtype, layout.
 */
class TensorTypeNode : public TypeNode {
 public:
  Array<Any> shape;
  bool rank_known{true};
  String dtype;
  /*! \brief "" (the ONNX order, e.g. NCHW) or a layout chosen by a later stage ("NHWC"). */
  String layout;
  QuantParams quant;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.TensorType", TensorTypeNode, TypeNode);
};
class TensorType : public Type {
 public:
  TensorType(Array<Any> shape, String dtype, String layout = String(""),
             QuantParams quant = QuantParams(), bool rank_known = true);
  /*! \brief The static shape, or false when a dimension is symbolic or unknown. */
  bool StaticShape(std::vector<int64_t>* out) const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(TensorType, Type, TensorTypeNode);
};

/*! \brief ONNX seq(elem); `elem` is undefined when the element type is unknown. */
class SequenceTypeNode : public TypeNode {
 public:
  Type elem;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.SequenceType", SequenceTypeNode, TypeNode);
};
class SequenceType : public Type {
 public:
  explicit SequenceType(Type elem);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(SequenceType, Type, SequenceTypeNode);
};

/*! \brief ONNX optional(elem). */
class OptionalTypeNode : public TypeNode {
 public:
  Type elem;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.OptionalType", OptionalTypeNode, TypeNode);
};
class OptionalType : public Type {
 public:
  explicit OptionalType(Type elem);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(OptionalType, Type, OptionalTypeNode);
};

/*! \brief A named value of the graph; `data` holds it when it is a constant. */
class ValueNode : public Object {
 public:
  String name;
  Type type;
  /*! \brief NDArray for a constant tensor (or, for a dtype DLPack cannot carry, an opaque host
   * object). */
  Any data;
  bool is_constant() const { return !data.is_none(); }
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Value", ValueNode, Object);
};
class Value : public ObjectRef {
 public:
  Value(String name, Type type, Any data = Any());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Value, ObjectRef, ValueNode);
};

/*! \brief One operator application (named NodeObj: `Node` is the reference type). */
class NodeObj : public Object {
 public:
  String op_type;
  /*! \brief "" for ai.onnx; "ai.onnx.ml", "com.microsoft" or a custom domain. */
  String domain;
  /*! \brief The ONNX node name: the location shown in errors and kept for debug info. */
  String name;
  Map<String, Any> attrs;
  /*! \brief A Value, or None for an omitted optional input. */
  Array<Any> inputs;
  Array<Value> outputs;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Node", NodeObj, Object);
};
class Node : public ObjectRef {
 public:
  Node(String op_type, String domain, String name, Map<String, Any> attrs, Array<Any> inputs,
       Array<Value> outputs);
  /*! \brief Input i as a Value, or an undefined Value when omitted or out of range. */
  Value input(size_t i) const;
  /*! \brief "`name` (Domain::OpType)" for messages. */
  std::string Where() const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Node, ObjectRef, NodeObj);
};

class GraphNode : public Object {
 public:
  String name;
  Array<Value> inputs;
  Array<Value> outputs;
  /*! \brief In topological order: a node's inputs are graph inputs, constants, outputs of
   * earlier nodes or values of an enclosing graph. */
  Array<Node> nodes;
  /*! \brief Domain ("" = ai.onnx) -> opset version. */
  Map<String, int64_t> opsets;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Graph", GraphNode, Object);
};
class Graph : public ObjectRef {
 public:
  Graph(String name, Array<Value> inputs, Array<Value> outputs, Array<Node> nodes,
        Map<String, int64_t> opsets = Map<String, int64_t>());
  /*! \brief A copy with `nodes` and `outputs` replaced (passes use this). */
  Graph WithBody(Array<Node> nodes, Array<Value> outputs) const;
  int64_t Opset(const std::string& domain) const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Graph, ObjectRef, GraphNode);
};

/*! \brief Builds a Graph node by node; every value gets a unique name. */
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "main",
                        Map<String, int64_t> opsets = Map<String, int64_t>());
  Value Input(const std::string& name, Type type);
  Value Constant(const std::string& name, NDArray data);
  /*! \brief Adds a node with `num_outputs` outputs named `<name>_out<i>` (or `name` for one). */
  Array<Value> Add(const std::string& op_type, Array<Any> inputs,
                   Map<String, Any> attrs = Map<String, Any>(), int num_outputs = 1,
                   std::string name = "", std::string domain = "");
  void Output(Value v) { outputs_.push_back(v); }
  Graph Build() const;
  /*! \brief A name not used yet, from `hint`. */
  std::string FreshName(const std::string& hint);

 private:
  std::string name_;
  Map<String, int64_t> opsets_;
  Array<Value> inputs_;
  Array<Value> outputs_;
  Array<Node> nodes_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> counters_;
};

/*! \brief The graph as text: one line per node,
 *   %y: f32[1,64,112,112] = Conv(%x, %w) {strides=[2,2]} @ "conv1"
 * Iterative over nodes (subgraphs indent by one level), so any length prints. */
std::string GraphToText(const Graph& g);
/*! \brief "f32[1,3,N,?]", "seq(f32[?])", "?" for an undefined type. */
std::string TypeToText(const Type& t);
/*! \brief Short dtype spelling used by the printer: f32, i64, bool, bf16, str, ... */
std::string ShortDtype(const std::string& dtype);
/*! \brief The numpy dtype spelling of an NDArray's DLDataType ("float32", "bool", ...). */
std::string DtypeOfNDArray(const NDArray& a);

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_GRAPH_H_
