// examples/device_plugin/src/bytecode.cc — toyacc's bytecode: text form and interpreter.
//
// The interpreter is toyacc's "chip". It checks every memory access against the
// buffer it names, so a wrong kernel raises an error instead of corrupting memory.
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "toyacc.h"

namespace toyacc {
namespace {

using tilecore::ir::DataType;

std::string Str(DataType t) { return tilecore::ffi::DLDataTypeToString(t); }

const char* OpName(const Insn& in) {
  switch (in.op) {
    case Op::kPush:
      return "push";
    case Op::kGet:
      return "get";
    case Op::kSet:
      return "set";
    case Op::kLoad:
      return "load";
    case Op::kStore:
      return "store";
    case Op::kBinary:
      return kBinaryOps[in.operand];
    case Op::kNot:
      return "not";
    case Op::kSelect:
      return "select";
    case Op::kCast:
      return "cast";
    case Op::kJump:
      return "jump";
    case Op::kJumpZero:
      return "jumpz";
    case Op::kRet:
      return "ret";
  }
  return "?";
}

std::string Format(const Kernel& k, const Insn& in) {
  std::ostringstream os;
  os << OpName(in);
  switch (in.op) {
    case Op::kPush:
      os << " " << Str(in.dtype) << " ";
      if (in.dtype.is_float()) {
        os.precision(17);
        os << in.literal;
      } else {
        os << in.operand;
      }
      break;
    case Op::kGet:
    case Op::kSet:
      os << " " << in.operand << "  ; " << k.slots[in.operand];
      break;
    case Op::kLoad:
    case Op::kStore:
      os << " " << Str(in.dtype) << " " << k.params[in.operand].name;
      break;
    case Op::kBinary:
    case Op::kSelect:
      os << " " << Str(in.dtype);
      break;
    case Op::kCast:
      os << " " << Str(in.dtype) << " " << Str(in.from);
      break;
    case Op::kJump:
    case Op::kJumpZero:
      os << " L" << in.operand;
      break;
    default:
      break;
  }
  return os.str();
}

// ---- values ------------------------------------------------------------------------------
// An integer of dtype t, kept in 64 bits: wrapped to t's width, sign- or zero-extended.
int64_t Wrap(int64_t v, DataType t) {
  if (t.is_bool()) return v != 0;
  if (t.bits() >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits()) - 1, u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (t.bits() - 1))) u |= ~mask;
  return int64_t(u);
}
double Round(double v, DataType t) { return t.bits() == 32 ? double(float(v)) : v; }

struct Slot {
  int64_t i = 0;
  double f = 0;
};

bool IsUnsigned(DataType t) { return t.is_uint() || t.is_bool(); }

// float -> integer: truncate toward zero, saturate to the target's range, NaN -> 0.
int64_t FloatToInt(double v, DataType to) {
  if (std::isnan(v)) return 0;
  if (to.is_bool()) return v != 0;
  double lo = to.is_uint() ? 0.0 : -std::ldexp(1.0, to.bits() - 1);
  double hi = to.is_uint() ? std::ldexp(1.0, to.bits()) : std::ldexp(1.0, to.bits() - 1);
  v = std::trunc(v);
  if (v <= lo) return to.is_uint() ? 0 : (to.bits() == 64 ? INT64_MIN : int64_t(lo));
  if (v >= hi)
    return to.bits() == 64 ? (to.is_uint() ? -1 : INT64_MAX) : Wrap(int64_t(uint64_t(hi) - 1), to);
  return to.is_uint() && v >= 9.2233720368547758e18 ? int64_t(uint64_t(v)) : Wrap(int64_t(v), to);
}

[[noreturn]] void Fail(const Kernel& k, size_t pc, const std::string& what) {
  TILECORE_THROW(RuntimeError) << "toyacc kernel `" << k.name << "`, pc " << pc << " (`"
                               << Format(k, k.code[pc]) << "`): " << what;
}

Slot Binary(const Kernel& k, size_t pc, int op, DataType t, Slot a, Slot b) {
  const std::string name = kBinaryOps[op];
  Slot r;
  if (t.is_float()) {
    double x = a.f, y = b.f;
    if (name == "add")
      r.f = x + y;
    else if (name == "sub")
      r.f = x - y;
    else if (name == "mul")
      r.f = x * y;
    else if (name == "div")
      r.f = x / y;
    else if (name == "mod")
      r.f = std::fmod(x, y);
    else if (name == "floordiv")
      r.f = std::floor(x / y);
    else if (name == "floormod")
      r.f = x - std::floor(x / y) * y;
    else if (name == "min")
      r.f = x < y ? x : y;
    else if (name == "max")
      r.f = x > y ? x : y;
    else if (name == "and" || name == "or")
      Fail(k, pc, "`" + name + "` needs integer or bool operands");
    else
      r.i = name == "eq"   ? x == y
            : name == "ne" ? x != y
            : name == "lt" ? x < y
            : name == "le" ? x <= y
            : name == "gt" ? x > y
                           : x >= y;
    r.f = Round(r.f, t);
    return r;
  }
  int64_t x = a.i, y = b.i;
  bool u = IsUnsigned(t);
  auto less = [&](int64_t p, int64_t q) { return u ? uint64_t(p) < uint64_t(q) : p < q; };
  if (name == "div" || name == "mod" || name == "floordiv" || name == "floormod") {
    if (y == 0) Fail(k, pc, "integer division by zero");
    int64_t q, m;
    if (u) {
      q = int64_t(uint64_t(x) / uint64_t(y));
      m = int64_t(uint64_t(x) % uint64_t(y));
    } else if (y == -1) {  // INT64_MIN / -1 wraps instead of trapping
      q = int64_t(0 - uint64_t(x));
      m = 0;
    } else {
      q = x / y;
      m = x % y;
      if ((name == "floordiv" || name == "floormod") && m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
    }
    r.i = (name == "div" || name == "floordiv") ? q : m;
  } else if (name == "add")
    r.i = int64_t(uint64_t(x) + uint64_t(y));
  else if (name == "sub")
    r.i = int64_t(uint64_t(x) - uint64_t(y));
  else if (name == "mul")
    r.i = int64_t(uint64_t(x) * uint64_t(y));
  else if (name == "min")
    r.i = less(x, y) ? x : y;
  else if (name == "max")
    r.i = less(x, y) ? y : x;
  else if (name == "and")
    return Slot{x != 0 && y != 0};
  else if (name == "or")
    return Slot{x != 0 || y != 0};
  else
    return Slot{name == "eq"   ? x == y
                : name == "ne" ? x != y
                : name == "lt" ? less(x, y)
                : name == "le" ? !less(y, x)
                : name == "gt" ? less(y, x)
                               : !less(x, y)};
  r.i = Wrap(r.i, t);
  return r;
}

Slot LoadElem(const char* p, DataType t) {
  Slot s;
  if (t.is_float()) {
    if (t.bits() == 32) {
      float v;
      std::memcpy(&v, p, 4);
      s.f = v;
    } else {
      std::memcpy(&s.f, p, 8);
    }
    return s;
  }
  uint64_t raw = 0;
  std::memcpy(&raw, p, t.lane_bytes());  // little-endian host
  s.i = t.is_bool() ? raw != 0 : Wrap(int64_t(raw), t);
  return s;
}

void StoreElem(char* p, DataType t, Slot s) {
  if (t.is_float()) {
    if (t.bits() == 32) {
      float v = float(s.f);
      std::memcpy(p, &v, 4);
    } else {
      std::memcpy(p, &s.f, 8);
    }
    return;
  }
  int64_t v = Wrap(s.i, t);
  std::memcpy(p, &v, t.lane_bytes());
}

// ---- text --------------------------------------------------------------------------------
[[noreturn]] void AssemblyError(int line, const std::string& what) {
  TILECORE_THROW(ValueError) << "toyacc bytecode, line " << line << ": " << what;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream is(line.substr(0, line.find(';')));
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::string Print(const std::vector<Kernel>& kernels) {
  std::ostringstream os;
  os << "; toyacc bytecode (examples/device_plugin): one instruction per line, see toyacc.h\n";
  for (const Kernel& k : kernels) {
    os << ".kernel " << k.name << "\n";
    for (const auto& p : k.params) {
      os << ".param " << p.name << " " << p.kind << " " << p.dtype << (p.written ? " rw" : " ro")
         << "\n";
    }
    os << ".slots";
    for (const std::string& s : k.slots) os << " " << s;
    os << "\n.stack " << k.stack_size << "\n";
    std::vector<bool> target(k.code.size() + 1, false);
    for (const Insn& in : k.code) {
      if (in.op == Op::kJump || in.op == Op::kJumpZero) target[size_t(in.operand)] = true;
    }
    for (size_t pc = 0; pc < k.code.size(); ++pc) {
      if (target[pc]) os << "L" << pc << ":\n";
      os << "    " << Format(k, k.code[pc]) << "\n";
    }
    os << ".end\n";
  }
  return os.str();
}

std::vector<Kernel> Assemble(const std::string& text) {
  std::vector<Kernel> out;
  Kernel* k = nullptr;
  std::unordered_map<std::string, size_t> labels;      // of the current kernel
  std::vector<std::pair<size_t, std::string>> fixups;  // jumps to resolve at .end
  std::istringstream is(text);
  int line_no = 0;
  auto fail = [&](const std::string& what) { AssemblyError(line_no, what); };
  auto dtype = [&](const std::string& s) {
    try {
      return DataType::Parse(s);
    } catch (const tilecore::ffi::Error&) {
      AssemblyError(line_no, "bad dtype `" + s + "`");
    }
  };
  auto number = [&](const std::string& s) {
    try {
      size_t used = 0;
      long long v = std::stoll(s, &used);
      if (used != s.size()) fail("bad number `" + s + "`");
      return int64_t(v);
    } catch (const std::logic_error&) {
      AssemblyError(line_no, "bad number `" + s + "`");
    }
  };
  for (std::string line; std::getline(is, line);) {
    ++line_no;
    std::vector<std::string> w = Split(line);
    if (w.empty()) continue;
    const std::string& op = w[0];
    auto want = [&](size_t n) {
      if (w.size() != n) fail("`" + op + "` takes " + std::to_string(n - 1) + " operands");
    };
    if (op == ".kernel") {
      want(2);
      if (k) fail("`.kernel` inside kernel `" + k->name + "` (missing `.end`)");
      out.emplace_back();
      k = &out.back();
      k->name = w[1];
      labels.clear();
      fixups.clear();
      continue;
    }
    if (!k) fail("`" + op + "` outside a kernel");
    if (op == ".param") {
      want(5);
      tilecore::runtime::KernelParam p{w[1], w[2], w[3], w[4] == "rw"};
      if (p.kind != "buffer" && p.kind != "int" && p.kind != "float")
        fail("bad parameter kind `" + p.kind + "`");
      dtype(p.dtype);
      k->params.push_back(p);
    } else if (op == ".slots") {
      k->slots.assign(w.begin() + 1, w.end());
      if (k->slots.size() < k->params.size()) fail("fewer slots than parameters");
    } else if (op == ".stack") {
      want(2);
      k->stack_size = number(w[1]);
      if (k->stack_size < 0 || k->stack_size > (1 << 20)) fail("bad stack size");
    } else if (op == ".end") {
      for (auto& [pc, label] : fixups) {
        auto it = labels.find(label);
        if (it == labels.end()) fail("kernel `" + k->name + "`: undefined label `" + label + "`");
        k->code[pc].operand = int64_t(it->second);
      }
      if (k->code.empty() || k->code.back().op != Op::kRet)
        fail("kernel `" + k->name + "` must end with `ret`");
      k = nullptr;
    } else if (op.back() == ':') {
      want(1);
      labels[op.substr(0, op.size() - 1)] = k->code.size();
    } else {
      Insn in{Op::kRet, DataType::Int(32), DataType::Int(32)};
      auto param = [&](const std::string& name) {
        for (size_t i = 0; i < k->params.size(); ++i) {
          if (k->params[i].name == name && k->params[i].kind == "buffer") return int64_t(i);
        }
        AssemblyError(line_no,
                      "`" + name + "` is not a buffer parameter of kernel `" + k->name + "`");
      };
      auto slot = [&](const std::string& s) {
        int64_t n = number(s);
        if (n < 0 || n >= int64_t(k->slots.size()))
          fail("slot " + s + " is not declared in `.slots`");
        return n;
      };
      size_t bin = 0;
      while (bin < std::size(kBinaryOps) && op != kBinaryOps[bin]) ++bin;
      if (op == "push") {
        want(3);
        in = {Op::kPush, dtype(w[1]), DataType::Int(32)};
        if (in.dtype.is_float()) {
          try {
            in.literal = std::stod(w[2]);
          } catch (const std::logic_error&) {
            fail("bad number `" + w[2] + "`");
          }
        } else {
          in.operand = number(w[2]);
        }
      } else if (op == "get" || op == "set") {
        want(2);
        in.op = op == "get" ? Op::kGet : Op::kSet;
        in.operand = slot(w[1]);
      } else if (op == "load" || op == "store") {
        want(3);
        in = {op == "load" ? Op::kLoad : Op::kStore, dtype(w[1]), DataType::Int(32), param(w[2])};
      } else if (bin < std::size(kBinaryOps)) {
        want(2);
        in = {Op::kBinary, dtype(w[1]), DataType::Int(32), int64_t(bin)};
      } else if (op == "not" || op == "ret") {
        want(1);
        in.op = op == "not" ? Op::kNot : Op::kRet;
      } else if (op == "select") {
        want(2);
        in = {Op::kSelect, dtype(w[1]), DataType::Int(32)};
      } else if (op == "cast") {
        want(3);
        in = {Op::kCast, dtype(w[1]), dtype(w[2])};
      } else if (op == "jump" || op == "jumpz") {
        want(2);
        in.op = op == "jump" ? Op::kJump : Op::kJumpZero;
        fixups.emplace_back(k->code.size(), w[1]);
      } else {
        fail("unknown instruction `" + op + "`");
      }
      k->code.push_back(in);
    }
  }
  if (k) fail("kernel `" + k->name + "` has no `.end`");
  return out;
}

// [toyacc.run.begin]
void Run(const Kernel& k, const std::vector<Arg>& args) {
  std::vector<Slot> locals(k.slots.size());
  for (size_t i = 0; i < k.params.size(); ++i) locals[i] = Slot{args[i].i, args[i].f};
  std::vector<Slot> stack;
  stack.reserve(size_t(k.stack_size));
  size_t pc = 0;
  auto pop = [&] {
    if (stack.empty()) Fail(k, pc, "stack underflow");
    Slot s = stack.back();
    stack.pop_back();
    return s;
  };
  for (; pc < k.code.size(); ++pc) {
    const Insn& in = k.code[pc];
    switch (in.op) {
      case Op::kPush:
        stack.push_back(Slot{in.operand, Round(in.literal, in.dtype)});
        break;
      case Op::kGet:
        stack.push_back(locals[in.operand]);
        break;
      case Op::kSet:
        locals[in.operand] = pop();
        break;
      case Op::kLoad:
      case Op::kStore: {
        Slot value = in.op == Op::kStore ? pop() : Slot{};
        int64_t index = pop().i;
        const BufferView& b = args[in.operand].buffer;
        if (index < 0 || index >= b.size) {
          Fail(k, pc,
               "index " + std::to_string(index) + " is outside `" + k.params[in.operand].name +
                   "` (" + std::to_string(b.size) + " elements)");
        }
        char* p = b.data + index * in.dtype.lane_bytes();
        if (in.op == Op::kLoad)
          stack.push_back(LoadElem(p, in.dtype));
        else
          StoreElem(p, in.dtype, value);
        break;
      }
      case Op::kBinary: {
        Slot b = pop(), a = pop();
        stack.push_back(Binary(k, pc, int(in.operand), in.dtype, a, b));
        break;
      }
      case Op::kNot:
        stack.push_back(Slot{pop().i == 0});
        break;
      case Op::kSelect: {
        Slot f = pop(), t = pop(), c = pop();
        stack.push_back(c.i ? t : f);
        break;
      }
      case Op::kCast: {
        Slot v = pop(), r;
        if (in.from.is_float() && in.dtype.is_float())
          r.f = Round(v.f, in.dtype);
        else if (in.from.is_float())
          r.i = FloatToInt(v.f, in.dtype);
        else if (in.dtype.is_float())
          r.f = Round(IsUnsigned(in.from) ? double(uint64_t(v.i)) : double(v.i), in.dtype);
        else
          r.i = Wrap(v.i, in.dtype);
        stack.push_back(r);
        break;
      }
      case Op::kJump:
        pc = size_t(in.operand) - 1;
        break;
      case Op::kJumpZero:
        if (pop().i == 0) pc = size_t(in.operand) - 1;
        break;
      case Op::kRet:
        return;
    }
  }
}
// [toyacc.run.end]

}  // namespace toyacc
