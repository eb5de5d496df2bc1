/*
 * include/tilecore/ir/functor.h — walking and rewriting the Kernel IR.
 *
 * IR nodes have no virtual functions (they are plain FFI objects), so dispatch is
 * by kind: NodeKindOf() maps a node's type index to a NodeKind through a table
 * built once. IRVisitor walks every expression and statement; IRMutator rebuilds
 * the nodes whose children changed (through the checked constructors, so a
 * rewrite that breaks typing fails loudly) and returns the same object when
 * nothing changed, which keeps rewriting cheap and lets callers test `same_as`.
 *
 *   class CountLoads : public IRVisitor {
 *    public:
 *     int n = 0;
 *     void VisitExpr_(const BufferLoadNode* op) override { ++n; IRVisitor::VisitExpr_(op); }
 *   };
 *
 * Buffers: the default visitors do not descend into a Buffer's shape and strides
 * (they are bound where the buffer is declared); a pass that rewrites buffers
 * overrides VisitBuffer and keeps its own old -> new map.
 *
 * Shared subexpressions: an expression is a DAG (`e = e + e` forty times is 2^40 paths
 * but 41 nodes), so VisitExpr handles a node that is referenced more than once only at
 * its first occurrence within one expression (the visitor skips it, the mutator returns
 * the same result); walks cost what the nodes cost. The memo lasts while the outermost
 * VisitExpr runs, i.e. one expression of one statement: statements are visited at each
 * occurrence, as the code runs them, and a pass whose rewrite of an expression depends
 * on the statement it sits in (loop scopes, conditions, allocations) still sees each.
 * A pass that must see every occurrence inside one expression (the example above counts
 * a load once however often one expression repeats it) passes
 * Sharing::kEachOccurrence to the base constructor.
 */
#ifndef TILECORE_IR_FUNCTOR_H_
#define TILECORE_IR_FUNCTOR_H_

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilecore/ir/function.h"
#include "tilecore/ir/identity_table.h"

namespace tilecore {
namespace ir {

// The node kinds, listed once: the NodeKind enum, the kind table and the visitor and
// mutator dispatch are all generated from these lists.
// clang-format off
#define TILECORE_IR_FOR_EACH_BINARY(X) \
  X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(FloorDiv) X(FloorMod) X(Min) X(Max) \
  X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or)
#define TILECORE_IR_FOR_EACH_EXPR(X) \
  X(IntImm) X(FloatImm) X(StringImm) X(Var) TILECORE_IR_FOR_EACH_BINARY(X) X(Not) X(Select) \
  X(Cast) X(Let) X(Ramp) X(Broadcast) X(Call) X(BufferLoad) X(BufferRegion)
#define TILECORE_IR_FOR_EACH_STMT(X) \
  X(BufferStore) X(LetStmt) X(For) X(While) X(IfThenElse) X(Allocate) X(SeqStmt) X(Evaluate)
// clang-format on

#define TILECORE_IR_KIND_ENUMERATOR(Name) k##Name,
enum class NodeKind : uint8_t {
  kUnknown,
  TILECORE_IR_FOR_EACH_EXPR(TILECORE_IR_KIND_ENUMERATOR)
      TILECORE_IR_FOR_EACH_STMT(TILECORE_IR_KIND_ENUMERATOR)
};
#undef TILECORE_IR_KIND_ENUMERATOR

namespace detail {
/*! \brief Each IR node type's kind, by type index (kUnknown for other types). */
const std::vector<NodeKind>& NodeKindTable();
}  // namespace detail

/*! \brief The kind of an IR node (kUnknown for anything else). O(1), inline: every visit of
 * every walk asks it. */
inline NodeKind NodeKindOf(const Object* node) {
  static const std::vector<NodeKind>& table = detail::NodeKindTable();
  if (node == nullptr) return NodeKind::kUnknown;
  const auto i = static_cast<size_t>(node->type_index());
  return i < table.size() ? table[i] : NodeKind::kUnknown;
}

/*! \brief A reference to a node we hold a pointer to (adds a reference). */
template <typename TRef, typename TNode>
TRef GetRef(const TNode* node) {
  return TRef(ffi::details::ObjectUnsafe::CopyFromHandle(
      reinterpret_cast<TCFFIObject*>(const_cast<TNode*>(node))));
}

/*! \brief Hashes and compares nodes by identity (the memo of the visitor and mutator). */
struct ByIdentity {
  size_t operator()(const ObjectRef& r) const { return std::hash<const Object*>()(r.get()); }
  bool operator()(const ObjectRef& a, const ObjectRef& b) const { return a.same_as(b); }
};

/*! \brief Whether VisitExpr visits a shared subexpression once per expression (above). */
enum class Sharing : uint8_t { kOncePerExpression, kEachOccurrence };

class IRVisitor {
 public:
  explicit IRVisitor(Sharing sharing = Sharing::kOncePerExpression) : sharing_(sharing) {}
  virtual ~IRVisitor() = default;
  virtual void VisitExpr(const PrimExpr& e);
  virtual void VisitStmt(const Stmt& s);
  /*! \brief Default: nothing (see the header comment). */
  virtual void VisitBuffer(const Buffer& b) {}

  virtual void VisitExpr_(const IntImmNode* op) {}
  virtual void VisitExpr_(const FloatImmNode* op) {}
  virtual void VisitExpr_(const StringImmNode* op) {}
  virtual void VisitExpr_(const VarNode* op) {}
#define TILECORE_IR_VISIT_DECL(Name) virtual void VisitExpr_(const Name##Node* op);
  TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_VISIT_DECL)
#undef TILECORE_IR_VISIT_DECL
  virtual void VisitExpr_(const NotNode* op);
  virtual void VisitExpr_(const SelectNode* op);
  virtual void VisitExpr_(const CastNode* op);
  virtual void VisitExpr_(const LetNode* op);
  virtual void VisitExpr_(const RampNode* op);
  virtual void VisitExpr_(const BroadcastNode* op);
  virtual void VisitExpr_(const CallNode* op);
  virtual void VisitExpr_(const BufferLoadNode* op);
  virtual void VisitExpr_(const BufferRegionNode* op);

  virtual void VisitStmt_(const BufferStoreNode* op);
  virtual void VisitStmt_(const LetStmtNode* op);
  virtual void VisitStmt_(const ForNode* op);
  virtual void VisitStmt_(const WhileNode* op);
  virtual void VisitStmt_(const IfThenElseNode* op);
  virtual void VisitStmt_(const AllocateNode* op);
  virtual void VisitStmt_(const SeqStmtNode* op);
  virtual void VisitStmt_(const EvaluateNode* op);

 protected:
  /*! \brief Visits each element (an element only the array holds is unshared). */
  void VisitArray(const Array<PrimExpr>& arr);

 private:
  Sharing sharing_;
  int expr_depth_ = 0;       // nesting of VisitExpr; the memo is cleared when it returns to 0
  int64_t guard_depth_ = 0;  // (StackGuard's count of this walk's nesting)
  IdentityTable<NoValue> visited_;
};

class IRMutator {
 public:
  explicit IRMutator(Sharing sharing = Sharing::kOncePerExpression) : sharing_(sharing) {}
  virtual ~IRMutator() = default;
  virtual PrimExpr VisitExpr(const PrimExpr& e);
  virtual Stmt VisitStmt(const Stmt& s);
  /*! \brief Default: the buffer itself (see the header comment). */
  virtual Buffer VisitBuffer(const Buffer& b) { return b; }

  virtual PrimExpr VisitExpr_(const IntImmNode* op);
  virtual PrimExpr VisitExpr_(const FloatImmNode* op);
  virtual PrimExpr VisitExpr_(const StringImmNode* op);
  virtual PrimExpr VisitExpr_(const VarNode* op);
#define TILECORE_IR_MUTATE_DECL(Name) virtual PrimExpr VisitExpr_(const Name##Node* op);
  TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_MUTATE_DECL)
#undef TILECORE_IR_MUTATE_DECL
  virtual PrimExpr VisitExpr_(const NotNode* op);
  virtual PrimExpr VisitExpr_(const SelectNode* op);
  virtual PrimExpr VisitExpr_(const CastNode* op);
  virtual PrimExpr VisitExpr_(const LetNode* op);
  virtual PrimExpr VisitExpr_(const RampNode* op);
  virtual PrimExpr VisitExpr_(const BroadcastNode* op);
  virtual PrimExpr VisitExpr_(const CallNode* op);
  virtual PrimExpr VisitExpr_(const BufferLoadNode* op);
  virtual PrimExpr VisitExpr_(const BufferRegionNode* op);

  virtual Stmt VisitStmt_(const BufferStoreNode* op);
  virtual Stmt VisitStmt_(const LetStmtNode* op);
  virtual Stmt VisitStmt_(const ForNode* op);
  virtual Stmt VisitStmt_(const WhileNode* op);
  virtual Stmt VisitStmt_(const IfThenElseNode* op);
  virtual Stmt VisitStmt_(const AllocateNode* op);
  virtual Stmt VisitStmt_(const SeqStmtNode* op);
  virtual Stmt VisitStmt_(const EvaluateNode* op);

 protected:
  /*! \brief Visits each element; returns the same array when nothing changed. */
  Array<PrimExpr> VisitArray(const Array<PrimExpr>& arr);

 private:
  PrimExpr Dispatch(const PrimExpr& e);
  Sharing sharing_;
  int expr_depth_ = 0;
  int64_t guard_depth_ = 0;
  // (keys are held: identity_table.h)
  IdentityTable<PrimExpr> memo_;
};

/*! \brief Calls `f` on every expression and statement node, children first. */
void PostOrderVisit(const ObjectRef& node, const std::function<void(const ObjectRef&)>& f);

/*!
 * \brief Calls `f` on every statement node of `s`, children first, each once however often
 * it is shared: PostOrderVisit's calls on statements, in its order, without walking the
 * expressions (most of a kernel's nodes), for a question about statements only.
 */
void PostOrderVisitStmts(const Stmt& s, const std::function<void(const Stmt&)>& f);

/*! \brief Replaces variables by expressions (keys compared by identity). */
PrimExpr Substitute(const PrimExpr& e,
                    const std::function<std::optional<PrimExpr>(const VarNode*)>& vmap);
Stmt Substitute(const Stmt& s, const std::function<std::optional<PrimExpr>(const VarNode*)>& vmap);
PrimExpr Substitute(const PrimExpr& e, const Map<Var, PrimExpr>& vmap);
Stmt Substitute(const Stmt& s, const Map<Var, PrimExpr>& vmap);

/*! \brief Whether `e` mentions a variable for which `pred` holds. */
bool UsesVar(const ObjectRef& node, const std::function<bool(const VarNode*)>& pred);

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_FUNCTOR_H_
