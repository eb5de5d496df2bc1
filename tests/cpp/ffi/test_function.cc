// tests/cpp/ffi/test_function.cc — Function: packed and typed bodies, errors, the
// registry (including concurrent readers and writers) and the C calling convention.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"

namespace {
using namespace tilecore::ffi;

TEST(Function, PackedBody) {
  Function f = Function::FromPacked([](PackedArgs args, Any* rv) {
    int64_t sum = 0;
    for (int32_t i = 0; i < args.size(); ++i) sum += args[i].cast<int64_t>();
    *rv = sum;
  });
  EXPECT_EQ(f(1, 2, 3).cast<int64_t>(), 6);
  EXPECT_EQ(f().cast<int64_t>(), 0);
}

TEST(Function, TypedBodyConvertsArguments) {
  Function f = Function::FromTyped(
      [](int64_t a, double b, String s) {
        return std::string(s.view()) + std::to_string(a + static_cast<int64_t>(b));
      },
      "concat");
  EXPECT_EQ(f(1, 2.0, "x").cast<std::string>(), "x3");
}

TEST(Function, ArgumentTypeErrorNamesEverything) {
  Function f = Function::FromTyped([](int64_t a, int64_t b) { return a + b; }, "myadd");
  try {
    f(1, "two");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(e.message(),
              "Mismatched type on argument #1 when calling `myadd(0: int, 1: int) -> int`: "
              "expected `int` but got `str`");
  }
}

TEST(Function, RefusedContainerArgumentNamesTheElement) {
  auto message = [](const Function& f, const Any& arg) -> std::string {
    try {
      f(arg);
    } catch (const Error& e) {
      return std::string(e.message());
    }
    return "";
  };
  Function nested =
      Function::FromTyped([](Array<Array<int64_t>> a) { return int64_t(a.size()); }, "nested");
  Array<Any> inner{Any(int64_t(1)), Any(2.5)};
  EXPECT_EQ(message(nested, Any(Array<Any>{Any(Array<Any>{}), Any(inner)})),
            "Mismatched type on argument #0 when calling `nested(0: Array[Array[int]]) -> int`: "
            "expected `Array[Array[int]]` but got `ffi.Array`: its element [1][1] is `float`, "
            "not `int`");
  Function by_name = Function::FromTyped(
      [](Map<String, Array<int64_t>> m) { return int64_t(m.size()); }, "by_name");
  Map<Any, Any> m;
  m.Set(Any(String("k")), Any(Array<Any>{Any()}));
  EXPECT_NE(message(by_name, Any(m)).find(": its element [\"k\"][0] is `None`, not `int`"),
            std::string::npos)
      << message(by_name, Any(m));
  // A packed body's args[i].cast<T>() names the element too.
  Function packed = Function::FromPacked(
      [](PackedArgs args, Any* rv) { *rv = int64_t(args[0].cast<Array<int64_t>>().size()); });
  EXPECT_NE(message(packed, Any(Array<Any>{Any(int64_t(1)), Any(2.5)}))
                .find("its element [1] is `float`, not `int`"),
            std::string::npos);
}

TEST(Function, ArgumentCountErrorNamesSignature) {
  Function f = Function::FromTyped([](int64_t a) { return a; }, "one");
  try {
    f(1, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(
        e.message(),
        "Mismatched number of arguments when calling `one(0: int) -> int`: expected 1 but got 2");
  }
}

TEST(Function, ErrorsCrossTheCAbiAsObjects) {
  Function f = Function::FromPacked(
      [](PackedArgs, Any*) { TILECORE_THROW(IndexError) << "out of range: 7"; });
  TCFFIAny result;
  result.type_index = kTCFFINone;
  TCFFIObject* handle = reinterpret_cast<TCFFIObject*>(const_cast<FunctionObj*>(f.get()));
  EXPECT_EQ(TCFFIFunctionCall(handle, nullptr, 0, &result), -1);
  TCFFIObjectHandle err = nullptr;
  TCFFIErrorMoveFromRaised(&err);
  ASSERT_NE(err, nullptr);
  const auto* cell =
      reinterpret_cast<const TCFFIErrorCell*>(reinterpret_cast<char*>(err) + sizeof(TCFFIObject));
  EXPECT_EQ(std::string(cell->kind.data, cell->kind.size), "IndexError");
  EXPECT_EQ(std::string(cell->message.data, cell->message.size), "out of range: 7");
  TCFFIObjectDecRef(err);
  // Nothing left raised.
  TCFFIErrorMoveFromRaised(&err);
  EXPECT_EQ(err, nullptr);
}

TEST(Function, StandardExceptionsBecomeRuntimeErrors) {
  Function f = Function::FromPacked([](PackedArgs, Any*) { throw std::runtime_error("boom"); });
  try {
    f();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "RuntimeError");
    EXPECT_EQ(e.message(), "boom");
  }
}

int CAdd(void* self, const TCFFIAny* args, int32_t n, TCFFIAny* result) {
  result->type_index = kTCFFIInt;
  result->v_int64 = args[0].v_int64 + args[1].v_int64 + *static_cast<int64_t*>(self);
  return 0;
}

TEST(Function, CreatedFromCCallback) {
  static int64_t bias = 100;
  static int deleted = 0;
  TCFFIObjectHandle h = nullptr;
  ASSERT_EQ(TCFFIFunctionCreate(
                &bias, CAdd, [](void*) { ++deleted; }, &h),
            0);
  {
    Function f(details::ObjectUnsafe::MoveFromHandle(h));
    EXPECT_EQ(f(1, 2).cast<int64_t>(), 103);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(Function, ClosuresReturnedFromFunctions) {
  Function addy = Function::FromTyped(
      [](int64_t y) { return Function::FromTyped([y](int64_t x) { return x + y; }, "add"); },
      "addy");
  Function add10 = addy(10).cast<Function>();
  EXPECT_EQ(add10(11).cast<int64_t>(), 21);
}

TEST(Registry, RegisterGetListRemove) {
  Function f = Function::FromTyped([](int64_t x) { return x * 2; }, "test.double");
  Function::SetGlobal("test.registry.double", f);
  auto got = Function::GetGlobal("test.registry.double");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)(21).cast<int64_t>(), 42);
  auto names = Function::ListGlobalNames();
  EXPECT_NE(std::find(names.begin(), names.end(), String("test.registry.double")), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), String("testing.echo")), names.end());
  // Taken name: refused unless override is asked for.
  try {
    Function::SetGlobal("test.registry.double", f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(e.message().find("already registered"), std::string_view::npos);
  }
  Function::SetGlobal("test.registry.double", Function::FromTyped([](int64_t x) { return x * 3; }),
                      true);
  EXPECT_EQ((*Function::GetGlobal("test.registry.double"))(2).cast<int64_t>(), 6);
  EXPECT_TRUE(Function::RemoveGlobal("test.registry.double"));
  EXPECT_FALSE(Function::GetGlobal("test.registry.double").has_value());
  EXPECT_FALSE(Function::RemoveGlobal("test.registry.double"));
  EXPECT_THROW(Function::GetGlobalRequired("test.registry.double"), Error);
}

TEST(Registry, StaticRegistrationsExist) {
  Function echo = Function::GetGlobalRequired("testing.echo");
  EXPECT_EQ(echo(int64_t{9223372036854775807}).cast<int64_t>(), 9223372036854775807);
  Function apply = Function::GetGlobalRequired("testing.apply");
  Function inc = Function::FromTyped([](int64_t x) { return x + 1; });
  EXPECT_EQ(apply(inc, 41).cast<int64_t>(), 42);
  Function in_thread = Function::GetGlobalRequired("testing.apply_in_thread");
  std::thread::id caller = std::this_thread::get_id();
  Function where = Function::FromTyped([caller]() { return std::this_thread::get_id() != caller; });
  EXPECT_TRUE(in_thread(where).cast<bool>());
}

TEST(Registry, ConcurrentReadersAndWriters) {
  // Readers look up a stable name while writers grow the table; no lookup may fail.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> failures{0}, lookups{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto f = Function::GetGlobal("testing.echo");
        if (!f.has_value() || (*f)(7).cast<int64_t>() != 7) ++failures;
        ++lookups;
      }
    });
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([t, &lookups] {
      // on a loaded machine the writers could finish before a reader runs at all: they
      // start once the readers are looking up
      while (lookups.load() == 0) std::this_thread::yield();
      for (int i = 0; i < 2000; ++i) {
        std::string name = "test.concurrent." + std::to_string(t) + "." + std::to_string(i);
        Function::SetGlobal(name, Function::FromTyped([i]() { return i; }));
      }
    });
  }
  for (auto& w : writers) w.join();
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(lookups.load(), 0);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 2000; i += 397) {
      std::string name = "test.concurrent." + std::to_string(t) + "." + std::to_string(i);
      auto f = Function::GetGlobal(name);
      ASSERT_TRUE(f.has_value()) << name;
      EXPECT_EQ((*f)().cast<int64_t>(), i);
    }
  }
}

TEST(Registry, ConcurrentCallsOfOneFunction) {
  Function echo = Function::GetGlobalRequired("testing.echo");
  std::vector<std::thread> threads;
  std::atomic<int64_t> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        Array<int64_t> a{t, i};
        Array<int64_t> b = echo(a).cast<Array<int64_t>>();
        if (!b.same_as(a) || b[1] != i) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
