/*
 * src/compiler/activation_passes.h — the activations that are a few vector commands and no
 * single one (SiLU, Swish, HardSwish, HardSigmoid), as passes over a tile. The element-wise
 * strategy runs them as ops of their own; a Conv runs SiLU and HardSwish in its epilogue
 * (fused_epilogue.h). Both build them here, so a fused activation gives the bits of the
 * separate op.
 */
#ifndef TILECORE_SRC_COMPILER_ACTIVATION_PASSES_H_
#define TILECORE_SRC_COMPILER_ACTIVATION_PASSES_H_

#include <functional>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace tilecore {
namespace compiler {
namespace detail {

/*! \brief One pass of an activation over a tile: its value at element i from x(i) and the
 * previous pass's t(i) (the first pass reads no t). */
using ActivationPass = std::function<PrimExpr(PrimExpr x, PrimExpr t)>;

/*!
 * \brief The passes of activation `op` (its ONNX attributes in `attrs`), each one vector
 * command over the tile (the one-expression form is a front-end loop): the same f32
 * operations in the same order as the op's expression, so the same bits. The last pass
 * writes the result; the others write a scratch tile t. Empty for other ops.
 */
inline std::vector<ActivationPass> ActivationPasses(const std::string& op,
                                                    const Map<String, Any>& attrs) {
  // (constants rounded to f32 first: the engine's scalar operands are f32)
  auto c = [](double v) -> PrimExpr { return F32(static_cast<double>(static_cast<float>(v))); };
  auto sigmoid = [](PrimExpr v) -> PrimExpr { return call("tir.sigmoid", {v}); };
  if (op == "SiLU")
    return {[=](PrimExpr x, PrimExpr) -> PrimExpr { return sigmoid(x); },
            [](PrimExpr x, PrimExpr t) -> PrimExpr { return x * t; }};
  if (op == "Swish") {
    const double alpha = AttrFloat(attrs, "alpha", 1.0);
    return {[=](PrimExpr x, PrimExpr) -> PrimExpr { return x * c(alpha); },
            [=](PrimExpr, PrimExpr t) -> PrimExpr { return sigmoid(t); },
            [](PrimExpr x, PrimExpr t) -> PrimExpr { return x * t; }};
  }
  if (op == "HardSwish" || op == "HardSigmoid") {
    const bool swish = op == "HardSwish";
    const double alpha = swish ? 1.0 / 6.0 : AttrFloat(attrs, "alpha", 0.2);
    const double beta = swish ? 0.5 : AttrFloat(attrs, "beta", 0.5);
    std::vector<ActivationPass> p{[=](PrimExpr x, PrimExpr) -> PrimExpr { return x * c(alpha); },
                                  [=](PrimExpr, PrimExpr t) -> PrimExpr { return t + c(beta); },
                                  [=](PrimExpr, PrimExpr t) -> PrimExpr { return max(t, c(0.0)); },
                                  [=](PrimExpr, PrimExpr t) -> PrimExpr { return min(t, c(1.0)); }};
    if (swish) p.push_back([](PrimExpr x, PrimExpr t) -> PrimExpr { return x * t; });
    return p;
  }
  return {};
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_SRC_COMPILER_ACTIVATION_PASSES_H_
