/*
 * include/tilecore/compiler/memory_plan.h — the DDR memory plan of a compiled model:
 * offsets for buffers with live ranges, bytes shared between buffers that are never
 * alive at the same time.
 *
 * In:  per buffer its size in bytes and its live range [first, last] in step indices
 *      (inclusive; inputs start before step 0, at -1; outputs and constants end after
 *      the last step, at n_steps). A buffer of size 0 gets offset 0 and no bytes.
 * Out: per buffer an offset, a multiple of `alignment`, and the arena size (the end of
 *      the highest buffer, rounded up to `alignment`). Two buffers whose live ranges
 *      meet never share a byte.
 *
 * The algorithm is greedy by size (the "greedy by size" offset assignment of TFLite's
 * arena planner): buffers from the largest down, each at the lowest offset where it
 * overlaps no placed buffer whose live range meets its own. O(n^2) in the buffer count
 * (a ResNet-50, ~500 buffers with its weights, plans in well under a millisecond).
 * It is optimal for chains and close to the lower bound (the largest sum of live bytes
 * at one step) on CNNs; PlanStats reports both so a caller can judge.
 */
#ifndef TILECORE_COMPILER_MEMORY_PLAN_H_
#define TILECORE_COMPILER_MEMORY_PLAN_H_

#include <cstdint>
#include <vector>

namespace tilecore {
namespace compiler {

struct BufferLife {
  /*! \brief Bytes (>= 0). */
  int64_t size = 0;
  /*! \brief First and last step that uses it, inclusive (first <= last). */
  int64_t first = 0;
  int64_t last = 0;
};

struct MemoryPlan {
  /*! \brief One offset per buffer, in the order given. */
  std::vector<int64_t> offsets;
  /*! \brief Bytes of the arena: max(offset + size) rounded up to the alignment. */
  int64_t arena_size = 0;
  /*! \brief Sum of the aligned sizes (what a plan without reuse needs). */
  int64_t total_size = 0;
  /*! \brief The largest sum of aligned sizes alive at one step: no plan needs less. */
  int64_t lower_bound = 0;
};

/*! \brief Plans the buffers; ValueError on a negative size, first > last or an
 * alignment that is not a positive power of two. */
MemoryPlan PlanMemory(const std::vector<BufferLife>& buffers, int64_t alignment = 64);

}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_COMPILER_MEMORY_PLAN_H_
