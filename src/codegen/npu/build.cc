// src/codegen/npu/build.cc — the npu lowering entry: kernel pipeline, one
// NpuEmitter per PrimFunc, and the runtime npu module (codegen.build_npu).
#if TILECORE_ENABLE_NPU
#include "emitter.h"
#include "tilecore/codegen/lowering.h"
#include "tilecore/ffi/error.h"
#include "tilecore/runtime/npu_module.h"

namespace tilecore::codegen {

using namespace ir;  // NOLINT

NpuAssembly GenerateNpuAssembly(const PrimFunc& lowered, const std::string& name, int max_cores,
                                int64_t l1_limit) {
  return npu::NpuEmitter(lowered, name, max_cores, l1_limit).Run();
}

namespace {

/*! \brief The program of function `gname` of `mod`, lowered as `lowered`. PlanLocalMemory
 * gives each large buffer a bank of its own while L1 lasts, without the descriptors and
 * scratch the code generator places above the buffers; when they do not fit there (a layer
 * group's kernel holds every member's descriptors beside its largest member's buffers), the
 * function is lowered again for the L1 below them, where its buffers are packed as needed. */
NpuAssembly EmitWithinL1(const IRModule& mod, const String& gname, const PrimFunc& lowered,
                         const std::string& name, int max_cores, int64_t l1_limit) {
  NpuAssembly a = GenerateNpuAssembly(lowered, name, max_cores, -1);
  if (a.l1_top <= l1_limit) return a;
  const int64_t data = (a.l1_top - a.l1_buffers + 63) / 64 * 64;
  if (data < l1_limit) {
    IRModule one(Map<String, PrimFunc>{{gname, mod->functions.at(gname)}}, mod->attrs);
    IRModule again = LowerKernels(one, LowerOptions{l1_limit - data, std::nullopt, true, "npu"});
    return GenerateNpuAssembly(again->functions.at(gname), name, max_cores, l1_limit);
  }
  return GenerateNpuAssembly(lowered, name, max_cores, l1_limit);  // (its overflow, named)
}

}  // namespace

runtime::Module BuildNpu(const IRModule& mod, const target::Target& target) {
  int max_cores = static_cast<int>(target.GetInt("cores"));
  int64_t l1_limit = std::min<int64_t>(target.GetInt("l1"), int64_t(runtime::kNpuArgBlock));
  IRModule lowered = LowerKernels(mod, LowerOptions{l1_limit, std::nullopt, true, "npu"});
  std::vector<runtime::NpuKernel> kernels;
  for (const auto& [gname, func] : lowered->functions.items()) {
    std::string name = KernelSymbol(std::string(gname.view()));
    NpuAssembly a = EmitWithinL1(mod, gname, func, name, max_cores, l1_limit);
    runtime::NpuKernel k;
    k.name = name;
    k.program = std::move(a.program);
    k.assembly = std::move(a.text);
    k.params = KernelParams(func);
    k.cores = a.cores;
    for (size_t pc = 0; pc < a.line_locations.size(); ++pc) {
      if (!a.line_locations[pc].empty())
        k.lines.push_back(runtime::LineEntry{0, int32_t(pc), a.line_locations[pc]});
    }
    for (const MemberCode& m : a.members)
      k.members.push_back(
          runtime::MemberRange{0, int32_t(m.begin), int32_t(m.end), int32_t(m.member)});
    kernels.push_back(std::move(k));
  }
  return runtime::NpuModuleCreate(std::move(kernels));
}

TILECORE_REGISTER_GLOBAL("codegen.build_npu").set_body_typed([](ffi::Any mod, target::Target t) {
  return BuildNpu(AsIRModule(mod), t);
});

}  // namespace tilecore::codegen
#endif  // TILECORE_ENABLE_NPU
