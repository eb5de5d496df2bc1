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
    ++fills[DmaCall(l)->args[0].as<BufferRegionNode>()->buffer->data.get()];
  int64_t busy[2] = {0, 0};
  for (Stmt& l : *loads) {
    const CallNode* c = DmaCall(l);
    const auto [in_cycles, out_cycles] = EngineCycles(l);
    const int64_t cycles = in_cycles + out_cycles;
    const bool movable = c->op == "tile.dma_copy" &&
                         fills[c->args[0].as<BufferRegionNode>()->buffer->data.get()] == 1;
    int engine = c->op == "tile.dma_prefetch" ? 1 : 0;
    if (movable) engine = busy[1] < busy[0] ? 1 : 0;
    busy[engine] += cycles;
    if (movable && engine == 1)
      l = Evaluate(Call(c->dtype, "tile.dma_prefetch", c->args, c->span), l->span);
  }
}

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
  int64_t big = 0, small = 0;
  PostOrderVisitStmts(member, [&](const Stmt& n) {
    const auto* a = n.as<AllocateNode>();
    if (!a || a->buffer->scope != "local") return;
    const int64_t b = ShapeBytes(a->buffer, kBank);
    if (b <= kSmall)
      small += (b + 63) / 64 * 64;
    else
      big += (b + kBank - 1) / kBank * kBank;
  });
  return big + (small + kBank - 1) / kBank * kBank;
}

FirstLoads TakeFirstLoads(Stmt* member, const std::unordered_set<const VarNode*>& read_only,
                          bool keep_order, const std::function<bool(const Buffer&)>& settled) {
  FirstLoads out;
  auto taken = MapEndLoop(*member, true, [&](const ForNode* f) -> std::optional<Stmt> {
    auto mn = as_const_int(f->min), ext = as_const_int(f->extent);
    if (!mn || !ext) return std::nullopt;
    // through the loop's local allocations: the buffers the loads may fill
    std::unordered_set<const VarNode*> own;
    std::vector<const AllocateNode*> allocs;
    Stmt body = Peel(f->body, &allocs);
    for (const AllocateNode* a : allocs)
      if (a->buffer->scope == "local") own.insert(a->buffer->data.get());
    std::vector<Stmt> items;
    Flatten(body, &items);
    std::vector<Stmt> kept, loads;
    std::unordered_set<const VarNode*> filled;  // by the loads that stay
    bool engine_kept[2] = {false, false};       // an engine has a load that stays
    size_t k = 0;
    for (; k < items.size(); ++k) {
      const CallNode* c = DmaCall(items[k]);
      if (!c) break;
      const auto* dst = c->args[0].as<BufferRegionNode>();
      const auto* src = c->args[1].as<BufferRegionNode>();
      const VarNode* d = dst->buffer->data.get();
      if (dst->buffer->scope != "local" || !own.count(d)) break;
      // (a load ahead of one that stays on its engine would delay it: each engine's loads
      // keep their order)
      const int engine = c->op == "tile.dma_prefetch" ? 1 : 0;
      const bool fixed =
          read_only.count(src->buffer->data.get()) || (settled && settled(src->buffer));
      if (fixed && !filled.count(d) && !(keep_order && engine_kept[engine]) &&
          OnlyCore(c, f->loop_var)) {
        loads.push_back(items[k]);
      } else {
        filled.insert(d);
        engine_kept[engine] = true;
        kept.push_back(items[k]);
      }
    }
    if (loads.empty()) return std::nullopt;
    for (; k < items.size(); ++k) kept.push_back(items[k]);
    Stmt rest = Wrap(Seq(kept), allocs);
    out.core = f->loop_var;
    out.min = *mn;
    out.extent = *ext;
    out.loads = std::move(loads);
    for (const Stmt& l : out.loads) {
      const Buffer& b = DmaCall(l)->args[0].as<BufferRegionNode>()->buffer;
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
