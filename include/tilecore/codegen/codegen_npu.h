// include/tilecore/codegen/codegen_npu.h — Kernel IR -> TC1 assembly -> an `npu` module.
//
// BuildNpu (registered as `codegen.build_npu`, only with TILECORE_ENABLE_NPU) runs
// the kernel pipeline (transform.DefaultKernelPipeline when registered; otherwise
// Simplify, UnrollLoop, LowerAsyncDMA, FlattenBuffer, Simplify, PlanLocalMemory)
// with L1 capped below the argument block, then emits TC1 assembly per PrimFunc,
// assembles it (arch::assemble) and wraps the programs in a runtime npu module.
//
// What the generated code looks like:
//   - One text section run by every core the kernel uses (the largest `cores`
//     loop extent, at most the target's -cores). A `cores` loop variable is the
//     core id (CSR coreid) plus the loop's min; code outside `cores` loops runs on
//     core 0 only, with `fence; barrier` around every `cores` loop.
//   - Buffer parameters are DDR addresses read from the argument block
//     (runtime/npu_module.h); local (L1) and shared (L2) buffers sit where
//     PlanLocalMemory put them ("memory_plan"). Descriptors, scratch words and
//     spill slots live in an L1 data segment just above the planned buffers.
//   - Registers: x1-x3 address scratch, x30 / x31 the issued vector / matrix
//     command counts, the rest a pool for variables (loop variables, lets,
//     scalar parameters) and expression temporaries; a variable that finds the
//     pool short lives in an L1 slot instead. v0-v2 are scratch for scalar float
//     arithmetic (TC1 has no scalar float unit: it runs in SIMD lane 0).
//   - Tile intrinsics become descriptors in the data segment (dynamic scalar
//     fields are stored into a per-site descriptor before the command) plus the
//     command. Vector- and matrix-engine commands are ordered like stores in the
//     IR: per buffer (per slab of the outermost dimension when it is short) the
//     code keeps the count of the last command that touched it, so a DMA or a
//     command on the other compute engine waits in its queue for exactly that
//     command, and a front-end access to a tile operand waits for the compute
//     engines (`wait sc`). DMAs are asynchronous as the IR says: tile.wait orders them.
//
// A construct without a TC1 lowering is a ValueError naming the node, the kernel
// and the location. A line table maps each instruction to the IR location
// ("file:line") of the statement it came from.
#pragma once

#include <string>
#include <vector>

#include "tilecore/ir/function.h"
#include "tilecore/runtime/module.h"
#include "tilecore/target/target.h"

namespace tilecore::codegen {

/// The assembly of one kernel and, per line of it, the IR location it came from.
struct NpuAssembly {
  std::string text;
  std::vector<std::string> line_locations;  // index = line number - 1 ("" for none)
  int cores = 1;
};

/// TC1 assembly of a PrimFunc already lowered by the kernel pipeline (flat
/// indices, a "memory_plan" attr); `max_cores` is the target's core count and
/// `l1_limit` the first L1 byte the code may not use.
NpuAssembly GenerateNpuAssembly(const ir::PrimFunc& lowered, const std::string& name, int max_cores,
                                int64_t l1_limit);

/// Runs the kernel pipeline on `mod` and compiles it for the `npu` target.
runtime::Module BuildNpu(const ir::IRModule& mod, const target::Target& target);

}  // namespace tilecore::codegen
