// include/tilecore/codegen/lowering.h — what both code generators (npu and c) share:
// the one lowering entry, the kernel symbol names and parameter lists, and the
// build-time checks of the kernel as written.
//
// LowerKernels runs, under the current PassContext (opt level, disabled passes,
// instruments and config are kept), the checks below and then
// transform::DefaultKernelPipeline once, with the target's memory sizes in the
// config ("tc1.l1_bytes" / "tc1.l2_bytes": the smaller of the target's and the
// caller's). Both targets therefore see the same intrinsics and the same plan. The
// last modules lowered are kept by the functions they came from (while someone else
// holds those), the context and the target's plugin passes: lowering the same function
// again (the compiler prices a plan, then builds the plan it chose) returns the module
// lowered before. A context with instruments lowers anew.
//
// Checks (ValueError naming the kernel, the buffer and the location):
//   - a constant index outside a buffer of constant shape (loads and stores);
//   - a tile region (tile.* / tc1.* operand) of constant bounds reaching outside
//     its buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilecore/ir/function.h"
#include "tilecore/runtime/kernel.h"

namespace tilecore::codegen {

/// Memory sizes the kernel pipeline plans with (bytes; nullopt: keep the config's).
struct LowerOptions {
  std::optional<int64_t> l1_bytes;
  std::optional<int64_t> l2_bytes;
  bool cap = true;          // true: min(config, these); false: these only where the config has none
  std::string target_kind;  // its plugin passes (target::TargetPasses) run after the pipeline
};

/// Checks and lowers every function of `mod` with the default kernel pipeline.
ir::IRModule LowerKernels(const ir::IRModule& mod, const LowerOptions& opts);

/// Throws the ValueErrors listed above for `f` (named `name`).
void CheckKernelBounds(const ir::PrimFunc& f, const std::string& name);

/// The C identifier a global function is compiled as (non-alphanumerics become '_').
std::string KernelSymbol(const std::string& name);

/// The parameter list of a PrimFunc (buffers from buffer_map, scalars otherwise).
std::vector<runtime::KernelParam> KernelParams(const ir::PrimFunc& f);

/// An IRModule from an ir.IRModule or ir.PrimFunc argument; TypeError otherwise.
ir::IRModule AsIRModule(const ffi::Any& v);

}  // namespace tilecore::codegen
