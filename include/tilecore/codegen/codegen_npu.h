// include/tilecore/codegen/codegen_npu.h — Kernel IR -> TC1 program -> an `npu` module.
//
// BuildNpu (registered as `codegen.build_npu`, only with TILECORE_ENABLE_NPU) lowers
// the module with the shared lowering entry (codegen/lowering.h: the checks and
// transform.DefaultKernelPipeline, with L1 capped below the argument block), then
// emits each PrimFunc as typed TC1 instructions (src/codegen/npu/, see its
// emitter.h for the map of files and codegen/npu/builder.h for the instruction
// builder) straight into an arch::Program, and wraps the programs in a runtime
// npu module. Assembly text is made from the program by the disassembler's
// formatter, for get_source() only.
//
// What the generated code looks like:
//   - One text section run by every core the kernel uses (the largest `cores`
//     loop extent, at most the target's -cores). A `cores` loop variable is the
//     core id (CSR coreid) plus the loop's min; code outside `cores` loops runs on
//     core 0 only, with `fence; barrier` around every `cores` loop.
//   - Buffer parameters are DDR addresses read from the argument block
//     (runtime/npu_module.h); local (L1) and shared (L2) buffers sit where
//     PlanLocalMemory put them ("memory_plan"). Descriptors, scratch words and
//     spill slots live in an L1 data segment just above the planned buffers, and so
//     do the bytes of constant stores into consecutive L1 elements (a lookup table),
//     copied 32 aligned bytes at a time by a vld and a vst.
//   - Registers: x1-x3 address scratch, the last two x registers the issued
//     vector / matrix command counts, the rest a pool (sized from arch::tc1) for
//     variables (loop variables, lets, scalar parameters) and expression
//     temporaries; a variable that finds the pool short lives in an L1 slot, and
//     a temporary held while a deep sibling expression is evaluated spills to one. v0-v2 are
//     scratch for scalar float arithmetic (TC1 has no scalar float unit: it runs in SIMD lane 0).
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
// ("file:line") of the statement it came from, and a member table the instructions of
// each layer-group member's `cores` loops (the loop and the fence and barrier closing it,
// not those opening it) to the member's index.
#pragma once

#include <string>
#include <vector>

#include "tilecore/arch/program.h"
#include "tilecore/ir/function.h"
#include "tilecore/runtime/module.h"
#include "tilecore/target/target.h"

namespace tilecore::codegen {

/// Instructions [begin, end) of the text section: one `cores` loop of layer-group member
/// `member` (ir::kGroupMemberAnnotation) with the fence and barrier closing it.
struct MemberCode {
  int64_t member = 0;
  int64_t begin = 0, end = 0;
};

/// The program of one kernel, its assembly text (for get_source), per instruction the IR
/// location it came from, and the code of each layer-group member's cores loops.
struct NpuAssembly {
  arch::Program program;
  std::string text;
  std::vector<std::string> line_locations;  // index = pc ("" for none)
  std::vector<MemberCode> members;          // in pc order
  int cores = 1;
  int64_t l1_buffers = 0;  // the first L1 byte above the kernel's buffers
  int64_t l1_top = 0;      // the first L1 byte above its descriptors and scratch too
};

/// The TC1 program of a PrimFunc already lowered by the kernel pipeline (flat
/// indices, a "memory_plan" attr); `max_cores` is the target's core count and
/// `l1_limit` the first L1 byte the code may not use (negative: not checked).
NpuAssembly GenerateNpuAssembly(const ir::PrimFunc& lowered, const std::string& name, int max_cores,
                                int64_t l1_limit);

/// Runs the kernel pipeline on `mod` and compiles it for the `npu` target.
runtime::Module BuildNpu(const ir::IRModule& mod, const target::Target& target);

}  // namespace tilecore::codegen
