/*
 * src/ir/stmt.cc — constructors of the statement nodes (with their checks),
 * PrimFunc and IRModule, reflection, and the `ir.<Node>` constructors for Python.
 */
#include "tilecore/ir/stmt.h"

#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/function.h"

namespace tilecore {
namespace ir {

using ffi::make_object;

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kUnrolled:
      return "unrolled";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kCores:
      return "cores";
  }
  return "serial";
}

ForKind ForKindFromName(std::string_view name) {
  if (name == "serial") return ForKind::kSerial;
  if (name == "unrolled" || name == "unroll") return ForKind::kUnrolled;
  if (name == "vectorized" || name == "vectorize") return ForKind::kVectorized;
  if (name == "cores") return ForKind::kCores;
  TILECORE_THROW(ValueError) << "unknown loop kind `" << name
                             << "` (expected serial, unrolled, vectorized or cores)";
}

namespace {
void CheckStmt(const Stmt& s, const char* node, const char* field, const Span& span) {
  if (!s.defined())
    TILECORE_THROW(ValueError) << node << ": `" << field << "` is undefined" << At(span);
}
void CheckExpr(const PrimExpr& e, const char* node, const char* field, const Span& span) {
  if (!e.defined())
    TILECORE_THROW(ValueError) << node << ": `" << field << "` is undefined" << At(span);
}
}  // namespace

BufferStore::BufferStore(Buffer buffer, PrimExpr value, Array<PrimExpr> indices, PrimExpr predicate,
                         Span span) {
  CheckExpr(value, "BufferStore", "value", span);
  if (!buffer.defined())
    TILECORE_THROW(ValueError) << "BufferStore: buffer is undefined" << At(span);
  // The indices' lanes decide the stored dtype; BufferLoad checks them the same way.
  DataType expect = BufferLoad(buffer, indices, span).dtype();
  if (value.dtype() != expect) {
    TILECORE_THROW(TypeError) << "BufferStore: storing " << value.dtype().str() << " into `"
                              << buffer->name.view() << "` expects " << expect.str()
                              << (value.dtype().lanes() == expect.lanes() ? " (insert a Cast)"
                                                                          : " (lanes differ)")
                              << At(span);
  }
  if (predicate.defined() &&
      (!predicate.dtype().is_bool() || predicate.dtype().lanes() != expect.lanes())) {
    TILECORE_THROW(TypeError) << "BufferStore: predicate of a store to `" << buffer->name.view()
                              << "` must be bool x" << expect.lanes() << ", got "
                              << predicate.dtype().str() << At(span);
  }
  auto n = make_object<BufferStoreNode>();
  n->buffer = std::move(buffer);
  n->value = std::move(value);
  n->indices = std::move(indices);
  n->predicate = std::move(predicate);
  n->span = std::move(span);
  data_ = std::move(n);
}

LetStmt::LetStmt(Var var, PrimExpr value, Stmt body, Span span) {
  CheckExpr(value, "LetStmt", "value", span);
  CheckStmt(body, "LetStmt", "body", span);
  if (var.dtype() != value.dtype()) {
    TILECORE_THROW(TypeError) << "LetStmt: variable `" << var->name.view() << "` is "
                              << var.dtype().str() << " but the value is " << value.dtype().str()
                              << At(span);
  }
  auto n = make_object<LetStmtNode>();
  n->var = std::move(var);
  n->value = std::move(value);
  n->body = std::move(body);
  n->span = std::move(span);
  data_ = std::move(n);
}

For::For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body,
         Map<String, Any> annotations, Span span) {
  CheckExpr(min, "For", "min", span);
  CheckExpr(extent, "For", "extent", span);
  CheckStmt(body, "For", "body", span);
  DataType t = loop_var.dtype();
  if (!t.is_integer() || !t.is_scalar() || min.dtype() != t || extent.dtype() != t) {
    TILECORE_THROW(TypeError) << "For: loop variable `" << loop_var->name.view() << "` (" << t.str()
                              << "), min (" << min.dtype().str() << ") and extent ("
                              << extent.dtype().str() << ") must share one scalar integer dtype"
                              << At(span);
  }
  auto n = make_object<ForNode>();
  n->loop_var = std::move(loop_var);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->kind = kind;
  n->body = std::move(body);
  n->annotations = std::move(annotations);
  n->span = std::move(span);
  data_ = std::move(n);
}

While::While(PrimExpr condition, Stmt body, Span span) {
  CheckExpr(condition, "While", "condition", span);
  CheckStmt(body, "While", "body", span);
  if (!condition.dtype().is_bool() || !condition.dtype().is_scalar()) {
    TILECORE_THROW(TypeError) << "While: condition must be a scalar bool, got "
                              << condition.dtype().str() << At(span);
  }
  auto n = make_object<WhileNode>();
  n->condition = std::move(condition);
  n->body = std::move(body);
  n->span = std::move(span);
  data_ = std::move(n);
}

IfThenElse::IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case, Span span) {
  CheckExpr(condition, "IfThenElse", "condition", span);
  CheckStmt(then_case, "IfThenElse", "then_case", span);
  if (!condition.dtype().is_bool() || !condition.dtype().is_scalar()) {
    TILECORE_THROW(TypeError) << "IfThenElse: condition must be a scalar bool, got "
                              << condition.dtype().str() << At(span);
  }
  auto n = make_object<IfThenElseNode>();
  n->condition = std::move(condition);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  n->span = std::move(span);
  data_ = std::move(n);
}

Allocate::Allocate(Buffer buffer, Stmt body, Span span) {
  if (!buffer.defined()) TILECORE_THROW(ValueError) << "Allocate: buffer is undefined" << At(span);
  CheckStmt(body, "Allocate", "body", span);
  if (buffer->scope.view() != "local" && buffer->scope.view() != "shared") {
    TILECORE_THROW(ValueError)
        << "Allocate: buffer `" << buffer->name.view() << "` is in scope `" << buffer->scope.view()
        << "`; only local (L1) and shared (L2) buffers are allocated by a kernel — global "
           "memory comes from the parameters"
        << At(span);
  }
  auto n = make_object<AllocateNode>();
  n->buffer = std::move(buffer);
  n->body = std::move(body);
  n->span = std::move(span);
  data_ = std::move(n);
}

SeqStmt::SeqStmt(Array<Stmt> seq, Span span) {
  for (size_t i = 0; i < seq.size(); ++i) CheckStmt(seq[i], "SeqStmt", "seq[i]", span);
  auto n = make_object<SeqStmtNode>();
  n->seq = std::move(seq);
  n->span = std::move(span);
  data_ = std::move(n);
}

Stmt SeqStmt::Flatten(const Array<Stmt>& seq) {
  Array<Stmt> flat;
  auto add = [&](auto&& self, const Stmt& s) -> void {
    if (!s.defined()) return;
    if (const auto* q = s.as<SeqStmtNode>()) {
      for (const Stmt& x : q->seq) self(self, x);
      return;
    }
    if (IsNoOp(s)) return;
    flat.push_back(s);
  };
  for (const Stmt& s : seq) add(add, s);
  if (flat.size() == 1) return flat[0];
  return SeqStmt(flat);
}

Evaluate::Evaluate(PrimExpr value, Span span) {
  CheckExpr(value, "Evaluate", "value", span);
  auto n = make_object<EvaluateNode>();
  n->value = std::move(value);
  n->span = std::move(span);
  data_ = std::move(n);
}

bool IsNoOp(const Stmt& s) {
  if (!s.defined()) return true;
  if (const auto* e = s.as<EvaluateNode>()) {
    return e->value.as<IntImmNode>() != nullptr || e->value.as<FloatImmNode>() != nullptr;
  }
  if (const auto* q = s.as<SeqStmtNode>()) return q->seq.empty();
  return false;
}

// ---------------------------------------------------------------------------
// PrimFunc and IRModule
// ---------------------------------------------------------------------------
PrimFunc::PrimFunc(Array<Var> params, Stmt body, Map<Var, Buffer> buffer_map,
                   Map<String, Any> attrs, Span span) {
  CheckStmt(body, "PrimFunc", "body", span);
  for (const auto& [var, buf] : buffer_map.items()) {
    bool is_param = false;
    for (const Var& p : params) is_param = is_param || p.same_as(var);
    if (!is_param) {
      TILECORE_THROW(ValueError) << "PrimFunc: buffer_map key `" << var->name.view()
                                 << "` is not a parameter" << At(span);
    }
    if (!buf->data.same_as(var)) {
      TILECORE_THROW(ValueError) << "PrimFunc: buffer `" << buf->name.view() << "` of parameter `"
                                 << var->name.view() << "` must have that parameter as its data"
                                 << At(span);
    }
  }
  auto n = make_object<PrimFuncNode>();
  n->params = std::move(params);
  n->buffer_map = std::move(buffer_map);
  n->body = std::move(body);
  n->attrs = std::move(attrs);
  n->span = std::move(span);
  data_ = std::move(n);
}

std::string PrimFunc::global_symbol() const {
  auto s = get()->attrs.Get("global_symbol");
  if (!s.has_value()) return "";
  auto str = s->try_cast<std::string>();
  return str.value_or("");
}

PrimFunc PrimFunc::WithBody(Stmt body) const {
  auto n = make_object<PrimFuncNode>(*get());
  n->body = std::move(body);
  return PrimFunc(ObjectPtr<Object>(std::move(n)));
}

PrimFunc PrimFunc::WithAttr(String key, Any value) const {
  auto n = make_object<PrimFuncNode>(*get());
  Map<String, Any> attrs = n->attrs;
  attrs.Set(key, value);
  n->attrs = attrs;
  return PrimFunc(ObjectPtr<Object>(std::move(n)));
}

IRModule::IRModule(Map<String, PrimFunc> functions, Map<String, Any> attrs) {
  auto n = make_object<IRModuleNode>();
  n->functions = std::move(functions);
  n->attrs = std::move(attrs);
  data_ = std::move(n);
}

IRModule IRModule::FromFunction(PrimFunc f) {
  std::string name = f.global_symbol();
  if (name.empty()) name = "main";
  Map<String, PrimFunc> fns;
  fns.Set(String(name), f);
  return IRModule(fns);
}

PrimFunc IRModule::Lookup(const String& name) const {
  auto f = get()->functions.Get(name);
  if (!f.has_value()) {
    std::string names;
    for (const auto& [k, v] : get()->functions.items())
      names += (names.empty() ? "" : ", ") + std::string(k.view());
    TILECORE_THROW(KeyError) << "IRModule has no function `" << name.view()
                             << "` (it has: " << (names.empty() ? "none" : names) << ")";
  }
  return *f;
}

// ---------------------------------------------------------------------------
// Reflection
// ---------------------------------------------------------------------------
namespace {
constexpr int64_t kIgnore = kTCFFIFieldSEqualIgnore;
constexpr int64_t kDef = kTCFFIFieldDefRegion;
}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<BufferStoreNode>()
      .def_ro("buffer", &BufferStoreNode::buffer)
      .def_ro("value", &BufferStoreNode::value)
      .def_ro("indices", &BufferStoreNode::indices)
      .def_ro("predicate", &BufferStoreNode::predicate, "bool vector mask, or None",
              kTCFFIFieldMayBeNone)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<LetStmtNode>()
      .def_ro("var", &LetStmtNode::var, "the bound variable", kDef)
      .def_ro("value", &LetStmtNode::value)
      .def_ro("body", &LetStmtNode::body)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<ForNode>()
      .def_ro("loop_var", &ForNode::loop_var, "the loop variable", kDef)
      .def_ro("min", &ForNode::min)
      .def_ro("extent", &ForNode::extent)
      .def_ro("kind", &ForNode::kind, "serial, unrolled, vectorized or cores")
      .def_ro("body", &ForNode::body)
      .def_ro("annotations", &ForNode::annotations)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<WhileNode>()
      .def_ro("condition", &WhileNode::condition)
      .def_ro("body", &WhileNode::body)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<IfThenElseNode>()
      .def_ro("condition", &IfThenElseNode::condition)
      .def_ro("then_case", &IfThenElseNode::then_case)
      .def_ro("else_case", &IfThenElseNode::else_case, "may be None", kTCFFIFieldMayBeNone)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<AllocateNode>()
      .def_ro("buffer", &AllocateNode::buffer, "the allocated buffer (local or shared)", kDef)
      .def_ro("body", &AllocateNode::body)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<SeqStmtNode>()
      .def_ro("seq", &SeqStmtNode::seq)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<EvaluateNode>()
      .def_ro("value", &EvaluateNode::value)
      .def_ro("span", &StmtNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<PrimFuncNode>()
      .def_ro("params", &PrimFuncNode::params, "scalar and pointer parameters", kDef)
      .def_ro("buffer_map", &PrimFuncNode::buffer_map, "buffer view of each pointer parameter",
              kDef)
      .def_ro("body", &PrimFuncNode::body)
      .def_ro("attrs", &PrimFuncNode::attrs, "global_symbol and pass results")
      .def_ro("span", &PrimFuncNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<IRModuleNode>()
      .def_ro("functions", &IRModuleNode::functions, "name -> PrimFunc")
      .def_ro("attrs", &IRModuleNode::attrs);
});

// ---------------------------------------------------------------------------
// Constructors for Python
// ---------------------------------------------------------------------------
TILECORE_REGISTER_GLOBAL("ir.BufferStore")
    .set_body_typed([](Buffer buffer, PrimExpr value, Array<PrimExpr> indices,
                       std::optional<PrimExpr> predicate, Span span) {
      return BufferStore(buffer, value, indices, predicate.value_or(PrimExpr()), span);
    });
TILECORE_REGISTER_GLOBAL("ir.LetStmt")
    .set_body_typed([](Var var, PrimExpr value, Stmt body, Span span) {
      return LetStmt(var, value, body, span);
    });
TILECORE_REGISTER_GLOBAL("ir.For").set_body_typed([](Var loop_var, PrimExpr min, PrimExpr extent,
                                                     ForKind kind, Stmt body,
                                                     ffi::AnyView annotations, Span span) {
  Map<String, Any> ann =
      annotations.is_none() ? Map<String, Any>() : annotations.cast<Map<String, Any>>();
  return For(loop_var, min, extent, kind, body, ann, span);
});
TILECORE_REGISTER_GLOBAL("ir.While").set_body_typed([](PrimExpr cond, Stmt body, Span span) {
  return While(cond, body, span);
});
TILECORE_REGISTER_GLOBAL("ir.IfThenElse")
    .set_body_typed([](PrimExpr cond, Stmt then_case, std::optional<Stmt> else_case, Span span) {
      return IfThenElse(cond, then_case, else_case.value_or(Stmt()), span);
    });
TILECORE_REGISTER_GLOBAL("ir.Allocate").set_body_typed([](Buffer buffer, Stmt body, Span span) {
  return Allocate(buffer, body, span);
});
TILECORE_REGISTER_GLOBAL("ir.SeqStmt").set_body_typed([](Array<Stmt> seq, Span span) {
  return SeqStmt(seq, span);
});
TILECORE_REGISTER_GLOBAL("ir.SeqStmtFlatten").set_body_typed([](Array<Stmt> seq) {
  return SeqStmt::Flatten(seq);
});
TILECORE_REGISTER_GLOBAL("ir.Evaluate").set_body_typed([](PrimExpr value, Span span) {
  return Evaluate(value, span);
});
TILECORE_REGISTER_GLOBAL("ir.PrimFunc")
    .set_body_typed([](Array<Var> params, Stmt body, ffi::AnyView buffer_map, ffi::AnyView attrs,
                       Span span) {
      Map<Var, Buffer> bm =
          buffer_map.is_none() ? Map<Var, Buffer>() : buffer_map.cast<Map<Var, Buffer>>();
      Map<String, Any> at = attrs.is_none() ? Map<String, Any>() : attrs.cast<Map<String, Any>>();
      return PrimFunc(params, body, bm, at, span);
    });
TILECORE_REGISTER_GLOBAL("ir.PrimFuncWithAttr")
    .set_body_typed([](PrimFunc f, String key, Any value) { return f.WithAttr(key, value); });
TILECORE_REGISTER_GLOBAL("ir.PrimFuncWithBody").set_body_typed([](PrimFunc f, Stmt body) {
  return f.WithBody(body);
});
TILECORE_REGISTER_GLOBAL("ir.IRModule")
    .set_body_typed([](ffi::AnyView functions, ffi::AnyView attrs) {
      Map<String, PrimFunc> fns =
          functions.is_none() ? Map<String, PrimFunc>() : functions.cast<Map<String, PrimFunc>>();
      Map<String, Any> at = attrs.is_none() ? Map<String, Any>() : attrs.cast<Map<String, Any>>();
      return IRModule(fns, at);
    });
TILECORE_REGISTER_GLOBAL("ir.IRModuleFromFunction").set_body_typed([](PrimFunc f) {
  return IRModule::FromFunction(f);
});
TILECORE_REGISTER_GLOBAL("ir.IRModuleLookup").set_body_typed([](IRModule m, String name) {
  return m.Lookup(name);
});

}  // namespace ir
}  // namespace tilecore
