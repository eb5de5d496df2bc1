/*
 * include/tilecore/compiler/host_kernel.h — host kernels: one ONNX-style op lowered to
 * a Kernel IR PrimFunc that runs on the CPU through the `c` target (Kernel IR -> C),
 * for the ops the npu cannot run (a dtype TC1 lacks, such as int64, float64 or bool
 * arithmetic; an op without an npu strategy).
 *
 *   HasHostKernel(op_type, attrs, inputs) -> "" or the reason the op runs nowhere
 *   LowerHostOp(op_type, attrs, inputs, outputs) -> PrimFunc (build with target "c")
 *
 * The PrimFunc has the convention of LowerOp (strategy.h): one global buffer per data
 * input, then one per output, with the TensorSpec shapes and dtypes; the attr
 * "input_params" counts the inputs that are params; the exported name (attr
 * "global_symbol") is "host_<op type in lower case>". Values the specs do not carry
 * (a reduction's axes, Slice's starts/ends/axes/steps, Pad's pads, CumSum's axis) are
 * compile-time constants passed as attributes of those names.
 *
 * Two sources, tried in order:
 * 1. a host kernel registered with RegisterHostKernel: plain scalar loops over the
 *    global buffers, any dtype (src/compiler/host_*.cc);
 * 2. the op's npu strategy, when it refuses the op only for its dtypes: the strategy is
 *    lowered on float32 (floats) or int32 (integers) copies of the tensors and the
 *    kernel converts on the way in and out (integer outputs computed in float32 are
 *    truncated toward zero). Values outside float32/int32 lose precision there.
 */
#ifndef TILECORE_COMPILER_HOST_KERNEL_H_
#define TILECORE_COMPILER_HOST_KERNEL_H_

#include <functional>
#include <string>
#include <vector>

#include "tilecore/compiler/strategy.h"

namespace tilecore {
namespace compiler {

struct HostKernel {
  /*! \brief "" when supported, else the reason (outputs are not known yet). */
  std::function<std::string(const std::string& op_type, const Map<String, Any>& attrs,
                            const std::vector<TensorSpec>& inputs)>
      check;
  std::function<ir::PrimFunc(const OpCall&)> lower;
  /*! \brief Inputs [0, data_inputs) are params (-1: all). */
  int data_inputs = -1;
};

/*! \brief Registers `k` for `op_type`. */
void RegisterHostKernel(const std::string& op_type, HostKernel k);
std::vector<std::string> ListHostKernels();

/*! \brief "" when the op can run on the host (a host kernel or the relaxed npu strategy),
 * else why it cannot run anywhere (also a `tc_` attribute undeclared or of the wrong kind:
 * compiler_attrs.h). */
std::string HasHostKernel(const std::string& op_type, const Map<String, Any>& attrs,
                          const std::vector<TensorSpec>& inputs);
/*! \brief The host PrimFunc; ValueError naming the op and the reason when HasHostKernel fails. */
ir::PrimFunc LowerHostOp(const std::string& op_type, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& inputs,
                         const std::vector<TensorSpec>& outputs);

}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_COMPILER_HOST_KERNEL_H_
