// tests/cpp/compiler/test_strategy.cc — the op-strategy registry: HasStrategy reasons,
// LowerOp's errors, and the shape of what a strategy produces.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "compiler/kernel_util.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/compiler/strategy.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ir/functor.h"
#include "tilecore/transform/default_kernel_pipeline.h"

using namespace tilecore;            // NOLINT
using namespace tilecore::compiler;  // NOLINT
using ir::DataType;

namespace {
TensorSpec F32(std::initializer_list<int64_t> s) {
  return TensorSpec(ffi::Array<int64_t>(s), DataType::Float(32));
}

int CountCalls(const ir::PrimFunc& f, const std::string& op) {
  struct V : ir::IRVisitor {
    std::string op;
    int n = 0;
    void VisitExpr_(const ir::CallNode* c) override {
      if (std::string(c->op) == op) ++n;
      ir::IRVisitor::VisitExpr_(c);
    }
  } v;
  v.op = op;
  v.VisitStmt(f->body);
  return v.n;
}
}  // namespace

TEST(Strategy, RegistryListsTheFamilies) {
  auto names = ListStrategies();
  for (const char* n : {"MatMul", "Gemm", "Conv", "Add", "Relu", "Sigmoid", "Reshape"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_TRUE(ffi::Function::GetGlobal(std::string("compiler.strategy.") + n).has_value()) << n;
  }
}

TEST(Strategy, HasStrategyGivesReasons) {
  ffi::Map<ffi::String, ffi::Any> none;
  EXPECT_EQ(HasStrategy("MatMul", none, {F32({4, 8}), F32({8, 3})}), "");
  EXPECT_NE(HasStrategy("NoSuchOp", none, {F32({4})}).find("no npu strategy"), std::string::npos);
  TensorSpec i64(ffi::Array<int64_t>{4}, DataType::Int(64));
  EXPECT_NE(HasStrategy("Add", none, {i64, i64}).find("64-bit"), std::string::npos);
  EXPECT_NE(HasStrategy("MatMul", none, {F32({4, 8}), F32({7, 3})}).find("inner"),
            std::string::npos);
}

TEST(Strategy, LowerOpRejectsUnsupportedWithTheReason) {
#if !TILECORE_ENABLE_NPU
  GTEST_SKIP() << "tilecore was built with TILECORE_ENABLE_NPU=OFF: no npu target to lower for";
#endif
  ffi::Map<ffi::String, ffi::Any> none;
  auto t = target::Target::Parse("npu -cores=2");
  try {
    LowerOp("MatMul", none, {F32({4, 8}), F32({7, 3})}, {F32({4, 3})}, t);
    FAIL() << "expected a ValueError";
  } catch (const ffi::Error& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions"), std::string::npos);
  }
  EXPECT_THROW(TensorSpec(ffi::Array<int64_t>{-1}, DataType::Float(32)), ffi::Error);
}

TEST(Strategy, MatMulUsesTheMatrixEngineAndTheCores) {
#if !TILECORE_ENABLE_NPU
  GTEST_SKIP() << "tilecore was built with TILECORE_ENABLE_NPU=OFF: no npu target to lower for";
#endif
  ffi::Map<ffi::String, ffi::Any> none;
  auto t = target::Target::Parse("npu -cores=4");
  ir::PrimFunc f = LowerOp("MatMul", none, {F32({300, 70}), F32({70, 200})}, {F32({300, 200})}, t);
  EXPECT_EQ(f->params.size(), 3u);
  EXPECT_GE(CountCalls(f, "tile.mm"), 4);  // full and remainder tiles in M and N
  EXPECT_GT(CountCalls(f, "tile.dma_copy"), 0);
  // the cores loop, under the allocations shared by the cores (weights staged in L2)
  ir::Stmt body = f->body;
  while (auto alloc = body.as<ir::AllocateNode>()) body = alloc->body;
  auto loop = body.as<ir::ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->kind, ir::ForKind::kCores);
  // the kernel passes the whole pipeline, L1 plan included
  ir::IRModule mod(ffi::Map<ffi::String, ir::PrimFunc>{{"matmul", f}});
  EXPECT_NO_THROW(transform::DefaultKernelPipeline(2)(mod));
}

TEST(Strategy, NestedLocalBytesAddsTheLocalBuffersNestedInOneAnother) {
  using namespace compiler::detail;                          // NOLINT
  ir::Buffer a = Local({16, 16}, DataType::Float(32), "a");  // 1024 bytes
  ir::Buffer b = Local({8}, DataType::Int(8), "b");          // 8
  ir::Buffer c = Local({100}, DataType::Int(32), "c");       // 400
  ir::Buffer d = Local({3, 5}, DataType::Int(16), "d");      // 30
  ir::Buffer l2 = ir::DeclBuffer({I32(4096)}, DataType::Int(8), ffi::String("l2"), "shared");
  ir::Stmt leaf = Intrin("tir.barrier", {});
  // a holds while b, then (in a loop) c: a and the larger of the two
  ir::Stmt s =
      ir::Allocate(a, Seq({ir::Allocate(b, leaf),
                           Loop("i", 4, [&](ir::PrimExpr) { return ir::Allocate(c, leaf); })}));
  EXPECT_EQ(NestedLocalBytes(s), 1024 + 400);
  // a shared buffer is not in L1; of two branches, the larger
  EXPECT_EQ(NestedLocalBytes(ir::Allocate(l2, s)), 1424);
  ir::Stmt branches = ir::IfThenElse(ir::Var(ffi::String("p")) > I32(0), ir::Allocate(d, leaf), s);
  EXPECT_EQ(NestedLocalBytes(ir::Allocate(b, branches)), 8 + 1424);
  EXPECT_EQ(NestedLocalBytes(leaf), 0);
}

TEST(Strategy, NestedLocalBytesIsAtMostTheL1TheBuffersArePlacedIn) {
#if !TILECORE_ENABLE_NPU
  GTEST_SKIP() << "tilecore was built with TILECORE_ENABLE_NPU=OFF: no npu target to lower for";
#endif
  // PlanLocalMemory's placement (the cost model reads it as local_bytes) is the oracle: the
  // bound a search refuses plans by never passes it
  ffi::Map<ffi::String, ffi::Any> none;
  auto t = target::Target::Parse("npu -cores=4");
  for (int64_t k : {1, 3}) {
    ir::PrimFunc f = LowerOp("Conv", none, {F32({1, 64, 28, 28}), F32({128, 64, k, k})},
                             {F32({1, 128, 28 - k + 1, 28 - k + 1})}, t);
    KernelCost cost = EstimateStrategy(f, t.GetInt("l1"), 4);
    EXPECT_GT(compiler::detail::NestedLocalBytes(f->body), 0) << k;
    EXPECT_LE(compiler::detail::NestedLocalBytes(f->body), cost.local_bytes) << k;
  }
}

// Items no more than the cores, from core 0: core k runs item k under `core < count` (no loop,
// a guard a layer group's handoff reads); a rotation or more items than cores keep the loop.
TEST(Strategy, ForEachItemGuardsOneItemACore) {
  using namespace tilecore::ir;  // NOLINT
  Var core("c", DataType::Int(32));
  std::vector<PrimExpr> items;
  auto body = [&](PrimExpr t) {
    items.push_back(t);
    return Evaluate(t);
  };
  int64_t rotation = 0;
  Stmt s = compiler::detail::ForEachItem(core, 4, 3, &rotation, "t", body);
  const auto* guard = s.as<IfThenElseNode>();
  ASSERT_NE(guard, nullptr);
  const auto* lt = guard->condition.as<LTNode>();
  ASSERT_NE(lt, nullptr);
  EXPECT_TRUE(lt->a.same_as(core));
  EXPECT_EQ(as_const_int(lt->b).value_or(-1), 3);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_TRUE(items[0].same_as(core));  // item k on core k
  EXPECT_EQ(rotation, 3);
  // the next items start on core 3: a loop (items 0.. on cores 3, 0, 1, ...)
  EXPECT_EQ(compiler::detail::ForEachItem(core, 4, 2, &rotation, "t", body).as<IfThenElseNode>(),
            nullptr);
  rotation = 0;
  EXPECT_EQ(compiler::detail::ForEachItem(core, 4, 5, &rotation, "t", body).as<IfThenElseNode>(),
            nullptr);
}
