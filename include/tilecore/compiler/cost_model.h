/*
 * include/tilecore/compiler/cost_model.h — the compiler's estimate of a kernel's
 * cycles on TC1, priced with the simulator's own per-command formulas (arch/cost.h).
 *
 * EstimateKernel walks a kernel after the default kernel pipeline (tc1.dma_in/out,
 * tile.mm, tile.vec_*, tc1.wait), core by core, with its loops executed and its
 * scalar DMA counters evaluated, so it knows every command each core issues. Each
 * command costs what arch::cost charges for it (DMA beats and latency, matrix blocks,
 * vector elements, bank conflicts at the planned L1 addresses). A schedule then
 * places the commands on the engines of all cores together: engines run in parallel,
 * a command starts when its engine is free, its queue's waits are met and the front
 * end has issued it (queue depth 32); DMAs share the DDR (64 B/cycle) and the L2
 * (256 B/cycle) of the cluster as the simulator's fluid bandwidth model does; the
 * front end pays an estimate of its scalar instructions (loops, counters, address
 * arithmetic) and blocks on tc1.wait and on barriers (which the codegen precedes with a
 * fence: every queue of the core drains first). What is not modelled: the exact
 * scalar instruction count (estimated per statement) and the order in which cores
 * reach the shared levels (taken in front-end time order).
 *
 * The codegen's fence and barrier around every cores loop are modelled; a layer group's
 * kernel has a cores loop per member, tagged with its index, and the estimate times each
 * member (`members`: start, cycles, MACs, DDR occupancy, what bounds it).
 *
 * The FFI function `compiler.EstimateKernelCost(func, target)` lowers a strategy's
 * PrimFunc with the kernel pipeline and returns the estimate as a map.
 */
#ifndef TILECORE_COMPILER_COST_MODEL_H_
#define TILECORE_COMPILER_COST_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/ir/function.h"

namespace tilecore {
namespace compiler {

/*! \brief One layer-group member's share of a kernel's estimate: from the first core
 * entering its cores loop to the barrier after it. */
struct MemberCost {
  int64_t start = 0, end = 0;  // its first run's start, its last run's end
  int64_t cycles = 0;          // the sum of its runs' spans (a member runs once per slice)
  int64_t runs = 0;
  std::array<int64_t, 4> busy{};  // busy cycles of each engine, summed over cores
  int64_t ddr_cycles = 0;         // its DDR occupancy, summed over cores
  uint64_t macs = 0;
  /*! \brief The engine with the most busy cycles per core (of `cores`), or "ddr" when the
   * shared DDR was busier than that. */
  std::string BoundBy(int cores) const;
};

/*! \brief The estimate for one kernel. Engines are indexed as arch::Engine (din, dout, mm, vec). */
struct KernelCost {
  int64_t cycles = 0;                               // the kernel's makespan over all cores
  std::vector<std::array<int64_t, 4>> engine_busy;  // per core, busy cycles of each engine
  std::vector<int64_t> front_end;                   // per core, front-end cycles (issue + scalar)
  int64_t ddr_cycles = 0;                           // DDR occupancy summed over cores
  int64_t l2_cycles = 0;                            // L2 occupancy summed over cores
  uint64_t ddr_bytes = 0;                           // DDR bytes read + written by DMAs
  uint64_t macs = 0;
  int64_t commands = 0;
  int64_t local_bytes = 0;  // the L1 its buffers take per core (PlanLocalMemory's plan)
  /*! \brief "din", "dout", "mm", "vec", "ddr" (the shared DDR) or "sc" (the front end):
   * the resource with the most busy cycles, the one that bounds the kernel. */
  std::string bound_by;
  std::vector<MemberCost> members;  // per layer-group member (ir::kGroupMemberAnnotation)
};

/*! \brief The estimate of `lowered` (after the kernel pipeline) on `cores` cores. */
KernelCost EstimateKernel(const ir::PrimFunc& lowered, int cores);

/*! \brief The estimate of a strategy's PrimFunc (before the kernel pipeline): lowered for
 * an L1 of `l1_bytes` as the build lowers it, its functions run one after another (cycles
 * summed; the other figures are the last function's). What strategies rank candidates by. */
KernelCost EstimateStrategy(const ir::PrimFunc& func, int64_t l1_bytes, int cores);

/*! \brief The fewest cycles a matrix command of `m` x `k` by `k` x `n` `operand` values
 * takes (arch::cost::matrix without an epilogue or a bank conflict). A core's matrix engine
 * runs its commands one after another, so the sum over a core's commands is a lower bound of
 * any estimate: a strategy passes over a plan whose bound is no less than the fastest
 * estimate so far (it could not be faster: the plan chosen is the one pricing every plan
 * would choose). */
int64_t MatrixCommandCycles(int64_t m, int64_t n, int64_t k, ir::DataType operand);
/*! \brief The rows (M) of the matrix engine's native block for `operand` (arch/params.h). */
int64_t MatrixBlockRows(ir::DataType operand);

}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_COMPILER_COST_MODEL_H_
