/*
 * include/tilecore/ir/printer.h — the Kernel IR as readable script text.
 *
 * The text is Python-like (in the spirit of TVMScript) and is what `repr` of any
 * IR node shows in Python (`ir.AsScript`):
 *
 *   @prim_func
 *   def add_one(A: Buffer((128,), "int32"), B: Buffer((128,), "int32")):
 *       for i in range(0, 128):
 *           B[i] = A[i] + 1
 *
 * Loop kinds print as `range` / `unroll` / `vectorized` / `cores`; allocations as
 * `T = allocate((64,), "float32", "local")` (live until the end of the block);
 * integer Div/Mod (truncating) as `truncdiv(a, b)` / `truncmod(a, b)` since Python's
 * `//` and `%` are floor division (FloorDiv, FloorMod); immediates other than int32,
 * float32 and bool carry their dtype (`int8(5)`); casts print as `float32(x)`.
 * Variables that share a name get suffixes (`i`, `i_1`). Spans are not printed.
 */
#ifndef TILECORE_IR_PRINTER_H_
#define TILECORE_IR_PRINTER_H_

#include <string>

#include "tilecore/ir/function.h"

namespace tilecore {
namespace ir {

/*! \brief Script text of an expression, statement, buffer, PrimFunc or IRModule. */
std::string AsScript(const ObjectRef& node);

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_PRINTER_H_
