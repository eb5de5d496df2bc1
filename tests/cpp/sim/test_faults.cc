// tests/cpp/sim/test_faults.cc — one test per fault class: every one ends the run
// with a SimError naming core, pc, instruction and reason; none crashes.
#include <gtest/gtest.h>

#include "tilecore/arch/assembler.h"
#include "tilecore/sim/simulator.h"

using namespace tilecore;
using sim::SimError;

namespace {

SimError run_expecting_fault(const std::string& text, int cores = 1,
                             uint64_t budget = sim::Simulator::kDefaultBudget) {
  sim::Simulator s(sim::SimConfig{.cores = cores});
  s.load(arch::assemble(text));
  try {
    s.run(budget);
  } catch (const SimError& e) {
    return e;
  }
  ADD_FAILURE() << "no fault raised";
  return SimError(SimError::Kind::Usage, -1, 0, "", "none");
}

}  // namespace

TEST(Faults, IllegalInstruction) {
  auto e = run_expecting_fault("nop\n.inst 0xFF\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::IllegalInstruction);
  EXPECT_EQ(e.core(), 0);
  EXPECT_EQ(e.pc(), 1);
  EXPECT_NE(e.reason().find("unknown opcode 255"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find(".inst 0x00000000000000ff"), std::string::npos) << e.what();
}

TEST(Faults, ReservedBitsMakeAnInstructionIllegal) {
  // nop with field a set: a word the encoder never produces.
  auto e = run_expecting_fault(".inst 0x100\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::IllegalInstruction);
  EXPECT_NE(e.reason().find("reserved"), std::string::npos) << e.what();
}

TEST(Faults, RunningOffTheEndOfTheProgram) {
  auto e = run_expecting_fault("li x1, 1\n");
  EXPECT_EQ(e.kind(), SimError::Kind::PcOutOfRange);
  EXPECT_EQ(e.pc(), 1);
}

TEST(Faults, TruncatedProgramImage) {
  auto bytes = arch::assemble("li x1, 1\nhalt\n").to_bytes();
  bytes.resize(bytes.size() - 3);
  EXPECT_THROW(arch::Program::from_bytes(bytes), arch::ProgramFormatError);
  try {
    arch::Program::from_bytes(bytes);
  } catch (const arch::ProgramFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Faults, OutOfBoundsScalarAccess) {
  auto e = run_expecting_fault("li x1, 0x100000\nlw x2, [l1: x1 + 0]\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
  EXPECT_EQ(e.pc(), 1);
  EXPECT_EQ(e.instruction(), "lw x2, [l1: x1]");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(std::string(e.what()).rfind(
                "core 0, pc 1, line 2 (`lw x2, [l1: x1]`): out-of-bounds load from l1[0]", 0),
            0u)
      << e.what();
  EXPECT_NE(e.reason().find("out-of-bounds"), std::string::npos) << e.what();
}

TEST(Faults, MisalignedAccess) {
  auto e = run_expecting_fault("li x1, 2\nlw x2, [ddr: x1 + 0]\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
  EXPECT_NE(e.reason().find("not 4-byte aligned"), std::string::npos) << e.what();
  auto v = run_expecting_fault("li x1, 16\nvld v1, [l2: x1]\nhalt\n");
  EXPECT_NE(v.reason().find("32-byte aligned"), std::string::npos) << v.what();
}

TEST(Faults, OutOfBoundsTileCommand) {
  auto e = run_expecting_fault(R"(
.data l1, 0xF0000
d: .dmadesc dtype=i32 shape=[1024, 1024]
.text
    li x1, 0
    dma.in l1:x1, ddr:x0, [x0 + d]
    halt
)");
  EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
  EXPECT_EQ(e.pc(), 1);
  EXPECT_NE(e.reason().find("DMA destination"), std::string::npos) << e.what();
}

TEST(Faults, BadDescriptor) {
  auto e = run_expecting_fault(R"(
.data l1, 0xF0000
d: .word 0, 0, 0
   .zero 64
.text
    mm.i8 x1, x2, x3, [x0 + d]
    halt
)");
  EXPECT_EQ(e.kind(), SimError::Kind::BadDescriptor);
  EXPECT_NE(e.reason().find("M, N, K must be"), std::string::npos) << e.what();
}

TEST(Faults, DeadlockOnACounterThatNeverArrives) {
  auto e = run_expecting_fault("li x1, 3\nwait sc, din, x1\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::Deadlock);
  EXPECT_NE(
      e.reason().find(
          "core 0: front end at pc 1 (`wait sc, din, x1`) waits for din counter >= 3 (it is 0)"),
      std::string::npos)
      << e.what();
}

TEST(Faults, DeadlockInAQueueWait) {
  auto e = run_expecting_fault("wait mm, din, 1\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::Deadlock);
  EXPECT_NE(e.reason().find("mm queue (wait from pc 0) waits for din counter >= 1 (it is 0)"),
            std::string::npos)
      << e.what();
}

TEST(Faults, DeadlockAtABarrierAfterAHalt) {
  auto e = run_expecting_fault(".core 0\nbarrier\nhalt\n.core 1\nhalt\n", 2);
  EXPECT_EQ(e.kind(), SimError::Kind::Deadlock);
  EXPECT_NE(e.reason().find("core 0: front end at pc 0 (`barrier`) waits at the barrier"),
            std::string::npos)
      << e.what();
  EXPECT_NE(e.reason().find("core 1: halted"), std::string::npos) << e.what();
}

TEST(Faults, RunawayLoopExhaustsTheBudget) {
  auto e = run_expecting_fault("loop: jal x0, loop\n", 1, 10000);
  EXPECT_EQ(e.kind(), SimError::Kind::Budget);
  EXPECT_EQ(e.pc(), 0);
  EXPECT_NE(e.reason().find("budget of 10000"), std::string::npos) << e.what();
}

TEST(Faults, HostAccessOutOfBounds) {
  sim::Simulator s(sim::SimConfig{.cores = 1});
  std::vector<uint8_t> b(16);
  EXPECT_THROW(s.write(arch::Space::L2, (4u << 20) - 8, b), SimError);
  EXPECT_THROW(s.read(arch::Space::L1, 0, 16, 3), SimError);
}

TEST(Faults, StepStopsWithoutThrowing) {
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble("li x1, 1\nli x2, 2\nli x3, 3\nhalt\n"));
  EXPECT_EQ(s.step(2), 2u);
  EXPECT_EQ(s.pc(0), 2);
  EXPECT_EQ(s.xreg(0, 2), 2u);
  EXPECT_EQ(s.step(10), 2u);
  EXPECT_TRUE(s.finished());
}

TEST(Faults, MalformedDescriptorsNameTheField) {
  struct Case {
    const char* data;
    const char* command;
    const char* reason;
  };
  const Case cases[] = {
      {".byte 0, 0, 5, 0\n.zero 68", "dma.in l1:x0, ddr:x0, [x0 + d]", "rank 5 not in 1..4"},
      {".byte 0, 0, 1, 2\n.zero 68", "dma.in l1:x0, ddr:x0, [x0 + d]", "unknown flag bits"},
      {".byte 12, 0, 1, 0\n.zero 68", "dma.in l1:x0, ddr:x0, [x0 + d]", "invalid dtype code"},
      // (the assembler refuses to write this one, so spell it in bytes)
      {".byte 0, 0, 1, 0\n.word 0, 4, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0\n.half 3, 0, 0, 0, 2, 0, 0, "
       "0",
       "dma.in l1:x0, ddr:x0, [x0 + d]", "padding of dim 0 exceeds"},
      {".byte 0\n.zero 79", "tadd.f32 x0, x0, x0, [x0 + d]", "rank 0 not in 1..4"},
      {".byte 1, 1, 0, 0\n.zero 76", "tadd.f32 x0, x0, x0, [x0 + d]", "reserved bytes"},
      {".vecdesc shape=[4097, 4096] a_stride=[0, 0] b_stride=[0, 0] d_stride=[0, 0]",
       "tadd.i8 x0, x0, x0, [x0 + d]", "exceeds the limit of 16777216"},
      {".word 16, 16, 16, 8, 16, 16\n.zero 28", "mm.i8 x0, x0, x0, [x0 + d]", "lda >= K"},
      {".mmdesc m=16 n=16 k=16", "mm.i8 x0, x0, x0, [x0 + 0xFFFF0]", "outside local L1"},
      // residual flag (8) + epilogue (1), residual dtype 12 (invalid)
      {".word 16, 16, 16, 16, 16, 16\n.byte 0, 0, 9, 12\n.zero 36", "mm.i8 x0, x0, x0, [x0 + d]",
       "invalid residual dtype"},
      // residual row stride 8 < N = 16
      {".word 16, 16, 16, 16, 16, 16\n.byte 0, 0, 9, 0\n.word 0, 0, 0, 0, 0, 16, 0, 0, 8",
       "mm.i8 x0, x0, x0, [x0 + d]", "ldr >= N"},
      // per-channel scale flag (4) without the epilogue flag
      {".word 16, 16, 16, 16, 16, 16\n.byte 0, 0, 4, 0\n.zero 36", "mm.i8 x0, x0, x0, [x0 + d]",
       "need the epilogue flag"},
      {".mmdesc m=16 n=16 k=16 scales=0x100000", "mm.i8 x0, x0, x0, [x0 + d]",
       "matrix scale tensor spans"},
      {".mmdesc m=16 n=16 k=16", "mm.i8 x0, x0, x0, [x0 + d + 2]", "not 4-byte aligned"},
  };
  for (const auto& c : cases) {
    auto e = run_expecting_fault(std::string(".data l1, 0xF0000\nd: ") + c.data + "\n.text\n" +
                                 c.command + "\nhalt\n");
    EXPECT_NE(e.reason().find(c.reason), std::string::npos) << c.command << " -> " << e.what();
    EXPECT_EQ(e.pc(), 0) << e.what();
  }
}

TEST(Faults, MisalignedTensorBase) {
  auto e = run_expecting_fault(
      ".data l1, 0xF0000\nd: .vecdesc shape=[8]\n.text\nli x1, 2\ntadd.f32 x1, x0, x0, [x0 + "
      "d]\nhalt\n");
  EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
  EXPECT_NE(e.reason().find("vector destination address 0x2 is not aligned to its 4-byte elements"),
            std::string::npos)
      << e.what();
}

TEST(Faults, WorkBudgetBoundsHostTime) {
  // Ten 4096-element vector commands against a budget of 20000 element operations:
  // the fifth command (work 20480) faults, naming the tadd instruction.
  sim::Simulator s(sim::SimConfig{.cores = 1, .max_work = 20000});
  s.load(arch::assemble(
      ".data l1, 0xF0000\nv: .vecdesc shape=[4096]\n.text\nli x1, 0\nli x2, 10\n"
      "loop: tadd.i8 x0, x0, x0, [x0 + v]\naddi x1, x1, 1\nblt x1, x2, loop\nfence\nhalt\n"));
  try {
    s.run();
    ADD_FAILURE() << "no fault";
  } catch (const SimError& e) {
    EXPECT_EQ(e.kind(), SimError::Kind::Budget);
    EXPECT_EQ(e.pc(), 2);
    EXPECT_NE(e.reason().find("work budget of 20000"), std::string::npos) << e.what();
  }
}

TEST(Faults, EmptyTensorsWithHugeOtherDimsAreNoOps) {
  // shape [65536, 65536, 65536, 0] has no elements; the engines must not walk
  // the other dimensions (found by fuzzing).
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble(
      ".data l1, 0xF0000\nv: .vecdesc shape=[65536, 65536, 65536, 0] a_stride=[0, 0, 0, 0] "
      "b_stride=[0, 0, 0, 0] d_stride=[0, 0, 0, 0]\n"
      "d: .dmadesc dtype=i8 shape=[65536, 65536, 65536, 0] src_stride=[0, 0, 0, 0] dst_stride=[0, "
      "0, 0, 0]\n"
      ".text\ntredsum.f32 x0, x0, [x0 + v]\ntadd.i8 x0, x0, x0, [x0 + v]\ndma.in l1:x0, ddr:x0, "
      "[x0 + d]\nfence\nhalt\n"));
  s.run();
  EXPECT_EQ(s.stats().commands, 3u);
}

TEST(Faults, StoreIntoAnArgumentTheKernelOnlyReads) {
  // `a` (0x1000, 16 int32) is read-only for the call, `b` (0x1040) writable: loads from `a`
  // and stores to `b` run; a store into `a`, by the front end or by a DMA, faults naming it,
  // and `a` keeps its bytes (what lets a runtime keep constants in place between runs).
  std::vector<sim::DdrArray> arrays = {{0x1000, 64, "a", 4, false}, {0x1040, 64, "b", 4, true}};
  sim::Simulator s;
  std::vector<uint8_t> seven(64, 7);
  s.write(arch::Space::DDR, 0x1000, seven);
  s.load(arch::assemble(
      "li x1, 0x1000\nlw x2, [ddr: x1 + 4]\nli x3, 0x1040\nsw x2, [ddr: x3 + 8]\nhalt\n"));
  s.set_ddr_arrays(arrays);
  s.run();
  EXPECT_EQ(s.read(arch::Space::DDR, 0x1048, 4), std::vector<uint8_t>(4, 7));
  const char* programs[] = {
      "li x1, 0x1000\nli x2, 99\nsw x2, [ddr: x1 + 8]\nhalt\n",
      ".data l1, 0x100\nd: .dmadesc dtype=i32 shape=[4]\n.text\nli x1, 0x1004\nli x2, 0x100\n"
      "dma.out ddr:x1, l1:x2, [x0 + d]\nwait sc, dout, 1\nhalt\n"};
  for (const char* program : programs) {
    s.load(arch::assemble(program));
    s.set_ddr_arrays(arrays);
    try {
      s.run();
      ADD_FAILURE() << "no fault raised: " << program;
    } catch (const SimError& e) {
      EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
      EXPECT_NE(e.reason().find("in `a`, an argument the kernel only reads"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(s.read(arch::Space::DDR, 0x1000, 64), seven);
  }
}

TEST(Faults, AccessOutsideTheArraysOfACall) {
  // Two arrays of 16 int32 at 0x1000 and 0x1040: a store to element 16 of the first is the
  // second's element 0, which a call that limits DDR to its arrays refuses.
  const char* store = "li x1, 0x1040\nli x2, 99\nsw x2, [ddr: x1 + 0]\nhalt\n";
  std::vector<sim::DdrArray> arrays = {{0x1000, 64, "a", 4}};
  sim::Simulator s;
  s.load(arch::assemble(store));
  s.set_ddr_arrays(arrays);
  try {
    s.run();
    ADD_FAILURE() << "no fault raised";
  } catch (const SimError& e) {
    EXPECT_EQ(e.kind(), SimError::Kind::MemoryFault);
    EXPECT_EQ(e.pc(), 2);
    EXPECT_NE(e.reason().find("store to ddr [0x1040, 0x1044) is outside the arrays of the call: "
                              "element 16 of `a`, which has 16 elements"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(s.read(arch::Space::DDR, 0x1040, 4), std::vector<uint8_t>(4, 0));
  // load() lifts the limit: without one, the store runs.
  s.load(arch::assemble(store));
  s.run();
  EXPECT_EQ(s.read(arch::Space::DDR, 0x1040, 1)[0], 99);
}
