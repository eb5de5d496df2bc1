/*
 * include/tilecore/transform/eliminate_dead_code.h — EliminateDeadCode: removes the
 * nodes none of whose outputs reach a graph output.
 *
 * In/out: a Graph. Liveness runs backwards from the outputs over the topological
 * order, once; values used inside subgraph bodies count as used. Constants that no
 * node uses vanish with their last user (they live only on the values).
 * Counter: stats["transform.EliminateDeadCode.removed"].
 */
#ifndef TILECORE_TRANSFORM_ELIMINATE_DEAD_CODE_H_
#define TILECORE_TRANSFORM_ELIMINATE_DEAD_CODE_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.EliminateDeadCode`. */
Pass EliminateDeadCode();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_ELIMINATE_DEAD_CODE_H_
