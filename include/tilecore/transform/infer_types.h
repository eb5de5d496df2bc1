/*
 * include/tilecore/transform/infer_types.h — InferTypes: the type (shape, dtype) of
 * every value of a Graph, from each op's registered `infer`.
 *
 * In:  a Graph whose inputs are typed (shapes may hold symbols such as "batch").
 * Out: the same nodes; every output Value carries the inferred type, and the data
 *      an op's infer computed when the output is known at compile time (Shape of a
 *      static tensor, ...), which FoldConstants then uses.
 * `input_shapes` (input name -> shape) binds symbolic dimensions first: the symbol
 * takes the given size wherever it appears in the graph's inputs.
 * A type the model declares is checked against the inferred one: a rank, dimension
 * or dtype that disagrees is a ValueError naming the node and both types. An op
 * that is not registered is a NotImplementedError naming the op type, the node,
 * the opset and the domain.
 * A computed value whose shape inference leaves open takes the static shape of what an
 * element-wise reader maps it to (Sqrt, Cast, ..., or Add of a rank-0 constant): a shape
 * the model declares downstream carried back to, say, a reduction whose axes are a graph
 * input. Like any declared shape, the compiler checks it (a kernel that checks it when
 * the model runs, or a refusal); inference merely carries it.
 * Subgraph bodies keep the types they were imported with.
 * `fold_constants`: the outputs of a node whose inputs are constants (FoldConstants' rule)
 * are computed too, in the same sweep, so that the nodes after it are typed from their values
 * at once (a chain of shapes computed from shapes needs one sweep, not one a link); the node
 * stays for FoldConstants to drop. A reference that raises leaves the node to FoldConstants,
 * which names it.
 */
#ifndef TILECORE_TRANSFORM_INFER_TYPES_H_
#define TILECORE_TRANSFORM_INFER_TYPES_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.InferTypes`. */
Pass InferTypes(Map<String, Any> input_shapes = Map<String, Any>(), bool fold_constants = false);
/*! \brief The rewrite itself, for callers that hold a Graph. */
ir::Graph InferGraphTypes(const ir::Graph& g,
                          const Map<String, Any>& input_shapes = Map<String, Any>(),
                          bool fold_constants = false);

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_INFER_TYPES_H_
