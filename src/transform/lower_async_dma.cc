/*
 * src/transform/lower_async_dma.cc — the LowerAsyncDMA pass (lower_async_dma.h).
 */
#include "tilecore/transform/lower_async_dma.h"

#include <vector>

#include "tilecore/ir/functor.h"
#include "tilecore/ir/identity_table.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

// Whether an async DMA call is anywhere in a statement: the walk stops at the first.
class AsyncDmaFinder : public IRVisitor {
 public:
  bool found = false;
  void VisitStmt(const Stmt& s) override {
    if (!found) IRVisitor::VisitStmt(s);
  }
  void VisitExpr(const PrimExpr& e) override {
    if (!found) IRVisitor::VisitExpr(e);
  }
  void VisitExpr_(const CallNode* c) override {
    if (IsAsyncDma(c->op.view()))
      found = true;
    else
      IRVisitor::VisitExpr_(c);
  }
};

bool UsesAsyncDma(const Stmt& s) {
  AsyncDmaFinder finder;
  finder.VisitStmt(s);
  return finder.found;
}

// The cores loops of a statement, each once (statements only: no loop is inside an
// expression).
class CoresLoops : public IRVisitor {
 public:
  std::vector<const ForNode*> loops;
  void VisitExpr(const PrimExpr&) override {}
  void VisitStmt_(const ForNode* op) override {
    if (op->kind == ForKind::kCores && seen_.emplace(GetRef<Stmt>(op), {})) loops.push_back(op);
    IRVisitor::VisitStmt_(op);
  }

 private:
  IdentityTable<NoValue> seen_;
};

class Lowerer : public IRMutator {
 public:
  Stmt Run(const Stmt& body) {
    bool has_cores = false;
    int dma_loops = 0;
    PrimExpr cores = IntImm(DataType::Int(32), 1);
    CoresLoops found;
    found.VisitStmt(body);
    for (const ForNode* f : found.loops) {
      has_cores = true;
      if (UsesAsyncDma(f->body)) ++dma_loops;
      if (auto e = as_const_int(f->extent); e && *e > *as_const_int(cores))
        cores = IntImm(DataType::Int(32), *e);
    }
    if (!has_cores) return WithState(body);
    // One state for the kernel when several cores loops use DMA events (a layer group):
    // the engines' completion counters run on from one loop to the next, and so must the
    // counts the waits compare them with.
    if (dma_loops > 1) {
      // a cores loop of its own zeroes every core's counts first (outside the cores loops
      // only core 0 runs effects)
      return WithState(body, Var("c_init"), cores);
    }
    return VisitStmt(body);
  }

  Stmt VisitStmt_(const ForNode* op) override {
    if (op->kind == ForKind::kCores && !state_.defined() && UsesAsyncDma(op->body)) {
      return For(op->loop_var, op->min, op->extent, op->kind, WithState(op->body), op->annotations,
                 op->span);
    }
    return IRMutator::VisitStmt_(op);
  }

  Stmt VisitStmt_(const EvaluateNode* op) override {
    const auto* c = op->value.as<CallNode>();
    if (c == nullptr || !IsAsyncDma(c->op.view())) return IRMutator::VisitStmt_(op);
    if (!state_.defined()) {
      TILECORE_THROW(ValueError) << "LowerAsyncDMA: `" << c->op.view()
                                 << "` outside the cores loop of a kernel that has one"
                                 << At(op->span);
    }
    PrimExpr event = c->args.back();
    if (auto ce = as_const_int(event); ce && (*ce < 0 || *ce >= kNumDmaEvents)) {
      TILECORE_THROW(ValueError) << "LowerAsyncDMA: `" << c->op.view() << "` uses event " << *ce
                                 << "; events are 0.." << kNumDmaEvents - 1 << At(op->span);
    }
    PrimExpr slot = event * 2;
    Span sp = op->span;
    if (c->op == "tile.wait") {
      return SeqStmt(
          {Evaluate(call("tc1.wait", {StringImm("sc"), StringImm("din"), Load(slot)}), sp),
           Evaluate(call("tc1.wait", {StringImm("sc"), StringImm("dout"), Load(slot + 1)}), sp)});
    }
    const auto* dst = c->args[0].as<BufferRegionNode>();
    bool out_engine = false;
    std::string op_name;
    if (c->op == "tile.dma_fill") {
      op_name = "tc1.dma_fill_in";
    } else if (c->op == "tile.dma_prefetch") {
      out_engine = true;
      op_name = "tc1.dma_out";
    } else if (c->op == "tile.dma_copy_in") {
      op_name = "tc1.dma_in";
    } else {
      const auto* src = c->args[1].as<BufferRegionNode>();
      out_engine = dst->buffer->scope.view() != "local" && src->buffer->scope.view() == "local";
      op_name = out_engine ? "tc1.dma_out" : "tc1.dma_in";
    }
    int counter = out_engine ? 1 : 0;
    Array<PrimExpr> args{c->args[0], c->args[1]};
    // the engine's count of issued commands (a register the codegen increments with each
    // DMA) as of this copy, for the waits on its event
    PrimExpr issued = call("tc1.dma_issued", {IntImm(DataType::Int(32), counter)}, c->span);
    return SeqStmt({Evaluate(call(op_name, args, c->span), sp),
                    BufferStore(state_, issued, {slot + counter}, PrimExpr(), sp)},
                   sp);
  }

 private:
  PrimExpr Load(PrimExpr index) { return BufferLoad(state_, {std::move(index)}); }

  // (one store per word: a loop keeps its counter in L1 and costs about ten cycles a word,
  // some 300 cycles at every kernel's start)
  Stmt Init() {
    Array<Stmt> zero;
    for (int k = 0; k < 2 * kNumDmaEvents; ++k)
      zero.push_back(
          BufferStore(state_, IntImm(DataType::Int(32), 0), {IntImm(DataType::Int(32), k)}));
    return SeqStmt(zero);
  }

  // `init_var` defined: the counts are zeroed in a cores loop over `cores` cores
  Stmt WithState(const Stmt& body, Var init_var = Var(), PrimExpr cores = PrimExpr()) {
    Buffer saved = state_;
    state_ = DeclBuffer({IntImm(DataType::Int(32), 2 * kNumDmaEvents)}, DataType::Int(32),
                        "dma_state", "local");
    Stmt init = Init();
    if (init_var.defined())
      init = For(init_var, IntImm(DataType::Int(32), 0), cores, ForKind::kCores, init);
    Stmt lowered = VisitStmt(body);
    Stmt out = Allocate(state_, SeqStmt({init, lowered}));
    state_ = saved;
    return out;
  }

  Buffer state_;
};

}  // namespace

Pass LowerAsyncDMA() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext) {
        if (!UsesAsyncDma(f->body)) return f;
        return f.WithBody(Lowerer().Run(f->body));
      },
      0, "LowerAsyncDMA");
}

TILECORE_REGISTER_GLOBAL("transform.LowerAsyncDMA").set_body_typed([]() {
  return LowerAsyncDMA();
});

}  // namespace transform
}  // namespace tilecore
