/*
 * src/ir/ir_internal.h — helpers shared by the ir layer's sources.
 */
#ifndef TILECORE_SRC_IR_IR_INTERNAL_H_
#define TILECORE_SRC_IR_IR_INTERNAL_H_

#include <string>

#include "tilecore/ir/type.h"

namespace tilecore {
namespace ir {

/*! \brief " (at file:line:col)" for a defined span, "" otherwise: the tail of messages. */
std::string At(const Span& span);

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_SRC_IR_IR_INTERNAL_H_
