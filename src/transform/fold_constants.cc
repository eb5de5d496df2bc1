/*
 * src/transform/fold_constants.cc — FoldConstants (fold_constants.h).
 */
#include "tilecore/transform/fold_constants.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

/*!
 * \brief The static shape and dtype of input `i` when the op reads it only for them (its
 * type, not its values: CastLike's target, EyeLike's input), so that it does not keep the
 * node from folding; false otherwise.
 */
bool TypeOnlyInput(const Node& node, size_t i, std::vector<int64_t>* shape, DLDataType* dtype) {
  std::string op(node->op_type.view());
  if (!node->domain.empty() || !((op == "CastLike" && i == 1) || (op == "EyeLike" && i == 0)))
    return false;
  const auto* t = node.input(i)->type.as<ir::TensorTypeNode>();
  if (t == nullptr || !t->rank_known || t->dtype.empty()) return false;
  shape->clear();
  for (size_t d = 0; d < t->shape.size(); ++d) {
    auto v = t->shape.raw(d).as<int64_t>();
    if (!v.has_value()) return false;
    shape->push_back(*v);
  }
  try {
    *dtype = ffi::StringToDLDataType(std::string(t->dtype.view()));
  } catch (const ffi::Error&) {
    return false;
  }
  return true;
}

bool AllInputsConstant(const Node& node) {
  std::vector<int64_t> shape;
  DLDataType dtype;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    Value v = node.input(i);
    if (v.defined() && !v->name.empty() && !v->is_constant() &&
        !TypeOnlyInput(node, i, &shape, &dtype))
      return false;
  }
  return true;
}

}  // namespace

namespace graph_internal {

bool AllOutputsKnown(const Node& node) {
  for (const Value& v : node->outputs) {
    if (!v->name.empty() && !v->is_constant()) return false;
  }
  return !node->outputs.empty();
}

std::optional<Array<Any>> FoldedOutputs(const Graph& g, const Node& node, bool raise) {
  if (!AllInputsConstant(node) || HasSubgraph(node) || IsNondeterministic(node))
    return std::nullopt;
  int64_t opset = g.Opset(std::string(node->domain.view()));
  ir::GraphOpDef op =
      ir::GetGraphOp(std::string(node->op_type.view()), std::string(node->domain.view()));
  if (!op.defined() || !op->reference.defined()) return std::nullopt;
  Array<Any> args;
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    Value v = node.input(i);
    std::vector<int64_t> shape;
    DLDataType dtype;
    if (v.defined() && !v->name.empty() && !v->is_constant() &&
        TypeOnlyInput(node, i, &shape, &dtype)) {  // values never read: an empty stand-in
      args.push_back(ffi::NDArray::Empty(shape, dtype, DLDevice{kDLCPU, 0}));
      continue;
    }
    args.push_back(v.defined() && !v->name.empty() ? v->data : Any());
  }
  Any result;
  try {
    result = op->reference(ir::NodeAttrsForOp(node, op, opset), args);
  } catch (const ffi::Error& e) {
    // (an interrupt or exhausted memory is not the node's fault: raised either way)
    const std::string kind(e.kind());
    if (!raise && kind != "KeyboardInterrupt" && kind != "MemoryError" && kind != "SystemExit")
      return std::nullopt;
    RethrowWith(e, "FoldConstants: " + node.Where() + " (opset " + std::to_string(opset) + "): ");
  }
  auto outs = ir::AsObject<Array<Any>>(result);
  if (!outs.has_value() || outs->size() < node->outputs.size()) return std::nullopt;
  for (size_t i = 0; i < node->outputs.size(); ++i) {
    if (!ir::AsObject<ffi::NDArray>(outs->raw(i)).has_value()) return std::nullopt;
  }
  return *outs;
}

}  // namespace graph_internal

namespace {

Graph Fold(const Graph& g, PassContext ctx) {
  ValueMap map;
  Array<Node> nodes;
  int64_t folded = 0;
  for (const Node& node0 : g->nodes) {
    Node node = SubstInputs(node0, map);
    if (AllOutputsKnown(node)) {
      for (const Value& v : node->outputs) map[Name(v)] = v;
      ++folded;
      continue;
    }
    std::optional<Array<Any>> outs = FoldedOutputs(g, node, true);
    if (!outs.has_value()) {
      nodes.push_back(node);
      continue;
    }
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const Value& old = node->outputs[i];
      if (old->name.empty()) continue;
      map[Name(old)] = Value(old->name, TypeOfArray(outs->raw(i), old->type), outs->raw(i));
    }
    ++folded;
  }
  if (folded == 0) return g;
  ctx->AddStat("transform.FoldConstants.folded", folded);
  return g.WithBody(nodes, SubstOutputs(g->outputs, map));
}

}  // namespace

Pass FoldConstants() { return CreateGraphPass(Fold, 0, String("FoldConstants")); }

TILECORE_REGISTER_GLOBAL("transform.FoldConstants").set_body_typed([]() {
  return FoldConstants();
});

}  // namespace transform
}  // namespace tilecore
