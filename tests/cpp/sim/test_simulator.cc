// tests/cpp/sim/test_simulator.cc — modes, statistics, traces, determinism, target
// strings, CSRs, and the instructions not covered by the per-unit tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "programs.h"
#include "reference.h"

using namespace tilecore;
using arch::Space;

namespace {

const char* kPipeline = R"(
.data l1, 0xF0000
d: .dmadesc dtype=i32 shape=[32, 32]
v: .vecdesc shape=[32, 32]
.text
    li x1, 0x1000
    li x2, 0x20000
    dma.in l1:x1, ddr:x0, [x0 + d]
    wait vec, din, 1
    tadds.i32 x2, x1, [x0 + v]
    wait dout, vec, 1
    dma.out l2:x0, l1:x2, [x0 + d]
    wait sc, dout, 1
    halt
)";

}  // namespace

TEST(Simulator, ModesAgreeOnResultsAndCycles) {
  auto run = [](sim::Mode mode) {
    sim::Simulator s(sim::SimConfig{.cores = 2, .mode = mode});
    s.load(arch::assemble(
        std::string(kPipeline).replace(std::string(kPipeline).find("v: .vecdesc shape=[32, 32]"),
                                       26, "v: .vecdesc shape=[32, 32] scalar=5")));
    std::vector<uint8_t> in(4096);
    for (size_t i = 0; i < in.size(); i += 4) in[i] = uint8_t(i / 4);
    s.write(Space::DDR, 0, in);
    s.run();
    return std::make_pair(s.read(Space::L2, 0, 4096), s.stats().cycles);
  };
  auto [full, cycles] = run(sim::Mode::FunctionalTiming);
  auto [func, fcycles] = run(sim::Mode::Functional);
  auto [timing, tcycles] = run(sim::Mode::Timing);
  EXPECT_EQ(full[0], 5);
  EXPECT_EQ(full[4 * 7], 12);
  EXPECT_EQ(func, full);
  EXPECT_EQ(fcycles, 0u);                            // functional mode charges nothing
  EXPECT_EQ(tcycles, cycles);                        // timing mode charges the same
  EXPECT_EQ(timing, std::vector<uint8_t>(4096, 0));  // but moves no data
}

TEST(Simulator, StatisticsAddUpToTheMakespan) {
  sim::Simulator s(sim::SimConfig{.cores = 2});
  s.load(arch::assemble(kPipeline));
  s.run();
  auto st = s.stats();
  for (const auto& c : st.cores)
    for (const auto& e : c.agents)
      EXPECT_EQ(e.busy + e.stalled_dep + e.stalled_bw + e.idle, st.cycles);
  EXPECT_EQ(st.commands, 6u);
  EXPECT_EQ(st.instructions, 18u);
  EXPECT_EQ(st.ddr_read, 2u * 4096u);
  EXPECT_EQ(st.l2_written, 2u * 4096u);
  // each core's 4 KiB from the DDR take its bandwidth for 4096 / 64 cycles
  for (const auto& c : st.cores) EXPECT_EQ(c.ddr_cycles, 4096u / arch::tc1::kDdrBytesPerCycle);
  EXPECT_NE(st.to_string().find("core 1 dout"), std::string::npos);
  EXPECT_NE(st.to_json().find("\"stalled_bw\""), std::string::npos);
}

TEST(Simulator, DeterministicAcrossRuns) {
  auto once = [] {
    sim::Simulator s(sim::SimConfig{.cores = 4, .trace = true});
    s.load(arch::assemble(tc1_programs::gemm_i8(64, 64, 64, 16, 32, 4)));
    s.run();
    return s.stats().to_json() + s.trace_json();
  };
  EXPECT_EQ(once(), once());
}

TEST(Simulator, ChromeTraceHasOneEventPerCommand) {
  sim::Simulator s(sim::SimConfig{.cores = 1, .trace = true});
  s.load(arch::assemble(kPipeline));
  s.run();
  std::string path = ::testing::TempDir() + "tc1_trace.json";
  s.write_trace(path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string json = ss.str();
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\"", 0), 0u);
  size_t events = 0;
  for (size_t p = json.find("\"ph\": \"X\", \"name\": \""); p != std::string::npos;
       p = json.find("\"ph\": \"X\", \"name\": \"", p + 1))
    if (json.compare(p + 20, 3, "dma") == 0 || json.compare(p + 20, 5, "tadds") == 0) ++events;
  EXPECT_EQ(events, 3u);
  EXPECT_NE(json.find("\"thread_name\", \"pid\": 0, \"tid\": 3, \"args\": {\"name\": \"mm\"}"),
            std::string::npos);
  // 4 KiB from the DDR at 64 B/cycle, then 4 KiB into the L2 at 256 B/cycle.
  EXPECT_NE(json.find("\"ddr_cycles\": 64, \"l2_cycles\": 0}"), std::string::npos);
  EXPECT_NE(json.find("\"ddr_cycles\": 0, \"l2_cycles\": 16}"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Simulator, TargetStrings) {
  auto c = sim::SimConfig::from_target("npu -cores=8 -ddr=64MiB -mode=timing -queue=4 -trace");
  EXPECT_EQ(c.cores, 8);
  EXPECT_EQ(c.ddr_bytes, 64u << 20);
  EXPECT_EQ(c.mode, sim::Mode::Timing);
  EXPECT_EQ(c.queue_depth, 4);
  EXPECT_TRUE(c.trace);
  EXPECT_THROW(sim::SimConfig::from_target("cpu"), sim::SimError);
  EXPECT_THROW(sim::SimConfig::from_target("npu -cores=17"), sim::SimError);
  EXPECT_THROW(sim::SimConfig::from_target("npu -fast"), sim::SimError);
  EXPECT_THROW(sim::Simulator(sim::SimConfig{.cores = 0}), sim::SimError);
}

TEST(Simulator, CountersAndCycleCsrs) {
  // cnt.din reads the counter as of the current cycle: 0 right after issue,
  // 1 after the wait; `cycle` is the core's clock.
  ref::Run r;
  r.go("d: .dmadesc dtype=i8 shape=[64]",
       "li x1, 0\ndma.in l1:x1, ddr:x0, [x0 + d]\ncsrr x10, cnt.din\nwait sc, din, 1\ncsrr x11, "
       "cnt.din\ncsrr x12, cycle\n"
       "csrr x13, cnt.dout\ncsrr x14, cnt.mm\ncsrr x15, cnt.vec",
       {});
  EXPECT_EQ(r.sim.xreg(0, 10), 0u);
  EXPECT_EQ(r.sim.xreg(0, 11), 1u);
  // li (1) + issue (1) + csrr (1); din ends at 1 + 1 + 200 = 202; wait leaves at 203,
  // csrr cnt.din at 203, csrr cycle reads 204.
  EXPECT_EQ(r.sim.xreg(0, 12), 204u);
  EXPECT_EQ(r.sim.xreg(0, 13) + r.sim.xreg(0, 14) + r.sim.xreg(0, 15), 0u);
}

TEST(Simulator, CompareLessOrEqualAndQueueBackPressure) {
  ref::Run r;
  std::vector<double> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {2, 2, 2, 2, 6, 6, 6, 6};
  r.go("", "vld v1, [l1: x0 + 0x1000]\nvld v2, [l1: x0 + 0x1020]\nvcmple.u32 p1, v1, v2",
       {{0x1000, ref::encode_all(ref::DType::U32, a)},
        {0x1020, ref::encode_all(ref::DType::U32, b)}});
  EXPECT_EQ(r.sim.preg(0, 1), 0b00110011u);  // 1<=2 2<=2 3>2 4>2 5<=6 6<=6 7>6 8>6
  // A queue of depth 1 (an entry is freed when its command starts): dma 1 starts at
  // 1 and ends at 202 (1 beat + 200); dma 2, issued at 2, waits in the queue until
  // 202; dma 3 finds the queue full at 3 and the front end stalls until dma 2
  // starts at 202, issues (203), halts (204). dma 2 ends 403, dma 3 runs 403 -> 604.
  sim::Simulator s(sim::SimConfig{.cores = 1, .queue_depth = 1});
  s.load(
      arch::assemble(".data l1, 0xF0000\nd: .dmadesc dtype=i8 shape=[64]\n.text\nli x1, 0\n"
                     "dma.in l1:x1, ddr:x0, [x0 + d]\ndma.in l1:x1, ddr:x0, [x0 + d]\ndma.in "
                     "l1:x1, ddr:x0, [x0 + d]\nhalt\n"));
  s.run();
  EXPECT_EQ(s.stats().cores[0].agents[0].stalled_dep, 202u - 3u);
  EXPECT_EQ(s.stats().cycles, 604u);
}

TEST(Simulator, NothingLoadedMeansNothingToRun) {
  sim::Simulator s;
  EXPECT_TRUE(s.finished());
  s.run();
  EXPECT_EQ(s.step(5), 0u);
  s.load(arch::Program{});
  s.run();
  EXPECT_EQ(s.stats().cycles, 0u);
}

TEST(Simulator, InstructionTextAndSourceLines) {
  sim::Simulator s(sim::SimConfig{.cores = 1});
  s.load(arch::assemble("# comment\n\nli x1, 5\nloop: addi x1, x1, -1\nbne x1, x0, loop\nhalt\n"));
  EXPECT_EQ(s.instruction_at(0, 2), "bne x1, x0, @1");
  EXPECT_EQ(s.source_line(0, 2), 5);
  EXPECT_EQ(s.instruction_at(0, 9), "");
  EXPECT_EQ(s.source_line(0, 9), 0);
}
