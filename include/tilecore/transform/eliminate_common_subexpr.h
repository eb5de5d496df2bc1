/*
 * include/tilecore/transform/eliminate_common_subexpr.h — EliminateCommonSubexpr:
 * a node with the same op, attributes and inputs as an earlier one is dropped and
 * its outputs replaced by the earlier node's.
 *
 * In/out: a Graph. One forward sweep with a hash of (op, domain, inputs, attributes);
 * candidates are confirmed with structural equality of the attributes. Random ops,
 * nodes with subgraphs, and nodes whose outputs are graph outputs or are used inside
 * a subgraph (by name) are kept. Exporters duplicate shape arithmetic per use;
 * merging it first makes FoldConstants and the pattern rewrites see one copy.
 * Counter: stats["transform.EliminateCommonSubexpr.merged"].
 */
#ifndef TILECORE_TRANSFORM_ELIMINATE_COMMON_SUBEXPR_H_
#define TILECORE_TRANSFORM_ELIMINATE_COMMON_SUBEXPR_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.EliminateCommonSubexpr`. */
Pass EliminateCommonSubexpr();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_ELIMINATE_COMMON_SUBEXPR_H_
