/*
 * tests/cpp/ffi/test_serialization.cc — SaveJSON / LoadJSON (serialization.h): the
 * exact graph format, round trips of every value kind, sharing, one test per
 * diagnostic, and random mutations of valid input that must never crash.
 */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "small_stack.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/serialization.h"
#include "tilecore/ffi/structural.h"

namespace {

using namespace tilecore::ffi;  // NOLINT(*)
using tilecore::testing::RunOnSmallStack;

Any MakeObject(int64_t value, const std::string& name, Any payload) {
  return Function::GetGlobalRequired("testing.make_test_object")(value, name, payload);
}

/*! \brief Reads a reflected field by name (the test kinds live in a .cc file). */
Any Field(const Any& obj, std::string_view name) {
  const TCFFITypeInfo* info = TCFFIGetTypeInfo(obj.type_index());
  for (int32_t i = 0; info && i < info->num_fields; ++i) {
    const TCFFIFieldInfo& f = info->fields[i];
    if (std::string_view(f.name.data, f.name.size) != name) continue;
    TCFFIAny out{};
    EXPECT_EQ(f.getter(reinterpret_cast<char*>(obj.raw()->v_obj) + f.offset, &out), 0);
    return Any::MoveFromRaw(&out);
  }
  ADD_FAILURE() << "no field " << name;
  return Any();
}

/*! \brief "kind: message" of the error LoadJSON raises, or "" if it loads. */
std::string LoadError(const std::string& text) {
  try {
    LoadJSON(text);
  } catch (const Error& e) {
    return std::string(e.kind()) + ": " + std::string(e.message());
  }
  return "";
}

std::string SaveError(const AnyView& value) {
  try {
    SaveJSON(value);
  } catch (const Error& e) {
    return std::string(e.kind()) + ": " + std::string(e.message());
  }
  return "";
}

/*! \brief A document with the given nodes (JSON text) and root. */
std::string Doc(const std::string& nodes, int64_t root) {
  return "{\"root\": " + std::to_string(root) + ", \"nodes\": [" + nodes +
         "], \"tilecore_version\": \"0.1.0\"}";
}

TEST(SaveJSON, ExactFormatOfASmallGraph) {
  Any obj = MakeObject(7, "x", Array<Any>{Any(int64_t{7}), Any(int64_t{7})});
  // The int 7 is one node, used by the field and by both elements; the root is last.
  EXPECT_EQ(SaveJSON(obj),
            "{\"root\": 3, \"nodes\": [\n"
            "  {\"type\":\"int\",\"data\":7},\n"
            "  {\"type\":\"str\",\"data\":\"x\"},\n"
            "  {\"type\":\"ffi.Array\",\"data\":[0,0]},\n"
            "  {\"type\":\"testing.TestObject\",\"data\":{\"value\":0,\"name\":1,\"payload\":2}}\n"
            "], \"tilecore_version\": \"0.1.0\"}");
}

TEST(SaveJSON, ExactFormatOfLiterals) {
  EXPECT_EQ(
      SaveJSON(Any()),
      "{\"root\": 0, \"nodes\": [\n  {\"type\":\"None\"}\n], \"tilecore_version\": \"0.1.0\"}");
  Array<Any> values{Any(std::nan("")),
                    Any(-std::numeric_limits<double>::infinity()),
                    Any(-0.0),
                    Any(true),
                    Any(Bytes(std::string("abcd"))),
                    Any(StringToDLDataType("int32x8")),
                    Any(DLDevice{kDLCPU, 2}),
                    Any(Shape({2, 3}))};
  EXPECT_EQ(SaveJSON(values),
            "{\"root\": 8, \"nodes\": [\n"
            "  {\"type\":\"float\",\"data\":\"nan\"},\n"
            "  {\"type\":\"float\",\"data\":\"-inf\"},\n"
            "  {\"type\":\"float\",\"data\":-0.0},\n"
            "  {\"type\":\"bool\",\"data\":true},\n"
            "  {\"type\":\"bytes\",\"data\":\"YWJjZA==\"},\n"
            "  {\"type\":\"DataType\",\"data\":\"int32x8\"},\n"
            "  {\"type\":\"Device\",\"data\":[1,2]},\n"
            "  {\"type\":\"ffi.Shape\",\"data\":[2,3]},\n"
            "  {\"type\":\"ffi.Array\",\"data\":[0,1,2,3,4,5,6,7]}\n"
            "], \"tilecore_version\": \"0.1.0\"}");
}

TEST(SaveJSON, NDArrayBytesAreBase64) {
  NDArray a = NDArray::Empty({3}, StringToDLDataType("uint8"), DLDevice{kDLCPU, 0});
  a.data<uint8_t>()[0] = 0;
  a.data<uint8_t>()[1] = 1;
  a.data<uint8_t>()[2] = 2;
  EXPECT_EQ(
      SaveJSON(a),
      "{\"root\": 0, \"nodes\": [\n"
      "  "
      "{\"type\":\"ffi.NDArray\",\"data\":{\"shape\":[3],\"dtype\":\"uint8\",\"data\":\"AAEC\"}}\n"
      "], \"tilecore_version\": \"0.1.0\"}");
}

TEST(SaveLoadJSON, RoundTripsEveryValueKind) {
  Map<Any, Any> m;
  m.Set(Any("key"), Any(int64_t{-5}));
  m.Set(Any(int64_t{3}), Any("three, a long string value"));
  NDArray nd = NDArray::Empty({2, 3}, StringToDLDataType("float32"), DLDevice{kDLCPU, 0});
  for (int i = 0; i < 6; ++i) nd.data<float>()[i] = 0.5f * i - 1;
  DLDataType odd{static_cast<uint8_t>(kDLOpaqueHandle), 64,
                 1};  // no spelling: saved as [code, bits, lanes]
  Array<Any> values{Any(),
                    Any(int64_t{-9223372036854775807 - 1}),
                    Any(false),
                    Any(3.25),
                    Any(std::numeric_limits<double>::infinity()),
                    Any("s"),
                    Any("a string over seven bytes"),
                    Any(Bytes(std::string("\x00\xFF\x10", 3))),
                    Any(Bytes(std::string(100, '\x7F'))),
                    Any(StringToDLDataType("bfloat16")),
                    Any(odd),
                    Any(DLDevice{kDLExtDev, 1}),
                    Any(Shape(std::vector<int64_t>{})),
                    Any(m),
                    Any(nd),
                    Any(Array<Any>{Any(Array<Any>())}),
                    MakeObject(1, "n", Any(Shape({4})))};
  Any loaded = LoadJSON(SaveJSON(values));
  EXPECT_TRUE(StructuralEqual(loaded, values));
  auto arr = loaded.as<Array<Any>>();
  ASSERT_TRUE(arr.has_value());
  EXPECT_EQ((*arr)[1].as<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ((*arr)[4].as<double>(), std::numeric_limits<double>::infinity());
  // Three bytes come back inline (small bytes), equal to the Bytes object saved.
  Any item7 = (*arr)[7];  // keep the element alive while its raw payload is read
  const TCFFIAny* small = item7.raw();
  ASSERT_EQ(small->type_index, kTCFFISmallBytes);
  EXPECT_EQ(std::string_view(small->v_bytes, small->small_len),
            std::string_view("\x00\xFF\x10", 3));
  EXPECT_TRUE((*arr)[10].as<DLDataType>().value() == odd);
  EXPECT_EQ((*arr)[11].as<DLDevice>()->device_id, 1);
  auto nd2 = (*arr)[14].as<NDArray>();
  ASSERT_TRUE(nd2.has_value());
  EXPECT_EQ(nd2->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(nd2->data<float>()[5], 1.5f);
  EXPECT_EQ(Field((*arr)[16], "name").cast<std::string>(), "n");
  // NaN is structurally equal to NaN, and survives the trip.
  Any nan = LoadJSON(SaveJSON(Any(std::nan(""))));
  EXPECT_TRUE(std::isnan(*nan.as<double>()));
}

TEST(SaveLoadJSON, SharedObjectsComeBackShared) {
  Any shared = MakeObject(1, "shared", Any());
  Any twin = MakeObject(1, "shared", Any());  // equal but distinct: stays distinct
  Array<Any> graph{shared, MakeObject(2, "holder", shared), twin};
  std::string text = SaveJSON(graph);
  Any loaded = LoadJSON(text);
  auto arr = loaded.as<Array<Any>>();
  ASSERT_TRUE(arr.has_value());
  ObjectRef first = (*arr)[0].cast<ObjectRef>();
  ObjectRef inner = Field((*arr)[1], "payload").cast<ObjectRef>();
  ObjectRef third = (*arr)[2].cast<ObjectRef>();
  EXPECT_TRUE(first.same_as(inner));
  EXPECT_FALSE(first.same_as(third));
  EXPECT_FALSE(first.same_as(shared.cast<ObjectRef>()));
  EXPECT_TRUE(StructuralEqual(loaded, graph));
}

TEST(SaveLoadJSON, StridedArraysAreSavedCompact) {
  // A transposed view of [[0, 1], [2, 3]]: shape [2, 2], strides [1, 2].
  static int32_t data[4] = {0, 1, 2, 3};
  static int64_t shape[2] = {2, 2};
  static int64_t strides[2] = {1, 2};
  static DLManagedTensor view{};
  view.dl_tensor.data = data;
  view.dl_tensor.device = DLDevice{kDLCPU, 0};
  view.dl_tensor.ndim = 2;
  view.dl_tensor.dtype = StringToDLDataType("int32");
  view.dl_tensor.shape = shape;
  view.dl_tensor.strides = strides;
  view.dl_tensor.byte_offset = 0;
  view.deleter = [](DLManagedTensor*) {};
  NDArray t = NDArray::FromDLPack(&view);
  ASSERT_FALSE(t.IsContiguous());
  Any loaded = LoadJSON(SaveJSON(t));
  NDArray back = *loaded.as<NDArray>();
  EXPECT_EQ(back.data<int32_t>()[0], 0);
  EXPECT_EQ(back.data<int32_t>()[1], 2);
  EXPECT_EQ(back.data<int32_t>()[2], 1);
  EXPECT_EQ(back.data<int32_t>()[3], 3);
}

TEST(SaveJSONErrors, NamesThePathToAnUnsavableValue) {
  Function f = Function::FromTyped([](int64_t x) { return x; });
  Any obj = MakeObject(1, "n", Array<Any>{Any(int64_t{0}), Any(int64_t{1}), f});
  EXPECT_EQ(SaveError(obj),
            "TypeError: SaveJSON: cannot save a value of type `ffi.Function` at root.payload[2]: "
            "the kind has "
            "no creator, so it could not be loaded again (only reflected kinds declared with "
            "ObjectDef can be saved)");
  Map<Any, Any> m;
  m.Set(Any("p"), Any(static_cast<void*>(&m)));
  EXPECT_EQ(SaveError(m),
            "TypeError: SaveJSON: cannot save a value of type `void*` at root[\"p\"]: opaque "
            "pointers have no "
            "meaning outside this process");
  EXPECT_EQ(
      SaveError(Array<Any>{Any(std::string("\xFF\xFE"))}),
      "ValueError: SaveJSON: the string at root[0] is not valid UTF-8; save binary data as bytes");
}

TEST(SaveJSONErrors, RefusesCycles) {
  auto cyclic = make_object<ArrayObj>();
  cyclic->data.emplace_back(int64_t{1});
  cyclic->data.emplace_back(Array<Any>(ObjectPtr<Object>(cyclic)));
  Array<Any> a{ObjectPtr<Object>(cyclic)};
  EXPECT_EQ(SaveError(a),
            "ValueError: SaveJSON: reference cycle: the `ffi.Array` at root[1] contains itself");
  cyclic->data.clear();  // break the cycle so the test does not leak
}

// Chains far deeper than a recursive walk's C stack would allow (each test runs on a
// 256 KiB stack, in well under a second).
constexpr int kChainDepth = 100000;

TEST(SaveLoadJSON, DeepArrayChainsRoundTrip) {
  RunOnSmallStack([] {
    auto chain = [](int64_t leaf) {
      Any node(leaf);
      for (int i = 0; i < kChainDepth; ++i) node = Array<Any>{node};
      return node;
    };
    Any a = chain(1);
    std::string text = SaveJSON(a);
    Any back = LoadJSON(text);
    EXPECT_TRUE(StructuralEqual(back, a));
    EXPECT_EQ(StructuralHash(back), StructuralHash(a));
    EXPECT_FALSE(StructuralEqual(back, chain(2)));
    // One node per array plus the leaf; the root is the outermost array, written last.
    EXPECT_EQ(text.rfind("{\"root\": " + std::to_string(kChainDepth) + ",", 0), 0u);
  });
}

TEST(SaveLoadJSON, DeepObjectAndMapChainsRoundTrip) {
  RunOnSmallStack([] {
    Any objects = MakeObject(-1, "leaf", Any());
    Any maps = Any(int64_t{-1});
    for (int i = 0; i < kChainDepth; ++i) {
      objects = MakeObject(i, "level", objects);
      Map<Any, Any> m;
      m.Set(Any("next"), maps);
      maps = m;
    }
    for (const Any& value : {objects, maps}) {
      Any back = LoadJSON(SaveJSON(value));
      EXPECT_TRUE(StructuralEqual(back, value));
      EXPECT_EQ(GetFirstMismatch(back, value), std::nullopt);
      EXPECT_EQ(StructuralHash(back), StructuralHash(value));
    }
    // The bottom payload survives: walk down the loaded chain by its fields.
    Any node = LoadJSON(SaveJSON(objects));
    for (int i = 0; i < kChainDepth; ++i) node = Field(node, "payload");
    EXPECT_EQ(Field(node, "value").cast<int64_t>(), -1);
  });
}

TEST(LoadJSONErrors, Document) {
  EXPECT_EQ(LoadError("[1,2"),
            "ValueError: LoadJSON: not valid JSON: JSON: line 1, column 5: expected ',' or ']' "
            "after an array "
            "element, found end of input");
  EXPECT_EQ(LoadError("null"), "ValueError: LoadJSON: expected a JSON object at the top, got null");
  EXPECT_EQ(LoadError("{\"root\": 0}"), "ValueError: LoadJSON: missing top-level member \"nodes\"");
  EXPECT_EQ(LoadError("{\"nodes\": []}"),
            "ValueError: LoadJSON: missing top-level member \"root\"");
  EXPECT_EQ(LoadError("{\"root\": 0, \"nodes\": {}}"),
            "ValueError: LoadJSON: \"nodes\" must be an array, got an object");
  EXPECT_EQ(LoadError("{\"root\": 0, \"nodes\": [], \"extra\": 1}"),
            "ValueError: LoadJSON: unknown top-level member \"extra\" (expected root, nodes, "
            "tilecore_version)");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"None\"}", 1)),
            "ValueError: LoadJSON: \"root\" refers to node 1, out of range [0, 1)");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"None\"}", -1)),
            "ValueError: LoadJSON: \"root\" refers to node -1, out of range [0, 1)");
}

TEST(LoadJSONErrors, Nodes) {
  EXPECT_EQ(LoadError(Doc("7", 0)),
            "ValueError: LoadJSON: node 0: expected a JSON object {\"type\": ..., \"data\": ...}, "
            "got an integer");
  EXPECT_EQ(LoadError(Doc("{\"data\": 1}", 0)),
            "ValueError: LoadJSON: node 0: missing \"type\" string");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"int\"}", 0)),
            "ValueError: LoadJSON: node 0 (`int`): missing \"data\"");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"int\",\"data\":1,\"x\":2}", 0)),
            "ValueError: LoadJSON: node 0: unknown member \"x\" (expected type, data)");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"int\",\"data\":1.5}", 0)),
            "ValueError: LoadJSON: node 0 (`int`): data must be an integer, got a number");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"float\",\"data\":\"infinity\"}", 0)),
            "ValueError: LoadJSON: node 0 (`float`): data must be a number or one of \"nan\", "
            "\"inf\", \"-inf\", "
            "got a string");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"bytes\",\"data\":\"YWJjZA=\"}", 0)),
            "ValueError: LoadJSON: node 0 (`bytes`): data must be a base64 string");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"DataType\",\"data\":[2, 32]}", 0)),
            "ValueError: LoadJSON: node 0 (`DataType`): data must be a dtype string or [code, "
            "bits, lanes], got an "
            "array");
  EXPECT_EQ(
      LoadError(Doc("{\"type\":\"Device\",\"data\":[-1, 0]}", 0)),
      "ValueError: LoadJSON: node 0 (`Device`): device_type -1 is out of range [0, 2147483647]");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"no.such.Type\",\"data\":{}}", 0)),
            "ValueError: LoadJSON: node 0 (`no.such.Type`): unknown type key");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.Function\",\"data\":{}}", 0)),
            "ValueError: LoadJSON: node 0 (`ffi.Function`): this kind has no creator and cannot be "
            "loaded");
}

TEST(LoadJSONErrors, References) {
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.Array\",\"data\":[0, 5]}", 0)),
            "ValueError: LoadJSON: node 0 (`ffi.Array`): element 1 refers to node 5, out of range "
            "[0, 1)");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.Array\",\"data\":[\"0\"]}", 0)),
            "ValueError: LoadJSON: node 0 (`ffi.Array`): element 0 must be a node index (int), got "
            "a string");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.Map\",\"data\":[0]}", 0)),
            "ValueError: LoadJSON: node 0 (`ffi.Map`): data must hold key, value pairs; got an odd "
            "length");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"int\",\"data\":1},{\"type\":\"int\",\"data\":1},"
                          "{\"type\":\"ffi.Map\",\"data\":[0,0,1,0]}",
                          2)),
            "ValueError: LoadJSON: node 2 (`ffi.Map`): key 1 (node 1) repeats an earlier key");
  EXPECT_EQ(
      LoadError(Doc("{\"type\":\"ffi.Array\",\"data\":[1]},{\"type\":\"ffi.Array\",\"data\":[2]},"
                    "{\"type\":\"ffi.Array\",\"data\":[0]}",
                    0)),
      "ValueError: LoadJSON: node 2 (`ffi.Array`): element 0 refers back to node 0: reference "
      "cycle "
      "0 -> 1 -> 2 -> 0");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.Array\",\"data\":[0]}", 0)),
            "ValueError: LoadJSON: node 0 (`ffi.Array`): element 0 refers back to node 0: "
            "reference cycle 0 -> 0");
}

TEST(LoadJSONErrors, Fields) {
  const std::string leaves = "{\"type\":\"int\",\"data\":1},{\"type\":\"str\",\"data\":\"n\"},";
  EXPECT_EQ(
      LoadError(Doc(leaves + "{\"type\":\"testing.TestObject\",\"data\":{\"value\":0,\"name\":1,"
                             "\"payload\":0,\"valu\":0}}",
                    2)),
      "ValueError: LoadJSON: node 2 (`testing.TestObject`): unknown field `valu` (fields: value, "
      "name, payload)");
  EXPECT_EQ(
      LoadError(Doc(
          leaves + "{\"type\":\"testing.TestObject\",\"data\":{\"value\":0,\"payload\":0}}", 2)),
      "ValueError: LoadJSON: node 2 (`testing.TestObject`): missing field `name`");
  EXPECT_EQ(
      LoadError(Doc(leaves + "{\"type\":\"testing.TestObject\",\"data\":{\"value\":1,\"name\":1,"
                             "\"payload\":0}}",
                    2)),
      "TypeError: LoadJSON: node 2 (`testing.TestObject`) field `value`: expected `int` but got "
      "`str`");
  EXPECT_EQ(
      LoadError(Doc(leaves + "{\"type\":\"testing.TestObject\",\"data\":{\"value\":0,\"name\":0,"
                             "\"payload\":9}}",
                    2)),
      "ValueError: LoadJSON: node 2 (`testing.TestObject`): field `payload` refers to node 9, out "
      "of range "
      "[0, 3)");
  EXPECT_EQ(LoadError(Doc(leaves + "{\"type\":\"testing.TestObject\",\"data\":[0, 1, 0]}", 2)),
            "ValueError: LoadJSON: node 2 (`testing.TestObject`): data must be an object of "
            "fields, got an array");
}

TEST(LoadJSONErrors, NDArray) {
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.NDArray\",\"data\":{\"shape\":[4],\"dtype\":\"uint8\","
                          "\"data\":\"AAEC\"}}",
                          0)),
            "ValueError: LoadJSON: node 0 (`ffi.NDArray`): data holds 3 bytes, which does not "
            "match the shape and "
            "dtype");
  EXPECT_EQ(LoadError(Doc(
                "{\"type\":\"ffi.NDArray\",\"data\":{\"shape\":[4611686018427387904, 4],\"dtype\":"
                "\"uint8\",\"data\":\"\"}}",
                0)),
            "ValueError: LoadJSON: node 0 (`ffi.NDArray`): data holds 0 bytes, which does not "
            "match the shape and "
            "dtype");
  EXPECT_EQ(
      LoadError(Doc(
          "{\"type\":\"ffi.NDArray\",\"data\":{\"shape\":[-1],\"dtype\":\"uint8\",\"data\":\"\"}}",
          0)),
      "ValueError: LoadJSON: node 0 (`ffi.NDArray`): shape[0] -1 is out of range [0, "
      "9223372036854775807]");
  EXPECT_EQ(LoadError(Doc("{\"type\":\"ffi.NDArray\",\"data\":{\"shape\":[1],\"dtype\":\"uint9x\","
                          "\"data\":\"AA==\"}}",
                          0))
                .rfind("ValueError: LoadJSON: node 0 (`ffi.NDArray`): dtype: ", 0),
            0u);
}

TEST(LoadJSON, DeepChainsOfReferencesLoad) {
  RunOnSmallStack([] {
    // 100000 arrays, each holding the one before: written by hand, not by SaveJSON.
    std::string nodes = "{\"type\":\"None\"}";
    for (int i = 1; i < kChainDepth; ++i)
      nodes += ",{\"type\":\"ffi.Array\",\"data\":[" + std::to_string(i - 1) + "]}";
    Any loaded = LoadJSON(Doc(nodes, kChainDepth - 1));
    Any expected;
    for (int i = 1; i < kChainDepth; ++i) expected = Array<Any>{expected};
    EXPECT_TRUE(StructuralEqual(loaded, expected));
    // A cycle at the bottom of a deep chain is still found and named.
    std::string cyclic = "{\"type\":\"ffi.Array\",\"data\":[1]}";
    for (int i = 1; i < kChainDepth; ++i)
      cyclic += ",{\"type\":\"ffi.Array\",\"data\":[" + std::to_string(i - 1) + "]}";
    std::string error = LoadError(Doc(cyclic, kChainDepth - 1));
    EXPECT_EQ(error.rfind("ValueError: LoadJSON: node 0 (`ffi.Array`): element 0 refers back to "
                          "node 1: reference cycle 1 -> 0 -> 1",
                          0),
              0u)
        << error.substr(0, 200);
  });
}

TEST(LoadJSONFuzz, MutatedInputLoadsOrRaisesError) {
  NDArray nd = NDArray::Empty({2}, StringToDLDataType("int16"), DLDevice{kDLCPU, 0});
  nd.data<int16_t>()[0] = 7;
  nd.data<int16_t>()[1] = -7;
  Map<Any, Any> m;
  m.Set(Any("k"), Any(2.5));
  Any shared = MakeObject(3, "shared", Any(Shape({1, 2})));
  Array<Any> graph{shared,
                   MakeObject(1, "first", Array<Any>{Any(int64_t{1}), Any("two"), shared, m}),
                   nd,
                   Any(Bytes(std::string("bytes!!!"))),
                   Any(StringToDLDataType("float16")),
                   Any(std::nan(""))};
  const std::string valid = SaveJSON(graph);
  ASSERT_TRUE(StructuralEqual(LoadJSON(valid), graph));

  const std::string alphabet = "{}[]\",:0123456789-.eE \\u\"typedataroot";
  std::mt19937 rng(12345);
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string text = valid;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t pos = rng() % text.size();
      switch (rng() % 5) {
        case 0:
          text[pos] = alphabet[rng() % alphabet.size()];
          break;  // replace
        case 1:
          text.erase(pos, 1 + rng() % 8);
          break;  // delete
        case 2:
          text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;  // insert
        case 3:
          text[pos] = static_cast<char>(rng() & 0xFF);
          break;  // any byte
        case 4:   // nudge a digit (node refs)
          if (text[pos] >= '0' && text[pos] <= '9') text[pos] = static_cast<char>('0' + rng() % 10);
          break;
      }
    }
    try {
      LoadJSON(text);
      ++loaded;
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == "ValueError" || e.kind() == "TypeError")
          << e.kind() << ": " << e.message();
      ++refused;
    }
  }
  EXPECT_EQ(loaded + refused, 4000);
  EXPECT_GT(refused, 0);
}

}  // namespace
