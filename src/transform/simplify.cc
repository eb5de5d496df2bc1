/*
 * src/transform/simplify.cc — the Simplify pass (simplify.h).
 */
#include "tilecore/transform/simplify.h"

#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/analyzer.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

class StmtSimplifier : public IRMutator {
 public:
  PrimExpr VisitExpr(const PrimExpr& e) override { return an_.Simplify(e); }

  Stmt VisitStmt_(const ForNode* op) override {
    PrimExpr mn = VisitExpr(op->min), ext = VisitExpr(op->extent);
    auto ce = as_const_int(ext);
    if (ce && *ce <= 0) return Evaluate(IntImm(DataType::Int(32), 0));
    if (ce && *ce == 1 && op->kind != ForKind::kCores) {
      Stmt body = Substitute(op->body, [&](const VarNode* v) -> std::optional<PrimExpr> {
        if (v == op->loop_var.get()) return mn;
        return std::nullopt;
      });
      return VisitStmt(body);
    }
    an_.BindRange(op->loop_var, mn, ext);
    Stmt body = VisitStmt(op->body);
    an_.Unbind(op->loop_var);
    if (IsNoOp(body)) return Evaluate(IntImm(DataType::Int(32), 0));
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body))
      return GetRef<Stmt>(op);
    return For(op->loop_var, mn, ext, op->kind, body, op->annotations, op->span);
  }

  Stmt VisitStmt_(const IfThenElseNode* op) override {
    PrimExpr c = VisitExpr(op->condition);
    if (auto cc = as_const_int(c)) {
      if (*cc) return VisitStmt(op->then_case);
      return op->else_case.defined() ? VisitStmt(op->else_case)
                                     : Evaluate(IntImm(DataType::Int(32), 0));
    }
    Stmt t = VisitStmt(op->then_case), e = VisitStmt(op->else_case);
    if (e.defined() && IsNoOp(e)) e = Stmt();
    if (IsNoOp(t) && !e.defined()) return Evaluate(IntImm(DataType::Int(32), 0));
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case))
      return GetRef<Stmt>(op);
    return IfThenElse(c, t, e, op->span);
  }

  Stmt VisitStmt_(const LetStmtNode* op) override {
    PrimExpr v = VisitExpr(op->value);
    if (v.as<IntImmNode>() || v.as<FloatImmNode>() || v.as<VarNode>()) {
      Stmt body = Substitute(op->body, [&](const VarNode* x) -> std::optional<PrimExpr> {
        if (x == op->var.get()) return v;
        return std::nullopt;
      });
      return VisitStmt(body);
    }
    IntBound b = an_.ConstIntBound(v);
    constexpr int64_t kLo = std::numeric_limits<int32_t>::min(),
                      kHi = std::numeric_limits<int32_t>::max();
    if (op->var->dtype.is_integer() && b.lo >= kLo && b.hi <= kHi)
      an_.Bind(op->var, b.lo, b.hi - b.lo + 1);
    Stmt body = VisitStmt(op->body);
    an_.Unbind(op->var);
    if (v.same_as(op->value) && body.same_as(op->body)) return GetRef<Stmt>(op);
    return LetStmt(op->var, v, body, op->span);
  }

  Stmt VisitStmt_(const SeqStmtNode* op) override {
    Stmt s = IRMutator::VisitStmt_(op);
    if (const auto* q = s.as<SeqStmtNode>()) {
      Stmt flat = SeqStmt::Flatten(q->seq);
      if (const auto* fq = flat.as<SeqStmtNode>(); fq && fq->seq.empty())
        return Evaluate(IntImm(DataType::Int(32), 0));
      return flat;
    }
    return s;
  }

  Stmt VisitStmt_(const EvaluateNode* op) override {
    PrimExpr v = VisitExpr(op->value);
    if (const auto* c = v.as<CallNode>(); c == nullptr || CallHasEffect(c)) {
      return v.same_as(op->value) ? GetRef<Stmt>(op) : Evaluate(v, op->span);
    }
    return Evaluate(IntImm(DataType::Int(32), 0), op->span);  // a pure value evaluated for nothing
  }

 private:
  Analyzer an_;
};

}  // namespace

Stmt SimplifyStmt(const Stmt& s) { return StmtSimplifier().VisitStmt(s); }

Pass Simplify() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext) {
        Stmt body = SimplifyStmt(f->body);
        return body.same_as(f->body) ? f : f.WithBody(body);
      },
      0, "Simplify");
}

TILECORE_REGISTER_GLOBAL("transform.Simplify").set_body_typed([]() { return Simplify(); });
TILECORE_REGISTER_GLOBAL("transform.SimplifyStmt").set_body_typed([](Stmt s) {
  return SimplifyStmt(s);
});

}  // namespace transform
}  // namespace tilecore
