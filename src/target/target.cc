// src/target/target.cc — target kinds, target strings, and the codegen lookup.
#include "tilecore/target/target.h"

#include <cctype>
#include <climits>
#include <unordered_set>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/function.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/runtime/kernel.h"

namespace tilecore::target {
namespace {

std::string OptionList(const TargetKindInfo& k) {
  std::string s;
  for (const TargetOption& o : k.options) s += (s.empty() ? "-" : ", -") + o.name;
  return s.empty() ? "none" : s;
}

std::string Describe(const TargetOption& o) {
  if (o.type == "bool") return "a flag (-" + o.name + ", or -" + o.name + "=true/false)";
  if (o.type == "str") {
    if (o.choices.empty()) return "a string";
    std::string s;
    for (const std::string& c : o.choices) s += (s.empty() ? "" : ", ") + c;
    return "one of " + s;
  }
  std::string range = std::to_string(o.min) + ".." + std::to_string(o.max);
  if (o.type == "size") return "a size in bytes (e.g. 256MiB, 64KiB), " + range;
  return "an integer in " + range;
}

bool ParseInt(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  size_t i = 0;
  bool neg = v[0] == '-';
  if (neg) i = 1;
  if (i == v.size()) return false;
  int64_t n = 0;
  for (; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return false;
    if (n > (INT64_MAX - 9) / 10) return false;
    n = n * 10 + (v[i] - '0');
  }
  *out = neg ? -n : n;
  return true;
}

bool ParseSize(std::string v, int64_t* out) {
  int64_t mult = 1;
  auto strip = [&](const char* suf, int64_t m) {
    size_t n = std::char_traits<char>::length(suf);
    if (v.size() > n && v.compare(v.size() - n, n, suf) == 0) {
      v.resize(v.size() - n);
      mult = m;
      return true;
    }
    return false;
  };
  strip("GiB", int64_t(1) << 30) || strip("MiB", int64_t(1) << 20) ||
      strip("KiB", int64_t(1) << 10);
  int64_t n = 0;
  if (!ParseInt(v, &n) || n < 0 || n > (INT64_MAX / mult)) return false;
  *out = n * mult;
  return true;
}

ffi::Any ParseValue(const std::string& kind, const TargetOption& o, const std::string& value,
                    bool has_value) {
  auto bad = [&]() {
    TILECORE_THROW(ValueError) << "target `" << kind << "`: bad value for option -" << o.name << "="
                               << value << ": expected " << Describe(o);
  };
  if (o.type == "bool") {
    if (!has_value || value == "true" || value == "1") return ffi::Any(true);
    if (value == "false" || value == "0") return ffi::Any(false);
    bad();
  }
  if (!has_value) {
    TILECORE_THROW(ValueError) << "target `" << kind << "`: option -" << o.name
                               << " needs a value: " << Describe(o);
  }
  if (o.type == "str") {
    if (!o.choices.empty()) {
      bool ok = false;
      for (const std::string& c : o.choices) ok = ok || c == value;
      if (!ok) bad();
    }
    return ffi::Any(ffi::String(value));
  }
  int64_t n = 0;
  bool ok = o.type == "size" ? ParseSize(value, &n) : ParseInt(value, &n);
  if (!ok || n < o.min || n > o.max) bad();
  return ffi::Any(n);
}

std::string Render(const ffi::Any& v) {
  if (auto b = v.try_cast<bool>(); b && v.raw()->type_index == kTCFFIBool)
    return *b ? "true" : "false";
  if (auto i = v.try_cast<int64_t>()) return std::to_string(*i);
  return v.cast<std::string>();
}

}  // namespace

TargetKind TargetKind::Get(const std::string& name) {
  auto f = ffi::Function::GetGlobal("target.kind." + name);
  if (!f) {
    std::string known;
    for (const std::string& n : ListNames()) known += (known.empty() ? "" : ", ") + n;
    TILECORE_THROW(ValueError) << "unknown target kind `" << name << "` (known: " << known << ")";
  }
  return (*f)().cast<TargetKind>();
}

std::vector<std::string> TargetKind::ListNames() {
  std::vector<std::string> out;
  for (const ffi::String& n : ffi::Function::ListGlobalNames()) {
    std::string_view v = n.view();
    if (v.rfind("target.kind.", 0) == 0) out.emplace_back(v.substr(12));
  }
  return out;
}

void RegisterTargetKind(TargetKindInfo info, bool allow_override) {
  if (info.name.empty()) TILECORE_THROW(ValueError) << "a target kind needs a name";
  for (const TargetOption& o : info.options) {
    if (o.type != "int" && o.type != "bool" && o.type != "str" && o.type != "size") {
      TILECORE_THROW(ValueError) << "target kind `" << info.name << "`: option -" << o.name
                                 << " has unknown type `" << o.type << "` (int, bool, str, size)";
    }
  }
  std::string name = info.name;
  TargetKind kind(ffi::make_object<TargetKindObj>(std::move(info)));
  ffi::Function::SetGlobal(
      "target.kind." + name,
      ffi::Function::FromPacked([kind](ffi::PackedArgs, ffi::Any* rv) { *rv = ffi::Any(kind); }),
      allow_override);
}

Target Target::Parse(const std::string& spec) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < spec.size()) {
    while (i < spec.size() && (spec[i] == ' ' || spec[i] == '\t')) ++i;
    size_t j = i;
    while (j < spec.size() && spec[j] != ' ' && spec[j] != '\t') ++j;
    if (j > i) tokens.push_back(spec.substr(i, j - i));
    i = j;
  }
  if (tokens.empty())
    TILECORE_THROW(ValueError) << "empty target string (expected e.g. \"npu -cores=4\" or \"c\")";
  TargetKind kind = TargetKind::Get(tokens[0]);
  const TargetKindInfo& k = kind->info;
  auto obj = ffi::make_object<TargetObj>();
  obj->kind = ffi::String(k.name);
  obj->device_type = k.device_type;
  std::vector<ffi::Any> values(k.options.size());
  std::vector<std::string> given(k.options.size());  // the token that set each option
  for (size_t t = 1; t < tokens.size(); ++t) {
    const std::string& tok = tokens[t];
    if (tok.size() < 2 || tok[0] != '-') {
      TILECORE_THROW(ValueError) << "target `" << k.name
                                 << "`: expected an option like -name=value, got `" << tok
                                 << "` (valid: " << OptionList(k) << ")";
    }
    size_t eq = tok.find('=');
    std::string key = tok.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
    std::string value = eq == std::string::npos ? "" : tok.substr(eq + 1);
    size_t idx = k.options.size();
    for (size_t o = 0; o < k.options.size(); ++o) {
      if (k.options[o].name == key) idx = o;
    }
    if (idx == k.options.size()) {
      TILECORE_THROW(ValueError) << "target `" << k.name << "`: unknown option -" << key
                                 << " (valid: " << OptionList(k) << ")";
    }
    if (!given[idx].empty()) {  // which one would win is a guess: refused
      TILECORE_THROW(ValueError) << "target `" << k.name << "`: option -" << key
                                 << " given twice (`" << given[idx] << "` and `" << tok << "`)";
    }
    given[idx] = tok;
    values[idx] = ParseValue(k.name, k.options[idx], value, eq != std::string::npos);
  }
  ffi::Map<ffi::String, ffi::Any> opts;
  for (size_t o = 0; o < k.options.size(); ++o) {
    const ffi::Any& v =
        values[o].raw()->type_index != kTCFFINone ? values[o] : k.options[o].default_value;
    if (v.raw()->type_index != kTCFFINone) opts.Set(ffi::String(k.options[o].name), v);
  }
  obj->options = opts;
  return Target(obj);
}

std::string Target::str() const {
  std::string s(get()->kind.view());
  for (const auto& [key, value] : get()->options.items()) {
    if (value.raw()->type_index == kTCFFIBool) {
      if (value.cast<bool>()) s += " -" + std::string(key.view());
      continue;
    }
    s += " -" + std::string(key.view()) + "=" + Render(value);
  }
  return s;
}

int64_t Target::GetInt(const std::string& option) const {
  if (!get()->options.count(ffi::String(option))) {
    TILECORE_THROW(KeyError) << "target `" << str() << "` has no option -" << option;
  }
  return get()->options[ffi::String(option)].cast<int64_t>();
}
std::string Target::GetStr(const std::string& option) const {
  if (!get()->options.count(ffi::String(option))) return "";
  return Render(get()->options[ffi::String(option)]);
}
bool Target::GetBool(const std::string& option) const {
  return get()->options.count(ffi::String(option)) &&
         get()->options[ffi::String(option)].cast<bool>();
}

namespace {
// Elements a buffer spans from its data pointer, or -1 if its layout is symbolic.
int64_t BufferSpan(const ir::Buffer& b) {
  auto constant = [](const ir::PrimExpr& e, int64_t* v) {
    const auto* imm = e.as<ir::IntImmNode>();
    if (imm == nullptr) return false;
    *v = imm->value;
    return true;
  };
  int64_t offset = 0;
  if (b->elem_offset.defined() && !constant(b->elem_offset, &offset)) return -1;
  int64_t span = 1;
  if (b->strides.empty()) {
    for (const ir::PrimExpr& d : b->shape) {
      int64_t v = 0;
      if (!constant(d, &v) || v < 0 || __builtin_mul_overflow(span, v, &span)) return -1;
    }
    if (span == 0) return 0;
  } else {
    int64_t last = 0;
    for (size_t i = 0; i < b->shape.size(); ++i) {
      int64_t d = 0, st = 0, term = 0;
      if (!constant(b->shape[i], &d) || !constant(b->strides[i], &st) || d < 0 || st < 0) return -1;
      if (d == 0) return 0;
      if (__builtin_mul_overflow(d - 1, st, &term) || __builtin_add_overflow(last, term, &last))
        return -1;
    }
    span = last + 1;
  }
  int64_t total = 0;
  if (offset < 0 || __builtin_add_overflow(offset, span, &total)) return -1;
  return total;
}

// The pointer variables a kernel may write through: stores, the destination (argument 0) of
// an intrinsic whose first argument is one (DMA, tile commands), and, conservatively, every
// buffer or pointer any other call with an effect receives (call_packed, an unknown op).
class WrittenPointers : public ir::IRVisitor {
 public:
  std::unordered_set<const ir::VarNode*> vars;
  // It collects sets: each shared subexpression once (e = e + e is 2^n paths, n nodes).
  std::unordered_set<const ffi::Object*> visited;
  void VisitExpr(const ir::PrimExpr& e) override {
    if (e.defined() && visited.insert(e.get()).second) IRVisitor::VisitExpr(e);
  }
  void VisitStmt_(const ir::BufferStoreNode* op) override {
    vars.insert(op->buffer->data.get());
    IRVisitor::VisitStmt_(op);
  }
  // q = <expression using p>: a write through q may be a write through p.
  std::vector<std::pair<const ir::VarNode*, const ir::VarNode*>> aliases;
  void VisitStmt_(const ir::LetStmtNode* op) override {
    Alias(op->var.get(), op->value);
    IRVisitor::VisitStmt_(op);
  }
  void VisitExpr_(const ir::LetNode* op) override {
    Alias(op->var.get(), op->value);
    IRVisitor::VisitExpr_(op);
  }
  void Alias(const ir::VarNode* q, const ir::PrimExpr& value) {
    struct Uses : ir::IRVisitor {
      std::vector<const ir::VarNode*> vars;
      void VisitExpr_(const ir::VarNode* v) override { vars.push_back(v); }
    } uses;
    uses.VisitExpr(value);
    for (const ir::VarNode* p : uses.vars) aliases.emplace_back(q, p);
  }
  void Close() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [q, p] : aliases) {
        if (vars.count(q) && !vars.count(p)) changed = vars.insert(p).second || changed;
      }
    }
  }
  void VisitExpr_(const ir::CallNode* op) override {
    const ir::IntrinsicInfo* info = ir::LookupIntrinsic(op->op.view());
    if (info == nullptr || info->has_effect) {
      // Precise written flags let the executable loader check that a step reads only
      // what an input, a constant or an earlier step wrote.
      size_t n = WritesOnlyArgument0(info) ? std::min<size_t>(1, op->args.size()) : op->args.size();
      for (size_t i = 0; i < n; ++i) {
        const ir::PrimExpr& a = op->args[i];
        if (const auto* r = a.as<ir::BufferRegionNode>()) vars.insert(r->buffer->data.get());
        if (const auto* l = a.as<ir::BufferLoadNode>()) vars.insert(l->buffer->data.get());
        if (const auto* v = a.as<ir::VarNode>()) vars.insert(v);
      }
    }
    IRVisitor::VisitExpr_(op);
  }
  static bool WritesOnlyArgument0(const ir::IntrinsicInfo* info) {
    if (info == nullptr || info->args.empty() || info->args[0] != ir::IntrinArg::kRegion)
      return false;
    std::string_view first(info->arg_names);
    first = first.substr(0, first.find(','));
    return first == "dst" || first == "d" || first == "c";
  }
};

std::string SanitizedName(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
}  // namespace

// The kernel-call convention checks array sizes against the buffers' sizes; the code
// generators describe parameters by dtype, so the sizes are recorded here, from the IR
// they were built from, for every target kind.
void RecordBufferSizes(const ffi::Any& ir_module, const ffi::Any& built) {
  auto m = built.try_cast<runtime::Module>();
  if (!m || !m->defined()) return;
  std::optional<ir::IRModule> mod;
  if (auto im = ir_module.try_cast<ir::IRModule>(); im && im->defined()) {
    mod = *im;
  } else if (auto pf = ir_module.try_cast<ir::PrimFunc>(); pf && pf->defined()) {
    mod = ir::IRModule::FromFunction(*pf);
  } else {
    return;
  }
  for (const auto& [name, func] : (*mod)->functions.items()) {
    std::string n(name.view());
    std::vector<runtime::KernelParam>* params = m->node()->MutableParams(n);
    if (params == nullptr) params = m->node()->MutableParams(SanitizedName(n));
    if (params == nullptr || params->size() != func->params.size()) continue;
    WrittenPointers written;
    written.VisitStmt(func->body);
    written.Close();
    for (size_t i = 0; i < params->size(); ++i) {
      const ir::Var& p = func->params[i];
      if ((*params)[i].kind == "buffer" && func->buffer_map.count(p)) {
        (*params)[i].elements = BufferSpan(func->buffer_map[p]);
        // Only a buffer the kernel may write must be writable (and is copied back when staged).
        (*params)[i].written = written.vars.count(p.get()) > 0 ||
                               written.vars.count(func->buffer_map[p]->data.get()) > 0;
      }
    }
  }
}

ffi::Any Build(const ffi::Any& ir_module, const Target& target) {
  std::string name = "codegen.build_" + std::string(target->kind.view());
  auto f = ffi::Function::GetGlobal(name);
  if (!f) {
    TILECORE_THROW(ValueError)
        << "no code generator for target kind `" << target->kind.view() << "` (`" << name
        << "` is not registered; was tilecore built with it, or its plugin loaded?)";
  }
  ffi::Any built = (*f)(ir_module, target);
  RecordBufferSizes(ir_module, built);
  return built;
}

// ---- built-in kinds ------------------------------------------------------------------------
namespace {
TargetOption Opt(std::string name, std::string type, std::string doc, ffi::Any def,
                 int64_t lo = INT64_MIN, int64_t hi = INT64_MAX,
                 std::vector<std::string> choices = {}) {
  TargetOption o;
  o.name = std::move(name);
  o.type = std::move(type);
  o.doc = std::move(doc);
  o.default_value = std::move(def);
  o.min = lo;
  o.max = hi;
  o.choices = std::move(choices);
  return o;
}
}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<TargetObj>()
      .def_ro("kind", &TargetObj::kind, "the target kind's name")
      .def_ro("options", &TargetObj::options, "every option: given value or default")
      .def_ro("device_type", &TargetObj::device_type, "DLPack device type the code runs on");
#if TILECORE_ENABLE_NPU
  RegisterTargetKind(TargetKindInfo{
      "npu",
      12,
      "the TC1 NPU (run on the simulator)",
      {Opt("model", "str", "chip model", ffi::Any(ffi::String("tc1")), 0, 0, {"tc1"}),
       Opt("cores", "int", "cores the kernel is split across", ffi::Any(int64_t{4}), 1, 16),
       Opt("l1", "size", "local SRAM per core the compiler may use", ffi::Any(int64_t{1} << 20),
           4096, int64_t{1} << 20),
       Opt("device", "int", "npu device number the module runs on by default", ffi::Any(int64_t{0}),
           0, 15)}});
#endif
  RegisterTargetKind(
      TargetKindInfo{"c",
                     1,
                     "C source compiled with the host C compiler and loaded (runs on the cpu)",
                     {Opt("cc", "str", "C compiler command", ffi::Any(ffi::String("cc"))),
                      Opt("opt", "int", "optimisation level (-O<opt>)", ffi::Any(int64_t{2}), 0, 3),
                      Opt("keep", "bool", "keep the generated files", ffi::Any(false))}});
});

void AddTargetPass(const std::string& kind, const ffi::Any& pass) {
  if (pass.type_index() < kTCFFIStaticObjectBegin) {
    TILECORE_THROW(TypeError) << "target.AddPass(`" << kind
                              << "`, pass): pass must be a transform.Pass, got `"
                              << pass.GetTypeKey() << "`";
  }
  TargetKind k = TargetKind::Get(kind);
  auto* obj = const_cast<TargetKindObj*>(k.get());
  std::lock_guard<std::mutex> lock(obj->passes_mu);
  obj->passes.push_back(pass);
}

std::vector<ffi::Any> TargetPasses(const std::string& kind) {
  TargetKind k = TargetKind::Get(kind);
  auto* obj = const_cast<TargetKindObj*>(k.get());
  std::lock_guard<std::mutex> lock(obj->passes_mu);
  return obj->passes;
}

void ClearTargetPasses(const std::string& kind) {
  TargetKind k = TargetKind::Get(kind);
  auto* obj = const_cast<TargetKindObj*>(k.get());
  std::lock_guard<std::mutex> lock(obj->passes_mu);
  obj->passes.clear();
}

std::string PostprocSource(const std::string& kind, const std::string& code) {
  auto f = ffi::Function::GetGlobal("codegen.postproc_" + kind);
  if (!f) return code;
  ffi::Any r = (*f)(ffi::String(code));
  auto s = r.try_cast<ffi::String>();
  if (!s) {
    TILECORE_THROW(TypeError) << "codegen.postproc_" << kind
                              << " must return the source as a string, got `" << r.GetTypeKey()
                              << "`";
  }
  return std::string(s->view());
}

TILECORE_REGISTER_GLOBAL("target.AddPass").set_body_typed([](std::string kind, ffi::Any pass) {
  AddTargetPass(kind, pass);
});
TILECORE_REGISTER_GLOBAL("target.ListPasses").set_body_typed([](std::string kind) {
  ffi::Array<ffi::Any> out;
  for (const ffi::Any& p : TargetPasses(kind)) out.push_back(p);
  return out;
});
TILECORE_REGISTER_GLOBAL("target.ClearPasses").set_body_typed([](std::string kind) {
  ClearTargetPasses(kind);
});
TILECORE_REGISTER_GLOBAL("target.PostprocSource")
    .set_body_typed([](std::string kind, std::string code) {
      return ffi::String(PostprocSource(kind, code));
    });
TILECORE_REGISTER_GLOBAL("target.Target").set_body_typed([](std::string spec) {
  return Target::Parse(spec);
});
TILECORE_REGISTER_GLOBAL("target.TargetStr").set_body_typed([](Target t) {
  return ffi::String(t.str());
});
TILECORE_REGISTER_GLOBAL("target.ListKinds").set_body_typed([]() {
  ffi::Array<ffi::String> out;
  for (const std::string& n : TargetKind::ListNames()) out.push_back(ffi::String(n));
  return out;
});
TILECORE_REGISTER_GLOBAL("target.KindOptions").set_body_typed([](std::string name) {
  ffi::Array<ffi::Any> out;
  for (const TargetOption& o : TargetKind::Get(name)->info.options) {
    ffi::Map<ffi::String, ffi::Any> m;
    m.Set("name", ffi::Any(ffi::String(o.name)));
    m.Set("type", ffi::Any(ffi::String(o.type)));
    m.Set("doc", ffi::Any(ffi::String(o.doc)));
    m.Set("default", o.default_value);
    m.Set("description", ffi::Any(ffi::String(Describe(o))));
    out.push_back(ffi::Any(m));
  }
  return out;
});
// target.RegisterKind(name, device_type, [{name, type, doc, default, min, max, choices}], override)
TILECORE_REGISTER_GLOBAL("target.RegisterKind")
    .set_body_typed([](std::string name, int64_t device_type, ffi::Array<ffi::Any> options,
                       bool allow_override) {
      TargetKindInfo info;
      info.name = name;
      info.device_type = static_cast<int32_t>(device_type);
      for (const ffi::Any& a : options) {
        auto m = a.cast<ffi::Map<ffi::String, ffi::Any>>();
        TargetOption o;
        o.name = m["name"].cast<std::string>();
        o.type = m.count("type") ? m["type"].cast<std::string>() : "str";
        o.doc = m.count("doc") ? m["doc"].cast<std::string>() : "";
        if (m.count("default")) o.default_value = m["default"];
        if (m.count("min")) o.min = m["min"].cast<int64_t>();
        if (m.count("max")) o.max = m["max"].cast<int64_t>();
        if (m.count("choices")) {
          for (const ffi::Any& c : m["choices"].cast<ffi::Array<ffi::Any>>())
            o.choices.push_back(c.cast<std::string>());
        }
        info.options.push_back(o);
      }
      RegisterTargetKind(info, allow_override);
    });
TILECORE_REGISTER_GLOBAL("target.Build").set_body_typed([](ffi::Any mod, Target t) {
  return Build(mod, t);
});

}  // namespace tilecore::target
