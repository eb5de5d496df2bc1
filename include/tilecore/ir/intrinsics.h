/*
 * include/tilecore/ir/intrinsics.h — the table of intrinsics that Call may name.
 *
 * One row per intrinsic: name, argument kinds, result rule, the engine or unit it
 * occupies, whether it has an effect, and a doc line. Call's constructor checks
 * every call against its row (TypeError naming the intrinsic, the argument and the
 * expected kind); the printer, docs/ir.md, the codegen (IR -> TC1 commands) and
 * PySim (IR -> numpy) all read the same table (`ir.ListIntrinsics` from Python).
 *
 * Families:
 *   tir.*   core id, core count, barrier, scalar math (exp, sqrt, ...), bitwise
 *           operations and shifts on integers (scalar or vector); call_packed, a
 *           call from the kernel to a function of the global registry
 *   tc1.*   SIMD operations without an IR operator (saturating add, reductions,
 *           conversions between lane counts),
 *           and the low-level commands LowerAsyncDMA produces (dma_in, dma_out, wait)
 *   tile.*  tile commands: DMA with events, waits, matrix engine (mm), vector engine
 *           (vec_<op>) — operands are BufferRegions in local (L1) memory except DMA,
 *           which copies between any two scopes
 */
#ifndef TILECORE_IR_INTRINSICS_H_
#define TILECORE_IR_INTRINSICS_H_

#include <string_view>
#include <vector>

#include "tilecore/ir/expr.h"

namespace tilecore {
namespace ir {

/*! \brief What an argument must be. */
enum class IntrinArg : uint8_t {
  kInt,           // a scalar integer expression
  kFloat,         // a scalar float expression
  kScalar,        // a scalar int or float expression
  kBool,          // a scalar bool expression
  kVector,        // a vector (lanes > 1) int or float expression
  kIntAny,        // an integer expression, scalar or vector (bitwise operations, shifts)
  kRegion,        // a BufferRegion
  kString,        // a StringImm
  kRegionOrNone,  // a BufferRegion, or the integer constant 0 for "absent" (optional tile operands)
  kRegionOrScalar,  // a BufferRegion or a scalar int/float expression (tile.mm's scale)
};

/*! \brief How the result dtype follows from the arguments. */
enum class IntrinResult : uint8_t {
  kVoid,  // evaluated for its effect
  kInt32,
  kArg0,       // the first argument's dtype
  kArg0Elem,   // the first argument's element dtype (vector reductions)
  kRequested,  // the dtype given to Call (required; conversions between lane counts)
};

/*! \brief Extra dtype rules checked beyond the argument kinds. */
enum class IntrinRule : uint8_t {
  kNone,
  kSameDType,        // all non-region arguments share one dtype
  kSameRegionDType,  // all region arguments share one dtype (vector engine)
  kMatmul,  // tile.mm: A, B of i8/f16/bf16/f32; C i32 for i8, else f32 (any dtype with an epilogue)
  kIntegerOnly,  // the first argument is an integer (saturating SIMD)
  kFloatOnly,    // math: the first argument (or region) is a float
  kLut,          // tile.vec_lut: a of int8/uint8, the table of d's dtype
};

struct IntrinsicInfo {
  const char* name;
  std::vector<IntrinArg> args;
  IntrinResult result;
  IntrinRule rule;
  /*! \brief False for pure functions that Simplify may fold or drop. */
  bool has_effect;
  /*! \brief "front end", "simd", "dma", "matrix", "vector". */
  const char* unit;
  /*! \brief Argument names, e.g. "dst, src, event". */
  const char* arg_names;
  const char* doc;
  /*! \brief Arguments that must be present; the rest form one optional block, given
   *  all together or not at all (-1: every argument is required). */
  int required = -1;
  /*! \brief The last argument kind repeats: zero or more further arguments of it. */
  bool variadic = false;
};

/*! \brief The row of `name`, or nullptr. */
const IntrinsicInfo* LookupIntrinsic(std::string_view name);
/*! \brief Every row, in table order. */
const std::vector<IntrinsicInfo>& ListIntrinsics();
/*! \brief "region" etc., for messages and docs. */
const char* IntrinArgName(IntrinArg kind);

/*!
 * \brief Checks a call against the table and returns its result dtype.
 * `requested` (non-void) overrides the rule for kArg0-style results only when equal.
 * TypeError / ValueError naming the intrinsic otherwise.
 */
DataType CheckIntrinsicCall(std::string_view op, const Array<PrimExpr>& args, DataType requested);

/*! \brief Whether the call has an effect (not pure); unknown ops count as effects. */
bool CallHasEffect(const CallNode* call);

/*! \brief Whether `op` is a cluster-wide barrier of the front ends: tir.barrier (which
 *  drains the core's engine queues first) or tir.barrier_no_drain. */
inline bool IsBarrier(std::string_view op) {
  return op == "tir.barrier" || op == "tir.barrier_no_drain";
}

/*! \brief Whether `op` is an asynchronous DMA transfer of the tile level (dst, src, event):
 *  tile.dma_copy, tile.dma_prefetch (on the DMA-out engine) or tile.dma_copy_in. */
inline bool IsDmaTransfer(std::string_view op) {
  return op == "tile.dma_copy" || op == "tile.dma_prefetch" || op == "tile.dma_copy_in";
}

/*! \brief Whether `op` queues a command on a DMA engine: a transfer or tile.dma_fill. */
inline bool IsDmaCommand(std::string_view op) { return IsDmaTransfer(op) || op == "tile.dma_fill"; }

/*! \brief Whether `op` is a tile-level DMA command or tile.wait: what LowerAsyncDMA lowers. */
inline bool IsAsyncDma(std::string_view op) { return IsDmaCommand(op) || op == "tile.wait"; }

/*! \brief A For annotation on a `cores` loop whose body drains its own work with `tir.drain`;
 * after it come only the next `cores` loop's first loads of read-only inputs, which that
 * loop (following directly) waits for by their events, and copies a weight prefetch waits
 * for itself (a layer group's member handing off to the next, GroupKernels). The code
 * generator closes such a loop with a barrier that does not drain and opens the next one
 * without a barrier. */
inline constexpr const char* kCoresHandoffAnnotation = "tc_handoff";

/*! \brief A For annotation on the `cores` loops of one member of a layer group's kernel
 * (compiler/kernel_group.h): the member's index. The cost model times each member by it,
 * and the code generator records the instructions of each member's loops by it (the npu
 * module's member table, runtime/npu_module.h). */
inline constexpr const char* kGroupMemberAnnotation = "tc_group_member";

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_INTRINSICS_H_
