// src/runtime/executable_debug.cc — an executable's npu step loaded into a debugger's
// simulator, with the checks and limits of Executable::Run's call of that step.
//
// A debugger (tdb) lays the arena out in its own simulator and runs a model step by step,
// an instruction at a time. It loads each npu step through here, so the step gets what a
// runtime call gives it (LoadNpuCall: the kernel-argument checks, the DDR limited to the
// step's arrays): a crafted `.tcx` that `tilecore run` refuses is refused in tdb too, with
// the same message, and a kernel cannot write past its arguments in either.
#if TILECORE_ENABLE_NPU
#include <string>
#include <vector>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/runtime/executable.h"
#include "tilecore/runtime/npu_module.h"
#include "tilecore/sim/sim_ffi.h"

namespace tilecore::runtime {
namespace {

/*! \brief An npu array over simulated DDR [addr, addr + bytes) with `b`'s shape and dtype:
 * what Executable::Run's view of the buffer is, at the debugger's address. */
ffi::NDArray DdrView(uint64_t addr, const ExecBuffer& b) {
  auto* shape = new std::vector<int64_t>(b.shape);  // freed by the deleter below
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = reinterpret_cast<void*>(addr);
  m->dl_tensor.byte_offset = 0;
  m->dl_tensor.device = DLDevice{static_cast<DLDeviceType>(ffi::kDLNPU), 0};
  m->dl_tensor.ndim = int32_t(shape->size());
  m->dl_tensor.shape = shape->data();
  m->dl_tensor.strides = nullptr;
  m->dl_tensor.dtype = ffi::StringToDLDataType(b.dtype);
  m->manager_ctx = shape;
  m->deleter = [](DLManagedTensor* self) {
    delete static_cast<std::vector<int64_t>*>(self->manager_ctx);
    delete self;
  };
  return ffi::NDArray::FromDLPack(m);
}

}  // namespace

// runtime.ExecutableLoadNpuStep(exe, step, simulator, base): loads npu step `step` of `exe`
// into `simulator`, whose DDR holds the arena at `base`, stopped before its first
// instruction. Errors are those of the step in Executable.run ("step 1 `relu` (Relu): ...").
TILECORE_REGISTER_GLOBAL("runtime.ExecutableLoadNpuStep")
    .set_body_typed([](Executable e, int64_t step, sim::SimulatorRef s, int64_t base) {
      const ExecutableSpec& spec = e->spec;
      if (step < 0 || uint64_t(step) >= spec.steps.size())
        TILECORE_THROW(IndexError)
            << "runtime.ExecutableLoadNpuStep: step " << step << " of " << spec.steps.size();
      if (base < 0 || uint64_t(base) + spec.arena_size > 0xFFFFFFFFull)
        TILECORE_THROW(ValueError)
            << "runtime.ExecutableLoadNpuStep: an arena of " << spec.arena_size << " bytes at "
            << base << " does not fit 32-bit DDR addresses";
      const ExecStep& st = spec.steps[size_t(step)];
      if (st.kind != ExecStep::kNpu)
        TILECORE_THROW(ValueError) << "step " << step << " `" << st.node << "` runs on the host";
      std::vector<ffi::NDArray> views;
      views.reserve(st.args.size());
      for (uint32_t a : st.args) {
        const ExecBuffer& b = spec.buffers[a];
        views.push_back(DdrView(uint64_t(base) + b.offset, b));
      }
      std::vector<ffi::AnyView> args(views.begin(), views.end());
      std::lock_guard<std::mutex> lock(s.mut()->mu);
      try {
        sim::TranslateSimError([&] {
          LoadNpuCall(spec.modules[st.module], st.function, s.mut()->sim,
                      ffi::PackedArgs(args.data(), int32_t(args.size())));
        });
      } catch (const ffi::Error& err) {
        if (err.kind() == "SimError") throw;
        throw ffi::Error(std::string(err.kind()),
                         "step " + std::to_string(step) + " `" + st.node + "` (" + st.op_type +
                             "): " + std::string(err.message()),
                         std::string(err.backtrace()));
      }
    });

}  // namespace tilecore::runtime
#endif  // TILECORE_ENABLE_NPU
