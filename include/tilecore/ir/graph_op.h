/*
 * include/tilecore/ir/graph_op.h — the graph-operator registry in C++, and the
 * reference evaluator of a Graph.
 *
 * Every op type a Graph may hold is described once by a GraphOpDef: its attribute
 * schema (name -> [kind, default, required]), its input/output counts, and two FFI
 * Functions, so an op may be written in C++ or in Python:
 *
 *   infer(attrs: Map<String, Any>, inputs: Array<Value | None>) -> Array<Type | Value | None>
 *       one entry per output: its type, or a Value (type and constant data) when the
 *       output is known at compile time, or None when unknown. Raises for input the
 *       op cannot take.
 *   reference(attrs: Map<String, Any>, inputs: Array<NDArray | Array | None | object>)
 *       -> Array<Any>, one array per output (an Array of arrays for a sequence).
 *
 * `attrs` holds the node's attributes plus "_opset" (the graph's opset of the
 * node's domain) and "_num_outputs" (how many outputs the node has). A subgraph attribute reaches
 * `reference` as a Function body(*arrays) -> Array and `infer` as the Graph itself.
 *
 * The Python op library (tilecore.ir.ops) mirrors every `register_op` here, and an
 * out-of-tree library registers its ops from a static initialiser (see
 * examples/custom_op). Registering a (domain, name) twice is an error unless
 * `override` is set.
 */
#ifndef TILECORE_IR_GRAPH_OP_H_
#define TILECORE_IR_GRAPH_OP_H_

#include <optional>
#include <string>

#include "tilecore/ffi/function.h"
#include "tilecore/ir/graph.h"

namespace tilecore {
namespace ir {

using ffi::Function;

class GraphOpDefNode : public Object {
 public:
  String name;
  /*! \brief "" for ai.onnx ("ai.onnx" is normalised to ""). */
  String domain;
  /*! \brief attribute name -> [kind, default, required]; kind as in tilecore.ir.ops.ATTR_KINDS. */
  Map<String, Any> attrs;
  int64_t min_inputs{0};
  /*! \brief -1 for variadic. */
  int64_t max_inputs{-1};
  int64_t min_outputs{1};
  int64_t max_outputs{1};
  int64_t since_version{1};
  Function infer;
  Function reference;
  String doc;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.GraphOpDef", GraphOpDefNode, Object);
};
class GraphOpDef : public ObjectRef {
 public:
  GraphOpDef(String name, String domain, Map<String, Any> attrs, int64_t min_inputs,
             int64_t max_inputs, int64_t min_outputs, int64_t max_outputs, int64_t since_version,
             Function infer, Function reference, String doc = String(""));
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(GraphOpDef, ObjectRef, GraphOpDefNode);
};

/*! \brief Adds `def` to the registry; ValueError if (domain, name) exists and not `override`. */
void RegisterGraphOp(GraphOpDef def, bool override = false);
/*! \brief The op, or an undefined GraphOpDef. */
GraphOpDef GetGraphOp(const std::string& name, const std::string& domain = "");
/*! \brief Every op (of one domain when `domain` is given), sorted by (domain, name). */
Array<GraphOpDef> ListGraphOps(std::optional<std::string> domain = std::nullopt);

/*! \brief `node`'s attributes with the schema's defaults filled in, "_opset" and "_num_outputs"
 * set. */
Map<String, Any> NodeAttrsForOp(const Node& node, const GraphOpDef& op, int64_t opset);

/*!
 * \brief Runs `graph` op by op with the registered reference implementations.
 * \param feed graph input name -> array (NDArray, or an opaque host object).
 * \param keep_intermediates also return every value computed on the way.
 * \return name -> array for the graph outputs (and intermediates).
 * Errors name the node (ONNX name and op type) whose reference failed, or the
 * missing input.
 */
Map<String, Any> EvaluateGraph(const Graph& graph, const Map<String, Any>& feed,
                               bool keep_intermediates = false);

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_GRAPH_OP_H_
