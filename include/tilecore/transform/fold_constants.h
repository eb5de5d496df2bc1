/*
 * include/tilecore/transform/fold_constants.h — FoldConstants: a node whose inputs
 * are all constants is run once with its reference implementation and replaced by
 * the constants it computes. An input the op reads only for its static type (CastLike's
 * target, EyeLike's input) need not be constant.
 *
 * In:  a Graph (typed or not). Out: the same graph without those nodes; their
 *      outputs become constant Values of the same names. A node whose outputs
 *      InferTypes already knows (Shape of a static tensor) is dropped the same way.
 * This folds the Shape -> Gather -> Unsqueeze -> Concat -> Reshape arithmetic that
 * exporters emit for static shapes, and weight preprocessing (Transpose, Cast of
 * initializers). Random ops, nodes with subgraphs and outputs that are not plain
 * tensors (sequences, strings) are left alone.
 * Counter: stats["transform.FoldConstants.folded"] (nodes removed).
 */
#ifndef TILECORE_TRANSFORM_FOLD_CONSTANTS_H_
#define TILECORE_TRANSFORM_FOLD_CONSTANTS_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.FoldConstants`. */
Pass FoldConstants();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_FOLD_CONSTANTS_H_
