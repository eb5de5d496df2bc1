// tests/cpp/runtime/test_executable.cc — runtime::Executable (executable.h) built in C++ from an
// assembled TC1 kernel: a run checked by hand, save/load, every truncation and a sample of
// resealed corruptions named, overlapping live buffers and bad inputs rejected.
#if TILECORE_ENABLE_NPU
#include "tilecore/runtime/executable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "increment_executable.h"
#include "tilecore/arch/assembler.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/runtime/npu_module.h"

namespace {

using namespace tilecore;  // NOLINT(*)
using runtime::ExecBuffer;
using runtime::ExecStep;
using runtime::Executable;
using runtime::ExecutableSpec;
using test_fixtures::Pipeline;

std::string Message(const std::function<void()>& f) {
  try {
    f();
  } catch (const ffi::Error& e) {
    return std::string(e.kind()) + ": " + std::string(e.message());
  }
  return "no error";
}

ffi::NDArray Host(std::vector<int32_t> v) {
  ffi::NDArray a = ffi::NDArray::Empty({int64_t(v.size())}, ffi::StringToDLDataType("int32"),
                                       DLDevice{kDLCPU, 0});
  std::memcpy(a.data<int32_t>(), v.data(), v.size() * 4);
  return a;
}

TEST(Executable, RunsAndCountsCycles) {
  Executable e = Executable::Build(Pipeline());
  auto out = e.Run({{"x", Host({1, 2, 3, -4})}});
  ASSERT_EQ(out.size(), 1u);
  const int32_t* y = out.at("y").data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(y, y + 4), (std::vector<int32_t>{3, 4, 5, -2}));
  EXPECT_NE(e->last_stats().find("\"cycles\""), std::string::npos);
  EXPECT_NE(e->last_trace().find("\"name\": \"inc1\""), std::string::npos);
}

TEST(Executable, SaveLoadRoundTrip) {
  Executable e = Executable::Build(Pipeline());
  std::string bytes = e.SaveToBytes();
  Executable again = Executable::LoadFromBytes(bytes);
  EXPECT_EQ(again.SaveToBytes(), bytes);
  EXPECT_EQ(again->spec.steps[1].debug.at("k"), "v");
  EXPECT_EQ(again->spec.steps[1].source_node, "/Add_1");
}

TEST(Executable, EveryTruncationIsNamed) {
  std::string bytes = Executable::Build(Pipeline()).SaveToBytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string m =
        Message([&] { Executable::LoadFromBytes(std::string_view(bytes).substr(0, n)); });
    ASSERT_EQ(m.rfind("ValueError: ", 0), 0u) << n << ": " << m;
    ASSERT_NE(m.find(n < 8 ? "magic" : "byte"), std::string::npos) << n << ": " << m;
  }
}

TEST(Executable, ResealedCorruptionNeverCrashes) {
  std::string good = Executable::Build(Pipeline()).SaveToBytes();
  std::mt19937 rng(3);
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string b = good;
    size_t at = 32 + rng() % (b.size() - 32);
    b[at] = char(b[at] ^ (1 << (rng() % 8)));
    // reseal: recompute the checksum so the parser meets the damage
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 32; k < b.size(); ++k) h = (h ^ uint8_t(b[k])) * 0x100000001b3ull;
    for (int k = 0; k < 8; ++k) b[24 + k] = char((h >> (8 * k)) & 0xFF);
    std::string m = Message([&] { Executable::LoadFromBytes(b); });
    if (m != "no error") {
      ASSERT_EQ(m.rfind("ValueError: ", 0), 0u) << at << ": " << m;
      ++errors;
    }
  }
  EXPECT_GT(errors, 500);  // flips in names, assembly text or padding can leave a valid file
  std::string flipped = good;
  flipped[40] = char(flipped[40] ^ 1);
  EXPECT_NE(Message([&] { Executable::LoadFromBytes(flipped); }).find("byte 24: checksum mismatch"),
            std::string::npos);
}

TEST(Executable, OverlappingLiveBuffersRejected) {
  ExecutableSpec s = Pipeline();
  s.buffers[2].offset = 64;  // y on t's bytes: both live at step 1
  EXPECT_NE(
      Message([&] {
        Executable::Build(s);
      }).find("`t` [64, 80) and buffer 2 `y` [64, 80) overlap while both are live (steps 1..1)"),
      std::string::npos);
  s = Pipeline();
  s.buffers[1].offset = 0;  // t on x's bytes: both live at step 0
  EXPECT_NE(Message([&] { Executable::Build(s); }).find("overlap while both are live (steps 0..0)"),
            std::string::npos);
}

TEST(Executable, BadInputsListTheSignature) {
  Executable e = Executable::Build(Pipeline());
  EXPECT_EQ(Message([&] {
              e.Run({{"z", Host({1, 2, 3, 4})}});
            }),
            "ValueError: unknown input `z`; the executable expects x: int32[4]");
  EXPECT_EQ(Message([&] {
              e.Run({{"x", Host({1, 2, 3})}});
            }),
            "ValueError: input `x` is int32[3]; the executable expects x: int32[4]");
  EXPECT_EQ(Message([&] { e.Run({}); }),
            "ValueError: missing input `x`; the executable expects x: int32[4]");
}

}  // namespace
#endif  // TILECORE_ENABLE_NPU
