// tests/fuzz/fuzz_assemble.cc — libFuzzer target over the assembler.
//
// Input: assembly text. Expected outcomes: a Program or an AsmError. Any
// Program must survive disassemble -> assemble unchanged and its image must
// round-trip; anything else (crash, other exception, sanitizer report, hang) is
// a bug.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/disassembler.h"

using namespace tilecore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  arch::Program p;
  try {
    p = arch::assemble(text);
  } catch (const arch::AsmError&) {
    return 0;
  }
  // Data segments in l1 printed for a mask of 0 come back as "all cores"; the
  // assembler never produces mask 0 for l1, so equality must hold.
  arch::Program again = arch::assemble(arch::disassemble(p));
  if (!(again == p)) std::abort();
  if (!(arch::Program::from_bytes(p.to_bytes()) == p)) std::abort();
  return 0;
}
