// include/tilecore/arch/assembler.h — TC1 assembly text -> Program.
//
// Syntax (docs/tc1.md, "Assembly language"): one instruction per line,
// `label:` definitions, comments after `#` or `//`, expressions in immediates
// (+ - * / % << >> & | ~ and parentheses over numbers, .equ constants and labels),
// and the directives
//   .core all | N[,M...] | N-M     start/continue the text of these cores
//   .data SPACE, ADDR              start a data segment (l1: the current cores)
//   .equ NAME, EXPR                define a constant
//   .byte/.half/.word EXPR, ...    .float/.f16/.bf16 NUMBER, ...
//   .zero N   .align N             .dmadesc/.vecdesc/.mmdesc key=value ...
// A text label's value is its instruction index; a data label's is its address.
#pragma once

#include <string_view>

#include "tilecore/arch/asm_error.h"
#include "tilecore/arch/program.h"

namespace tilecore::arch {

/// Assembles `text`; throws AsmError naming the line on the first mistake.
Program assemble(std::string_view text);

}  // namespace tilecore::arch
