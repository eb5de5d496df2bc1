// tests/cpp/debug/test_engine.cc — the debugging engine: stops, watchpoints,
// reverse execution and the write log, on small assembly programs whose
// behaviour is worked out by hand in the comments.
#include <gtest/gtest.h>

#include "tilecore/arch/assembler.h"
#include "tilecore/debug/engine.h"

namespace tilecore::debug {
namespace {

// Core 0: 40 iterations of ddr[0x100] += 1 (lw/addi/sw), then a DMA of 64 bytes
// ddr 0x1000 -> ddr 0x2000, then halt. Core 1: the same counter loop on 0x200.
const char* kProgram = R"(
.core 0,1
.data l1, 0x100
desc:   .dmadesc dtype=i8 shape=[64]
.text
        csrr  x5, coreid
        slli  x5, x5, 8
        addi  x5, x5, 0x100
        li    x1, 0
        li    x2, 40
loop:   lw    x3, [ddr: x5 + 0]
        addi  x3, x3, 1
        sw    x3, [ddr: x5 + 0]
        addi  x1, x1, 1
        blt   x1, x2, loop
        li    x6, 0x1000
        li    x7, 0x2000
        dma.in ddr:x7, ddr:x6, [x0 + desc]
        wait  sc, din, 1
        halt
)";

struct Fixture {
  sim::Simulator sim{sim::SimConfig{.cores = 2, .ddr_bytes = 1 << 20}};
  Engine eng{&sim};
  Fixture() {
    sim.load(arch::assemble(kProgram));
    std::vector<uint8_t> src(64);
    for (int i = 0; i < 64; ++i) src[size_t(i)] = uint8_t(i * 3);
    sim.write(arch::Space::DDR, 0x1000, src);
    eng.begin();
  }
  uint32_t word(uint64_t addr) {
    auto b = sim.read(arch::Space::DDR, addr, 4);
    return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
};

TEST(DebugEngine, PcBreakpointStopsBeforeTheInstructionOnItsCore) {
  Fixture f;
  Stop s;
  s.kind = StopKind::Pc;
  s.pc = 7;  // the sw
  s.core = 1;
  int id = f.eng.add_stop(s);
  StopReport r = f.eng.resume(UINT64_MAX);
  ASSERT_EQ(r.reason, StopReport::Breakpoint);
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].id, id);
  EXPECT_EQ(r.hits[0].core, 1);
  EXPECT_EQ(f.sim.pc(1), 7);
  EXPECT_EQ(f.word(0x200), 0u);  // not yet stored
  r = f.eng.resume(UINT64_MAX);  // steps over the stop it is at, hits the next iteration
  EXPECT_EQ(r.reason, StopReport::Breakpoint);
  EXPECT_EQ(f.word(0x200), 1u);
  EXPECT_EQ(f.eng.stop_ref(id).hits, 2u);
}

TEST(DebugEngine, MnemonicIgnoreCountAndCommandId) {
  Fixture f;
  Stop s;
  s.kind = StopKind::Mnemonic;
  s.op = *arch::find_opcode("sw");
  s.core = 0;
  s.ignore = 9;
  f.eng.add_stop(s);
  StopReport r = f.eng.resume(UINT64_MAX);
  ASSERT_EQ(r.reason, StopReport::Breakpoint);
  EXPECT_EQ(f.word(0x100), 9u);  // nine stores passed over
  Stop c;
  c.kind = StopKind::Command;
  c.engine = arch::Engine::DmaIn;
  c.command = 0;
  c.core = 1;
  f.eng.remove_stop(1);
  f.eng.add_stop(c);
  r = f.eng.resume(UINT64_MAX);
  ASSERT_EQ(r.reason, StopReport::Breakpoint);
  EXPECT_EQ(r.hits[0].core, 1);
  EXPECT_EQ(f.sim.instruction_at(1, f.sim.pc(1)).substr(0, 6), "dma.in");
}

TEST(DebugEngine, WatchpointNamesTheWriterAndTheLogKnowsIt) {
  Fixture f;
  Stop w;
  w.kind = StopKind::Watch;
  w.space = arch::Space::DDR;
  w.lo = 0x2010;
  w.hi = 0x2014;
  w.mode = kWatchWrite;
  f.eng.add_stop(w);
  StopReport r = f.eng.resume(UINT64_MAX);
  ASSERT_EQ(r.reason, StopReport::Watchpoint);
  EXPECT_EQ(arch::info(r.hits[0].op).mnemonic, "dma.in");
  EXPECT_EQ(r.hits[0].agent, 1);  // the DMA-in engine
  EXPECT_EQ(f.sim.read(arch::Space::DDR, 0x2010, 1)[0],
            uint8_t(16 * 3));  // stopped after the write
  WriteRecord rec;
  ASSERT_TRUE(f.eng.last_write(arch::Space::DDR, 0, 0x2013, &rec));
  EXPECT_EQ(rec.pc, 12u);
  ASSERT_TRUE(f.eng.last_write(arch::Space::DDR, 0, 0x100, &rec));
  EXPECT_EQ(arch::info(rec.op).mnemonic, "sw");
  EXPECT_FALSE(f.eng.last_write(arch::Space::DDR, 0, 0x3000, &rec));
}

TEST(DebugEngine, ReverseToIsExact) {
  Fixture f;
  f.eng.resume(150);
  auto snap = [&] {
    std::vector<uint64_t> v{f.eng.position(),      f.sim.cycle(),   uint64_t(f.sim.pc(0)),
                            uint64_t(f.sim.pc(1)), f.word(0x100),   f.word(0x200),
                            f.sim.xreg(0, 1),      f.sim.xreg(1, 3)};
    auto m = f.sim.read(arch::Space::DDR, 0x2000, 64);
    v.insert(v.end(), m.begin(), m.end());
    return v;
  };
  auto before = snap();
  StopReport r = f.eng.resume(300);  // to the end: the DMA lands
  EXPECT_EQ(r.reason, StopReport::Finished);
  EXPECT_NE(snap(), before);
  f.eng.reverse_to(150);
  EXPECT_EQ(snap(), before);
  f.eng.reverse_to(0);
  EXPECT_EQ(f.word(0x100), 0u);
  EXPECT_EQ(f.eng.position(), 0u);
}

TEST(DebugEngine, ReverseContinueFindsThePreviousHit) {
  Fixture f;
  Stop s;
  s.kind = StopKind::Pc;
  s.pc = 7;
  s.core = 0;
  f.eng.add_stop(s);
  f.eng.resume(UINT64_MAX);
  f.eng.resume(UINT64_MAX);
  f.eng.resume(UINT64_MAX);
  EXPECT_EQ(f.word(0x100), 2u);
  uint64_t third = f.eng.position();
  f.eng.resume(20);
  StopReport r = f.eng.reverse_continue();
  ASSERT_EQ(r.reason, StopReport::Breakpoint);
  EXPECT_EQ(f.eng.position(), third);
  r = f.eng.reverse_continue();
  EXPECT_EQ(f.word(0x100), 1u);
  EXPECT_EQ(f.sim.pc(0), 7);
}

TEST(DebugEngine, DetachedSimulatorRunsTheSameProgramToTheSameResult) {
  Fixture f;
  Stop w;
  w.kind = StopKind::Watch;
  w.space = arch::Space::DDR;
  w.lo = 0x5000;
  w.hi = 0x5004;  // never touched
  f.eng.add_stop(w);
  EXPECT_EQ(f.eng.resume(UINT64_MAX).reason, StopReport::Finished);
  sim::Simulator plain{sim::SimConfig{.cores = 2, .ddr_bytes = 1 << 20}};
  plain.load(arch::assemble(kProgram));
  std::vector<uint8_t> src(64);
  for (int i = 0; i < 64; ++i) src[size_t(i)] = uint8_t(i * 3);
  plain.write(arch::Space::DDR, 0x1000, src);
  plain.run();
  EXPECT_EQ(plain.stats().cycles, f.sim.stats().cycles);
  EXPECT_EQ(plain.read(arch::Space::DDR, 0, 0x3000), f.sim.read(arch::Space::DDR, 0, 0x3000));
}

}  // namespace
}  // namespace tilecore::debug
