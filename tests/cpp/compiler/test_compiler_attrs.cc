// tests/cpp/compiler/test_compiler_attrs.cc — the table of the compiler's `tc_*` attributes
// and CheckCompilerAttrs (compiler_attrs.h); HasStrategy refusing what it refuses.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tilecore/compiler/compiler_attrs.h"
#include "tilecore/compiler/strategy.h"
#include "tilecore/ffi/container/array.h"

using namespace tilecore;            // NOLINT
using namespace tilecore::compiler;  // NOLINT

namespace {
Map<String, Any> Attrs(std::initializer_list<std::pair<String, Any>> kv) {
  Map<String, Any> m;
  for (const auto& [k, v] : kv) m.Set(k, v);
  return m;
}
}  // namespace

TEST(CompilerAttrs, TheTableIsWellFormed) {
  std::set<std::string> names;
  for (const CompilerAttr& a : CompilerAttrs()) {
    std::string name = a.name;
    EXPECT_TRUE(names.insert(name).second) << "declared twice: " << name;
    EXPECT_EQ(name.rfind("tc_", 0), 0u) << name;
    EXPECT_EQ(a.kind == AttrKind::kAttrs, name.size() > 2 && name.substr(name.size() - 2) == ".*")
        << name;
    EXPECT_FALSE(std::string(a.doc).empty()) << name;
  }
  EXPECT_GE(names.size(), 50u);
  EXPECT_STREQ(AttrKindName(AttrKind::kInts), "ints");
}

TEST(CompilerAttrs, ChecksNamesAndKinds) {
  EXPECT_EQ(CheckCompilerAttrs("Conv", {}), "");
  EXPECT_EQ(CheckCompilerAttrs("Conv", Attrs({{"tc_x_scale", 1},
                                              {"tc_residual", true},
                                              {"tc_activation", String("Relu")},
                                              {"tc_in_l2", ffi::Array<Any>{}},
                                              {"_opset", 17},
                                              {"group", String("not mine")}})),
            "");
  std::string why = CheckCompilerAttrs("Conv", Attrs({{"tc_activaton", String("Relu")}}));
  EXPECT_EQ(why.rfind("Conv: unknown compiler attribute `tc_activaton` (declared: ", 0), 0u) << why;
  EXPECT_NE(why.find("did you mean `tc_activation`?"), std::string::npos) << why;
  EXPECT_EQ(CheckCompilerAttrs("Conv", Attrs({{"tc_x_scale", String("0.1")}})),
            "Conv: attribute `tc_x_scale` is a string; it is a float");
  EXPECT_EQ(CheckCompilerAttrs("MatMul", Attrs({{"tc_in_l2", ffi::Array<Any>{Any(0), Any(0.5)}}})),
            "MatMul: attribute `tc_in_l2` is a list holding a float; it is a list of ints");
  EXPECT_EQ(CheckCompilerAttrs("MatMul", Attrs({{"tc_y_heads", Any()}})),
            "MatMul: attribute `tc_y_heads` is None; it is an int");
  // a family: the fused op's ONNX attributes pass, its tc_ ones are checked
  EXPECT_EQ(CheckCompilerAttrs("MatMul", Attrs({{"tc_lut.alpha", 0.5}})), "");
  EXPECT_EQ(CheckCompilerAttrs("MatMul", Attrs({{"tc_lut.tc_y_scale", String("x")}})),
            "MatMul: attribute `tc_lut.tc_y_scale` is a string; it is a float");
  EXPECT_NE(CheckCompilerAttrs("MatMul", Attrs({{"tc_context.tc_lut", 1}}))
                .find("unknown compiler attribute `tc_context.tc_lut`"),
            std::string::npos);
}

TEST(CompilerAttrs, HasStrategyRefusesFirst) {
  TensorSpec a(ffi::Array<int64_t>{4, 8}, ir::DataType::Float(32)),
      b(ffi::Array<int64_t>{8, 3}, ir::DataType::Float(32));
  EXPECT_EQ(HasStrategy("MatMul", Attrs({{"tc_y_heads", 2.5}}), {a, b}),
            "MatMul: attribute `tc_y_heads` is a float; it is an int");
}
