/*
 * src/transform/loop_partition.cc — the LoopPartition pass (loop_partition.h).
 */
#include "tilecore/transform/loop_partition.h"

#include <optional>
#include <unordered_set>

#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/identity_table.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/simplify.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

int64_t FloorDiv64(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/*! \brief Variables bound inside a statement (loop variables, lets), each statement
 * visited once (a partitioned loop's pieces share their untouched statements). */
class BoundVarCollector : public IRVisitor {
 public:
  std::unordered_set<const VarNode*> out;
  void VisitStmt(const Stmt& s) override {
    if (s.defined() && seen_.emplace(s, {})) IRVisitor::VisitStmt(s);
  }
  void VisitStmt_(const ForNode* op) override {
    out.insert(op->loop_var.get());
    IRVisitor::VisitStmt_(op);
  }
  void VisitStmt_(const LetStmtNode* op) override {
    out.insert(op->var.get());
    IRVisitor::VisitStmt_(op);
  }
  void VisitExpr_(const LetNode* op) override {
    out.insert(op->var.get());
    IRVisitor::VisitExpr_(op);
  }

 private:
  IdentityTable<NoValue> seen_;
};

std::unordered_set<const VarNode*> BoundVars(const Stmt& s) {
  BoundVarCollector c;
  c.VisitStmt(s);
  return std::move(c.out);
}

/*! \brief Comparisons found in the conditions of the `if`s of a statement, in pre-order of the ifs.
 */
class AtomCollector : public IRVisitor {
 public:
  std::vector<PrimExpr> atoms;
  // (ifs are statements: the walk need not enter expressions)
  void VisitExpr(const PrimExpr&) override {}
  void VisitStmt_(const IfThenElseNode* op) override {
    Collect(op->condition);
    IRVisitor::VisitStmt_(op);
  }

 private:
  void Collect(const PrimExpr& c) {
    if (const auto* a = c.as<AndNode>()) {
      Collect(a->a);
      Collect(a->b);
    } else if (const auto* o = c.as<OrNode>()) {
      Collect(o->a);
      Collect(o->b);
    } else if (const auto* n = c.as<NotNode>()) {
      Collect(n->a);
    } else if (c.as<LTNode>() || c.as<LENode>() || c.as<GTNode>() || c.as<GENode>()) {
      atoms.push_back(c);
    }
  }
};

/*! \brief Replaces every occurrence of `atom` (structurally) by a constant. */
class AtomReplacer : public IRMutator {
 public:
  AtomReplacer(PrimExpr atom, bool value) : atom_(std::move(atom)), value_(value) {}
  PrimExpr VisitExpr(const PrimExpr& e) override {
    if (e.defined() && NodeKindOf(e.get()) == NodeKindOf(atom_.get()) &&
        ffi::StructuralEqual(e, atom_)) {
      return IntImm(DataType::Bool(), value_);
    }
    return IRMutator::VisitExpr(e);
  }

 private:
  PrimExpr atom_;
  bool value_;
};

/*! \brief Where `atom` changes value within the loop and what it is before that point. */
struct Split {
  int64_t point;
  bool value_before;
};

class Partitioner : public IRMutator {
 public:
  explicit Partitioner(int64_t max_pieces) : max_pieces_(max_pieces) {}

  Stmt VisitStmt_(const ForNode* op) override {
    Stmt loop = IRMutator::VisitStmt_(op);  // inner loops first
    const auto* f = loop.as<ForNode>();
    if (f == nullptr || f->kind == ForKind::kCores) return loop;
    auto mn = as_const_int(an_.Simplify(f->min));
    auto ext = as_const_int(an_.Simplify(f->extent));
    if (!mn || !ext || *ext <= 1) return loop;
    int64_t pieces = 1;
    return Partition(f, *mn, *mn + *ext, &pieces);
  }

 private:
  Stmt Partition(const ForNode* f, int64_t lo, int64_t hi, int64_t* pieces) {
    if (*pieces >= max_pieces_) return Rebuild(f, lo, hi, f->body);
    AtomCollector atoms;
    atoms.VisitStmt(f->body);
    if (atoms.atoms.empty()) return Rebuild(f, lo, hi, f->body);
    // (the body's own variables: only when an `if` may split it, the walk is over all of it)
    std::unordered_set<const VarNode*> inner = BoundVars(f->body);
    for (const PrimExpr& atom : atoms.atoms) {
      std::optional<Split> s = FindSplit(atom, f->loop_var, inner);
      if (!s || s->point <= lo || s->point >= hi) continue;
      ++*pieces;
      Stmt first = AtomReplacer(atom, s->value_before).VisitStmt(f->body);
      Stmt second = AtomReplacer(atom, !s->value_before).VisitStmt(f->body);
      Stmt a = PartitionPiece(f, lo, s->point, first, pieces);
      Stmt b = PartitionPiece(f, s->point, hi, second, pieces);
      return SeqStmt::Flatten({a, b});
    }
    return Rebuild(f, lo, hi, f->body);
  }

  Stmt PartitionPiece(const ForNode* f, int64_t lo, int64_t hi, const Stmt& body, int64_t* pieces) {
    Stmt piece = SimplifyStmt(Rebuild(f, lo, hi, body));
    const auto* pf = piece.as<ForNode>();
    if (pf == nullptr || !pf->loop_var.same_as(f->loop_var)) return piece;
    return Partition(pf, lo, hi, pieces);
  }

  static Stmt Rebuild(const ForNode* f, int64_t lo, int64_t hi, const Stmt& body) {
    DataType t = f->loop_var->dtype;
    if (lo == as_const_int(f->min).value_or(lo - 1) && body.same_as(f->body) &&
        hi - lo == as_const_int(f->extent).value_or(-1)) {
      return GetRef<Stmt>(f);
    }
    return For(f->loop_var, IntImm(t, lo), IntImm(t, hi - lo), f->kind, body, f->annotations,
               f->span);
  }

  /*! \brief `atom` as `c * v + r < 0` with constant c != 0 and r; the point where it flips. */
  std::optional<Split> FindSplit(const PrimExpr& atom, const Var& v,
                                 const std::unordered_set<const VarNode*>& inner) {
    const auto* bin = atom.as<BinaryOpNode>();
    if (!bin->a.dtype().is_integer() || !bin->a.dtype().is_scalar()) return std::nullopt;
    if (!UsesVar(atom, [&](const VarNode* x) { return x == v.get(); })) return std::nullopt;
    if (UsesVar(atom, [&](const VarNode* x) { return inner.count(x) > 0; })) return std::nullopt;
    PrimExpr d;
    if (atom.as<LTNode>())
      d = bin->a - bin->b;
    else if (atom.as<LENode>())
      d = bin->a - bin->b - 1;
    else if (atom.as<GTNode>())
      d = bin->b - bin->a;
    else
      d = bin->b - bin->a - 1;
    d = an_.Simplify(d);
    auto at = [&](int64_t x) {
      return as_const_int(
          an_.Simplify(Substitute(d, [&](const VarNode* u) -> std::optional<PrimExpr> {
            if (u == v.get()) return IntImm(v->dtype, x);
            return std::nullopt;
          })));
    };
    auto r = at(0), r1 = at(1);
    if (!r || !r1 || *r1 == *r) return std::nullopt;
    int64_t c = *r1 - *r;
    // Affine check: d - (c * v + r) must vanish.
    if (!is_const_int(an_.Simplify(d - (v * IntImm(v->dtype, c) + IntImm(v->dtype, *r))), 0))
      return std::nullopt;
    if (c > 0) return Split{FloorDiv64(-*r + c - 1, c), true};  // true for v < ceil(-r / c)
    return Split{FloorDiv64(*r, -c) + 1, false};                // true for v > r / -c
  }

  int64_t max_pieces_;
  Analyzer an_;
};

}  // namespace

Pass LoopPartition() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext ctx) {
        int64_t max_pieces = ctx.GetConfig<int64_t>("transform.LoopPartition.max_pieces", 8);
        if (max_pieces < 1) {
          TILECORE_THROW(ValueError)
              << "LoopPartition: option transform.LoopPartition.max_pieces must be at least 1, "
              << "got " << max_pieces;
        }
        Stmt body = Partitioner(max_pieces).VisitStmt(f->body);
        return body.same_as(f->body) ? f : f.WithBody(body);
      },
      0, "LoopPartition");
}

TILECORE_REGISTER_GLOBAL("transform.LoopPartition").set_body_typed([]() {
  return LoopPartition();
});

}  // namespace transform
}  // namespace tilecore
