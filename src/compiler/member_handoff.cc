/*
 * src/compiler/member_handoff.cc — TakeFirstLoads, CanHandOff, HandOff (member_handoff.h).
 */
#include "tilecore/compiler/member_handoff.h"

#include <functional>
#include <optional>
#include <unordered_map>

#include "kernel_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/weight_prefetch.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"

namespace tilecore {
namespace compiler {

using namespace ir;                // NOLINT
using namespace compiler::detail;  // NOLINT

namespace {

/*! \brief `s` with its first (or last) statement's cores loop replaced by `fn(loop)`,
 * through allocations and sequences; nullopt when that statement is not a cores loop. */
std::optional<Stmt> MapEndLoop(const Stmt& s, bool first,
                               const std::function<std::optional<Stmt>(const ForNode*)>& fn) {
  if (const auto* a = s.as<AllocateNode>()) {
    auto body = MapEndLoop(a->body, first, fn);
    if (!body) return std::nullopt;
    return Allocate(a->buffer, *body, a->span);
  }
  if (const auto* q = s.as<SeqStmtNode>()) {
    if (q->seq.empty()) return std::nullopt;
    Array<Stmt> seq = q->seq;
    const size_t k = first ? 0 : seq.size() - 1;
    auto x = MapEndLoop(seq[k], first, fn);
    if (!x) return std::nullopt;
    seq.Set(k, *x);
    return SeqStmt(seq, q->span);
  }
  const auto* f = s.as<ForNode>();
  if (!f || f->kind != ForKind::kCores) return std::nullopt;
  return fn(f);
}

/*! \brief `s`'s statements in order, nested sequences flattened. */
void Flatten(const Stmt& s, std::vector<Stmt>* out) {
  if (const auto* q = s.as<SeqStmtNode>()) {
    for (const Stmt& x : q->seq) Flatten(x, out);
    return;
  }
  out->push_back(s);
}

/*! \brief The DMA `s` issues (tile.dma_copy, _prefetch, _copy_in), or null. */
const CallNode* DmaCall(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  const auto* c = e ? e->value.as<CallNode>() : nullptr;
  if (!c || !IsDmaTransfer(c->op.view())) return nullptr;
  if (c->args.size() != 3 || !c->args[0].as<BufferRegionNode>() ||
      !c->args[1].as<BufferRegionNode>() || !as_const_int(c->args[2]))
    return nullptr;
  return c;
}

/*! \brief Whether `cond` is `core == k` for a constant k, a strategy's single item run by one
 * core (its loads hold up that core alone while the others wait at the barrier), or, with
 * `item_a_core`, `core < k`, an item each on the first k cores. Taken in their guard, the
 * first loads are issued by the cores that would have issued them. An item a core is taken
 * for an early handoff only (spread over the member before's work): handed late, after that
 * member drained, its loads gained the receiver less than they cost the giver. */
bool IsCoreGuard(const PrimExpr& cond, const Var& core, bool item_a_core) {
  if (const auto* eq = cond.as<EQNode>()) return eq->a.get() == core.get() && as_const_int(eq->b);
  const auto* lt = cond.as<LTNode>();
  return item_a_core && lt && lt->a.get() == core.get() && as_const_int(lt->b);
}

/*! \brief Whether the regions of `c` use no variable but `core`. */
bool OnlyCore(const CallNode* c, const Var& core) {
  bool ok = true;
  for (int k = 0; k < 2; ++k) {
    const auto* r = c->args[k].as<BufferRegionNode>();
    auto check = [&](const PrimExpr& e) {
      PostOrderVisit(e, [&](const ObjectRef& n) {
        if (const auto* v = n.as<VarNode>(); v && v != core.get()) ok = false;
      });
    };
    for (const PrimExpr& e : r->begin) check(e);
    for (const PrimExpr& e : r->extents) check(e);
  }
  return ok;
}

/*! \brief What `s` allocates around its first statement that is no allocation (`allocs`,
 * outermost first), and that statement. */
Stmt Peel(const Stmt& s, std::vector<const AllocateNode*>* allocs) {
  Stmt inner = s;
  while (const auto* a = inner.as<AllocateNode>()) {
    allocs->push_back(a);
    inner = a->body;
  }
  return inner;
}

/*! \brief `body` inside the allocations Peel took off. */
Stmt Wrap(Stmt body, const std::vector<const AllocateNode*>& allocs) {
  for (size_t i = allocs.size(); i-- > 0;)
    body = Allocate(allocs[i]->buffer, body, allocs[i]->span);
  return body;
}

/*! \brief The statements at the top of a cores loop's `body` (`allocs` its allocations
 * around them, `items` them) and the index after the last that reads one of `inputs`. */
size_t AfterInputs(const Stmt& body, const std::unordered_set<const VarNode*>& inputs,
                   std::vector<const AllocateNode*>* allocs, std::vector<Stmt>* items) {
  Flatten(Peel(body, allocs), items);
  size_t at = 0;
  for (size_t k = 0; k < items->size(); ++k) {
    bool reads = false;
    PostOrderVisitStmts((*items)[k], [&](const Stmt& n) {  // (a DMA transfer: a void call)
      const auto* ev = n.as<EvaluateNode>();
      const auto* c = ev ? ev->value.as<CallNode>() : nullptr;
      if (!c || c->args.size() < 2) return;
      if (!IsDmaTransfer(c->op.view())) return;
      if (const auto* r = c->args[1].as<BufferRegionNode>())
        reads = reads || inputs.count(r->buffer->data.get()) > 0;
    });
    if (reads) at = k + 1;
  }
  return at;
}

/*! \brief Handed-late loads spread over both DMA engines: at the end of the member before
 * both are idle, and each load holds its engine for the source's latency as well as its
 * beats, so two short loads on one engine take twice the latency of one on each. Each load
 * goes to the engine that is free first (a DMA-in copy becomes tile.dma_prefetch on the
 * DMA-out engine); one into a buffer another load also fills keeps its engine and order. */
void SpreadOverEngines(std::vector<Stmt>* loads) {
  std::unordered_map<const VarNode*, int> fills;
  for (const Stmt& l : *loads)
    ++fills[DmaCall(Unguarded(l))->args[0].as<BufferRegionNode>()->buffer->data.get()];
  int64_t busy[2] = {0, 0};
  for (Stmt& l : *loads) {
    const CallNode* c = DmaCall(Unguarded(l));
    const auto [in_cycles, out_cycles] = EngineCycles(l);
    const int64_t cycles = in_cycles + out_cycles;
    const bool movable = c->op == "tile.dma_copy" &&
                         fills[c->args[0].as<BufferRegionNode>()->buffer->data.get()] == 1;
    int engine = c->op == "tile.dma_prefetch" ? 1 : 0;
    if (movable) engine = busy[1] < busy[0] ? 1 : 0;
    busy[engine] += cycles;
    if (movable && engine == 1)
      l = InGuardOf(l, Evaluate(Call(c->dtype, "tile.dma_prefetch", c->args, c->span), l->span));
  }
}

/*! \brief The first loads of a cores loop's body (TakeFirstLoads): its statements in order,
 * through local allocations (the buffers the loads may fill), until one that is neither such
 * a load nor what may stay behind the loads taken:
 *  - a load that reads a mutable source, or whose engine or buffer is taken by one that stays;
 *  - a store of a constant into a local buffer at a constant index (a lookup table filled
 *    at the member's start; its buffer is then no load's);
 *  - an `if core == k` without else around a single item's work (for an early handoff also
 *    an `if core < k` around an item a core), whose loads are taken in that guard, and in it
 *    a wait: nothing of the member's is in flight before its first loads, so a wait there
 *    holds none of them. */
class LoadScan {
 public:
  LoadScan(const Var& core, const std::unordered_set<const VarNode*>& read_only, bool keep_order,
           const std::function<bool(const Buffer&)>& settled)
      : core_(core), read_only_(read_only), keep_order_(keep_order), settled_(settled) {}

  std::vector<Stmt> loads;  // taken, each in its core guard when it had one

  /*! \brief Scans `s` under `guard` (undefined: none); false once it stopped. */
  bool Visit(const Stmt& s, const PrimExpr& guard) {
    if (const auto* q = s.as<SeqStmtNode>()) {
      path_.insert(q);
      for (const Stmt& x : q->seq)
        if (!Visit(x, guard)) return false;
      return true;
    }
    if (const auto* a = s.as<AllocateNode>()) {
      path_.insert(a);
      if (a->buffer->scope == "local") own_.insert(a->buffer->data.get());
      return Visit(a->body, guard);
    }
    if (const auto* g = s.as<IfThenElseNode>()) {
      if (guard.defined() || g->else_case.defined() ||
          !IsCoreGuard(g->condition, core_, !keep_order_))
        return false;
      path_.insert(g);
      return Visit(g->then_case, g->condition);
    }
    if (const auto* st = s.as<BufferStoreNode>()) {
      const VarNode* d = st->buffer->data.get();
      bool constant = as_const_int(st->value) || st->value.as<FloatImmNode>();
      for (const PrimExpr& i : st->indices) constant = constant && as_const_int(i);
      if (!constant || st->buffer->scope != "local" || !own_.count(d)) return false;
      filled_.insert(d);
      return true;
    }
    if (const auto* e = s.as<EvaluateNode>()) {
      const auto* c = e->value.as<CallNode>();
      if (guard.defined() && c && c->op == "tile.wait") return true;
    }
    const CallNode* c = DmaCall(s);
    if (!c) return false;
    const auto* dst = c->args[0].as<BufferRegionNode>();
    const auto* src = c->args[1].as<BufferRegionNode>();
    const VarNode* d = dst->buffer->data.get();
    if (dst->buffer->scope != "local" || !own_.count(d)) return false;
    // (a load ahead of one that stays on its engine would delay it: each engine's loads
    // keep their order)
    const int engine = c->op == "tile.dma_prefetch" ? 1 : 0;
    const bool fixed =
        read_only_.count(src->buffer->data.get()) || (settled_ && settled_(src->buffer));
    if (fixed && !filled_.count(d) && !(keep_order_ && engine_kept_[engine]) &&
        OnlyCore(c, core_)) {
      loads.push_back(guard.defined() ? IfThenElse(guard, s) : s);
      taken_.insert(s.get());
    } else {
      filled_.insert(d);
      engine_kept_[engine] = true;
    }
    return true;
  }

  /*! \brief `s` without the loads taken (only the statements the scan went through change). */
  Stmt Without(const Stmt& s) const {
    if (!path_.count(s.get())) return s;
    if (const auto* q = s.as<SeqStmtNode>()) {
      std::vector<Stmt> seq;
      for (const Stmt& x : q->seq)
        if (!taken_.count(x.get())) seq.push_back(Without(x));
      return Seq(seq);
    }
    if (const auto* a = s.as<AllocateNode>()) return Allocate(a->buffer, Without(a->body), a->span);
    const auto* g = s.as<IfThenElseNode>();
    return IfThenElse(g->condition, Without(g->then_case), Stmt(), g->span);
  }

 private:
  Var core_;
  const std::unordered_set<const VarNode*>& read_only_;
  bool keep_order_;
  const std::function<bool(const Buffer&)>& settled_;
  std::unordered_set<const VarNode*> own_;
  std::unordered_set<const VarNode*> filled_;  // by the loads that stay, or a table's stores
  bool engine_kept_[2] = {false, false};       // an engine has a load that stays
  std::unordered_set<const Object*> path_;     // the containers the scan went into
  std::unordered_set<const Object*> taken_;
};

}  // namespace

bool ReadsInputs(const Stmt& member, const std::unordered_set<const VarNode*>& inputs) {
  bool reads = true;
  MapEndLoop(member, false, [&](const ForNode* f) -> std::optional<Stmt> {
    std::vector<const AllocateNode*> allocs;
    std::vector<Stmt> items;
    reads = AfterInputs(f->body, inputs, &allocs, &items) > 0;
    return std::nullopt;
  });
  return reads;
}

int64_t LocalBound(const Stmt& member) {
  constexpr int64_t kBank = int64_t(arch::tc1::kL1BankBytes), kSmall = 4 << 10;
  // (PlanLocalMemory stacks the buffers of nested allocations, the small ones apart: the
  // statements of a sequence reuse the same L1, so they count their largest, not their sum)
  struct Stack {
    int64_t big = 0, small = 0;
  };
  std::function<Stack(const Stmt&)> peak = [&](const Stmt& s) -> Stack {
    if (const auto* a = s.as<AllocateNode>()) {
      Stack in = peak(a->body);
      if (a->buffer->scope != "local") return in;
      const int64_t b = ShapeBytes(a->buffer, kBank);
      if (b <= kSmall)
        in.small += (b + 63) / 64 * 64;
      else
        in.big += (b + kBank - 1) / kBank * kBank;
      return in;
    }
    if (const auto* q = s.as<SeqStmtNode>()) {
      Stack most;
      for (const Stmt& x : q->seq) {
        const Stack k = peak(x);
        most.big = std::max(most.big, k.big);
        most.small = std::max(most.small, k.small);
      }
      return most;
    }
    if (const auto* f = s.as<ForNode>()) return peak(f->body);
    if (const auto* l = s.as<LetStmtNode>()) return peak(l->body);
    if (const auto* w = s.as<WhileNode>()) return peak(w->body);
    if (const auto* i = s.as<IfThenElseNode>()) {
      const Stack t = peak(i->then_case);
      const Stack e = i->else_case.defined() ? peak(i->else_case) : Stack();
      return {std::max(t.big, e.big), std::max(t.small, e.small)};
    }
    return {};
  };
  const Stack k = peak(member);
  return k.big + (k.small + kBank - 1) / kBank * kBank;
}

FirstLoads TakeFirstLoads(Stmt* member, const std::unordered_set<const VarNode*>& read_only,
                          bool keep_order, const std::function<bool(const Buffer&)>& settled) {
  FirstLoads out;
  auto taken = MapEndLoop(*member, true, [&](const ForNode* f) -> std::optional<Stmt> {
    auto mn = as_const_int(f->min), ext = as_const_int(f->extent);
    if (!mn || !ext) return std::nullopt;
    LoadScan scan(f->loop_var, read_only, keep_order, settled);
    scan.Visit(f->body, PrimExpr());
    if (scan.loads.empty()) return std::nullopt;
    Stmt rest = scan.Without(f->body);
    out.core = f->loop_var;
    out.min = *mn;
    out.extent = *ext;
    out.loads = std::move(scan.loads);
    for (const Stmt& l : out.loads) {
      const Buffer& b = DmaCall(Unguarded(l))->args[0].as<BufferRegionNode>()->buffer;
      bool seen = false;
      for (const Buffer& x : out.buffers) seen = seen || x.same_as(b);
      if (!seen) out.buffers.push_back(b);
    }
    return For(f->loop_var, f->min, f->extent, f->kind, rest, f->annotations, f->span);
  });
  if (taken) *member = *taken;
  return out;
}

Stmt WaitHanded(const Stmt& member, const FirstLoads& first) {
  auto out = MapEndLoop(member, true, [&](const ForNode* f) -> std::optional<Stmt> {
    std::vector<const AllocateNode*> allocs;
    Stmt inner = Peel(f->body, &allocs);
    Stmt body = Wrap(Seq({Intrin("tile.wait", {I32(first.event)}), inner}), allocs);
    return For(f->loop_var, f->min, f->extent, f->kind, body, f->annotations, f->span);
  });
  return out ? *out : member;
}

bool CanHandOff(const Stmt& member, const FirstLoads& first) {
  if (first.loads.empty()) return false;
  return MapEndLoop(member, false,
                    [&](const ForNode* f) -> std::optional<Stmt> {
                      auto mn = as_const_int(f->min), ext = as_const_int(f->extent);
                      if (!mn || !ext || *mn != first.min || *ext != first.extent)
                        return std::nullopt;
                      return GetRef<Stmt>(f);
                    })
      .has_value();
}

Stmt HandOff(const Stmt& member, FirstLoads* first,
             const std::unordered_set<const VarNode*>* early) {
  auto out = MapEndLoop(member, false, [&](const ForNode* f) -> std::optional<Stmt> {
    Map<Var, PrimExpr> to;
    to.Set(first->core, f->loop_var);
    std::vector<Stmt> loads;
    for (const Stmt& s : first->loads) loads.push_back(Substitute(s, to));
    if (!early) {  // after the member's own work
      SpreadOverEngines(&loads);
      std::vector<Stmt> body{f->body, Intrin("tir.drain", {})};
      body.insert(body.end(), loads.begin(), loads.end());
      Map<String, Any> ann = f->annotations;
      ann.Set(kCoresHandoffAnnotation, Any(int64_t{1}));
      return For(f->loop_var, f->min, f->extent, f->kind, Seq(body), ann, f->span);
    }
    // early: after the last statement at the top of the body that reads the DDR's inputs
    std::vector<const AllocateNode*> allocs;
    std::vector<Stmt> items;
    const size_t at = AfterInputs(f->body, *early, &allocs, &items);
    std::vector<Stmt> before(items.begin(), items.begin() + int64_t(at));
    std::vector<Stmt> after(items.begin() + int64_t(at), items.end());
    const int64_t cores = as_const_int(f->extent).value_or(1);
    before.push_back(
        InterleaveLoads(Seq(after), loads, f->body, f->loop_var, cores, &first->event));
    before.push_back(Intrin("tir.drain", {}));
    Stmt body = Wrap(Seq(before), allocs);
    Map<String, Any> ann = f->annotations;
    ann.Set(kCoresHandoffAnnotation, Any(int64_t{1}));
    return For(f->loop_var, f->min, f->extent, f->kind, body, ann, f->span);
  });
  if (!out) TILECORE_THROW(ValueError) << "HandOff: the member does not end with a cores loop";
  return *out;
}

}  // namespace compiler
}  // namespace tilecore
