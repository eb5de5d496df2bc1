/*
 * tests/cpp/ffi/test_structural.cc — StructuralEqual, GetFirstMismatch and
 * StructuralHash (structural.h): each rule, the mismatch path it reports, and
 * agreement of hash with equality.
 */
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "small_stack.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/structural.h"

namespace {

using namespace tilecore::ffi;  // NOLINT(*)
using tilecore::testing::RunOnSmallStack;
using Paths = std::optional<std::pair<std::string, std::string>>;

Any Obj(int64_t value, const std::string& name, Any payload) {
  return Function::GetGlobalRequired("testing.make_test_object")(value, name, payload);
}
Any Var(const std::string& name) {
  return Function::GetGlobalRequired("testing.make_test_var")(name);
}
Any Let(Any var, Any value, Any body) {
  return Function::GetGlobalRequired("testing.make_test_let")(var, value, body);
}
Any I(int64_t v) { return Any(v); }

Paths P(const std::string& lhs, const std::string& rhs) { return std::make_pair(lhs, rhs); }

/*! \brief Checks equality, the mismatch paths, and that equal values hash equal. */
void ExpectEqual(const Any& a, const Any& b, bool map_free_vars = false) {
  EXPECT_TRUE(StructuralEqual(a, b, map_free_vars));
  EXPECT_TRUE(StructuralEqual(b, a, map_free_vars));
  EXPECT_EQ(GetFirstMismatch(a, b, map_free_vars), std::nullopt);
  EXPECT_EQ(StructuralHash(a, map_free_vars), StructuralHash(b, map_free_vars));
}

TEST(StructuralEqual, PODsByValue) {
  ExpectEqual(I(3), I(3));
  ExpectEqual(Any(), Any());
  ExpectEqual(Any(2.5), Any(2.5));
  ExpectEqual(Any(std::nan("")), Any(-std::nan("1")));  // NaN equals NaN, whatever its payload
  ExpectEqual(Any(0.0), Any(-0.0));
  ExpectEqual(Any(StringToDLDataType("int8")), Any(StringToDLDataType("int8")));
  ExpectEqual(Any(DLDevice{kDLCPU, 0}), Any(DLDevice{kDLCPU, 0}));
  EXPECT_EQ(GetFirstMismatch(I(3), I(4)), P("root", "root"));
  // Kinds never mix: an int is not a float or a bool.
  EXPECT_FALSE(StructuralEqual(I(1), Any(1.0)));
  EXPECT_FALSE(StructuralEqual(I(1), Any(true)));
  EXPECT_FALSE(StructuralEqual(Any(), I(0)));
  EXPECT_FALSE(StructuralEqual(Any(StringToDLDataType("int8")), Any(StringToDLDataType("uint8"))));
  EXPECT_FALSE(StructuralEqual(Any(DLDevice{kDLCPU, 0}), Any(DLDevice{kDLCPU, 1})));
  EXPECT_NE(StructuralHash(I(1)), StructuralHash(Any(1.0)));
  EXPECT_NE(StructuralHash(I(1)), StructuralHash(Any(true)));
  EXPECT_NE(StructuralHash(I(1)), StructuralHash(I(2)));
}

TEST(StructuralEqual, StringsByBytesWhateverTheirForm) {
  Any small("abc");                        // inline small string
  Any object(String(std::string("abc")));  // a Str object
  ASSERT_EQ(small.type_index(), kTCFFISmallStr);
  ASSERT_EQ(object.type_index(), kTCFFIStr);
  ExpectEqual(small, object);
  ExpectEqual(Any("a longer string"), Any(String("a longer string")));
  EXPECT_EQ(GetFirstMismatch(Any("abc"), Any("abd")), P("root", "root"));
  // Bytes are not strings.
  EXPECT_FALSE(StructuralEqual(Any("abc"), Any(Bytes(std::string("abc")))));
  ExpectEqual(Any(Bytes(std::string("0123456789"))), Any(Bytes(std::string("0123456789"))));
}

TEST(StructuralEqual, ArraysElementWise) {
  Array<Any> a{I(1), I(2), I(3)};
  ExpectEqual(a, Array<Any>{I(1), I(2), I(3)});
  EXPECT_EQ(GetFirstMismatch(a, Array<Any>{I(1), I(2), I(4)}), P("root[2]", "root[2]"));
  EXPECT_EQ(GetFirstMismatch(Array<Any>{I(1), I(2)}, a), P("root[2] (missing)", "root[2]"));
  EXPECT_EQ(GetFirstMismatch(a, Array<Any>{I(1)}), P("root[1]", "root[1] (missing)"));
  // A difference inside the common prefix is reported before the length difference.
  EXPECT_EQ(GetFirstMismatch(a, Array<Any>{I(9)}), P("root[0]", "root[0]"));
  EXPECT_NE(StructuralHash(a), StructuralHash(Array<Any>{I(1), I(2)}));
}

TEST(StructuralEqual, MapsBySameKeysAndEqualValues) {
  Map<Any, Any> a, b;
  a.Set(Any("x"), I(1));
  a.Set(Any("y"), I(2));
  b.Set(Any("y"), I(2));  // insertion order does not matter
  b.Set(Any("x"), I(1));
  ExpectEqual(a, b);
  Map<Any, Any> c = b;
  c.Set(Any("y"), I(3));
  EXPECT_EQ(GetFirstMismatch(a, c), P("root[\"y\"]", "root[\"y\"]"));
  Map<Any, Any> d = a;
  d.Set(Any("z"), I(0));
  EXPECT_EQ(GetFirstMismatch(d, a), P("root[\"z\"]", "root[\"z\"] (missing)"));
  EXPECT_EQ(GetFirstMismatch(a, d), P("root[\"z\"] (missing)", "root[\"z\"]"));
  Map<Any, Any> ints;
  ints.Set(I(7), Any("seven"));
  Map<Any, Any> ints2;
  ints2.Set(I(7), Any("SEVEN"));
  EXPECT_EQ(GetFirstMismatch(ints, ints2), P("root[7]", "root[7]"));
}

TEST(StructuralEqual, MapsWithObjectKeysPairEntriesInOrder) {
  Any x = Var("x"), y = Var("y");
  Map<Any, Any> a, b;
  a.Set(x, I(1));
  b.Set(y, I(1));
  EXPECT_FALSE(StructuralEqual(a, b));  // unbound variables equal only themselves
  ExpectEqual(a, b, /*map_free_vars=*/true);
  Map<Any, Any> c;
  c.Set(y, I(2));
  EXPECT_EQ(GetFirstMismatch(a, c, true), P("root[<value 0>]", "root[<value 0>]"));
}

TEST(StructuralEqual, ShapesAndNDArrays) {
  ExpectEqual(Shape({2, 3}), Shape({2, 3}));
  EXPECT_EQ(GetFirstMismatch(Shape({2, 3}), Shape({3, 2})), P("root", "root"));
  auto make = [](std::vector<int64_t> shape, const char* dtype, std::vector<float> values) {
    NDArray a = NDArray::Empty(shape, StringToDLDataType(dtype), DLDevice{kDLCPU, 0});
    for (size_t i = 0; i < values.size(); ++i) a.data<float>()[i] = values[i];
    return a;
  };
  ExpectEqual(make({2}, "float32", {1, 2}), make({2}, "float32", {1, 2}));
  EXPECT_FALSE(StructuralEqual(make({2}, "float32", {1, 2}), make({2}, "float32", {1, 3})));
  EXPECT_FALSE(StructuralEqual(make({2}, "float32", {1, 2}), make({1, 2}, "float32", {1, 2})));
  EXPECT_FALSE(StructuralEqual(make({2}, "float32", {1, 2}), make({2}, "int32", {1, 2})));
}

TEST(StructuralEqual, TreeNodesFieldByField) {
  Any lhs = Obj(1, "n", Array<Any>{I(1), I(2), I(3)});
  ExpectEqual(lhs, Obj(1, "n", Array<Any>{I(1), I(2), I(3)}));
  EXPECT_EQ(GetFirstMismatch(lhs, Obj(1, "n", Array<Any>{I(1), I(2), I(4)})),
            P("root.payload[2]", "root.payload[2]"));
  EXPECT_EQ(GetFirstMismatch(lhs, Obj(1, "m", Array<Any>{I(1), I(2), I(3)})),
            P("root.name", "root.name"));
  EXPECT_EQ(GetFirstMismatch(Obj(0, "a", Obj(5, "in", Any())), Obj(0, "a", Obj(6, "in", Any()))),
            P("root.payload.value", "root.payload.value"));
  EXPECT_EQ(GetFirstMismatch(lhs, Var("n")), P("root", "root"));
  EXPECT_NE(StructuralHash(lhs), StructuralHash(Obj(2, "n", Array<Any>{I(1), I(2), I(3)})));
}

TEST(StructuralEqual, IdentityKindsByPointer) {
  Function f = Function::FromTyped([](int64_t x) { return x; });
  Function g = Function::FromTyped([](int64_t x) { return x; });
  ExpectEqual(Obj(0, "f", f), Obj(0, "f", f));
  EXPECT_EQ(GetFirstMismatch(Obj(0, "f", f), Obj(0, "f", g)), P("root.payload", "root.payload"));
}

TEST(StructuralEqual, FreeVariables) {
  Any x = Var("x"), y = Var("y"), z = Var("z");
  ExpectEqual(x, x);
  EXPECT_FALSE(StructuralEqual(x, y));
  ExpectEqual(x, y, /*map_free_vars=*/true);
  // The variable's name is flagged SEqualIgnore: it never matters.
  ExpectEqual(Array<Any>{x, x}, Array<Any>{y, y}, true);
  // Bijection: x cannot map to both y and z, and z cannot be the image of both x and y.
  EXPECT_EQ(GetFirstMismatch(Array<Any>{x, x}, Array<Any>{y, z}, true), P("root[1]", "root[1]"));
  EXPECT_EQ(GetFirstMismatch(Array<Any>{x, y}, Array<Any>{z, z}, true), P("root[1]", "root[1]"));
  EXPECT_NE(StructuralHash(Array<Any>{x, x}, true), StructuralHash(Array<Any>{x, y}, true));
}

TEST(StructuralEqual, BindingSitesMapVariables) {
  Any x = Var("x"), y = Var("y"), z = Var("z");
  // `let x = 1 in x` and `let y = 1 in y` are alpha-equivalent.
  ExpectEqual(Let(x, I(1), x), Let(y, I(1), y));
  // The body uses a variable that the let did not bind.
  EXPECT_EQ(GetFirstMismatch(Let(x, I(1), x), Let(y, I(1), x)), P("root.body", "root.body"));
  // y is free on the left; z is bound (to x) on the right.
  EXPECT_EQ(GetFirstMismatch(Let(x, I(1), Array<Any>{x, y}), Let(z, I(1), Array<Any>{z, z})),
            P("root.body[1]", "root.body[1]"));
  EXPECT_EQ(GetFirstMismatch(Let(x, I(1), Array<Any>{x, y}), Let(z, I(1), Array<Any>{z, z}), true),
            P("root.body[1]", "root.body[1]"));
  // Nested lets: variables match by binding position, not by name.
  Any a = Var("a"), b = Var("b");
  Any lhs = Let(x, I(1), Let(y, I(2), Array<Any>{x, y}));
  ExpectEqual(lhs, Let(a, I(1), Let(b, I(2), Array<Any>{a, b})));
  Any swapped = Let(a, I(1), Let(b, I(2), Array<Any>{b, a}));
  EXPECT_EQ(GetFirstMismatch(lhs, swapped), P("root.body.body[0]", "root.body.body[0]"));
  EXPECT_NE(StructuralHash(lhs), StructuralHash(swapped));
  // A free variable hashes by identity unless free variables are mapped.
  EXPECT_NE(StructuralHash(Array<Any>{x}), StructuralHash(Array<Any>{y}));
  EXPECT_EQ(StructuralHash(Array<Any>{x}, true), StructuralHash(Array<Any>{y}, true));
}

TEST(StructuralEqual, SharedSubtreesAreComparedOnce) {
  // Each level refers to the one below twice: 2^64 paths, 64 distinct nodes per side.
  // Comparing path by path would never finish; comparing node pairs once is instant.
  auto chain = [](int64_t leaf_value) {
    Any node = Obj(leaf_value, "leaf", Any());
    for (int i = 0; i < 64; ++i) node = Obj(i, "level", Array<Any>{node, node});
    return node;
  };
  Any a = chain(1), b = chain(1), c = chain(2);
  EXPECT_TRUE(StructuralEqual(a, b, false));
  EXPECT_FALSE(StructuralEqual(a, c, false));
  Paths mismatch = GetFirstMismatch(a, c, false);
  ASSERT_TRUE(mismatch.has_value());
  std::string deepest = "root";
  for (int i = 0; i < 64; ++i) deepest += ".payload[0]";
  EXPECT_EQ(mismatch->first, deepest + ".value");
}

// Chains far deeper than a recursive walk's C stack would allow; the walks keep their
// place on the heap. Each test runs in well under a second.
constexpr int kChainDepth = 100000;

Any ArrayChain(int64_t leaf) {
  Any node = I(leaf);
  for (int i = 0; i < kChainDepth; ++i) node = Array<Any>{node};
  return node;
}
Any ObjectChain(int64_t leaf) {
  Any node = Obj(leaf, "leaf", Any());
  for (int i = 0; i < kChainDepth; ++i) node = Obj(i, "level", node);
  return node;
}
std::string Repeat(const std::string& segment, int times) {
  std::string s;
  for (int i = 0; i < times; ++i) s += segment;
  return s;
}

TEST(StructuralEqual, ArrayChainsDeeperThanTheStack) {
  RunOnSmallStack([] {
    Any a = ArrayChain(1), b = ArrayChain(1), c = ArrayChain(2);
    ExpectEqual(a, b);
    EXPECT_FALSE(StructuralEqual(a, c));
    std::string bottom = "root" + Repeat("[0]", kChainDepth);
    EXPECT_EQ(GetFirstMismatch(a, c), P(bottom, bottom));
    EXPECT_NE(StructuralHash(a), StructuralHash(c));
    // One level more on one side: unequal at the bottom.
    Any longer = Array<Any>{a};
    EXPECT_FALSE(StructuralEqual(longer, b));
  });
}

TEST(StructuralEqual, ObjectChainsDeeperThanTheStack) {
  RunOnSmallStack([] {
    Any a = ObjectChain(1), b = ObjectChain(1), c = ObjectChain(2);
    ExpectEqual(a, b);
    std::string bottom = "root" + Repeat(".payload", kChainDepth) + ".value";
    EXPECT_EQ(GetFirstMismatch(a, c), P(bottom, bottom));
    EXPECT_NE(StructuralHash(a), StructuralHash(c));
  });
}

TEST(StructuralEqual, DeepBindingSitesMapVariables) {
  RunOnSmallStack([] {
    // let v0 = 0 in let v1 = 1 in ... [v0, v_last]: every level binds a variable, and the
    // bottom refers to the outermost and the innermost one.
    auto lets = [](const std::string& prefix, bool swap) {
      std::vector<Any> vars;
      for (int i = 0; i < kChainDepth; ++i) vars.push_back(Var(prefix + std::to_string(i)));
      Any body =
          swap ? Array<Any>{vars.back(), vars.front()} : Array<Any>{vars.front(), vars.back()};
      for (int i = kChainDepth - 1; i >= 0; --i) body = Let(vars[i], I(i), body);
      return body;
    };
    Any x = lets("x", false), y = lets("y", false), swapped = lets("y", true);
    ExpectEqual(x, y);
    std::string bottom = "root" + Repeat(".body", kChainDepth) + "[0]";
    EXPECT_EQ(GetFirstMismatch(x, swapped), P(bottom, bottom));
    EXPECT_NE(StructuralHash(x), StructuralHash(swapped));
  });
}

TEST(StructuralHash, SharedSubtreesAreHashedOnce) {
  // 60 levels, each referring to the one below twice: 2^60 paths, 61 distinct nodes.
  auto dag = [](int64_t leaf_value) {
    Any node = Obj(leaf_value, "leaf", Any());
    for (int i = 0; i < 60; ++i) node = Obj(i, "level", Array<Any>{node, node});
    return node;
  };
  Any a = dag(1), b = dag(1), c = dag(2);
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_NE(StructuralHash(a), StructuralHash(c));
  // Sharing does not change the hash: a copy with distinct children hashes alike.
  Any leaf = Obj(1, "leaf", Any());
  Any l0 = Obj(0, "level", Array<Any>{leaf, Obj(1, "leaf", Any())});
  Any l0_copy = Obj(0, "level", Array<Any>{Obj(1, "leaf", Any()), Obj(1, "leaf", Any())});
  Any shared_leaf = Obj(0, "level", Array<Any>{leaf, leaf});
  EXPECT_EQ(StructuralHash(shared_leaf), StructuralHash(l0_copy));
  EXPECT_EQ(StructuralHash(l0), StructuralHash(l0_copy));
}

TEST(StructuralEqual, FreeingADeepChainDoesNotOverflow) {
  // Destruction releases children through a queue (object.h), not one frame per level.
  int freed = 0;
  RunOnSmallStack([&] {
    for (int round = 0; round < 2; ++round) {
      Any chain = ObjectChain(round);
      chain = Any();
      Any arrays = ArrayChain(round);
      ++freed;
    }
  });
  EXPECT_EQ(freed, 2);
}

TEST(StructuralEqual, RegisteredFunctions) {
  Function eq = Function::GetGlobalRequired("ffi.StructuralEqual");
  Function mismatch = Function::GetGlobalRequired("ffi.GetFirstStructuralMismatch");
  Function hash = Function::GetGlobalRequired("ffi.StructuralHash");
  Any x = Var("x"), y = Var("y");
  EXPECT_EQ(eq(x, y, false).cast<bool>(), false);
  EXPECT_EQ(eq(x, y, true).cast<bool>(), true);
  EXPECT_TRUE(mismatch(I(1), I(1), false).is_none());
  Array<String> paths = mismatch(Array<Any>{I(1)}, Array<Any>{I(2)}, false).cast<Array<String>>();
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], "root[0]");
  EXPECT_EQ(paths[1], "root[0]");
  EXPECT_EQ(hash(x, true).cast<int64_t>(), static_cast<int64_t>(StructuralHash(y, true)));
}

}  // namespace
