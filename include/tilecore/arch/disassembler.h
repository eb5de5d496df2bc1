// include/tilecore/arch/disassembler.h — Program -> TC1 assembly text.
//
// The output assembles back to an equal Program (round trip), with generated
// labels `L<section>_<index>` at branch targets and data as `.byte` lines.
// Words that do not decode are written as `.inst 0x...` and reported as such.
#pragma once

#include <cstdint>
#include <string>

#include "tilecore/arch/program.h"

namespace tilecore::arch {

std::string disassemble(const Program& program);

/// One word at instruction index `pc`; undecodable words print as `.inst 0x...`.
std::string disassemble_word(uint64_t word, int64_t pc = 0);

}  // namespace tilecore::arch
