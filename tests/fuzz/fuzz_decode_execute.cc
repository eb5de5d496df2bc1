// tests/fuzz/fuzz_decode_execute.cc — libFuzzer target over decode + execute.
//
// Input: byte 0 holds flags, the rest is either a program image (flag bit 0) or
// raw instruction words run by two cores (the same bytes are also loaded into
// L1 so descriptors read fuzzed data). Bits 1..2 pick the simulation mode.
// Every word also goes through decode / format / disassemble, and a program
// built from raw words must survive disassemble -> assemble unchanged.
// Expected outcomes are normal completion, SimError, AsmError or
// ProgramFormatError; anything else (crash, other exception, sanitizer report,
// hang) is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/disassembler.h"
#include "tilecore/sim/simulator.h"

using namespace tilecore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  std::span<const uint8_t> rest(data + 1, size - 1);

  arch::Program program;
  bool built = false;
  if (flags & 1) {
    try {
      program = arch::Program::from_bytes(rest);
    } catch (const arch::ProgramFormatError&) {
      return 0;
    }
  } else {
    arch::TextSection t;
    t.core_mask = 0x3;
    for (size_t i = 0; i + 8 <= rest.size() && t.words.size() < 512; i += 8) {
      uint64_t w;
      std::memcpy(&w, rest.data() + i, 8);
      t.words.push_back(w);
      (void)arch::disassemble_word(w, int64_t(i / 8));
    }
    if (!t.words.empty()) program.text.push_back(std::move(t));
    arch::DataSegment d;
    d.core_mask = 0x3;
    d.space = arch::Space::L1;
    d.addr = 0x8000;
    d.bytes.assign(rest.begin(), rest.begin() + std::min<size_t>(rest.size(), 0x4000));
    if (!d.bytes.empty()) program.data.push_back(std::move(d));
    built = true;
  }

  std::string text = arch::disassemble(program);
  if (built) {
    arch::Program again = arch::assemble(text);  // must not throw for our own output
    if (!(again == program)) std::abort();       // round trip broken
  }
  auto image = program.to_bytes();
  if (!(arch::Program::from_bytes(image) == program)) std::abort();

  sim::SimConfig cfg;
  cfg.cores = 2;
  cfg.ddr_bytes = 256 << 10;
  cfg.l2_bytes = 64 << 10;
  cfg.l1_bytes = 64 << 10;
  cfg.max_command_elements = 4096;
  cfg.max_work = 1 << 20;  // bounds host time per input (sanitizers make elements slow)
  cfg.queue_depth = 4;
  cfg.mode = sim::Mode((flags >> 1) & 3);
  cfg.trace = (flags >> 3) & 1;
  try {
    sim::Simulator s(cfg);
    s.load(program);
    s.run(2000);
    (void)s.stats().to_json();
    if (cfg.trace) (void)s.trace_json();
  } catch (const sim::SimError&) {
  }
  return 0;
}
