// include/tilecore/runtime/npu_module.h — an `npu` module: TC1 programs run on the simulator.
//
// Calling convention of a TC1 kernel (what codegen emits and the runtime provides):
//   - Before the run, the runtime writes one 32-bit word per parameter to the
//     argument block at L1 address kNpuArgBlock of every core the kernel uses: a
//     buffer's DDR address, an int's value (two's complement, low 32 bits), a
//     float's f32 bits. The kernel reads them with `lw`.
//   - Host (cpu) arrays are staged into the device's DDR first and copied back
//     after the run (for parameters the kernel may write); npu arrays are used in place.
//   - The kernel runs on the device's simulator (`npu:N`), which must have at least
//     the kernel's cores.
// Each kernel keeps a line table (text section, pc -> source location) for debuggers, and
// a member table (text section, pc range -> layer-group member) for the compiler driver,
// which writes it into the executable's debug info (docs/executable.md, "What the compiler
// driver supplies"); the member table lives in memory only (Info()["member_table"]) and is
// not saved with the module, whose format it leaves as it was.
// Only built with TILECORE_ENABLE_NPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/arch/program.h"
#include "tilecore/ffi/error.h"
#include "tilecore/runtime/kernel.h"

namespace tilecore::runtime {

inline constexpr uint32_t kNpuArgBlock = uint32_t(arch::tc1::kL1Bytes) - 1024;
inline constexpr int kNpuMaxArgs = 256;

struct LineEntry {
  int32_t section = 0;
  int32_t pc = 0;
  std::string location;  // "file:line" of the IR node, or a description of it
};

/// Instructions [begin, end) of text section `section` compute layer-group member `member`.
struct MemberRange {
  int32_t section = 0;
  int32_t begin = 0, end = 0;
  int32_t member = 0;
};

struct NpuKernel {
  std::string name;
  arch::Program program;
  std::string assembly;
  std::vector<KernelParam> params;
  int cores = 1;
  std::vector<LineEntry> lines;
  std::vector<MemberRange> members;  // empty unless the kernel is a layer group's
};

Module NpuModuleCreate(std::vector<NpuKernel> kernels);

/// ValueError "kernel `name` has N parameters (at most kNpuMaxArgs)" when a kernel of
/// `params` parameters cannot be an npu kernel (NpuModuleCreate refuses it). (Inline: the
/// compiler asks it in a build without the npu too.)
inline void CheckNpuParamCount(const std::string& name, size_t params) {
  if (params > size_t(kNpuMaxArgs)) {
    TILECORE_THROW(ValueError) << "kernel `" << name << "` has " << params
                               << " parameters (at most " << kNpuMaxArgs << ")";
  }
}

/// Loads a call of kernel `function` of npu module `module` into `s` without running it,
/// with every check and limit of a launch on the npu device: the kernel-argument checks
/// (CheckKernelArgs: count, dtypes, sizes against the kernel's buffers, writability), the
/// simulator's cores and L1, then the program, the call's DDR arrays
/// (Simulator::set_ddr_arrays), host calls and the argument block. Each array in `args`
/// must already be in `s`'s DDR, its data pointer the DDR address (as an npu array's is).
/// A debugger laying out memory itself (tdb) loads its calls with this.
void LoadNpuCall(const Module& module, const std::string& function, sim::Simulator& s,
                 ffi::PackedArgs args);

}  // namespace tilecore::runtime
