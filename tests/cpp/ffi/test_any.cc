// tests/cpp/ffi/test_any.cc — Any and AnyView: storage, ownership and conversions.
#include <gtest/gtest.h>

#include <limits>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"

namespace {
using namespace tilecore::ffi;

TEST(Any, PodsRoundTrip) {
  Any i = int64_t{std::numeric_limits<int64_t>::max()};
  EXPECT_EQ(i.type_index(), kTCFFIInt);
  EXPECT_EQ(i.cast<int64_t>(), std::numeric_limits<int64_t>::max());
  Any f = 2.5;
  EXPECT_EQ(f.type_index(), kTCFFIFloat);
  EXPECT_DOUBLE_EQ(f.cast<double>(), 2.5);
  Any b = true;
  EXPECT_EQ(b.type_index(), kTCFFIBool);
  EXPECT_TRUE(b.cast<bool>());
  Any none;
  EXPECT_TRUE(none.is_none());
}

TEST(Any, StrictVersusConvenientConversion) {
  Any i = 3;
  EXPECT_FALSE(i.as<double>().has_value());  // stored as int, not float
  EXPECT_DOUBLE_EQ(i.cast<double>(), 3.0);   // but converts
  Any f = 3.5;
  EXPECT_FALSE(f.try_cast<int64_t>().has_value());  // float never silently truncates
  Any big = int64_t{1} << 40;
  EXPECT_FALSE(big.try_cast<int32_t>().has_value());  // out of range for int32
  Any neg = -1;
  EXPECT_FALSE(neg.try_cast<uint32_t>().has_value());
}

TEST(Any, CastErrorNamesBothTypes) {
  Any s = String("hello world, long enough");
  try {
    s.cast<int64_t>();
    FAIL() << "expected TypeError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(e.message(), "Cannot convert from type `ffi.String` to `int`");
  }
}

TEST(Any, SmallStringsStayInline) {
  Any small = std::string("abc");
  EXPECT_EQ(small.type_index(), kTCFFISmallStr);
  EXPECT_EQ(small.cast<std::string>(), "abc");
  Any seven = std::string("1234567");
  EXPECT_EQ(seven.type_index(), kTCFFISmallStr);
  Any eight = std::string("12345678");
  EXPECT_EQ(eight.type_index(), kTCFFIStr);
  EXPECT_EQ(eight.cast<String>(), "12345678");
  // All three forms compare equal as map keys.
  EXPECT_TRUE(AnyEqual()(Any(String("abc")), small));
  EXPECT_EQ(AnyHash()(Any(String("abc"))), AnyHash()(small));
}

TEST(Any, ViewOfRawStringBecomesOwnedCopy) {
  std::string text = "a borrowed string of some length";
  AnyView view = text;
  EXPECT_EQ(view.type_index(), kTCFFIRawStr);
  Any owned(view);
  text.assign(text.size(), 'x');
  EXPECT_EQ(owned.cast<std::string>(), "a borrowed string of some length");
}

TEST(Any, OwnsObjectReferences) {
  Array<int64_t> arr{1, 2, 3};
  EXPECT_EQ(arr.use_count(), 1u);
  {
    Any a = arr;
    EXPECT_EQ(arr.use_count(), 2u);
    Any b = a;
    EXPECT_EQ(arr.use_count(), 3u);
    AnyView v = a;  // views borrow
    EXPECT_EQ(arr.use_count(), 3u);
    EXPECT_EQ(v.cast<Array<int64_t>>().size(), 3u);
  }
  EXPECT_EQ(arr.use_count(), 1u);
}

TEST(Any, DataTypeFromString) {
  Any s = "int32x8";
  DLDataType t = s.cast<DLDataType>();
  EXPECT_EQ(t.code, kDLInt);
  EXPECT_EQ(t.bits, 32);
  EXPECT_EQ(t.lanes, 8);
  EXPECT_EQ(DLDataTypeToString(StringToDLDataType("bfloat16")), "bfloat16");
  EXPECT_EQ(DLDataTypeToString(StringToDLDataType("bool")), "bool");
  EXPECT_THROW(StringToDLDataType("int"), Error);
  EXPECT_THROW(StringToDLDataType("float32x0"), Error);
  EXPECT_THROW(StringToDLDataType("quux8"), Error);
}

TEST(Any, OptionalAndNullable) {
  Any none;
  EXPECT_EQ(none.cast<std::optional<int64_t>>(), std::nullopt);
  Any five = 5;
  EXPECT_EQ(five.cast<std::optional<int64_t>>(), 5);
  // None converts to no object: not an Array, not even an ObjectRef; std::optional takes it.
  EXPECT_FALSE(none.try_cast<Array<Any>>().has_value());
  EXPECT_FALSE(none.try_cast<ObjectRef>().has_value());
  EXPECT_FALSE(none.as<ObjectRef>().has_value());
  EXPECT_THROW(none.cast<ObjectRef>(), Error);
  auto opt = none.try_cast<std::optional<ObjectRef>>();
  ASSERT_TRUE(opt.has_value());
  EXPECT_FALSE(opt->has_value());
}

TEST(Containers, ArrayCopyOnWrite) {
  Array<int64_t> a{1, 2};
  Array<int64_t> b = a;
  b.push_back(3);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], 3);
  EXPECT_THROW(a.Get(5), Error);
  // Element types are checked when converting from Any.
  Array<Any> mixed{Any(1), Any(String("x"))};
  Any m = mixed;
  EXPECT_FALSE(m.try_cast<Array<int64_t>>().has_value());
  EXPECT_TRUE(m.try_cast<Array<Any>>().has_value());
}

TEST(Containers, MapKeepsInsertionOrderAndLooksUpByValue) {
  Map<String, int64_t> m;
  m.Set("zeta", 1);
  m.Set("alpha", 2);
  m.Set("zeta", 3);
  ASSERT_EQ(m.size(), 2u);
  auto items = m.items();
  EXPECT_EQ(items[0].first, "zeta");
  EXPECT_EQ(items[0].second, 3);
  EXPECT_EQ(items[1].first, "alpha");
  EXPECT_EQ(m.at("alpha"), 2);
  EXPECT_EQ(m.count("nope"), 0u);
  try {
    m.at("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "KeyError");
    EXPECT_EQ(e.message(), "'nope'");
  }
}

TEST(Containers, ShapeFromArrayOfInts) {
  Any arr = Array<int64_t>{2, 3, 4};
  Shape s = arr.cast<Shape>();
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.Product(), 24);
  Any bad = Array<Any>{Any(2), Any(2.5)};
  EXPECT_FALSE(bad.try_cast<Shape>().has_value());
}

}  // namespace

namespace {
using namespace tilecore::ffi;

TEST(Device, OutOfTreeDeviceNames) {
  EXPECT_EQ(DeviceTypeToName(kDLNPU), "npu");
  EXPECT_EQ(DeviceTypeToName(41), "device41");
  RegisterDeviceName(41, "testacc");
  RegisterDeviceName(41, "testacc");  // the same pair again is harmless
  EXPECT_EQ(DeviceTypeToName(41), "testacc");
  EXPECT_EQ(DeviceNameToType("testacc"), 41);
  EXPECT_EQ(DLDeviceToString(DLDevice{static_cast<DLDeviceType>(41), 2}), "testacc:2");
  EXPECT_THROW(RegisterDeviceName(42, "testacc"), Error);    // name taken by another type
  EXPECT_THROW(RegisterDeviceName(41, "other"), Error);      // type taken by another name
  EXPECT_THROW(RegisterDeviceName(kDLNPU, "mynpu"), Error);  // built-in type
  try {
    DeviceNameToType("nosuch");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("testacc"), std::string_view::npos);
  }
}

}  // namespace
