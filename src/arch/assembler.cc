// src/arch/assembler.cc — two-pass TC1 assembler.
//
// Pass 1 sizes every statement and defines labels; pass 2 evaluates operands and
// emits words. Statement sizes never depend on later labels (`.zero`/`.align`
// arguments must be known when they are reached), so label values agree between
// the passes. Operands are parsed from the format's operand list in the ISA
// table; after encoding, the word is run through decode(), so anything the
// decoder would reject (lane out of range, bad dtype) is reported here, by line.
#include "tilecore/arch/assembler.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "asm_internal.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::arch {

namespace {

/// Splits at top-level commas (not inside [] or ()).
std::vector<std::string_view> split_operands(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '[' || c == '(')
      ++depth;
    else if (c == ']' || c == ')')
      --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty() || !out.empty()) out.push_back(last);
  return out;
}

class Assembler final : public AsmContext {
 public:
  explicit Assembler(std::string_view text) {
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      lines_.push_back(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }

  bool is_final() const override { return final_; }
  std::vector<std::string_view> split(std::string_view s) const override {
    return split_operands(s);
  }

  Program run() {
    pass(false);
    pass(true);
    Program p;
    for (auto& t : text_)
      if (!t.words.empty()) p.text.push_back(std::move(t));
    for (auto& d : data_)
      if (!d.bytes.empty()) p.data.push_back(std::move(d));
    return p;
  }

 private:
  // ---- errors -------------------------------------------------------------------------------
  [[noreturn]] void error(const std::string& msg) const override {
    std::string src(trim(
        line_no_ > 0 && size_t(line_no_) <= lines_.size() ? lines_[size_t(line_no_ - 1)] : ""));
    throw AsmError(line_no_, EscapeNul(msg), EscapeNul(src));
  }
  // Messages travel as C strings: an embedded NUL would cut them, so it is spelled out.
  static std::string EscapeNul(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\0' ? std::string("\\0") : std::string(1, c);
    return out;
  }

  // ---- expressions --------------------------------------------------------------------------
  struct Expr {
    const Assembler& as;
    std::string_view s;
    size_t i = 0;
    int depth = 0;  // nesting of ( - + ~; bounded so no input can exhaust the stack
    // Expressions wrap modulo 2^64 like the registers they feed (no UB on overflow).
    static int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
    static int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
    static int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
    void skip() {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    }
    bool eat(std::string_view tok) {
      skip();
      if (s.substr(i, tok.size()) == tok) {
        i += tok.size();
        return true;
      }
      return false;
    }
    struct Nest {
      Expr& e;
      explicit Nest(Expr& x) : e(x) {
        if (++e.depth > 200) e.as.error("expression nested too deeply");
      }
      ~Nest() { --e.depth; }
    };
    int64_t primary() {
      skip();
      if (i >= s.size()) as.error("expression expected");
      char c = s[i];
      Nest nest(*this);
      if (c == '(') {
        ++i;
        int64_t v = parse();
        if (!eat(")")) as.error("missing ')'");
        return v;
      }
      if (c == '-') {
        ++i;
        return wrap_sub(0, primary());
      }
      if (c == '+') {
        ++i;
        return primary();
      }
      if (c == '~') {
        ++i;
        return ~primary();
      }
      if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t j = i;
        int base = 10;
        if (s.substr(i, 2) == "0x" || s.substr(i, 2) == "0X") {
          base = 16;
          j += 2;
        } else if (s.substr(i, 2) == "0b" || s.substr(i, 2) == "0B") {
          base = 2;
          j += 2;
        }
        uint64_t v = 0;
        size_t digits = 0;
        for (; j < s.size(); ++j) {
          char d = char(std::tolower(static_cast<unsigned char>(s[j])));
          int dv = std::isdigit(static_cast<unsigned char>(d)) ? d - '0'
                   : (d >= 'a' && d <= 'f')                    ? d - 'a' + 10
                                                               : 99;
          if (dv >= base) break;
          if (v > (UINT64_MAX - uint64_t(dv)) / uint64_t(base))
            as.error("number too large: '" + std::string(s.substr(i, j - i + 1)) + "'");
          v = v * uint64_t(base) + uint64_t(dv);  // values above INT64_MAX wrap (raw 64-bit words)
          ++digits;
        }
        if (digits == 0 || (j < s.size() && is_ident_char(s[j])))
          as.error("malformed number '" + std::string(s.substr(i)) + "'");
        i = j;
        return int64_t(v);
      }
      if (c == '\'' && i + 2 < s.size() && s[i + 2] == '\'') {
        int64_t v = s[i + 1];
        i += 3;
        return v;
      }
      if (is_ident_start(c)) {
        size_t j = i;
        while (j < s.size() && is_ident_char(s[j])) ++j;
        std::string name(s.substr(i, j - i));
        i = j;
        return as.symbol(name);
      }
      as.error(std::string("unexpected '") + c + "' in expression");
    }
    int64_t mul() {
      int64_t v = primary();
      for (;;) {
        if (eat("*"))
          v = wrap_mul(v, primary());
        else if (eat("/")) {
          int64_t d = primary();
          if (d == 0) as.error("division by zero in expression");
          v = d == -1 ? wrap_sub(0, v) : v / d;
        } else if (eat("%")) {
          int64_t d = primary();
          if (d == 0) as.error("division by zero in expression");
          v = d == -1 ? 0 : v % d;
        } else
          return v;
      }
    }
    int64_t add() {
      int64_t v = mul();
      for (;;) {
        if (eat("+"))
          v = wrap_add(v, mul());
        else if (eat("-"))
          v = wrap_sub(v, mul());
        else
          return v;
      }
    }
    int64_t shift() {
      int64_t v = add();
      for (;;) {
        if (eat("<<")) {
          int64_t n = add();
          v = (n >= 0 && n < 64) ? int64_t(uint64_t(v) << n) : 0;
        } else if (eat(">>")) {
          int64_t n = add();
          v = (n >= 0 && n < 63) ? (v >> n) : 0;
        } else
          return v;
      }
    }
    int64_t band() {
      int64_t v = shift();
      while (eat("&")) v &= shift();
      return v;
    }
    int64_t bxor() {
      int64_t v = band();
      while (eat("^")) v ^= band();
      return v;
    }
    int64_t parse() {
      int64_t v = bxor();
      while (eat("|")) v |= bxor();
      return v;
    }
  };

  int64_t symbol(const std::string& name) const {
    if (final_) {
      // An .equ constant is evaluated on first use in the final pass, so a forward
      // reference to a later .equ works and a circular definition is found.
      auto e = equ_expr_.find(name);
      if (e != equ_expr_.end() && !equ_done_.count(name)) return eval_equ(name, e->second);
    }
    auto it = symbols_.find(name);
    if (it != symbols_.end()) return it->second;
    if (!final_) {
      ++undefined_;
      return 0;
    }
    error("undefined symbol '" + name + "'");
  }

  // All data segments together: a program image holds at most 1 GiB of data.
  static constexpr uint64_t kMaxDataBytes = uint64_t(1) << 30;

  int64_t eval_equ(const std::string& name, const std::string& expr) const {
    if (equ_busy_.count(name)) error("symbol '" + name + "' is defined in terms of itself");
    equ_busy_.insert(name);
    int64_t v = eval(expr);
    equ_busy_.erase(name);
    equ_done_.insert(name);
    symbols_[name] = v;
    return v;
  }

  // A data directive's value must fit its width, as signed or unsigned.
  void check_fits(std::string_view directive, int64_t v, int bits) const {
    int64_t lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << bits) - 1;
    if (v < lo || v > hi) error(std::to_string(v) + " does not fit " + std::string(directive));
  }

  int64_t eval(std::string_view s) const override {
    s = trim(s);
    if (s.empty()) error("expression expected");
    Expr e{*this, s};
    int64_t v = e.parse();
    e.skip();
    if (e.i != s.size()) error("unexpected '" + std::string(s.substr(e.i)) + "' after expression");
    return v;
  }

  int64_t eval_known(std::string_view s) const {
    int before = undefined_;
    int64_t v = eval(s);
    if (undefined_ != before)
      error("'" + std::string(trim(s)) + "' must be defined before this line");
    return v;
  }

  int32_t eval_imm32(std::string_view s) const {
    int64_t v = eval(s);
    if (final_ && (v < INT32_MIN || v > int64_t(UINT32_MAX)))
      error("immediate " + std::to_string(v) + " does not fit in 32 bits");
    return int32_t(uint32_t(uint64_t(v)));
  }

  double eval_float(std::string_view s) const override {
    s = trim(s);
    std::string str(s);
    if (str == "inf" || str == "+inf") return INFINITY;
    if (str == "-inf") return -INFINITY;
    if (str == "nan") return NAN;
    char* end = nullptr;
    double v = std::strtod(str.c_str(), &end);
    if (end == str.c_str() || *end != '\0') return double(eval(s));
    return v;
  }

  // ---- operands -----------------------------------------------------------------------------
  int reg(std::string_view s, char kind, int count) const {
    s = trim(s);
    if (kind == 'x' && s == "zero") return 0;
    if (s.size() < 2 || s[0] != kind)
      error(std::string("expected a ") + kind + " register, got '" + std::string(s) + "'");
    int v = 0;
    for (size_t i = 1; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i])) || v > 100)
        error(std::string("expected a ") + kind + " register, got '" + std::string(s) + "'");
      v = v * 10 + (s[i] - '0');
    }
    if (v >= count)
      error("register '" + std::string(s) + "' does not exist (" + kind + "0.." + kind +
            std::to_string(count - 1) + ")");
    return v;
  }

  static bool looks_like_xreg(std::string_view s) {
    if (s == "zero") return true;
    if (s.size() < 2 || s[0] != 'x') return false;
    for (size_t i = 1; i < s.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
  }

  /// "xN", "xN + e", "xN - e", or "e" -> (reg, imm)
  std::pair<int, int32_t> reg_plus(std::string_view s) const {
    s = trim(s);
    size_t j = 0;
    while (j < s.size() && is_ident_char(s[j])) ++j;
    std::string_view head = s.substr(0, j);
    if (looks_like_xreg(head)) {
      int r = reg(head, 'x', 32);
      std::string_view rest = trim(s.substr(j));
      if (rest.empty()) return {r, 0};
      if (rest[0] != '+' && rest[0] != '-')
        error("expected '+' or '-' after register in '" + std::string(s) + "'");
      int64_t v = eval(rest.substr(1));
      if (rest[0] == '-') v = int64_t(0 - uint64_t(v));
      if (final_ && (v < INT32_MIN || v > INT32_MAX))
        error("offset " + std::to_string(v) + " does not fit in 32 bits");
      return {r, int32_t(v)};
    }
    return {0, eval_imm32(s)};
  }

  Space space(std::string_view s) const {
    auto sp = parse_space(trim(s));
    if (!sp) error("unknown memory space '" + std::string(trim(s)) + "' (ddr, l2, l1)");
    return *sp;
  }

  static void set_field(Inst& i, Field f, unsigned v) {
    switch (f) {
      case Field::A:
        i.a = uint8_t(v);
        break;
      case Field::B:
        i.b = uint8_t(v);
        break;
      case Field::C:
        i.c = uint8_t(v);
        break;
      case Field::D:
        i.d = uint8_t(v);
        break;
      case Field::E:
        i.e = uint8_t(v);
        break;
      case Field::Imm:
        break;
    }
  }
  static unsigned get_field(const Inst& i, Field f) {
    switch (f) {
      case Field::A:
        return i.a;
      case Field::B:
        return i.b;
      case Field::C:
        return i.c;
      case Field::D:
        return i.d;
      case Field::E:
        return i.e;
      case Field::Imm:
        return 0;
    }
    return 0;
  }

  uint64_t assemble_instruction(std::string_view mn_full, std::string_view ops, int64_t pc) const {
    // Longest dotted prefix that is a mnemonic; the rest are dtype suffixes.
    std::vector<std::string_view> parts;
    size_t p = 0;
    for (;;) {
      size_t dot = mn_full.find('.', p);
      parts.push_back(
          mn_full.substr(p, dot == std::string_view::npos ? std::string_view::npos : dot - p));
      if (dot == std::string_view::npos) break;
      p = dot + 1;
    }
    std::optional<Opcode> op;
    size_t used = 0;
    for (size_t k = parts.size(); k >= 1 && !op; --k) {
      std::string_view cand =
          mn_full.substr(0, size_t(parts[k - 1].data() + parts[k - 1].size() - mn_full.data()));
      if ((op = find_opcode(cand))) used = k;
    }
    if (!op) error("unknown instruction '" + std::string(mn_full) + "'");
    const InstrInfo& row = info(*op);
    const FormatInfo& fmt = format_info(row.format);
    size_t nsuf = parts.size() - used;
    if (int(nsuf) != fmt.num_dtypes) {
      if (fmt.num_dtypes == 0) error("'" + std::string(row.mnemonic) + "' takes no dtype suffix");
      error("'" + std::string(row.mnemonic) + "' needs " + std::to_string(fmt.num_dtypes) +
            " dtype suffix" +
            (fmt.num_dtypes == 2
                 ? "es (.dst.src)"
                 : " (e.g. ." + std::string(dtype_name(DType(__builtin_ctz(row.dtypes)))) + ")"));
    }
    Inst inst;
    inst.op = *op;
    for (size_t k = 0; k < nsuf; ++k) {
      auto dt = parse_dtype(parts[used + k]);
      if (!dt) error("unknown dtype '" + std::string(parts[used + k]) + "'");
      if (k == 0) {
        if (!(row.dtypes >> unsigned(*dt) & 1)) {
          std::string allowed;
          for (int t = 0; t < kNumDTypes; ++t)
            if (row.dtypes >> t & 1)
              allowed += (allowed.empty() ? "" : " ") + std::string(dtype_name(DType(t)));
          error("'" + std::string(row.mnemonic) + "' does not accept dtype " +
                std::string(dtype_name(*dt)) + " (accepts " + allowed + ")");
        }
        inst.e = uint8_t(*dt);
      } else {
        inst.c = uint8_t(*dt);
      }
    }
    std::vector<std::string_view> args = split_operands(ops);
    int required = 0;
    for (int k = 0; k < fmt.num_operands; ++k)
      if (fmt.operands[size_t(k)].kind != OperandKind::PredOpt) ++required;
    if (int(args.size()) < required || int(args.size()) > fmt.num_operands)
      error("'" + std::string(row.mnemonic) + "' expects " +
            (required == fmt.num_operands
                 ? std::to_string(required)
                 : std::to_string(required) + " or " + std::to_string(fmt.num_operands)) +
            " operands (" + std::string(fmt.syntax) + "), got " + std::to_string(args.size()));
    for (size_t k = 0; k < args.size(); ++k) {
      const OperandSpec& o = fmt.operands[k];
      std::string_view a = args[k];
      switch (o.kind) {
        case OperandKind::XReg:
          set_field(inst, o.f0, unsigned(reg(a, 'x', 32)));
          break;
        case OperandKind::VReg:
          set_field(inst, o.f0, unsigned(reg(a, 'v', 32)));
          break;
        case OperandKind::PReg:
        case OperandKind::PredOpt:
          set_field(inst, o.f0, unsigned(reg(a, 'p', 8)));
          break;
        case OperandKind::Imm:
        case OperandKind::Lane:
          inst.imm = eval_imm32(a);
          break;
        case OperandKind::Label: {
          int64_t target = (!a.empty() && a[0] == '@') ? eval(a.substr(1)) : eval(a);
          int64_t rel = target - pc;
          if (final_ && (rel < INT32_MIN || rel > INT32_MAX)) error("branch target out of range");
          inst.imm = int32_t(rel);
          break;
        }
        case OperandKind::Csr: {
          auto c = parse_csr(trim(a));
          if (!c)
            error("unknown CSR '" + std::string(trim(a)) +
                  "' (coreid ncores cycle instret cnt.din cnt.dout cnt.mm cnt.vec)");
          inst.imm = int32_t(*c);
          break;
        }
        case OperandKind::Mem: {
          a = trim(a);
          if (a.size() < 2 || a.front() != '[' || a.back() != ']')
            error("expected a memory operand [space: xbase + offset], got '" + std::string(a) +
                  "'");
          std::string_view in = a.substr(1, a.size() - 2);
          size_t colon = in.find(':');
          if (colon == std::string_view::npos)
            error("memory operand needs a space: [ddr|l2|l1: xbase + offset]");
          set_field(inst, o.f1, unsigned(space(in.substr(0, colon))));
          auto [r, imm] = reg_plus(in.substr(colon + 1));
          set_field(inst, o.f0, unsigned(r));
          inst.imm = imm;
          break;
        }
        case OperandKind::Desc: {
          a = trim(a);
          if (a.size() < 2 || a.front() != '[' || a.back() != ']')
            error("expected a descriptor operand [xbase + offset], got '" + std::string(a) + "'");
          std::string_view in = a.substr(1, a.size() - 2);
          if (in.find(':') != std::string_view::npos)
            error("descriptors are always in local L1: write [xbase + offset] without a space");
          auto [r, imm] = reg_plus(in);
          set_field(inst, o.f0, unsigned(r));
          inst.imm = imm;
          break;
        }
        case OperandKind::SpaceAddr: {
          size_t colon = a.find(':');
          if (colon == std::string_view::npos)
            error("expected space:xreg (e.g. ddr:x5), got '" + std::string(a) + "'");
          unsigned sp = unsigned(space(a.substr(0, colon)));
          set_field(inst, o.f1, get_field(inst, o.f1) | sp << o.shift);
          set_field(inst, o.f0, unsigned(reg(a.substr(colon + 1), 'x', 32)));
          break;
        }
        case OperandKind::Queue: {
          std::string_view q = trim(a);
          if (q == "sc")
            set_field(inst, o.f0, 0);
          else if (auto e = parse_engine(q))
            set_field(inst, o.f0, unsigned(*e) + 1);
          else
            error("unknown queue '" + std::string(q) + "' (sc din dout mm vec)");
          break;
        }
        case OperandKind::Engine: {
          auto e = parse_engine(trim(a));
          if (!e) error("unknown engine '" + std::string(trim(a)) + "' (din dout mm vec)");
          set_field(inst, o.f0, unsigned(*e));
          break;
        }
        case OperandKind::Count: {
          auto [r, imm] = reg_plus(a);
          set_field(inst, o.f0, unsigned(r));
          inst.imm = imm;
          break;
        }
      }
    }
    uint64_t word = encode(inst);
    if (final_) {
      std::string why;
      if (!decode(word, &why)) error(why);
    }
    return word;
  }

  // ---- data directives ----------------------------------------------------------------------
  DataSegment& cur_data() {
    if (in_text_ || data_.empty()) error("data directive outside a .data segment");
    return data_.back();
  }
  template <typename T>
  void emit(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    auto& d = cur_data();
    d.bytes.insert(d.bytes.end(), b, b + sizeof(T));
  }
  void emit_bytes(const uint8_t* p, size_t n) {
    auto& d = cur_data();
    d.bytes.insert(d.bytes.end(), p, p + n);
  }

  void dmadesc(std::string_view rest) {
    auto b = assemble_dmadesc(*this, rest);
    emit_bytes(b.data(), b.size());
  }
  void vecdesc(std::string_view rest) {
    auto b = assemble_vecdesc(*this, rest);
    emit_bytes(b.data(), b.size());
  }
  void mmdesc(std::string_view rest) {
    auto b = assemble_mmdesc(*this, rest);
    emit_bytes(b.data(), b.size());
  }

  uint32_t parse_core_mask(std::string_view s) const {
    s = trim(s);
    if (s == "all") return kAllCoresMask;
    uint32_t mask = 0;
    for (auto part : split_operands(s)) {
      size_t dash = part.find('-');
      int64_t lo = eval_known(part.substr(0, dash));
      int64_t hi = dash == std::string_view::npos ? lo : eval_known(part.substr(dash + 1));
      if (lo < 0 || hi > 15 || lo > hi)
        error("core numbers must be in 0..15, got '" + std::string(part) + "'");
      for (int64_t c = lo; c <= hi; ++c) mask |= 1u << c;
    }
    if (!mask) error(".core needs core numbers or 'all'");
    return mask;
  }

  TextSection& cur_text() {
    for (auto& t : text_)
      if (t.core_mask == cur_mask_) return t;
    for (auto& t : text_)
      if (t.core_mask & cur_mask_)
        error("a core of this .core selection already has code in another section");
    text_.push_back(TextSection{cur_mask_, {}, {}});
    return text_.back();
  }
  int64_t text_size() const {
    for (auto& t : text_)
      if (t.core_mask == cur_mask_) return int64_t(t.words.size());
    return 0;
  }

  void define(const std::string& name, int64_t value) {
    if (parse_space(name) || looks_like_xreg(name) || find_opcode(name))
      error("'" + name + "' is reserved and cannot be a label or constant");
    if (!final_) {
      if (symbols_.count(name)) error("symbol '" + name + "' defined twice");
      symbols_[name] = value;
    }
  }

  void directive(std::string_view name, std::string_view rest) {
    if (name == ".core") {
      cur_mask_ = parse_core_mask(rest);
      in_text_ = true;
    } else if (name == ".text") {
      in_text_ = true;
    } else if (name == ".data") {
      auto args = split_operands(rest);
      if (args.size() != 2) error(".data needs SPACE, ADDRESS");
      Space sp = space(args[0]);
      int64_t addr = eval_known(args[1]);
      if (addr < 0) error(".data address must not be negative");
      data_.push_back(DataSegment{sp == Space::L1 ? cur_mask_ : 0u, sp, uint64_t(addr), {}});
      in_text_ = false;
    } else if (name == ".equ" || name == ".set") {
      auto args = split_operands(rest);
      if (args.size() != 2) error(std::string(name) + " needs NAME, VALUE");
      std::string n(args[0]);
      if (!final_) {
        define(n, eval(args[1]));
        equ_expr_[n] = std::string(trim(args[1]));
      } else if (!equ_done_.count(n)) {
        eval_equ(n, std::string(trim(args[1])));  // forward references resolve on the final pass
      }
    } else if (name == ".byte" || name == ".half" || name == ".word") {
      for (auto a : split_operands(rest)) {
        int64_t v = eval(a);
        if (final_) check_fits(name, v, name == ".byte" ? 8 : name == ".half" ? 16 : 32);
        if (name == ".byte")
          emit(uint8_t(v));
        else if (name == ".half")
          emit(uint16_t(v));
        else
          emit(uint32_t(v));
      }
    } else if (name == ".float" || name == ".f16" || name == ".bf16") {
      for (auto a : split_operands(rest)) {
        float f = float(eval_float(a));
        if (name == ".float")
          emit(f);
        else if (name == ".f16")
          emit(f32_to_f16(f));
        else
          emit(f32_to_bf16(f));
      }
    } else if (name == ".zero") {
      int64_t n = eval_known(rest);
      if (n < 0 || n > (int64_t(1) << 28)) error(".zero size out of range");
      uint64_t total = uint64_t(n);
      for (const auto& d : data_) total += d.bytes.size();
      if (total > kMaxDataBytes) {
        error("the data segments would hold " + std::to_string(total) + " bytes, more than " +
              std::to_string(kMaxDataBytes) + " (the most a program image holds)");
      }
      cur_data().bytes.resize(cur_data().bytes.size() + size_t(n));
    } else if (name == ".align") {
      int64_t n = eval_known(rest);
      if (n <= 0 || (n & (n - 1)) || n > 4096) error(".align needs a power of two up to 4096");
      auto& d = cur_data();
      while ((d.addr + d.bytes.size()) % uint64_t(n)) d.bytes.push_back(0);
    } else if (name == ".dmadesc") {
      cur_data();
      dmadesc(rest);
    } else if (name == ".vecdesc") {
      cur_data();
      vecdesc(rest);
    } else if (name == ".mmdesc") {
      cur_data();
      mmdesc(rest);
    } else if (name == ".inst") {
      if (!in_text_) error(".inst outside a text section");
      int64_t v = eval(rest);
      auto& t = cur_text();
      t.words.push_back(uint64_t(v));
      t.lines.push_back(line_no_);
    } else {
      error("unknown directive '" + std::string(name) + "'");
    }
  }

  void pass(bool final) {
    final_ = final;
    text_.clear();
    data_.clear();
    cur_mask_ = kAllCoresMask;
    in_text_ = true;
    for (size_t li = 0; li < lines_.size(); ++li) {
      line_no_ = int(li + 1);
      std::string_view s = lines_[li];
      size_t cut = std::min(s.find('#'), s.find("//"));
      if (cut != std::string_view::npos) s = s.substr(0, cut);
      s = trim(s);
      // Labels: identifiers directly followed by ':' at the start.
      while (!s.empty() && is_ident_start(s[0])) {
        size_t j = 0;
        while (j < s.size() && is_ident_char(s[j])) ++j;
        if (j < s.size() && s[j] == ':' && s.substr(0, j).find('.') != 0) {
          std::string name(s.substr(0, j));
          define(name, in_text_ ? text_size()
                                : (data_.empty()
                                       ? 0
                                       : int64_t(data_.back().addr + data_.back().bytes.size())));
          s = trim(s.substr(j + 1));
        } else {
          break;
        }
      }
      if (s.empty()) continue;
      size_t sp = 0;
      while (sp < s.size() && !std::isspace(static_cast<unsigned char>(s[sp]))) ++sp;
      std::string_view head = s.substr(0, sp), rest = trim(s.substr(sp));
      if (head[0] == '.') {
        directive(head, rest);
        continue;
      }
      if (!in_text_) error("instruction inside a .data segment (use .core or .text first)");
      auto& t = cur_text();
      int64_t pc = int64_t(t.words.size());
      uint64_t w = assemble_instruction(head, rest, pc);
      t.words.push_back(w);
      t.lines.push_back(line_no_);
    }
    line_no_ = 0;
  }

  std::vector<std::string_view> lines_;
  mutable std::unordered_map<std::string, int64_t> symbols_;
  std::unordered_map<std::string, std::string> equ_expr_;  // .equ/.set name -> its expression
  mutable std::unordered_set<std::string> equ_done_,
      equ_busy_;  // final pass: evaluated / being evaluated
  std::vector<TextSection> text_;
  std::vector<DataSegment> data_;
  uint32_t cur_mask_ = kAllCoresMask;
  bool in_text_ = true;
  bool final_ = false;
  int line_no_ = 0;
  mutable int undefined_ = 0;
};

}  // namespace

Program assemble(std::string_view text) { return Assembler(text).run(); }

}  // namespace tilecore::arch
