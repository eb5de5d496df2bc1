/*
 * include/tilecore/transform/hoist_activations.h — HoistActivations: an activation that
 * reads a Conv's output through layout ops only moves before them, next to the Conv, whose
 * epilogue can then compute it (docs/compiler.md, "Epilogue fusion").
 *
 *   Y = Act(L_n(...L_1(Conv(..))))  ->  Y = L_n(...L_1(Act(Conv(..))))
 *
 * Act: Relu, Sigmoid, HardSigmoid, HardSwish or tilecore::SiLU (one input, element-wise,
 * float32); L_k: Reshape, Transpose, Flatten, Squeeze or Unsqueeze (their other inputs and
 * attributes kept). An element-wise function commutes with moving elements, so every
 * output element is the same f32 operation on the same value: the same bits. A YOLO head
 * (Conv -> Reshape -> Transpose -> Sigmoid) then computes its Sigmoid in the Conv's
 * epilogue instead of a pass of its own over the whole tensor.
 * The Conv's output and each layout value must have no other reader (nothing computes
 * twice); the nodes keep their names, the activation's output keeps its name and value,
 * and the values between, whose contents change, get new names.
 * In: a typed Graph. Out: the same ops, reordered (the new values typed).
 * Counter: stats["transform.HoistActivations.hoisted"].
 */
#ifndef TILECORE_TRANSFORM_HOIST_ACTIVATIONS_H_
#define TILECORE_TRANSFORM_HOIST_ACTIVATIONS_H_

#include "tilecore/transform/pass.h"

namespace tilecore {
namespace transform {

/*! \brief The pass `transform.HoistActivations`. */
Pass HoistActivations();

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_HOIST_ACTIVATIONS_H_
