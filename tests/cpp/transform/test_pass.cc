// tests/cpp/transform/test_pass.cc — Pass, Sequential, PassContext, instruments.
#include <gtest/gtest.h>

#include <filesystem>

#include "tilecore/ir/op.h"
#include "tilecore/transform/simplify.h"
#include "tilecore/transform/unroll_loop.h"

using namespace tilecore;             // NOLINT
using namespace tilecore::ir;         // NOLINT
using namespace tilecore::transform;  // NOLINT

namespace {
IRModule Module() {
  Buffer A = DeclBuffer({8}, DataType::Int(32), "A");
  Var i("i");
  return IRModule::FromFunction(PrimFunc({A->data},
                                         For(i, 0, 8, ForKind::kSerial, BufferStore(A, i + 0, {i})),
                                         Map<Var, Buffer>{{A->data, A}}));
}
}  // namespace

TEST(Pass, DisabledAndOptLevel) {
  IRModule m = Module();
  PassContext ctx = PassContext::Create();
  ctx->disabled.push_back("Simplify");
  EXPECT_TRUE(Simplify()(m, ctx).same_as(m));
  ctx = PassContext::Create();
  ctx->opt_level = -1;
  EXPECT_TRUE(Simplify()(m, ctx).same_as(m));
  EXPECT_FALSE(Simplify()(m, PassContext::Create()).same_as(m));
}

TEST(Pass, TimingAndDumps) {
  PassContext ctx = PassContext::Create();
  PassInstrument timing = PassTimingInstrument();
  auto dir = std::filesystem::temp_directory_path() / "tilecore_test_dump_ir";
  std::filesystem::remove_all(dir);
  ctx->instruments.push_back(timing);
  ctx->instruments.push_back(DumpIRInstrument(dir.string()));
  {
    PassContextScope scope(ctx);
    Sequential({Simplify(), UnrollLoop()})(Module());
  }
  std::string text = RenderPassTiming(timing);
  EXPECT_NE(text.find("Sequential: "), std::string::npos);
  EXPECT_NE(text.find("  Simplify: "), std::string::npos);
  EXPECT_NE(text.find("  UnrollLoop: "), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "001_Simplify_before.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "002_Simplify_after.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir / "005_Sequential_after.txt"));
  std::filesystem::remove_all(dir);
}

TEST(Pass, BadConfigTypeIsAnError) {
  PassContext ctx = PassContext::Create();
  ctx->config.Set("transform.UnrollLoop.max_extent", ffi::Any("many"));
  try {
    UnrollLoop()(Module(), ctx);
    FAIL();
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.message()).find("option `transform.UnrollLoop.max_extent` must be int"),
              std::string::npos);
  }
}
