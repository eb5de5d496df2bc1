/*
 * src/transform/vectorize_loop.cc — the VectorizeLoop pass (vectorize_loop.h).
 */
#include "tilecore/transform/vectorize_loop.h"

#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/flatten_buffer.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

/*! \brief Thrown inside the vectorizer to abandon a loop; caught by the pass. */
struct NotVectorizable {
  std::string reason;
};

[[noreturn]] void Fail(std::string reason) { throw NotVectorizable{std::move(reason)}; }

/*! \brief Vectorizes one loop body: `v` becomes ramp(base, 1, lanes). */
class BodyVectorizer {
 public:
  BodyVectorizer(const Var& v, PrimExpr base, int lanes, int width, Analyzer* an)
      : v_(v), base_(std::move(base)), lanes_(lanes), width_(width), an_(an) {}

  Stmt Run(const Stmt& body) {
    CheckDependences(body);
    return VisitStmt(body);
  }

 private:
  // -- statements ----------------------------------------------------------------
  Stmt VisitStmt(const Stmt& s) {
    if (const auto* seq = s.as<SeqStmtNode>()) {
      Array<Stmt> out;
      for (const Stmt& x : seq->seq) out.push_back(VisitStmt(x));
      return SeqStmt(out, seq->span);
    }
    if (const auto* st = s.as<BufferStoreNode>()) {
      if (st->predicate.defined()) Fail("a store has a predicate");
      Array<PrimExpr> idx = Access(st->buffer, st->indices, "store to");
      if (!idx.back().dtype().is_vector()) {
        Fail("the store to `" + std::string(st->buffer->name.view()) + "` does not depend on `" +
             std::string(v_->name.view()) + "` (a reduction or a repeated write)");
      }
      PrimExpr value = Value(st->value);
      if (value.dtype().is_scalar()) value = Broadcast(value, lanes_);
      return BufferStore(st->buffer, value, idx, PrimExpr(), st->span);
    }
    if (const auto* let = s.as<LetStmtNode>()) {
      PrimExpr value = Value(let->value);
      if (value.dtype().is_scalar()) {
        return LetStmt(let->var, value, VisitStmt(let->body), let->span);
      }
      Var nv(let->var->name, value.dtype(), let->var->span);
      lets_[let->var.get()] = nv;
      return LetStmt(nv, value, VisitStmt(let->body), let->span);
    }
    if (IsNoOp(s)) return s;
    const char* what = s.as<ForNode>()          ? "a loop"
                       : s.as<IfThenElseNode>() ? "an if"
                       : s.as<AllocateNode>()   ? "an allocation"
                       : s.as<WhileNode>()      ? "a while loop"
                                                : "a call statement";
    Fail(std::string("the body contains ") + what);
  }

  /*! \brief Vectorized indices of an access; checks contiguity and alignment. */
  Array<PrimExpr> Access(const Buffer& buf, const Array<PrimExpr>& indices, const char* what) {
    Array<PrimExpr> idx;
    int vec_dim = -1;
    for (size_t k = 0; k < indices.size(); ++k) {
      PrimExpr e = Vec(indices[k]);
      if (e.dtype().is_vector()) vec_dim = static_cast<int>(k);
      idx.push_back(e);
    }
    if (vec_dim < 0) return idx;
    std::string name(buf->name.view());
    const auto* ramp = idx[vec_dim].as<RampNode>();
    if (vec_dim + 1 != static_cast<int>(indices.size()) || ramp == nullptr ||
        !is_const_int(ramp->stride, 1) ||
        !is_const_int(an_->Simplify(BufferStrides(buf).back()), 1)) {
      Fail(std::string("the ") + what + " `" + name + "` is not contiguous in `" +
           std::string(v_->name.view()) + "` (TC1 vld/vst read 32 consecutive bytes)");
    }
    Array<PrimExpr> first = idx;
    first.Set(vec_dim, ramp->base);
    PrimExpr offset = FlatElementOffset(buf, first);
    if (!is_const_int(an_->Simplify(floormod(offset, IntImm(offset.dtype(), lanes_))), 0)) {
      Fail(std::string("the ") + what + " `" + name + "` at element offset " +
           AsScript(an_->Simplify(offset)) + " is not provably a multiple of " +
           std::to_string(lanes_) + " lanes (vld/vst need 32-byte alignment)");
    }
    return idx;
  }

  /*! \brief A stored value: vectorized, with its width checked. */
  PrimExpr Value(const PrimExpr& e) {
    PrimExpr r = Vec(e);
    CheckWidth(r);
    return r;
  }

  void CheckWidth(const PrimExpr& e) {
    class Walker : public IRVisitor {
     public:
      explicit Walker(int width) : width_(width) {}
      std::string bad;
      void VisitExpr(const PrimExpr& e) override {
        DataType t = e.dtype();
        if (t.is_vector() && !t.is_bool() && t.bits() != width_ && bad.empty()) bad = t.str();
        IRVisitor::VisitExpr(e);
      }
      void VisitExpr_(const BufferLoadNode*) override {
      }  // indices are addresses, not register values
     private:
      int width_;
    } w(width_);
    w.VisitExpr(e);
    if (!w.bad.empty()) {
      Fail("an intermediate value is " + w.bad + ", wider or narrower than the " +
           std::to_string(lanes_) + " lanes of " + std::to_string(width_) +
           " bits in one register");
    }
  }

  // -- expressions --------------------------------------------------------------
  PrimExpr Bcast(const PrimExpr& e) {
    return e.dtype().is_vector() ? e : PrimExpr(Broadcast(e, lanes_));
  }

  PrimExpr Vec(const PrimExpr& e) {
    switch (NodeKindOf(e.get())) {
      case NodeKind::kIntImm:
      case NodeKind::kFloatImm:
      case NodeKind::kStringImm:
        return e;
      case NodeKind::kVar: {
        const auto* var = e.as<VarNode>();
        if (var == v_.get()) return Ramp(base_, IntImm(v_->dtype, 1), lanes_);
        auto it = lets_.find(var);
        return it == lets_.end() ? e : PrimExpr(it->second);
      }
#define TILECORE_VEC_BINARY(Name)         \
  case NodeKind::k##Name: {               \
    const auto* op = e.as<Name##Node>();  \
    return Binary<Name>(e, op->a, op->b); \
  }
        TILECORE_IR_FOR_EACH_BINARY(TILECORE_VEC_BINARY)
#undef TILECORE_VEC_BINARY
      case NodeKind::kNot: {
        PrimExpr a = Vec(e.as<NotNode>()->a);
        return a.same_as(e.as<NotNode>()->a) ? e : PrimExpr(Not(a));
      }
      case NodeKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        PrimExpr c = Vec(op->condition), t = Vec(op->true_value), f = Vec(op->false_value);
        if (!c.dtype().is_vector() && !t.dtype().is_vector() && !f.dtype().is_vector()) {
          return c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)
                     ? e
                     : PrimExpr(Select(c, t, f));
        }
        return Select(Bcast(c), Bcast(t), Bcast(f));
      }
      case NodeKind::kCast: {
        const auto* op = e.as<CastNode>();
        PrimExpr v = Vec(op->value);
        if (v.same_as(op->value)) return e;
        return Cast(op->dtype.with_lanes(v.dtype().lanes()), v);
      }
      case NodeKind::kCall: {
        const auto* op = e.as<CallNode>();
        for (const PrimExpr& a : op->args) {
          if (Vec(a).dtype().is_vector()) {
            Fail("the call `" + std::string(op->op.view()) +
                 "` takes an argument that depends on `" + std::string(v_->name.view()) +
                 "` and has no SIMD form");
          }
        }
        if (CallHasEffect(op))
          Fail("the body calls `" + std::string(op->op.view()) + "`, which has an effect");
        return e;
      }
      case NodeKind::kBufferLoad: {
        const auto* op = e.as<BufferLoadNode>();
        if (op->dtype.is_vector()) Fail("the body already holds vector loads");
        Array<PrimExpr> idx = Access(op->buffer, op->indices, "load from");
        bool same = true;
        for (size_t k = 0; k < idx.size(); ++k) same = same && idx[k].same_as(op->indices[k]);
        return same ? e : PrimExpr(BufferLoad(op->buffer, idx, op->span));
      }
      case NodeKind::kLet:
        Fail("the body holds a let expression");
      case NodeKind::kRamp:
      case NodeKind::kBroadcast:
        Fail("the body already holds vectors");
      case NodeKind::kBufferRegion:
        Fail("the body passes a buffer region");
      default:
        Fail("the body holds an expression of unknown kind");
    }
  }

  template <typename Node>
  PrimExpr Binary(const PrimExpr& e, const PrimExpr& a0, const PrimExpr& b0) {
    PrimExpr a = Vec(a0), b = Vec(b0);
    bool va = a.dtype().is_vector(), vb = b.dtype().is_vector();
    if (!va && !vb) return a.same_as(a0) && b.same_as(b0) ? e : PrimExpr(Node(a, b));
    // Keep affine index arithmetic in Ramp form.
    const auto* ra = a.as<RampNode>();
    const auto* rb = b.as<RampNode>();
    if constexpr (std::is_same_v<Node, Add> || std::is_same_v<Node, Sub>) {
      if (ra && !vb) return Ramp(Node(ra->base, b), ra->stride, lanes_);
      if (rb && !va && std::is_same_v<Node, Add>)
        return Ramp(Node(a, rb->base), rb->stride, lanes_);
      if (ra && rb) return Ramp(Node(ra->base, rb->base), Node(ra->stride, rb->stride), lanes_);
    }
    if constexpr (std::is_same_v<Node, Mul>) {
      if (ra && !vb) return Ramp(Mul(ra->base, b), Mul(ra->stride, b), lanes_);
      if (rb && !va) return Ramp(Mul(a, rb->base), Mul(a, rb->stride), lanes_);
    }
    return Node(Bcast(a), Bcast(b));
  }

  /*! \brief A buffer stored in the loop may be loaded only at the stored index (no loop-carried
   * dependence). */
  void CheckDependences(const Stmt& body) {
    std::unordered_map<const VarNode*, Array<PrimExpr>> stored;
    PostOrderVisit(body, [&](const ObjectRef& n) {
      const auto* st = n.as<BufferStoreNode>();
      if (st == nullptr) return;
      auto it = stored.find(st->buffer->data.get());
      if (it != stored.end() && !ffi::StructuralEqual(it->second, st->indices)) {
        Fail("`" + std::string(st->buffer->name.view()) + "` is stored at two different indices");
      }
      stored.emplace(st->buffer->data.get(), st->indices);
    });
    PostOrderVisit(body, [&](const ObjectRef& n) {
      const auto* ld = n.as<BufferLoadNode>();
      if (ld == nullptr) return;
      auto it = stored.find(ld->buffer->data.get());
      if (it != stored.end() && !ffi::StructuralEqual(it->second, ld->indices)) {
        Fail("`" + std::string(ld->buffer->name.view()) +
             "` is loaded at another index than it is stored (a dependence between iterations)");
      }
    });
  }

  Var v_;
  PrimExpr base_;
  int lanes_;
  int width_;
  Analyzer* an_;
  std::unordered_map<const VarNode*, Var> lets_;
};

class LoopVectorizer : public IRMutator {
 public:
  explicit LoopVectorizer(bool strict) : strict_(strict) {}
  Array<String> report;

  Stmt VisitStmt_(const ForNode* op) override {
    if (op->kind != ForKind::kVectorized) return IRMutator::VisitStmt_(op);
    Stmt body = VisitStmt(op->body);
    std::string where = "loop `" + std::string(op->loop_var->name.view()) + "`" + At(op->span);
    try {
      return Vectorize(op, body, where);
    } catch (const NotVectorizable& e) {
      if (strict_) {
        TILECORE_THROW(ValueError)
            << "VectorizeLoop: " << where << " cannot be vectorized: " << e.reason
            << " (transform.VectorizeLoop.strict is set)";
      }
      report.push_back(where + ": serial fallback: " + e.reason);
      return For(op->loop_var, op->min, op->extent, ForKind::kSerial, body, op->annotations,
                 op->span);
    }
  }

 private:
  Stmt Vectorize(const ForNode* op, const Stmt& body, const std::string& where) {
    auto mn = as_const_int(an_.Simplify(op->min));
    auto ext = as_const_int(an_.Simplify(op->extent));
    if (!mn || !ext) Fail("its bounds are not constant");
    int width = 0;
    PostOrderVisit(body, [&](const ObjectRef& n) {
      const auto* st = n.as<BufferStoreNode>();
      if (st == nullptr) return;
      int w = st->buffer->dtype.bits();
      if (width != 0 && w != width) Fail("it stores elements of different widths");
      width = w;
    });
    if (width == 0) Fail("it stores nothing");
    int lanes = kSimdBits / width;
    if (*ext < lanes)
      Fail("its extent " + std::to_string(*ext) + " is less than the " + std::to_string(lanes) +
           " lanes");
    int64_t outer = *ext / lanes, tail = *ext % lanes;
    DataType t = op->loop_var->dtype;
    Var vo(std::string(op->loop_var->name.view()) + "_o", t, op->loop_var->span);
    PrimExpr base = an_.Simplify(vo * IntImm(t, lanes) + IntImm(t, *mn));
    an_.Bind(vo, 0, outer);
    Stmt vec;
    try {
      vec = BodyVectorizer(op->loop_var, base, lanes, width, &an_).Run(body);
    } catch (...) {
      an_.Unbind(vo);
      throw;
    }
    an_.Unbind(vo);
    Stmt main =
        For(vo, IntImm(t, 0), IntImm(t, outer), ForKind::kSerial, vec, op->annotations, op->span);
    report.push_back(where + ": vectorized, " + std::to_string(lanes) + " lanes x " +
                     std::to_string(outer) +
                     (tail ? ", serial tail of " + std::to_string(tail) : std::string()));
    if (tail == 0) return main;
    Stmt rest = For(op->loop_var, IntImm(t, *mn + outer * lanes), IntImm(t, tail), ForKind::kSerial,
                    body, op->annotations, op->span);
    return SeqStmt({main, rest});
  }

  bool strict_;
  Analyzer an_;
};

}  // namespace

Pass VectorizeLoop() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext ctx) {
        LoopVectorizer v(ctx.GetConfig<bool>("transform.VectorizeLoop.strict", false));
        Stmt body = v.VisitStmt(f->body);
        if (body.same_as(f->body)) return f;
        return v.report.empty() ? f.WithBody(body)
                                : f.WithBody(body).WithAttr("vectorize_report", v.report);
      },
      0, "VectorizeLoop");
}

TILECORE_REGISTER_GLOBAL("transform.VectorizeLoop").set_body_typed([]() {
  return VectorizeLoop();
});

}  // namespace transform
}  // namespace tilecore
