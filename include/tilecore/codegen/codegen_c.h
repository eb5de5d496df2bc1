// include/tilecore/codegen/codegen_c.h — Kernel IR -> C source, and the `c` target.
//
// CodeGenC prints each PrimFunc of an IRModule as a C99 function
// `int32_t tc_<name>(void** args)` (the calling convention of runtime c modules,
// runtime/kernel.h): buffer parameters arrive as data pointers, scalars as pointers
// to int64_t / double. Loops of every kind become C loops (a loop bound to cores
// runs its iterations one after another, which computes the same result; one whose
// body holds a barrier runs each core as a thread meeting at a pthread barrier),
// local and shared allocations become C arrays, and the scalar intrinsics (tir.*) become
// C expressions with TC1's integer semantics (wrapping arithmetic, TC1's defined
// division: x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN, never a trap; shifts by
// b & (bits - 1); round-to-nearest-even saturating float-to-int casts). The
// module is lowered by the shared entry of codegen/lowering.h first.
//
// BuildC (registered as `codegen.build_c`) compiles the source with the target's C
// compiler (`cc -O2 -shared -fPIC`) and returns a runtime c module.
//
// Vector expressions (Ramp, Broadcast, SIMD lanes) become loops over the lanes;
// the TC1 vector intrinsics (tc1.v*) become their lane-wise C; DMA and tile
// commands (tile.dma_copy, tile.dma_fill, tile.vec_*, tile.mm) call the C runtime
// header (codegen_c_runtime.h), each completing before the next statement, so
// waits are no-ops.
// What cannot be emitted (a dtype TC1 lacks, an intrinsic with no C form, a
// `cores` loop inside another) is a ValueError naming the node and its location.
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
