/*
 * include/tilecore/transform/canonicalize_graph.h — CanonicalizeGraph: the graph
 * passes in the order the model compiler runs them after import.
 *
 *   EliminateCommonSubexpr, FoldConstants, FoldBatchNorm, GemmToMatMul,
 *   FoldChannelScale, RecognizeActivations, RecognizeNormalization, EliminateDeadCode,
 *   InferTypes
 *
 * In: an imported Graph (typed, constants folded). Out: the canonical graph the
 * lowering expects: no BatchNormalization after Conv/Gemm, no Gemm, no constant
 * per-channel Mul after a Conv's or MatMul's output, activations and
 * normalisations as single nodes, every value typed. Each pass's counters land in
 * the PassContext's stats.
 */
#ifndef TILECORE_TRANSFORM_CANONICALIZE_GRAPH_H_
#define TILECORE_TRANSFORM_CANONICALIZE_GRAPH_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The Sequential `transform.CanonicalizeGraph`. */
Pass CanonicalizeGraph();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_CANONICALIZE_GRAPH_H_
