/*
 * tests/cpp/ffi/test_json.cc — the strict JSON reader and writer (json.h): the
 * value mapping, round trips, and one test per diagnostic.
 */
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/json.h"

namespace {

using tilecore::ffi::Any;
using tilecore::ffi::Array;
using tilecore::ffi::Error;
using tilecore::ffi::Map;
using tilecore::ffi::String;
namespace json = tilecore::ffi::json;

/*! \brief The message of the error that `text` raises, or "" if it parses. */
std::string ParseError(const std::string& text, int max_depth = json::kDefaultMaxDepth) {
  try {
    json::Parse(text, max_depth);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    return std::string(e.message());
  }
  return "";
}

TEST(JSON, ParsesScalars) {
  EXPECT_TRUE(json::Parse("null").is_none());
  EXPECT_EQ(json::Parse("true").as<bool>(), true);
  EXPECT_EQ(json::Parse("false").as<bool>(), false);
  EXPECT_EQ(json::Parse("42").as<int64_t>(), 42);
  EXPECT_EQ(json::Parse("-0").as<int64_t>(), 0);
  EXPECT_EQ(json::Parse("-9223372036854775808").as<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(json::Parse("1.5").as<double>(), 1.5);
  EXPECT_EQ(json::Parse("-2.5e3").as<double>(), -2500.0);
  EXPECT_EQ(json::Parse("1E2").as<double>(), 100.0);
  // An exponent makes a float even without a fraction.
  EXPECT_EQ(json::Parse("1e0").type_index(), kTCFFIFloat);
  EXPECT_EQ(json::Parse("1e-400").as<double>(), 0.0);
  EXPECT_EQ(json::Parse(" \t\r\n 7 \n").as<int64_t>(), 7);
}

TEST(JSON, ParsesStringsAndEscapes) {
  EXPECT_EQ(json::Parse(R"("abc")").cast<std::string>(), "abc");
  EXPECT_EQ(json::Parse(R"("a long string, over seven bytes")").cast<std::string>(),
            "a long string, over seven bytes");
  EXPECT_EQ(json::Parse(R"("q\"b\\s\/n\nt\tr\rb\bf\f")").cast<std::string>(),
            "q\"b\\s/n\nt\tr\rb\bf\f");
  EXPECT_EQ(json::Parse(R"("\u0041\u00e9\u20AC")").cast<std::string>(), "A\xC3\xA9\xE2\x82\xAC");
  // U+1F600 as a surrogate pair is the 4-byte UTF-8 sequence F0 9F 98 80.
  EXPECT_EQ(json::Parse(R"("\uD83D\uDE00")").cast<std::string>(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(json::Parse("\"\xC3\xA9\"").cast<std::string>(), "\xC3\xA9");
  EXPECT_EQ(json::Parse(R"("\u0000")").cast<std::string>(), std::string(1, '\0'));
}

TEST(JSON, ParsesContainersInOrder) {
  Any v = json::Parse(R"({"b": [1, 2.5, "x", null, true], "a": {}, "c": []})");
  auto m = v.as<Map<Any, Any>>();
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->size(), 3u);
  // Members keep document order.
  EXPECT_EQ(m->get()->entries[0].first.cast<std::string>(), "b");
  EXPECT_EQ(m->get()->entries[1].first.cast<std::string>(), "a");
  EXPECT_EQ(m->get()->entries[2].first.cast<std::string>(), "c");
  auto b = m->at(Any("b")).as<Array<Any>>();
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->size(), 5u);
  EXPECT_EQ((*b)[0].as<int64_t>(), 1);
  EXPECT_EQ((*b)[1].as<double>(), 2.5);
  EXPECT_EQ((*b)[2].cast<std::string>(), "x");
  EXPECT_TRUE((*b)[3].is_none());
  EXPECT_EQ((*b)[4].as<bool>(), true);
  EXPECT_EQ((m->at(Any("a")).as<Map<Any, Any>>()->size()), 0u);
  EXPECT_EQ(m->at(Any("c")).as<Array<Any>>()->size(), 0u);
}

TEST(JSON, WritesCompactAndIndented) {
  Map<Any, Any> m;
  m.Set(Any("name"), Any("conv\"1\""));
  m.Set(Any("dims"), Array<Any>{Any(int64_t{1}), Any(2.0), Any(true), Any()});
  m.Set(Any("empty"), Array<Any>());
  EXPECT_EQ(json::Stringify(m), R"({"name":"conv\"1\"","dims":[1,2.0,true,null],"empty":[]})");
  EXPECT_EQ(json::Stringify(m, 2),
            "{\n  \"name\": \"conv\\\"1\\\"\",\n  \"dims\": [\n    1,\n    2.0,\n    true,\n    "
            "null\n  ],\n"
            "  \"empty\": []\n}");
}

TEST(JSON, WritesControlCharactersAsEscapes) {
  EXPECT_EQ(json::Stringify(Any(std::string("a\x01\n", 3))), R"("a\u0001\n")");
}

TEST(JSON, FloatsRoundTripExactly) {
  for (double d : {0.1, -0.0, 1e300, 5e-324, 123456789.125, 1.0 / 3.0, 2.0}) {
    std::string text = json::Stringify(Any(d));
    Any back = json::Parse(text);
    ASSERT_EQ(back.type_index(), kTCFFIFloat) << text;
    EXPECT_EQ(back.as<double>(), d) << text;
    EXPECT_EQ(std::signbit(*back.as<double>()), std::signbit(d)) << text;
  }
  EXPECT_EQ(json::Stringify(Any(2.0)), "2.0");
  EXPECT_EQ(json::Stringify(Any(-0.0)), "-0.0");
}

TEST(JSON, RoundTripsNestedDocument) {
  std::string text = R"({"a":[1,{"b":"\u00e9"},[[]]],"c":-3.25,"d":null})";
  EXPECT_EQ(json::Stringify(json::Parse(text)), R"({"a":[1,{"b":"é"},[[]]],"c":-3.25,"d":null})");
}

TEST(JSONErrors, NamesLineColumnAndExpectation) {
  EXPECT_EQ(ParseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
            "JSON: line 3, column 7: expected ':' after a member name, found '2'");
  EXPECT_EQ(
      ParseError("[1, 2"),
      "JSON: line 1, column 6: expected ',' or ']' after an array element, found end of input");
  EXPECT_EQ(ParseError(""), "JSON: line 1, column 1: expected a value, found end of input");
  EXPECT_EQ(ParseError("1 2"),
            "JSON: line 1, column 3: expected end of input after the top-level value, found '2'");
}

TEST(JSONErrors, RejectsNonStandardSyntax) {
  EXPECT_EQ(ParseError("[1,]"),
            "JSON: line 1, column 4: expected a value (object, array, string, number, true, false "
            "or null), found ']'");
  EXPECT_EQ(ParseError("{\"a\":1,}"),
            "JSON: line 1, column 8: expected a member name string, found '}'");
  EXPECT_EQ(ParseError("NaN"),
            "JSON: line 1, column 1: expected a value (object, array, string, number, true, false "
            "or null), found 'N'");
  EXPECT_EQ(ParseError("// c\n1"),
            "JSON: line 1, column 1: expected a value (object, array, string, number, true, false "
            "or null), found '/'");
  EXPECT_EQ(ParseError("'a'"),
            "JSON: line 1, column 1: expected a value (object, array, string, number, true, false "
            "or null), found '''");
  EXPECT_EQ(ParseError("{a: 1}"),
            "JSON: line 1, column 2: expected a member name string, found 'a'");
  EXPECT_EQ(ParseError("tru"),
            "JSON: line 1, column 1: expected a value (object, array, string, number, true, false "
            "or null), found 't'");
}

TEST(JSONErrors, RejectsBadNumbers) {
  EXPECT_EQ(ParseError("01"),
            "JSON: line 1, column 2: expected end of input after the top-level value, found '1'");
  EXPECT_EQ(ParseError("1."),
            "JSON: line 1, column 3: expected a digit after '.', found end of input");
  EXPECT_EQ(ParseError("-"), "JSON: line 1, column 2: expected a digit, found end of input");
  EXPECT_EQ(ParseError("1e+"),
            "JSON: line 1, column 4: expected a digit in the exponent, found end of input");
  EXPECT_EQ(ParseError("+1"),
            "JSON: line 1, column 1: expected a value (object, array, string, number, true, false "
            "or null), found '+'");
  EXPECT_EQ(ParseError("9223372036854775808"),
            "JSON: line 1, column 1: expected an integer in the int64 range, found '9'");
  EXPECT_EQ(ParseError("1e400"),
            "JSON: line 1, column 1: expected a number in the range of a double, found '1'");
}

TEST(JSONErrors, RejectsBadStrings) {
  EXPECT_EQ(ParseError("\"abc"),
            "JSON: line 1, column 5: expected '\"' closing the string, found end of input");
  EXPECT_EQ(ParseError("\"a\nb\""),
            "JSON: line 1, column 3: expected a string character (control characters must be "
            "escaped), found byte 0x0A");
  EXPECT_EQ(ParseError(R"("\x")"),
            "JSON: line 1, column 3: expected an escape (one of \" \\ / b f n r t u), found 'x'");
  EXPECT_EQ(ParseError(R"("\u12G4")"),
            "JSON: line 1, column 6: expected 4 hex digits after \\u, found 'G'");
  EXPECT_EQ(ParseError(R"("\uDE00")"),
            "JSON: line 1, column 2: expected a high surrogate before a low surrogate, found '\\'");
  EXPECT_EQ(
      ParseError(R"("\uD83D")"),
      "JSON: line 1, column 8: expected a \\u low surrogate after a high surrogate, found '\"'");
  EXPECT_EQ(ParseError("\"\xC3\""),
            "JSON: line 1, column 2: expected valid UTF-8, found byte 0xC3");
  // Overlong encoding of '/' and an encoded surrogate are not UTF-8.
  EXPECT_EQ(ParseError("\"\xC0\xAF\""),
            "JSON: line 1, column 2: expected valid UTF-8, found byte 0xC0");
  EXPECT_EQ(ParseError("\"\xED\xA0\x80\""),
            "JSON: line 1, column 2: expected valid UTF-8, found byte 0xED");
}

TEST(JSONErrors, RejectsDuplicateMembers) {
  EXPECT_EQ(
      ParseError(R"({"a": 1, "a": 2})"),
      "JSON: line 1, column 10: expected a member name not used before in this object, found '\"'");
}

TEST(JSONErrors, LimitsNesting) {
  std::string ok = std::string(4, '[') + std::string(4, ']');
  EXPECT_EQ(ParseError(ok, 4), "");
  EXPECT_EQ(ParseError(std::string(5, '[') + std::string(5, ']'), 4),
            "JSON: line 1, column 5: expected at most 4 levels of nesting, found '['");
  // Hostile depth far beyond any stack: refused, not crashed.
  std::string deep(1000000, '[');
  EXPECT_EQ(ParseError(deep),
            "JSON: line 1, column 513: expected at most 512 levels of nesting, found '['");
  std::string deep_objects;
  for (int i = 0; i < 100000; ++i) deep_objects += "{\"a\":";
  EXPECT_NE(ParseError(deep_objects).find("levels of nesting"), std::string::npos);
}

TEST(JSONErrors, WriterNamesThePath) {
  Map<Any, Any> m;
  m.Set(Any("ops"), Array<Any>{Any(int64_t{1}), Any(std::nan(""))});
  try {
    json::Stringify(m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_EQ(
        e.message(),
        "JSON: float nan at value[\"ops\"][1] has no JSON form (JSON has no NaN or Infinity)");
  }
  Map<Any, Any> bad_key;
  bad_key.Set(Any(int64_t{3}), Any(int64_t{4}));
  try {
    json::Stringify(Array<Any>{bad_key});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(e.message(),
              "JSON: object keys must be strings, but value[0] has a key of type `int`");
  }
  try {
    json::Stringify(Array<Any>{Any(tilecore::ffi::Shape({1, 2}))});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "TypeError");
    EXPECT_EQ(e.message(), "JSON: cannot write a value of type `ffi.Shape` at value[0]");
  }
  try {
    json::Stringify(Any(std::string("\xFF")));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "JSON: string at value is not valid UTF-8 (byte 0)");
  }
}

}  // namespace
