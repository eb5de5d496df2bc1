// include/tilecore/codegen/codegen_c.h — Kernel IR -> C source, and the `c` target.
//
// CodeGenC prints each PrimFunc of an IRModule as a C99 function
// `int32_t tc_<name>(void** args)` (the calling convention of runtime c modules,
// runtime/kernel.h): buffer parameters arrive as data pointers, scalars as pointers
// to int64_t / double. Loops become C loops. A loop bound to cores runs its
// iterations one after another, or, when its body has a `tir.barrier`, as one
// pthread per core with the barrier a pthread barrier. Local buffers are allocated
// where they are declared (per core); shared (L2) buffers once, before their cores
// loop, so every core sees the same memory as on the cluster. Scalar intrinsics
// (tir.*) become C expressions with TC1's integer semantics (wrapping arithmetic,
// TC1's defined division: x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN, never a trap;
// shifts by b & (bits - 1); round-to-nearest-even saturating float-to-int casts).
// Vector expressions run lane by lane; tile intrinsics (DMA, vector and matrix
// engine commands, with the mm epilogue) call the synchronous engine models of
// codegen_c_runtime.h; `tir.call_packed` calls the host. The module is lowered by
// the shared entry of codegen/lowering.h first.
//
// BuildC (registered as `codegen.build_c`) compiles the source with the target's C
// compiler (`cc -O2 -shared -fPIC`) and returns a runtime c module.
//
// Not emitted (a ValueError names the node and its location): 64-bit and other
// non-TC1 element types in tile commands, float remainder and floor division, and a
// `cores` loop inside another.
#pragma once

#include <string>

#include "tilecore/ir/function.h"
#include "tilecore/runtime/kernel.h"
#include "tilecore/target/target.h"

namespace tilecore::codegen {

/// The C source of every function of `mod`, with their parameter lists.
struct CSource {
  std::string code;
  std::vector<std::string> names;
  std::vector<std::vector<runtime::KernelParam>> params;
};
CSource GenerateC(const ir::IRModule& mod);

/// Compiles `mod` for the `c` target into a runtime module.
runtime::Module BuildC(const ir::IRModule& mod, const target::Target& target);

}  // namespace tilecore::codegen
