// tests/cpp/runtime/increment_executable.h — a two-step executable built in C++ from an
// assembled TC1 kernel (B[i] = A[i] + 1), whose outputs are known by hand: the runtime's
// tests (executable, C API) run it.
#pragma once
#if TILECORE_ENABLE_NPU
#include <cstring>
#include <vector>

#include "tilecore/arch/assembler.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/runtime/executable.h"
#include "tilecore/runtime/npu_module.h"

namespace tilecore::test_fixtures {

// B[i] = A[i] + 1 for 4 int32 (arguments: the two DDR addresses in the L1 argument block).
// Core 0 only: the call writes the argument block of the kernel's cores, and a core that
// read DDR through a zero address would be outside the call's arrays.
constexpr const char* kIncrement = R"(
    .core 0
    li x9, 0xFFC00
    lw x1, [l1: x9 + 0]
    lw x2, [l1: x9 + 4]
    li x3, 0
    li x4, 4
  loop:
    lw x5, [ddr: x1 + 0]
    addi x5, x5, 1
    sw x5, [ddr: x2 + 0]
    addi x1, x1, 4
    addi x2, x2, 4
    addi x3, x3, 1
    blt x3, x4, loop
    halt
)";

inline runtime::Module IncrementModule() {
  runtime::NpuKernel k;
  k.name = "inc";
  k.program = arch::assemble(kIncrement);
  k.assembly = kIncrement;
  k.params = {{"A", "buffer", "int32", false}, {"B", "buffer", "int32", true}};
  return runtime::NpuModuleCreate({k});
}

/*! x -> inc -> t -> inc -> y; y reuses x's bytes (x is dead after step 0). */
inline runtime::ExecutableSpec Pipeline() {
  runtime::ExecutableSpec s;
  s.precision = "int8";
  s.modules = {IncrementModule()};
  s.arena_size = 128;
  s.buffers = {runtime::ExecBuffer{"x", 0, 16, "int32", {4}},
               runtime::ExecBuffer{"t", 64, 16, "int32", {4}},
               runtime::ExecBuffer{"y", 0, 16, "int32", {4}}};
  s.inputs = {{"x", 0}};
  s.outputs = {{"y", 2}};
  runtime::ExecStep a;
  a.module = 0, a.function = "inc", a.args = {0, 1}, a.node = "inc0", a.op_type = "Add", a.macs = 0;
  runtime::ExecStep b = a;
  b.args = {1, 2}, b.node = "inc1", b.source_node = "/Add_1", b.debug = {{"k", "v"}};
  s.steps = {a, b};
  return s;
}

}  // namespace tilecore::test_fixtures
#endif  // TILECORE_ENABLE_NPU
