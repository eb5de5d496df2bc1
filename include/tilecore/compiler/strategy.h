/*
 * include/tilecore/compiler/strategy.h — op strategies: one ONNX-style op (type,
 * attributes, static input/output shapes and dtypes) lowered to a Kernel IR PrimFunc
 * for the npu target, tiled so any shape fits L1 and split over the target's cores.
 *
 * The interface is plain data so the strategies do not depend on a graph IR:
 *   LowerOp(op_type, attrs, inputs, outputs, target) -> PrimFunc
 * The PrimFunc takes one global buffer per data input, then one per output (weights
 * are inputs too), in the op's order, with the TensorSpec shapes and dtypes. Inputs
 * that are compile-time shapes (Reshape's shape, Expand's shape, ...) are not params;
 * the PrimFunc's attr "input_params" counts the inputs that are.
 * HasStrategy(op_type, attrs, inputs) returns "" when the op can be lowered, else the
 * reason it cannot (no strategy, a dtype TC1 lacks, an attribute combination, a `tc_`
 * attribute undeclared or of the wrong kind: compiler_attrs.h), for the partitioner to
 * send the node to the host.
 *
 * Each strategy is also the global function `compiler.strategy.<OpType>`
 * (attrs, inputs, outputs, target) -> PrimFunc. `compiler.KernelSignature(op_type,
 * n_inputs)` gives [global symbol, input params] of the PrimFunc LowerOp would return,
 * without lowering (the driver lowers a kernel only when it is used).
 */
#ifndef TILECORE_COMPILER_STRATEGY_H_
#define TILECORE_COMPILER_STRATEGY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/ir/function.h"
#include "tilecore/target/target.h"

namespace tilecore {
namespace compiler {

using ffi::Any;
using ffi::Array;
using ffi::Map;
using ffi::String;

/*! \brief A tensor's static shape and element type. */
class TensorSpecObj : public ffi::Object {
 public:
  Array<int64_t> shape;
  ir::DataType dtype;
  int64_t numel() const;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("compiler.TensorSpec", TensorSpecObj, ffi::Object);
};

class TensorSpec : public ffi::ObjectRef {
 public:
  /*! \brief ValueError on a negative dimension. */
  TensorSpec(Array<int64_t> shape, ir::DataType dtype);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(TensorSpec, ffi::ObjectRef, TensorSpecObj);
};

/*! \brief What a strategy gets. */
struct OpCall {
  std::string op_type;
  Map<String, Any> attrs;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  int64_t cores = arch::tc1::kDefaultCores;
  int64_t l1_bytes = int64_t(arch::tc1::kL1Bytes);
  /*! \brief Inputs that are params of the PrimFunc: the data inputs (see Strategy). */
  int64_t data_inputs = 0;
  /*! \brief int64 params are int32 words, two per element (npu kernels: TC1 has no
   * 64-bit types; the executable passes the int64 buffer as is). */
  bool int64_words = false;
};

/*!
 * \brief What a strategy's plan choice depends on, as text: the call's attributes, scale
 * values left out (immediates in the code, never a command more or less; a scale of
 * exactly 1 apart, which skips a multiply) and zero points as zero or not (a nonzero one
 * adds a vector pass); its op type, shapes and dtypes; the cores and the L1. Strategies that search
 * plans with the cost model keep the choice by it, so the many layers of one shape with
 * their own scales search once.
 */
std::string PlanKey(const OpCall& call);

struct Strategy {
  /*! \brief "" when supported, else the reason (outputs are not known yet). */
  std::function<std::string(const std::string& op_type, const Map<String, Any>& attrs,
                            const std::vector<TensorSpec>& inputs)>
      check;
  std::function<ir::PrimFunc(const OpCall&)> lower;
  /*! \brief The layout the strategy wants input `i` in ("onnx" = unchanged). A hook for
   * pre-transforming constant weights; every strategy takes the ONNX layout today. */
  std::function<std::string(const OpCall&, int input)> weight_layout;
  /*! \brief Inputs [0, data_inputs) hold data (-1: all); the rest are shapes or indices
   * known when compiling (e.g. Reshape's shape), which may be int64. */
  int data_inputs = -1;
  /*! \brief Inputs the strategy may take as int64 (index tensors): TC1 has no 64-bit
   * integers, so the kernel reads each as two int32 words and narrows it (NarrowIndex in
   * kernel_util.h). Any other 64-bit input keeps the op off the npu. */
  std::vector<int> int64_inputs = {};
  /*! \brief The strategy writes its int64 outputs itself (as the low word and its sign
   * extension); otherwise a 64-bit output keeps the op off the npu. */
  bool int64_outputs = false;
  /*! \brief A custom kernel's (custom_kernel.cc): the host fallback never runs it (its
   * engineer declined the call), only `behind`, the built-in strategy it stands in front
   * of (null: none). */
  bool custom_kernel = false;
  std::shared_ptr<const Strategy> behind = nullptr;
};

/*! \brief Registers `s` for `op_type` (also as `compiler.strategy.<op_type>`). */
void RegisterStrategy(const std::string& op_type, Strategy s);
/*! \brief Forgets the strategy of `op_type` (a custom kernel removed, custom_kernel.cc). */
void RemoveStrategy(const std::string& op_type);
/*! \brief The strategy registered for `op_type`, or null (the caller's to keep). */
std::shared_ptr<const Strategy> FindStrategy(const std::string& op_type);
std::vector<std::string> ListStrategies();

std::string HasStrategy(const std::string& op_type, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs);
/*! \brief ValueError naming the op and the reason when HasStrategy fails. */
ir::PrimFunc LowerOp(const std::string& op_type, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                     const target::Target& target);

}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_COMPILER_STRATEGY_H_
