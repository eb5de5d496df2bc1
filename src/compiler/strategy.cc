/*
 * src/compiler/strategy.cc — the strategy registry, TensorSpec, LowerOp / HasStrategy
 * (strategy.h) and the helpers of kernel_util.h.
 */
#include "tilecore/compiler/strategy.h"

#include "tilecore/compiler/compiler_attrs.h"
#include "tilecore/compiler/host_kernel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

#include "kernel_util.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/functor.h"

namespace tilecore {
namespace compiler {

int64_t TensorSpecObj::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

TensorSpec::TensorSpec(Array<int64_t> shape, ir::DataType dtype) {
  for (int64_t d : shape) {
    if (d < 0) TILECORE_THROW(ValueError) << "TensorSpec: negative dimension " << d;
  }
  auto n = ffi::make_object<TensorSpecObj>();
  n->shape = std::move(shape);
  n->dtype = dtype;
  data_ = std::move(n);
}

namespace {
template <typename T>
std::vector<T> ToVec(const Array<T>& a) {
  std::vector<T> v;
  for (const T& x : a) v.push_back(x);
  return v;
}
// (shared: a caller keeps the strategy it found while a custom kernel replaces it)
std::map<std::string, std::shared_ptr<const Strategy>>& Registry() {
  static std::map<std::string, std::shared_ptr<const Strategy>> r;
  return r;
}
std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const Strategy> Find(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(op_type);
  return it == Registry().end() ? nullptr : it->second;
}
}  // namespace

std::shared_ptr<const Strategy> FindStrategy(const std::string& op_type) { return Find(op_type); }

void RegisterStrategy(const std::string& op_type, Strategy s) {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry()[op_type] = std::make_shared<const Strategy>(std::move(s));
  }
  ffi::Function::SetGlobal(
      "compiler.strategy." + op_type,
      ffi::Function::FromTyped([op_type](Map<String, Any> attrs, Array<TensorSpec> inputs,
                                         Array<TensorSpec> outputs, target::Target target) {
        return LowerOp(op_type, attrs, ToVec(inputs), ToVec(outputs), target);
      }),
      true);
}

void RemoveStrategy(const std::string& op_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(op_type);
}

std::vector<std::string> ListStrategies() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> out;
  for (const auto& [k, v] : Registry()) out.push_back(k);
  return out;
}

std::string HasStrategy(const std::string& op_type, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& inputs) {
  // (the compiler's own attributes first: a misspelt or mistyped one is an error in the
  // pass that set it, whatever the op)
  std::string attrs_why = CheckCompilerAttrs(op_type, attrs);
  if (!attrs_why.empty()) return attrs_why;
  std::shared_ptr<const Strategy> s = Find(op_type);
  if (!s) return "no npu strategy for " + op_type;
  size_t n = s->data_inputs < 0 ? inputs.size() : std::min<size_t>(inputs.size(), s->data_inputs);
  for (size_t i = 0; i < n; ++i) {
    if (!inputs[i].defined()) continue;
    ir::DataType t = inputs[i]->dtype;
    bool narrowed =
        t == ir::DataType::Int(64) && std::find(s->int64_inputs.begin(), s->int64_inputs.end(),
                                                static_cast<int>(i)) != s->int64_inputs.end();
    if (t.bits() == 64 && !narrowed)
      return op_type + ": input " + std::to_string(i) + " is " + t.str() +
             " (TC1 has no 64-bit types)";
  }
  return s->check ? s->check(op_type, attrs, inputs) : "";
}

ir::PrimFunc LowerOp(const std::string& op_type, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                     const target::Target& target) {
  if (target->kind != "npu") {
    TILECORE_THROW(ValueError) << "LowerOp(" << op_type << "): strategies target npu, not "
                               << target->kind;
  }
  std::string why = HasStrategy(op_type, attrs, inputs);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerOp(" << op_type << "): " << why;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined())
      TILECORE_THROW(ValueError) << "LowerOp(" << op_type << "): output " << i << " is None";
    std::shared_ptr<const Strategy> found = Find(op_type);
    bool written = outputs[i]->dtype == ir::DataType::Int(64) && found && found->int64_outputs;
    if (outputs[i]->dtype.bits() == 64 && !written)
      TILECORE_THROW(ValueError) << "LowerOp(" << op_type << "): output " << i << " is "
                                 << outputs[i]->dtype.str() << " (TC1 has no 64-bit types)";
  }
  std::shared_ptr<const Strategy> s = Find(op_type);
  if (!s) TILECORE_THROW(ValueError) << "LowerOp(" << op_type << "): no npu strategy";
  int64_t data = s->data_inputs < 0
                     ? static_cast<int64_t>(inputs.size())
                     : std::min<int64_t>(static_cast<int64_t>(inputs.size()), s->data_inputs);
  OpCall call{op_type, attrs, inputs, outputs, target.GetInt("cores"), target.GetInt("l1"),
              data,    true};
  return s->lower(call);
}

namespace detail {

Params MakeParams(const OpCall& call) {
  Params p;
  // params a layer group's kernel will find in the shared L2 (its intermediates): priced
  // as L2 by the cost model, so the plan is chosen for where the tensor really is
  std::vector<int64_t> in_l2 = AttrInts(call.attrs, "tc_in_l2", {});
  int64_t n_params = call.data_inputs + int64_t(call.outputs.size());
  for (int64_t i : in_l2)
    if (i < 0 || i >= n_params)
      TILECORE_THROW(ValueError) << call.op_type << ": attribute tc_in_l2 names param " << i
                                 << "; the kernel has " << n_params << " (inputs, then outputs)";
  auto add = [&](const TensorSpec& t, const std::string& name, std::vector<Buffer>* into) {
    bool l2 = std::find(in_l2.begin(), in_l2.end(), int64_t(p.vars.size())) != in_l2.end();
    Array<PrimExpr> s;
    for (int64_t d : t->shape) s.push_back(I32(d));
    if (s.empty()) s.push_back(I32(1));
    ir::DataType dt = t->dtype;
    if (call.int64_words && dt == ir::DataType::Int(64)) {
      dt = ir::DataType::Int(32);
      s.Set(s.size() - 1, I32(2 * (t->shape.empty() ? 1 : t->shape.back())));
    }
    Buffer b = DeclBuffer(s, dt, String(name), l2 ? "shared" : "global");
    p.vars.push_back(b->data);
    p.map.Set(b->data, b);
    into->push_back(b);
  };
  for (size_t i = 0; i < static_cast<size_t>(call.data_inputs); ++i) {
    if (!call.inputs[i].defined()) {  // an omitted optional input: a one-element placeholder
      add(TensorSpec(Array<int64_t>{1}, DataType::Float(32)), "in" + std::to_string(i), &p.in);
      continue;
    }
    add(call.inputs[i], "in" + std::to_string(i), &p.in);
  }
  for (size_t i = 0; i < call.outputs.size(); ++i)
    add(call.outputs[i], "out" + std::to_string(i), &p.out);
  return p;
}

std::string KernelSymbol(const std::string& op_type) {
  std::string sym;
  // (a custom op's "domain::Op" has characters no symbol takes)
  for (char ch : op_type) {
    auto c = static_cast<unsigned char>(ch);
    sym += static_cast<char>(std::isalnum(c) ? std::tolower(c) : '_');
  }
  return sym;
}

PrimFunc MakeFunc(const OpCall& call, const Params& p, Stmt body) {
  Map<String, Any> attrs;
  attrs.Set("global_symbol", String(KernelSymbol(call.op_type)));
  attrs.Set("op_type", String(call.op_type));
  attrs.Set("input_params", call.data_inputs);
  return PrimFunc(p.vars, body, p.map, attrs);
}

int64_t NestedLocalBytes(const Stmt& s) {
  const Object* n = s.get();
  switch (ir::NodeKindOf(n)) {
    case ir::NodeKind::kAllocate: {
      const auto* a = static_cast<const ir::AllocateNode*>(n);
      // (a shape not constant counts nothing: PlanLocalMemory refuses it itself)
      const int64_t bytes = a->buffer->scope.view() == "local" ? ShapeBytes(a->buffer, 0) : 0;
      return bytes + NestedLocalBytes(a->body);
    }
    case ir::NodeKind::kSeqStmt: {
      int64_t most = 0;
      for (const Stmt& x : static_cast<const ir::SeqStmtNode*>(n)->seq)
        most = std::max(most, NestedLocalBytes(x));
      return most;
    }
    case ir::NodeKind::kFor:
      return NestedLocalBytes(static_cast<const ir::ForNode*>(n)->body);
    case ir::NodeKind::kLetStmt:
      return NestedLocalBytes(static_cast<const ir::LetStmtNode*>(n)->body);
    case ir::NodeKind::kWhile:
      return NestedLocalBytes(static_cast<const ir::WhileNode*>(n)->body);
    case ir::NodeKind::kIfThenElse: {
      const auto* i = static_cast<const ir::IfThenElseNode*>(n);
      return std::max(NestedLocalBytes(i->then_case), NestedLocalBytes(i->else_case));
    }
    default:
      return 0;
  }
}

bool HasAttr(const Map<String, Any>& attrs, const std::string& name) {
  return attrs.count(String(name)) != 0;
}

int64_t AttrInt(const Map<String, Any>& attrs, const std::string& name, int64_t dflt) {
  auto v = attrs.Get(String(name));
  if (!v) return dflt;
  if (auto i = v->try_cast<int64_t>()) return *i;
  TILECORE_THROW(TypeError) << "attribute " << name << ": expected an int";
  return dflt;
}

double AttrFloat(const Map<String, Any>& attrs, const std::string& name, double dflt) {
  auto v = attrs.Get(String(name));
  if (!v) return dflt;
  if (auto f = v->try_cast<double>()) return *f;
  TILECORE_THROW(TypeError) << "attribute " << name << ": expected a float";
  return dflt;
}

std::string AttrStr(const Map<String, Any>& attrs, const std::string& name,
                    const std::string& dflt) {
  auto v = attrs.Get(String(name));
  if (!v) return dflt;
  if (auto s = v->try_cast<String>()) return std::string(*s);
  TILECORE_THROW(TypeError) << "attribute " << name << ": expected a string";
  return dflt;
}

std::vector<int64_t> AttrInts(const Map<String, Any>& attrs, const std::string& name,
                              const std::vector<int64_t>& dflt) {
  auto v = attrs.Get(String(name));
  if (!v) return dflt;
  auto a = v->try_cast<Array<Any>>();
  if (!a) TILECORE_THROW(TypeError) << "attribute " << name << ": expected a list of ints";
  std::vector<int64_t> out;
  for (const Any& x : *a) {
    auto i = x.try_cast<int64_t>();
    if (!i) TILECORE_THROW(TypeError) << "attribute " << name << ": expected a list of ints";
    out.push_back(*i);
  }
  return out;
}

std::vector<double> AttrFloats(const Map<String, Any>& attrs, const std::string& name) {
  std::vector<double> out;
  auto v = attrs.Get(String(name));
  if (!v || v->is_none()) return out;
  auto a = v->try_cast<Array<Any>>();
  if (!a) TILECORE_THROW(TypeError) << "attribute " << name << ": expected a list of numbers";
  for (const Any& x : *a) {
    if (auto f = x.try_cast<double>())
      out.push_back(*f);
    else if (auto i = x.try_cast<int64_t>())
      out.push_back(static_cast<double>(*i));
    else
      TILECORE_THROW(TypeError) << "attribute " << name << ": expected a list of numbers";
  }
  return out;
}

std::vector<int64_t> Shape(const TensorSpec& t) {
  std::vector<int64_t> v;
  for (int64_t d : t->shape) v.push_back(d);
  return v;
}

int64_t Numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string CheckDTypes(const std::vector<TensorSpec>& ins, const std::vector<DataType>& dtypes,
                        const std::string& op) {
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].defined()) continue;
    bool ok = false;
    for (DataType t : dtypes) ok = ok || ins[i]->dtype == t;
    if (!ok) {
      std::ostringstream os;
      os << op << ": input " << i << " has dtype " << ins[i]->dtype.str()
         << "; the npu strategy takes";
      for (DataType t : dtypes) os << " " << t.str();
      return os.str();
    }
  }
  return "";
}

std::string CheckInt8Code(const Map<String, Any>& attrs, const std::string& scale,
                          const std::string& zero_point, const std::string& op) {
  const double s = AttrFloat(attrs, scale, 0.0);
  const int64_t zp = AttrInt(attrs, zero_point, 0);
  if (!(s > 0.0) || !std::isfinite(s)) return op + ": " + scale + " must be positive and finite";
  if (zp < -128 || zp > 127) return op + ": " + zero_point + " must be in [-128, 127]";
  return "";
}

std::string CheckInt8Input(const Map<String, Any>& attrs, const TensorSpec& x,
                           const std::string& op) {
  const bool x_i8 = x->dtype == DataType::Int(8);
  if (x_i8 != HasAttr(attrs, "tc_x_scale"))
    return op + ": an int8 input goes with tc_x_scale (its code), another without";
  return x_i8 ? CheckInt8Code(attrs, "tc_x_scale", "tc_x_zero_point", op) : "";
}

}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<TensorSpecObj>()
      .def_ro("shape", &TensorSpecObj::shape, "the static shape")
      .def_ro("dtype", &TensorSpecObj::dtype, "the element type");
});

std::string PlanKey(const OpCall& call) {
  std::vector<std::string> items;
  auto text = [](const Any& v) {
    std::ostringstream o;
    o.precision(17);
    if (auto i = v.try_cast<int64_t>()) {
      o << *i;
    } else if (auto f = v.try_cast<double>()) {
      o << *f;
    } else if (auto s = v.try_cast<String>()) {
      o << '"' << std::string(*s) << '"';
    } else if (auto a = v.try_cast<Array<Any>>()) {
      for (const Any& x : *a) {
        if (auto xi = x.try_cast<int64_t>())
          o << *xi << ',';
        else if (auto xf = x.try_cast<double>())
          o << *xf << ',';
        else
          o << "?,";
      }
    } else {
      o << '?';
    }
    return o.str();
  };
  for (const auto& [k, v] : call.attrs.items()) {
    std::string name(k), value;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_scale") == 0) {
      // (a scale of exactly 1 skips a multiply)
      auto f = v.try_cast<double>();
      value = f && *f == 1.0 ? "one" : "scale";
    } else if (name.find("zero_point") != std::string::npos) {
      auto i = v.try_cast<int64_t>();
      value = i && *i == 0 ? "0" : "nonzero";
    } else {
      value = text(v);
    }
    items.push_back(name + "=" + value);
  }
  std::sort(items.begin(), items.end());
  std::ostringstream key;
  for (const std::string& s : items) key << s << ';';
  auto spec = [&](const TensorSpec& t) {
    if (!t.defined()) return std::string("none");
    std::ostringstream o;
    for (int64_t d : t->shape) o << d << 'x';
    o << t->dtype.str();
    return o.str();
  };
  key << "op " << call.op_type << "; words " << call.int64_words << ';';
  for (const TensorSpec& t : call.inputs) key << "in " << spec(t) << ';';
  for (const TensorSpec& t : call.outputs) key << "out " << spec(t) << ';';
  key << "cores " << call.cores << "; l1 " << call.l1_bytes << "; data " << call.data_inputs;
  return key.str();
}

TILECORE_REGISTER_GLOBAL("compiler.TensorSpec")
    .set_body_typed([](Array<int64_t> shape, String dtype) {
      return TensorSpec(shape, ir::DataType::Parse(std::string(dtype)));
    });
TILECORE_REGISTER_GLOBAL("compiler.HasStrategy")
    .set_body_typed([](String op_type, Map<String, Any> attrs, Array<Any> inputs) {
      std::vector<TensorSpec> in;
      for (const Any& a : inputs) in.push_back(a.is_none() ? TensorSpec() : a.cast<TensorSpec>());
      return String(HasStrategy(std::string(op_type), attrs, in));
    });
TILECORE_REGISTER_GLOBAL("compiler.LowerOp")
    .set_body_typed([](String op_type, Map<String, Any> attrs, Array<Any> inputs,
                       Array<TensorSpec> outputs, target::Target target) {
      std::vector<TensorSpec> in;
      for (const Any& a : inputs) in.push_back(a.is_none() ? TensorSpec() : a.cast<TensorSpec>());
      return LowerOp(std::string(op_type), attrs, in, ToVec(outputs), target);
    });
TILECORE_REGISTER_GLOBAL("compiler.KernelSignature")
    .set_body_typed([](String op_type, int64_t n_inputs) -> Array<Any> {
      std::string op(op_type);
      std::shared_ptr<const Strategy> s = Find(op);
      if (s == nullptr) TILECORE_THROW(ValueError) << "KernelSignature: no strategy for " << op;
      int64_t data = s->data_inputs < 0 ? n_inputs : std::min<int64_t>(n_inputs, s->data_inputs);
      return Array<Any>{Any(String(detail::KernelSymbol(op))), Any(data)};
    });
TILECORE_REGISTER_GLOBAL("compiler.ListStrategies").set_body_typed([]() {
  Array<String> out;
  for (const std::string& s : ListStrategies()) out.push_back(String(s));
  return out;
});

}  // namespace compiler
}  // namespace tilecore
