/*
 * src/ir/functor.cc — kind dispatch, IRVisitor, IRMutator, Substitute.
 */
#include "tilecore/ir/functor.h"
#include "tilecore/ffi/stack_guard.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tilecore {
namespace ir {

namespace {
std::vector<NodeKind> BuildKindTable() {
#define TILECORE_IR_KIND_ENTRY(Name) {Name##Node::RuntimeTypeIndex(), NodeKind::k##Name},
  std::vector<std::pair<int32_t, NodeKind>> entries = {TILECORE_IR_FOR_EACH_EXPR(
      TILECORE_IR_KIND_ENTRY) TILECORE_IR_FOR_EACH_STMT(TILECORE_IR_KIND_ENTRY)};
#undef TILECORE_IR_KIND_ENTRY
  int32_t max_index = 0;
  for (const auto& e : entries) max_index = std::max(max_index, e.first);
  std::vector<NodeKind> table(static_cast<size_t>(max_index) + 1, NodeKind::kUnknown);
  for (const auto& e : entries) table[static_cast<size_t>(e.first)] = e.second;
  return table;
}
}  // namespace

const std::vector<NodeKind>& detail::NodeKindTable() {
  static const std::vector<NodeKind> table = BuildKindTable();
  return table;
}

// ---------------------------------------------------------------------------
// IRVisitor
// ---------------------------------------------------------------------------
namespace {
// The memo lives while the outermost VisitExpr runs (functor.h, "Shared subexpressions").
template <typename Memo>
class ExprScope {
 public:
  ExprScope(int* depth, Memo* memo) : depth_(depth), memo_(memo) { ++*depth_; }
  ~ExprScope() {
    if (--*depth_ == 0 && !memo_->empty()) memo_->clear();
  }

 private:
  int* depth_;
  Memo* memo_;
};

// Only a node with more than one reference can be reached twice: a node reached along
// two paths has two parents (or one parent naming it twice). Unshared nodes, most of
// the IR, skip the memo.
bool MaybeShared(const PrimExpr& e) { return e.use_count() > 1; }

// An array element as a PrimExpr that borrows the array's reference: a copy would add
// one (Array stores Any), and the element would look shared. The walk holds the node
// whose array it is. (An element of another kind, which Array::Get refuses, is copied.)
class Element {
 public:
  Element(const Array<PrimExpr>& arr, size_t i) {
    const TCFFIAny* raw = arr.raw(i).raw();
    if (raw->type_index >= kTCFFIStaticObjectBegin &&
        ffi::details::ObjectUnsafe::FromHandle(raw->v_obj)->IsInstance<PrimExprNode>()) {
      ref_ = ffi::ObjectRefUnsafe::FromPtr<PrimExpr>(
          ffi::details::ObjectUnsafe::MoveFromHandle<Object>(raw->v_obj));
      borrowed_ = true;
    } else {
      ref_ = arr[i];
    }
  }
  ~Element() {
    if (borrowed_)
      ffi::details::ObjectUnsafe::MoveToHandle(ffi::ObjectRefUnsafe::MovePtr(std::move(ref_)));
  }
  Element(const Element&) = delete;
  Element& operator=(const Element&) = delete;
  const PrimExpr& get() const { return ref_; }

 private:
  PrimExpr ref_;
  bool borrowed_ = false;
};
}  // namespace

void IRVisitor::VisitExpr(const PrimExpr& e) {
  if (!e.defined()) return;
  ExprScope scope(&expr_depth_, &visited_);
  if (sharing_ == Sharing::kOncePerExpression && MaybeShared(e) && !visited_.emplace(e, {})) return;
  ffi::StackGuard guard("IRVisitor", guard_depth_);
  const Object* n = e.get();
  switch (NodeKindOf(n)) {
#define TILECORE_IR_CASE(Name) \
  case NodeKind::k##Name:      \
    return VisitExpr_(static_cast<const Name##Node*>(n));
    TILECORE_IR_FOR_EACH_EXPR(TILECORE_IR_CASE)
#undef TILECORE_IR_CASE
    default:
      TILECORE_THROW(TypeError) << "IRVisitor: `" << n->GetTypeKey()
                                << "` is not an expression of the Kernel IR";
  }
}

void IRVisitor::VisitStmt(const Stmt& s) {
  if (!s.defined()) return;
  ffi::StackGuard guard("IRVisitor", guard_depth_);
  const Object* n = s.get();
  switch (NodeKindOf(n)) {
#define TILECORE_IR_CASE(Name) \
  case NodeKind::k##Name:      \
    return VisitStmt_(static_cast<const Name##Node*>(n));
    TILECORE_IR_FOR_EACH_STMT(TILECORE_IR_CASE)
#undef TILECORE_IR_CASE
    default:
      TILECORE_THROW(TypeError) << "IRVisitor: `" << n->GetTypeKey()
                                << "` is not a statement of the Kernel IR";
  }
}

#define TILECORE_IR_VISIT_BINARY(Name)               \
  void IRVisitor::VisitExpr_(const Name##Node* op) { \
    VisitExpr(op->a);                                \
    VisitExpr(op->b);                                \
  }
TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_VISIT_BINARY)
#undef TILECORE_IR_VISIT_BINARY

void IRVisitor::VisitExpr_(const NotNode* op) { VisitExpr(op->a); }
void IRVisitor::VisitExpr_(const SelectNode* op) {
  VisitExpr(op->condition);
  VisitExpr(op->true_value);
  VisitExpr(op->false_value);
}
void IRVisitor::VisitExpr_(const CastNode* op) { VisitExpr(op->value); }
void IRVisitor::VisitExpr_(const LetNode* op) {
  VisitExpr(op->value);
  VisitExpr(op->body);
}
void IRVisitor::VisitExpr_(const RampNode* op) {
  VisitExpr(op->base);
  VisitExpr(op->stride);
}
void IRVisitor::VisitExpr_(const BroadcastNode* op) { VisitExpr(op->value); }
void IRVisitor::VisitArray(const Array<PrimExpr>& arr) {
  for (size_t i = 0, n = arr.size(); i < n; ++i) VisitExpr(Element(arr, i).get());
}
void IRVisitor::VisitExpr_(const CallNode* op) { VisitArray(op->args); }
void IRVisitor::VisitExpr_(const BufferLoadNode* op) {
  VisitBuffer(op->buffer);
  VisitArray(op->indices);
}
void IRVisitor::VisitExpr_(const BufferRegionNode* op) {
  VisitBuffer(op->buffer);
  VisitArray(op->begin);
  VisitArray(op->extents);
}

void IRVisitor::VisitStmt_(const BufferStoreNode* op) {
  VisitBuffer(op->buffer);
  VisitExpr(op->value);
  VisitArray(op->indices);
  VisitExpr(op->predicate);
}
void IRVisitor::VisitStmt_(const LetStmtNode* op) {
  VisitExpr(op->value);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const ForNode* op) {
  VisitExpr(op->min);
  VisitExpr(op->extent);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const WhileNode* op) {
  VisitExpr(op->condition);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const IfThenElseNode* op) {
  VisitExpr(op->condition);
  VisitStmt(op->then_case);
  VisitStmt(op->else_case);
}
void IRVisitor::VisitStmt_(const AllocateNode* op) {
  VisitBuffer(op->buffer);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const SeqStmtNode* op) {
  for (const Stmt& s : op->seq) VisitStmt(s);
}
void IRVisitor::VisitStmt_(const EvaluateNode* op) { VisitExpr(op->value); }

// ---------------------------------------------------------------------------
// IRMutator
// ---------------------------------------------------------------------------
PrimExpr IRMutator::VisitExpr(const PrimExpr& e) {
  if (!e.defined()) return e;
  ExprScope scope(&expr_depth_, &memo_);
  if (sharing_ == Sharing::kEachOccurrence || !MaybeShared(e)) return Dispatch(e);
  if (const PrimExpr* done = memo_.find(e.get())) return *done;
  PrimExpr r = Dispatch(e);
  memo_.emplace(e, r);
  return r;
}

PrimExpr IRMutator::Dispatch(const PrimExpr& e) {
  ffi::StackGuard guard("IRMutator", guard_depth_);
  const Object* n = e.get();
  switch (NodeKindOf(n)) {
#define TILECORE_IR_CASE(Name) \
  case NodeKind::k##Name:      \
    return VisitExpr_(static_cast<const Name##Node*>(n));
    TILECORE_IR_FOR_EACH_EXPR(TILECORE_IR_CASE)
#undef TILECORE_IR_CASE
    default:
      TILECORE_THROW(TypeError) << "IRMutator: `" << n->GetTypeKey()
                                << "` is not an expression of the Kernel IR";
  }
}

Stmt IRMutator::VisitStmt(const Stmt& s) {
  if (!s.defined()) return s;
  ffi::StackGuard guard("IRMutator", guard_depth_);
  const Object* n = s.get();
  switch (NodeKindOf(n)) {
#define TILECORE_IR_CASE(Name) \
  case NodeKind::k##Name:      \
    return VisitStmt_(static_cast<const Name##Node*>(n));
    TILECORE_IR_FOR_EACH_STMT(TILECORE_IR_CASE)
#undef TILECORE_IR_CASE
    default:
      TILECORE_THROW(TypeError) << "IRMutator: `" << n->GetTypeKey()
                                << "` is not a statement of the Kernel IR";
  }
}

Array<PrimExpr> IRMutator::VisitArray(const Array<PrimExpr>& arr) {
  // (the copy is made from the first element that changes: most arrays do not)
  const size_t n = arr.size();
  for (size_t i = 0; i < n; ++i) {
    PrimExpr v;
    {
      Element e(arr, i);
      v = VisitExpr(e.get());
      if (v.same_as(e.get())) continue;
    }
    std::vector<PrimExpr> out;
    out.reserve(n);
    for (size_t k = 0; k < i; ++k) out.push_back(arr[k]);
    out.push_back(std::move(v));
    for (size_t k = i + 1; k < n; ++k) out.push_back(VisitExpr(Element(arr, k).get()));
    return Array<PrimExpr>(out);
  }
  return arr;
}

PrimExpr IRMutator::VisitExpr_(const IntImmNode* op) { return GetRef<PrimExpr>(op); }
PrimExpr IRMutator::VisitExpr_(const FloatImmNode* op) { return GetRef<PrimExpr>(op); }
PrimExpr IRMutator::VisitExpr_(const StringImmNode* op) { return GetRef<PrimExpr>(op); }
PrimExpr IRMutator::VisitExpr_(const VarNode* op) { return GetRef<PrimExpr>(op); }

#define TILECORE_IR_MUTATE_BINARY(Name)                                    \
  PrimExpr IRMutator::VisitExpr_(const Name##Node* op) {                   \
    PrimExpr a = VisitExpr(op->a);                                         \
    PrimExpr b = VisitExpr(op->b);                                         \
    if (a.same_as(op->a) && b.same_as(op->b)) return GetRef<PrimExpr>(op); \
    return Name(a, b, op->span);                                           \
  }
TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_MUTATE_BINARY)
#undef TILECORE_IR_MUTATE_BINARY

PrimExpr IRMutator::VisitExpr_(const NotNode* op) {
  PrimExpr a = VisitExpr(op->a);
  return a.same_as(op->a) ? GetRef<PrimExpr>(op) : Not(a, op->span);
}
PrimExpr IRMutator::VisitExpr_(const SelectNode* op) {
  PrimExpr c = VisitExpr(op->condition), t = VisitExpr(op->true_value),
           f = VisitExpr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
    return GetRef<PrimExpr>(op);
  return Select(c, t, f, op->span);
}
PrimExpr IRMutator::VisitExpr_(const CastNode* op) {
  PrimExpr v = VisitExpr(op->value);
  return v.same_as(op->value) ? GetRef<PrimExpr>(op) : Cast(op->dtype, v, op->span);
}
PrimExpr IRMutator::VisitExpr_(const LetNode* op) {
  PrimExpr v = VisitExpr(op->value), b = VisitExpr(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return GetRef<PrimExpr>(op);
  return Let(op->var, v, b, op->span);
}
PrimExpr IRMutator::VisitExpr_(const RampNode* op) {
  PrimExpr b = VisitExpr(op->base), s = VisitExpr(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return GetRef<PrimExpr>(op);
  return Ramp(b, s, op->lanes, op->span);
}
PrimExpr IRMutator::VisitExpr_(const BroadcastNode* op) {
  PrimExpr v = VisitExpr(op->value);
  return v.same_as(op->value) ? GetRef<PrimExpr>(op) : Broadcast(v, op->lanes, op->span);
}
PrimExpr IRMutator::VisitExpr_(const CallNode* op) {
  Array<PrimExpr> args = VisitArray(op->args);
  return args.same_as(op->args) ? GetRef<PrimExpr>(op) : Call(op->dtype, op->op, args, op->span);
}
PrimExpr IRMutator::VisitExpr_(const BufferLoadNode* op) {
  Buffer buf = VisitBuffer(op->buffer);
  Array<PrimExpr> idx = VisitArray(op->indices);
  if (buf.same_as(op->buffer) && idx.same_as(op->indices)) return GetRef<PrimExpr>(op);
  return BufferLoad(buf, idx, op->span);
}
PrimExpr IRMutator::VisitExpr_(const BufferRegionNode* op) {
  Buffer buf = VisitBuffer(op->buffer);
  Array<PrimExpr> begin = VisitArray(op->begin), ext = VisitArray(op->extents);
  if (buf.same_as(op->buffer) && begin.same_as(op->begin) && ext.same_as(op->extents))
    return GetRef<PrimExpr>(op);
  return BufferRegion(buf, begin, ext, op->span);
}

Stmt IRMutator::VisitStmt_(const BufferStoreNode* op) {
  Buffer buf = VisitBuffer(op->buffer);
  PrimExpr v = VisitExpr(op->value);
  Array<PrimExpr> idx = VisitArray(op->indices);
  PrimExpr pred = VisitExpr(op->predicate);
  if (buf.same_as(op->buffer) && v.same_as(op->value) && idx.same_as(op->indices) &&
      pred.same_as(op->predicate)) {
    return GetRef<Stmt>(op);
  }
  return BufferStore(buf, v, idx, pred, op->span);
}
Stmt IRMutator::VisitStmt_(const LetStmtNode* op) {
  PrimExpr v = VisitExpr(op->value);
  Stmt b = VisitStmt(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return GetRef<Stmt>(op);
  return LetStmt(op->var, v, b, op->span);
}
Stmt IRMutator::VisitStmt_(const ForNode* op) {
  PrimExpr mn = VisitExpr(op->min), ext = VisitExpr(op->extent);
  Stmt b = VisitStmt(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body))
    return GetRef<Stmt>(op);
  return For(op->loop_var, mn, ext, op->kind, b, op->annotations, op->span);
}
Stmt IRMutator::VisitStmt_(const WhileNode* op) {
  PrimExpr c = VisitExpr(op->condition);
  Stmt b = VisitStmt(op->body);
  if (c.same_as(op->condition) && b.same_as(op->body)) return GetRef<Stmt>(op);
  return While(c, b, op->span);
}
Stmt IRMutator::VisitStmt_(const IfThenElseNode* op) {
  PrimExpr c = VisitExpr(op->condition);
  Stmt t = VisitStmt(op->then_case), e = VisitStmt(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case))
    return GetRef<Stmt>(op);
  return IfThenElse(c, t, e, op->span);
}
Stmt IRMutator::VisitStmt_(const AllocateNode* op) {
  Buffer buf = VisitBuffer(op->buffer);
  Stmt b = VisitStmt(op->body);
  if (buf.same_as(op->buffer) && b.same_as(op->body)) return GetRef<Stmt>(op);
  return Allocate(buf, b, op->span);
}
Stmt IRMutator::VisitStmt_(const SeqStmtNode* op) {
  // (the copy is made from the first statement that changes, as VisitArray's)
  const size_t n = op->seq.size();
  for (size_t i = 0; i < n; ++i) {
    Stmt s = op->seq[i];
    Stmt v = VisitStmt(s);
    if (v.same_as(s)) continue;
    std::vector<Stmt> out;
    out.reserve(n);
    for (size_t k = 0; k < i; ++k) out.push_back(op->seq[k]);
    out.push_back(std::move(v));
    for (size_t k = i + 1; k < n; ++k) out.push_back(VisitStmt(op->seq[k]));
    return SeqStmt(Array<Stmt>(out), op->span);
  }
  return GetRef<Stmt>(op);
}
Stmt IRMutator::VisitStmt_(const EvaluateNode* op) {
  PrimExpr v = VisitExpr(op->value);
  return v.same_as(op->value) ? GetRef<Stmt>(op) : Evaluate(v, op->span);
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------
namespace {
// Each node once, however often the graph shares it (e = e + e is 2^n paths but n nodes).
// (stmts_only: no expression is walked, which holds no statement)
class PostOrder : public IRVisitor {
 public:
  explicit PostOrder(const std::function<void(const ObjectRef&)>& f, bool stmts_only = false)
      : f_(f), stmts_only_(stmts_only) {}
  void VisitExpr(const PrimExpr& e) override {
    if (stmts_only_ || !e.defined() || !visited_.emplace(e, {})) return;
    IRVisitor::VisitExpr(e);
    f_(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (!s.defined() || !visited_.emplace(s, {})) return;
    IRVisitor::VisitStmt(s);
    f_(s);
  }

 private:
  const std::function<void(const ObjectRef&)>& f_;
  const bool stmts_only_;
  IdentityTable<NoValue> visited_;
};

// The substitution of a shared subexpression is the same wherever it occurs: made once
// (the mutator's memo).
class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::function<std::optional<PrimExpr>(const VarNode*)>& f) : f_(f) {}
  PrimExpr VisitExpr_(const VarNode* op) override {
    if (auto r = f_(op)) return *r;
    return GetRef<PrimExpr>(op);
  }

 private:
  const std::function<std::optional<PrimExpr>(const VarNode*)>& f_;
};

std::function<std::optional<PrimExpr>(const VarNode*)> FromMap(const Map<Var, PrimExpr>& vmap) {
  return [vmap](const VarNode* v) -> std::optional<PrimExpr> {
    const Any* r = vmap->Find(Any(GetRef<Var>(v)));
    if (r == nullptr) return std::nullopt;
    return r->cast<PrimExpr>();
  };
}
}  // namespace

void PostOrderVisitStmts(const Stmt& s, const std::function<void(const Stmt&)>& f) {
  // (only statements reach the callback)
  const std::function<void(const ObjectRef&)> g = [&f](const ObjectRef& n) {
    f(GetRef<Stmt>(static_cast<const StmtNode*>(n.get())));
  };
  PostOrder(g, true).VisitStmt(s);
}

void PostOrderVisit(const ObjectRef& node, const std::function<void(const ObjectRef&)>& f) {
  PostOrder v(f);
  if (const auto* e = node.as<PrimExprNode>()) {
    v.VisitExpr(GetRef<PrimExpr>(e));
  } else if (const auto* s = node.as<StmtNode>()) {
    v.VisitStmt(GetRef<Stmt>(s));
  }
}

PrimExpr Substitute(const PrimExpr& e,
                    const std::function<std::optional<PrimExpr>(const VarNode*)>& vmap) {
  return Substituter(vmap).VisitExpr(e);
}
Stmt Substitute(const Stmt& s, const std::function<std::optional<PrimExpr>(const VarNode*)>& vmap) {
  return Substituter(vmap).VisitStmt(s);
}
PrimExpr Substitute(const PrimExpr& e, const Map<Var, PrimExpr>& vmap) {
  return Substitute(e, FromMap(vmap));
}
Stmt Substitute(const Stmt& s, const Map<Var, PrimExpr>& vmap) {
  return Substitute(s, FromMap(vmap));
}

namespace {
// (a walk that stops at the first variable found, its memo holding only shared nodes:
// passes ask this of every index they rewrite)
class VarFinder : public IRVisitor {
 public:
  explicit VarFinder(const std::function<bool(const VarNode*)>& pred) : pred_(pred) {}
  void VisitExpr(const PrimExpr& e) override {
    if (!found) IRVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {  // (each statement once, as PostOrderVisit)
    if (!found && s.defined() && statements_.emplace(s, {})) IRVisitor::VisitStmt(s);
  }
  void VisitExpr_(const VarNode* op) override { found = found || pred_(op); }
  bool found = false;

 private:
  const std::function<bool(const VarNode*)>& pred_;
  IdentityTable<NoValue> statements_;
};
}  // namespace

bool UsesVar(const ObjectRef& node, const std::function<bool(const VarNode*)>& pred) {
  VarFinder finder(pred);
  if (const auto* e = node.as<PrimExprNode>()) {
    finder.VisitExpr(GetRef<PrimExpr>(e));
  } else if (const auto* s = node.as<StmtNode>()) {
    finder.VisitStmt(GetRef<Stmt>(s));
  }
  return finder.found;
}

}  // namespace ir
}  // namespace tilecore
