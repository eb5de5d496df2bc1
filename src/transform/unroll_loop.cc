/*
 * src/transform/unroll_loop.cc — the UnrollLoop pass (unroll_loop.h).
 */
#include "tilecore/transform/unroll_loop.h"

#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/simplify.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

bool HasLoop(const Stmt& s) {
  bool found = false;
  PostOrderVisitStmts(
      s, [&](const Stmt& n) { found = found || n.as<ForNode>() || n.as<WhileNode>(); });
  return found;
}

class Unroller : public IRMutator {
 public:
  Unroller(int64_t auto_max, int64_t max_extent) : auto_max_(auto_max), max_extent_(max_extent) {}

  Stmt VisitStmt_(const ForNode* op) override {
    Stmt body = VisitStmt(op->body);
    bool want = op->kind == ForKind::kUnrolled;
    auto mn = as_const_int(SimplifyExprOf(op->min));
    auto ext = as_const_int(SimplifyExprOf(op->extent));
    if (want && (!mn || !ext)) {
      TILECORE_THROW(ValueError) << "UnrollLoop: loop `" << op->loop_var->name.view()
                                 << "` is marked unrolled but its bounds are not constant"
                                 << At(op->span);
    }
    if (want && *ext > max_extent_) {
      TILECORE_THROW(ValueError) << "UnrollLoop: loop `" << op->loop_var->name.view()
                                 << "` has extent " << *ext
                                 << ", more than transform.UnrollLoop.max_extent = " << max_extent_
                                 << At(op->span);
    }
    if (!want && op->kind == ForKind::kSerial && mn && ext && *ext <= auto_max_ && !HasLoop(body))
      want = true;
    if (!want) {
      if (body.same_as(op->body)) return GetRef<Stmt>(op);
      return For(op->loop_var, op->min, op->extent, op->kind, body, op->annotations, op->span);
    }
    Array<Stmt> copies;
    for (int64_t k = 0; k < *ext; ++k) {
      PrimExpr value = IntImm(op->loop_var->dtype, *mn + k);
      copies.push_back(
          SimplifyStmt(Substitute(body, [&](const VarNode* v) -> std::optional<PrimExpr> {
            if (v == op->loop_var.get()) return value;
            return std::nullopt;
          })));
    }
    return SeqStmt::Flatten(copies);
  }

 private:
  static PrimExpr SimplifyExprOf(const PrimExpr& e) {
    Stmt s = SimplifyStmt(Evaluate(e));
    const auto* ev = s.as<EvaluateNode>();
    return ev ? ev->value : e;
  }
  int64_t auto_max_;
  int64_t max_extent_;
};

}  // namespace

Pass UnrollLoop() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext ctx) {
        Unroller u(ctx.GetConfig<int64_t>("transform.UnrollLoop.auto_max_extent", 0),
                   ctx.GetConfig<int64_t>("transform.UnrollLoop.max_extent", 256));
        Stmt body = u.VisitStmt(f->body);
        return body.same_as(f->body) ? f : f.WithBody(body);
      },
      0, "UnrollLoop");
}

TILECORE_REGISTER_GLOBAL("transform.UnrollLoop").set_body_typed([]() { return UnrollLoop(); });

}  // namespace transform
}  // namespace tilecore
