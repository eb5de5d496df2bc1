/*
 * src/ir/printer.cc — script text of the Kernel IR (printer.h).
 */
#include "tilecore/ir/printer.h"

#include <cmath>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/stack_guard.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"

namespace tilecore {
namespace ir {
namespace {

// Python operator precedence, loosest first.
enum Prec { kOr = 1, kAnd, kNot, kCmp, kAddSub = 6, kMulDiv, kUnary, kAtom = 10 };

class ScriptPrinter {
 public:
  std::string Print(const ObjectRef& node) {
    if (const auto* f = node.as<PrimFuncNode>()) {
      PrintFunc(f, "");
    } else if (const auto* m = node.as<IRModuleNode>()) {
      os_ << "# IRModule\n";
      bool first = true;
      for (const auto& [name, f] : m->functions.items()) {
        if (!first) os_ << "\n";
        first = false;
        PrintFunc(f.get(), std::string(name.view()));
      }
    } else if (const auto* s = node.as<StmtNode>()) {
      PrintStmt(GetRef<Stmt>(s), 0);
    } else if (const auto* e = node.as<PrimExprNode>()) {
      os_ << Expr(GetRef<PrimExpr>(e));
    } else if (const auto* b = node.as<BufferNode>()) {
      os_ << BufferDecl(b);
    } else if (const auto* t = node.as<PrimTypeNode>()) {
      os_ << t->dtype.str();
    } else if (const auto* p = node.as<PointerTypeNode>()) {
      os_ << "ptr(\"" << p->element_dtype.str() << "\", \"" << p->scope.view() << "\")";
    } else if (!node.defined()) {
      os_ << "None";
    } else {
      os_ << "<" << node->GetTypeKey() << ">";
    }
    std::string s = os_.str();
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

 private:
  // -- names ----------------------------------------------------------------
  std::string Name(const Object* key, std::string_view hint) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string base(hint.empty() ? "v" : hint);
    std::string name = base;
    for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    names_.emplace(key, name);
    return name;
  }
  std::string VarName(const VarNode* v) { return Name(v, v->name.view()); }
  std::string NameAllocation(const BufferNode* b) {
    std::string name = Name(b, b->name.view());
    names_.emplace(b->data.get(), name + ".data");
    return name;
  }
  std::string BufName(const BufferNode* b) {
    // A buffer is named after its data pointer's name when that pointer is a parameter.
    auto it = names_.find(b);
    if (it != names_.end()) return it->second;
    // A view of a declared buffer that keeps its name (FlattenBuffer's flat views) prints as that
    // buffer.
    auto d = names_.find(b->data.get());
    constexpr std::string_view kData = ".data";
    if (d != names_.end() && b->name.view() == b->data->name.view() &&
        d->second.size() > kData.size() &&
        std::string_view(d->second).substr(d->second.size() - kData.size()) == kData) {
      std::string base = d->second.substr(0, d->second.size() - kData.size());
      names_.emplace(b, base);
      return base;
    }
    return Name(b, b->name.view());
  }

  // -- expressions -------------------------------------------------------------
  static std::string Quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }

  static std::string FloatText(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream s;
    s.precision(9);
    s << v;
    std::string t = s.str();
    if (t.find_first_of(".e") == std::string::npos) t += ".0";
    return t;
  }

  std::string Expr(const PrimExpr& e, int ctx = 0) {
    ffi::StackGuard guard("ir.script");
    int prec = kAtom;
    std::string s;
    // A shared subexpression (referenced more than once) is printed once and its text
    // reused; the text of a graph that shares subexpressions at many levels still doubles
    // per level, so it is capped.
    if (e.defined() && e.use_count() > 1) {
      auto it = shared_text_.find(e.get());
      if (it != shared_text_.end()) {
        s = it->second.first;
        prec = it->second.second;
      } else {
        s = ExprText(e, &prec);
        shared_text_.emplace(e.get(), std::make_pair(s, prec));
      }
    } else {
      s = ExprText(e, &prec);
    }
    if (s.size() > kMaxExprChars) {
      TILECORE_THROW(ValueError) << "ir.script: an expression's text exceeds " << kMaxExprChars
                                 << " characters (it shares subexpressions at many levels)";
    }
    return prec < ctx ? "(" + s + ")" : s;
  }
  static constexpr size_t kMaxExprChars = size_t(1) << 24;
  std::unordered_map<const Object*, std::pair<std::string, int>> shared_text_;

  std::string Bin(const BinaryOpNode* op, const char* sym, int prec, int* out_prec) {
    *out_prec = prec;
    // Left-associative: the right operand needs strictly higher precedence.
    std::string lhs = Expr(op->a, prec);  // name variables left to right
    return lhs + " " + sym + " " + Expr(op->b, prec + 1);
  }
  std::string Fn(const char* name, std::initializer_list<PrimExpr> args) {
    std::string s = std::string(name) + "(";
    bool first = true;
    for (const PrimExpr& a : args) {
      s += (first ? "" : ", ") + Expr(a);
      first = false;
    }
    return s + ")";
  }

  std::string ExprText(const PrimExpr& e, int* prec) {
    const Object* n = e.get();
    if (n == nullptr) return "None";
    switch (NodeKindOf(n)) {
      case NodeKind::kIntImm: {
        const auto* op = static_cast<const IntImmNode*>(n);
        if (op->dtype.is_bool()) return op->value ? "True" : "False";
        if (op->dtype == DataType::Int(32)) {
          if (op->value < 0) *prec = kUnary;
          return std::to_string(op->value);
        }
        return op->dtype.str() + "(" + std::to_string(op->value) + ")";
      }
      case NodeKind::kFloatImm: {
        const auto* op = static_cast<const FloatImmNode*>(n);
        if (op->dtype == DataType::Float(32)) {
          if (op->value < 0) *prec = kUnary;
          return FloatText(op->value);
        }
        return op->dtype.str() + "(" + FloatText(op->value) + ")";
      }
      case NodeKind::kStringImm:
        return Quote(static_cast<const StringImmNode*>(n)->value.view());
      case NodeKind::kVar:
        return VarName(static_cast<const VarNode*>(n));
      case NodeKind::kAdd:
        return Bin(static_cast<const BinaryOpNode*>(n), "+", kAddSub, prec);
      case NodeKind::kSub:
        return Bin(static_cast<const BinaryOpNode*>(n), "-", kAddSub, prec);
      case NodeKind::kMul:
        return Bin(static_cast<const BinaryOpNode*>(n), "*", kMulDiv, prec);
      case NodeKind::kDiv: {
        const auto* op = static_cast<const BinaryOpNode*>(n);
        if (op->dtype.is_float()) return Bin(op, "/", kMulDiv, prec);
        return Fn("truncdiv", {op->a, op->b});
      }
      case NodeKind::kMod: {
        const auto* op = static_cast<const BinaryOpNode*>(n);
        return Fn("truncmod", {op->a, op->b});
      }
      case NodeKind::kFloorDiv:
        return Bin(static_cast<const BinaryOpNode*>(n), "//", kMulDiv, prec);
      case NodeKind::kFloorMod:
        return Bin(static_cast<const BinaryOpNode*>(n), "%", kMulDiv, prec);
      case NodeKind::kMin: {
        const auto* op = static_cast<const BinaryOpNode*>(n);
        return Fn("min", {op->a, op->b});
      }
      case NodeKind::kMax: {
        const auto* op = static_cast<const BinaryOpNode*>(n);
        return Fn("max", {op->a, op->b});
      }
      case NodeKind::kEQ:
        return Bin(static_cast<const BinaryOpNode*>(n), "==", kCmp, prec);
      case NodeKind::kNE:
        return Bin(static_cast<const BinaryOpNode*>(n), "!=", kCmp, prec);
      case NodeKind::kLT:
        return Bin(static_cast<const BinaryOpNode*>(n), "<", kCmp, prec);
      case NodeKind::kLE:
        return Bin(static_cast<const BinaryOpNode*>(n), "<=", kCmp, prec);
      case NodeKind::kGT:
        return Bin(static_cast<const BinaryOpNode*>(n), ">", kCmp, prec);
      case NodeKind::kGE:
        return Bin(static_cast<const BinaryOpNode*>(n), ">=", kCmp, prec);
      case NodeKind::kAnd:
        return Bin(static_cast<const BinaryOpNode*>(n), "and", kAnd, prec);
      case NodeKind::kOr:
        return Bin(static_cast<const BinaryOpNode*>(n), "or", kOr, prec);
      case NodeKind::kNot:
        *prec = kNot;
        return "not " + Expr(static_cast<const NotNode*>(n)->a, kNot);
      case NodeKind::kSelect: {
        const auto* op = static_cast<const SelectNode*>(n);
        return Fn("select", {op->condition, op->true_value, op->false_value});
      }
      case NodeKind::kCast: {
        const auto* op = static_cast<const CastNode*>(n);
        if (op->dtype.is_scalar()) return op->dtype.str() + "(" + Expr(op->value) + ")";
        return "cast(" + Quote(op->dtype.str()) + ", " + Expr(op->value) + ")";
      }
      case NodeKind::kLet: {
        const auto* op = static_cast<const LetNode*>(n);
        std::string v = VarName(op->var.get());
        std::string value = Expr(op->value);
        return "let(" + v + ", " + value + ", " + Expr(op->body) + ")";
      }
      case NodeKind::kRamp: {
        const auto* op = static_cast<const RampNode*>(n);
        std::string base = Expr(op->base);
        return "ramp(" + base + ", " + Expr(op->stride) + ", " + std::to_string(op->lanes) + ")";
      }
      case NodeKind::kBroadcast: {
        const auto* op = static_cast<const BroadcastNode*>(n);
        return "broadcast(" + Expr(op->value) + ", " + std::to_string(op->lanes) + ")";
      }
      case NodeKind::kCall: {
        const auto* op = static_cast<const CallNode*>(n);
        std::string s = std::string(op->op.view()) + "(";
        for (size_t i = 0; i < op->args.size(); ++i) s += (i ? ", " : "") + Expr(op->args[i]);
        return s + ")";
      }
      case NodeKind::kBufferLoad: {
        const auto* op = static_cast<const BufferLoadNode*>(n);
        std::string s = BufName(op->buffer.get()) + "[";
        for (size_t i = 0; i < op->indices.size(); ++i) s += (i ? ", " : "") + Expr(op->indices[i]);
        return s + "]";
      }
      case NodeKind::kBufferRegion: {
        const auto* op = static_cast<const BufferRegionNode*>(n);
        std::string s = BufName(op->buffer.get()) + "[";
        for (size_t i = 0; i < op->begin.size(); ++i) {
          PrimExpr b = op->begin[i], x = op->extents[i];
          auto cb = as_const_int(b), cx = as_const_int(x);
          std::string stop = cb && cx         ? std::to_string(*cb + *cx)
                             : cb && *cb == 0 ? Expr(x)
                                              : Expr(b, kAddSub) + " + " + Expr(x, kAddSub + 1);
          s += (i ? ", " : "") + Expr(b) + ":" + stop;
        }
        return s + "]";
      }
      default:
        return "<" + n->GetTypeKey() + ">";
    }
  }

  // -- statements ----------------------------------------------------------------
  void Line(int indent, const std::string& text) {
    os_ << std::string(static_cast<size_t>(indent) * 4, ' ') << text << "\n";
  }

  std::string Shape(const Array<PrimExpr>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + Expr(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
  }

  std::string BufferDecl(const BufferNode* b) {
    std::string s = "Buffer(" + Shape(b->shape) + ", " + Quote(b->dtype.str());
    if (b->scope.view() != "global") s += ", " + Quote(b->scope.view());
    if (!b->strides.empty()) s += ", strides=" + Shape(b->strides);
    if (!is_const_int(b->elem_offset, 0)) s += ", elem_offset=" + Expr(b->elem_offset);
    return s + ")";
  }

  void PrintFunc(const PrimFuncNode* f, std::string name) {
    auto sym = f->attrs.Get("global_symbol");
    if (sym.has_value()) {
      if (auto s = sym->try_cast<std::string>()) name = *s;
    }
    if (name.empty()) name = "main";
    std::string params;
    for (const Var& p : f->params) {
      if (!params.empty()) params += ", ";
      auto buf = f->buffer_map.Get(p);
      if (buf.has_value()) {
        // The buffer takes the parameter's name; the pointer itself prints as `A.data`.
        std::string n = Name(buf->get(), p->name.view());
        names_.emplace(p.get(), n + ".data");
        params += n + ": " + BufferDecl(buf->get());
      } else if (const auto* pt = p->type_annotation.as<PointerTypeNode>()) {
        params += VarName(p.get()) + ": ptr(" + Quote(pt->element_dtype.str()) + ", " +
                  Quote(pt->scope.view()) + ")";
      } else {
        params += VarName(p.get()) + ": " + p->dtype.str();
      }
    }
    Line(0, "@prim_func");
    Line(0, "def " + name + "(" + params + "):");
    // Name allocated buffers (and their pointers) before attrs mention them.
    struct AllocNamer : IRVisitor {
      ScriptPrinter* p;
      void VisitStmt_(const AllocateNode* op) override {
        p->NameAllocation(op->buffer.get());
        IRVisitor::VisitStmt_(op);
      }
    } namer;
    namer.p = this;
    namer.VisitStmt(f->body);
    std::string attrs;
    for (const auto& [k, v] : f->attrs.items()) {
      if (k.view() == "global_symbol") continue;
      attrs += (attrs.empty() ? "" : ", ") + Quote(k.view()) + ": " + AttrValue(v);
    }
    if (!attrs.empty()) Line(1, "func_attr({" + attrs + "})");
    PrintStmt(f->body, 1);
  }

  std::string AttrValue(const Any& v) {
    if (auto e = v.as<PrimExpr>(); e.has_value() && e->defined()) return Expr(*e);
    if (auto s = v.as<std::string>()) return Quote(*s);
    if (v.type_index() == kTCFFIInt) return std::to_string(v.cast<int64_t>());
    if (v.type_index() == kTCFFIBool) return v.cast<bool>() ? "True" : "False";
    if (v.type_index() == kTCFFIFloat) return FloatText(v.cast<double>());
    if (v.type_index() == kTCFFIArray) {
      std::string out = "[";
      auto arr = v.cast<Array<Any>>();
      for (size_t i = 0; i < arr.size(); ++i) out += (i ? ", " : "") + AttrValue(arr[i]);
      return out + "]";
    }
    if (v.type_index() == kTCFFIMap) {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.cast<Map<Any, Any>>().items()) {
        out += (first ? "" : ", ") + AttrValue(k) + ": " + AttrValue(x);
        first = false;
      }
      return out + "}";
    }
    auto repr = ffi::Function::GetGlobal("ffi.Repr");
    return repr ? (*repr)(v).cast<std::string>() : "<" + v.GetTypeKey() + ">";
  }

  void PrintStmt(const Stmt& s, int indent) {
    ffi::StackGuard guard("ir.script");
    const Object* n = s.get();
    if (n == nullptr) return;
    switch (NodeKindOf(n)) {
      case NodeKind::kSeqStmt: {
        const auto* op = static_cast<const SeqStmtNode*>(n);
        if (op->seq.empty()) Line(indent, "pass");
        for (const Stmt& x : op->seq) PrintStmt(x, indent);
        return;
      }
      case NodeKind::kBufferStore: {
        const auto* op = static_cast<const BufferStoreNode*>(n);
        std::string idx;
        for (size_t i = 0; i < op->indices.size(); ++i)
          idx += (i ? ", " : "") + Expr(op->indices[i]);
        if (op->predicate.defined()) {
          Line(indent, BufName(op->buffer.get()) + ".store([" + idx + "], " + Expr(op->value) +
                           ", mask=" + Expr(op->predicate) + ")");
        } else {
          Line(indent, BufName(op->buffer.get()) + "[" + idx + "] = " + Expr(op->value));
        }
        return;
      }
      case NodeKind::kLetStmt: {
        const auto* op = static_cast<const LetStmtNode*>(n);
        std::string v = Expr(op->value);
        std::string name = VarName(op->var.get());
        Line(indent, name + ": " + op->var->dtype.str() + " = " + v);
        PrintStmt(op->body, indent);
        return;
      }
      case NodeKind::kFor: {
        const auto* op = static_cast<const ForNode*>(n);
        const char* fn = op->kind == ForKind::kSerial       ? "range"
                         : op->kind == ForKind::kUnrolled   ? "unroll"
                         : op->kind == ForKind::kVectorized ? "vectorized"
                                                            : "cores";
        std::string stop;
        auto cm = as_const_int(op->min), ce = as_const_int(op->extent);
        if (cm && ce) {
          stop = std::to_string(*cm + *ce);
        } else if (cm && *cm == 0) {
          stop = Expr(op->extent);
        } else {
          stop = Expr(op->min, kAddSub) + " + " + Expr(op->extent, kAddSub + 1);
        }
        std::string head = "for " + VarName(op->loop_var.get()) + " in " + fn + "(" +
                           Expr(op->min) + ", " + stop + ")";
        if (op->loop_var->dtype != DataType::Int(32)) head += "  # " + op->loop_var->dtype.str();
        std::string ann;
        for (const auto& [k, v] : op->annotations.items()) {
          ann += (ann.empty() ? "" : ", ") + Quote(k.view()) + ": " + AttrValue(v);
        }
        Line(indent, head + ":" + (ann.empty() ? "" : "  # annotations {" + ann + "}"));
        PrintStmt(op->body, indent + 1);
        return;
      }
      case NodeKind::kWhile: {
        const auto* op = static_cast<const WhileNode*>(n);
        Line(indent, "while " + Expr(op->condition) + ":");
        PrintStmt(op->body, indent + 1);
        return;
      }
      case NodeKind::kIfThenElse: {
        const auto* op = static_cast<const IfThenElseNode*>(n);
        Line(indent, "if " + Expr(op->condition) + ":");
        PrintStmt(op->then_case, indent + 1);
        Stmt e = op->else_case;
        while (e.defined()) {
          if (const auto* elif = e.as<IfThenElseNode>()) {
            Line(indent, "elif " + Expr(elif->condition) + ":");
            PrintStmt(elif->then_case, indent + 1);
            e = elif->else_case;
          } else {
            Line(indent, "else:");
            PrintStmt(e, indent + 1);
            break;
          }
        }
        return;
      }
      case NodeKind::kAllocate: {
        const auto* op = static_cast<const AllocateNode*>(n);
        const BufferNode* b = op->buffer.get();
        std::string name = NameAllocation(b);
        Line(indent, name + " = allocate(" + Shape(b->shape) + ", " + Quote(b->dtype.str()) + ", " +
                         Quote(b->scope.view()) + ")");
        PrintStmt(op->body, indent);
        return;
      }
      case NodeKind::kEvaluate: {
        const auto* op = static_cast<const EvaluateNode*>(n);
        Line(indent, Expr(op->value));
        return;
      }
      default:
        Line(indent, "<" + n->GetTypeKey() + ">");
        return;
    }
  }

  std::ostringstream os_;
  std::unordered_map<const Object*, std::string> names_;
  std::unordered_set<std::string> used_;
};

}  // namespace

std::string AsScript(const ObjectRef& node) { return ScriptPrinter().Print(node); }

TILECORE_REGISTER_GLOBAL("ir.AsScript").set_body_typed([](ObjectRef node) {
  return AsScript(node);
});

}  // namespace ir
}  // namespace tilecore
