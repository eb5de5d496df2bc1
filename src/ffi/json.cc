/*
 * src/ffi/json.cc — the strict JSON reader and writer of json.h.
 *
 * The reader is a recursive-descent parser over a byte range with an explicit
 * depth budget; it never reads past the end and reports errors as line:column.
 * The writer prints floats with the shortest text that reads back to the same
 * double (std::to_chars), so Parse(Stringify(x)) == x for every finite float.
 */
#include "tilecore/ffi/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace json {
namespace {

/*! \brief Length of the valid UTF-8 sequence at s[i], or 0 if it is not valid. */
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------
class Parser {
 public:
  Parser(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  Any ParseDocument() {
    SkipWhitespace();
    Any value = ParseValue(0);
    SkipWhitespace();
    if (pos_ != text_.size()) Fail(pos_, "end of input after the top-level value");
    return value;
  }

 private:
  /*! \brief Throws ValueError: "JSON: line L, column C: expected X, found Y". */
  [[noreturn]] void Fail(size_t at, std::string_view expected) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    TILECORE_THROW(ValueError) << "JSON: line " << line << ", column " << column << ": expected "
                               << expected << ", found " << Describe(at);
  }

  std::string Describe(size_t at) const {
    if (at >= text_.size()) return "end of input";
    unsigned char c = static_cast<unsigned char>(text_[at]);
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof(buf), "byte 0x%02X", c);
    return buf;
  }

  void SkipWhitespace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  bool Consume(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  Any ParseValue(int depth) {
    if (pos_ >= text_.size()) Fail(pos_, "a value");
    switch (text_[pos_]) {
      case '{':
        return ParseObject(depth + 1);
      case '[':
        return ParseArray(depth + 1);
      case '"': {
        return Any(ParseString());
      }
      case 't':
        if (Consume("true")) return Any(true);
        break;
      case 'f':
        if (Consume("false")) return Any(false);
        break;
      case 'n':
        if (Consume("null")) return Any();
        break;
      default:
        if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9')) return ParseNumber();
    }
    Fail(pos_, "a value (object, array, string, number, true, false or null)");
  }

  void CheckDepth(int depth) {
    if (depth > max_depth_) {
      Fail(pos_, "at most " + std::to_string(max_depth_) + " levels of nesting");
    }
  }

  Any ParseObject(int depth) {
    CheckDepth(depth);
    ++pos_;  // '{'
    Map<Any, Any> out;
    auto* m = const_cast<MapObj*>(out.get());
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return out;
    }
    while (true) {
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') Fail(pos_, "a member name string");
      size_t key_pos = pos_;
      std::string key = ParseString();
      Any key_any(key);
      if (m->Find(key_any) != nullptr)
        Fail(key_pos, "a member name not used before in this object");
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != ':') Fail(pos_, "':' after a member name");
      ++pos_;
      SkipWhitespace();
      m->Set(std::move(key_any), ParseValue(depth));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return out;
      }
      Fail(pos_, "',' or '}' after an object member");
    }
  }

  Any ParseArray(int depth) {
    CheckDepth(depth);
    ++pos_;  // '['
    auto arr = make_object<ArrayObj>();
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Array<Any>(ObjectPtr<Object>(std::move(arr)));
    }
    while (true) {
      SkipWhitespace();
      arr->data.push_back(ParseValue(depth));
      SkipWhitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Array<Any>(ObjectPtr<Object>(std::move(arr)));
      }
      Fail(pos_, "',' or ']' after an array element");
    }
  }

  uint32_t ParseHex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      if (pos_ >= text_.size()) Fail(pos_, "4 hex digits after \\u");
      char c = text_[pos_];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        Fail(pos_, "4 hex digits after \\u");
      }
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  std::string ParseString() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail(pos_, "'\"' closing the string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) Fail(pos_, "a string character (control characters must be escaped)");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= text_.size()) Fail(pos_, "an escape character");
        char e = text_[pos_++];
        switch (e) {
          case '"':
            out.push_back('"');
            break;
          case '\\':
            out.push_back('\\');
            break;
          case '/':
            out.push_back('/');
            break;
          case 'b':
            out.push_back('\b');
            break;
          case 'f':
            out.push_back('\f');
            break;
          case 'n':
            out.push_back('\n');
            break;
          case 'r':
            out.push_back('\r');
            break;
          case 't':
            out.push_back('\t');
            break;
          case 'u': {
            size_t esc_pos = pos_ - 2;
            uint32_t cp = ParseHex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF)
              Fail(esc_pos, "a high surrogate before a low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (!Consume("\\u")) Fail(pos_, "a \\u low surrogate after a high surrogate");
              uint32_t lo = ParseHex4();
              if (lo < 0xDC00 || lo > 0xDFFF) Fail(pos_ - 6, "a low surrogate (\\uDC00-\\uDFFF)");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            AppendUtf8(cp, &out);
            break;
          }
          default:
            Fail(pos_ - 1, "an escape (one of \" \\ / b f n r t u)");
        }
        continue;
      }
      size_t len = Utf8SequenceLength(text_, pos_);
      if (len == 0) Fail(pos_, "valid UTF-8");
      out.append(text_.data() + pos_, len);
      pos_ += len;
    }
  }

  Any ParseNumber() {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        ++pos_;
        ++n;
      }
      return n;
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      Fail(pos_, "a digit");
    }
    bool is_float = false;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      is_float = true;
      if (digits() == 0) Fail(pos_, "a digit after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      is_float = true;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) Fail(pos_, "a digit in the exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (!is_float) {
      int64_t v = 0;
      auto r = std::from_chars(first, last, v);
      if (r.ec != std::errc() || r.ptr != last) Fail(start, "an integer in the int64 range");
      return Any(v);
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow (a negative exponent) reads as zero; overflow has no finite reading.
      const char* e = first;
      while (e < last && *e != 'e' && *e != 'E') ++e;
      bool underflow = e + 1 < last && e[1] == '-';
      if (!underflow) Fail(start, "a number in the range of a double");
      d = *first == '-' ? -0.0 : 0.0;
    } else if (r.ec != std::errc() || r.ptr != last) {
      Fail(start, "a number");
    }
    return Any(d);
  }

  std::string_view text_;
  size_t pos_{0};
  int max_depth_;
};

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------
class Writer {
 public:
  Writer(int indent, int max_depth) : indent_(indent), max_depth_(max_depth) {}

  std::string Write(const TCFFIAny& v) {
    Visit(v, 0);
    return std::move(out_);
  }

 private:
  [[noreturn]] void FailType(const TCFFIAny& v) const {
    TILECORE_THROW(TypeError) << "JSON: cannot write a value of type `" << details::AnyTypeName(&v)
                              << "` at " << PathString();
  }

  std::string PathString() const {
    std::string s = "value";
    for (const std::string& seg : path_) s += seg;
    return s;
  }

  void Newline(int depth) {
    if (indent_ < 0) return;
    out_.push_back('\n');
    out_.append(static_cast<size_t>(indent_) * depth, ' ');
  }

  void WriteString(std::string_view s) {
    out_.push_back('"');
    for (size_t i = 0; i < s.size();) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) {
        size_t len = Utf8SequenceLength(s, i);
        if (len == 0) {
          TILECORE_THROW(ValueError)
              << "JSON: string at " << PathString() << " is not valid UTF-8 (byte " << i << ")";
        }
        out_.append(s.data() + i, len);
        i += len;
        continue;
      }
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\f':
          out_ += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04X", c);
            out_ += buf;
          } else {
            out_.push_back(static_cast<char>(c));
          }
      }
      ++i;
    }
    out_.push_back('"');
  }

  void WriteFloat(double d) {
    if (!std::isfinite(d)) {
      TILECORE_THROW(ValueError) << "JSON: float " << d << " at " << PathString()
                                 << " has no JSON form (JSON has no NaN or Infinity)";
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), d);
    std::string_view s(buf, r.ptr - buf);
    out_ += s;
    // Keep floats floats when read back: "1" would come back as an int.
    if (s.find_first_of(".eE") == std::string_view::npos) out_ += ".0";
  }

  void Visit(const TCFFIAny& v, int depth) {
    std::string_view s;
    if (details::AnyGetStringView(&v, &s)) {
      WriteString(s);
      return;
    }
    switch (v.type_index) {
      case kTCFFINone:
        out_ += "null";
        return;
      case kTCFFIBool:
        out_ += v.v_int64 ? "true" : "false";
        return;
      case kTCFFIInt:
        out_ += std::to_string(v.v_int64);
        return;
      case kTCFFIFloat:
        WriteFloat(v.v_float64);
        return;
      case kTCFFIArray: {
        if (depth >= max_depth_) {
          TILECORE_THROW(ValueError)
              << "JSON: nesting deeper than " << max_depth_ << " at " << PathString();
        }
        const auto* arr = reinterpret_cast<const ArrayObj*>(v.v_obj);
        out_.push_back('[');
        for (size_t i = 0; i < arr->data.size(); ++i) {
          if (i) out_.push_back(',');
          Newline(depth + 1);
          path_.push_back(std::string("[").append(std::to_string(i)).append("]"));
          Visit(*arr->data[i].raw(), depth + 1);
          path_.pop_back();
        }
        if (!arr->data.empty()) Newline(depth);
        out_.push_back(']');
        return;
      }
      case kTCFFIMap: {
        if (depth >= max_depth_) {
          TILECORE_THROW(ValueError)
              << "JSON: nesting deeper than " << max_depth_ << " at " << PathString();
        }
        const auto* m = reinterpret_cast<const MapObj*>(v.v_obj);
        out_.push_back('{');
        bool first = true;
        for (const auto& [key, value] : m->entries) {
          std::string_view k;
          if (!details::AnyGetStringView(key.raw(), &k)) {
            TILECORE_THROW(TypeError) << "JSON: object keys must be strings, but " << PathString()
                                      << " has a key of type `" << key.GetTypeKey() << "`";
          }
          if (!first) out_.push_back(',');
          first = false;
          Newline(depth + 1);
          path_.push_back("[\"" + std::string(k) + "\"]");
          WriteString(k);
          out_.push_back(':');
          if (indent_ >= 0) out_.push_back(' ');
          Visit(*value.raw(), depth + 1);
          path_.pop_back();
        }
        if (!m->entries.empty()) Newline(depth);
        out_.push_back('}');
        return;
      }
      default:
        FailType(v);
    }
  }

  int indent_;
  int max_depth_;
  std::string out_;
  std::vector<std::string> path_;
};

}  // namespace

Any Parse(std::string_view text, int max_depth) { return Parser(text, max_depth).ParseDocument(); }

std::string Stringify(const AnyView& value, int indent, int max_depth) {
  return Writer(indent, max_depth).Write(*value.raw());
}

}  // namespace json
}  // namespace ffi
}  // namespace tilecore
