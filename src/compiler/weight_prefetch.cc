/*
 * src/compiler/weight_prefetch.cc — InterleavePrefetch (weight_prefetch.h).
 */
#include "tilecore/compiler/weight_prefetch.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_util.h"
#include "tilecore/arch/params.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/lower_async_dma.h"

namespace tilecore {
namespace compiler {

using namespace ir;                // NOLINT
using namespace compiler::detail;  // NOLINT

namespace {

// A piece is at least this (smaller ones pay the DMA's latency for little) and at most
// this (a store queued behind one waits no longer than about one tile's compute).
constexpr int64_t kMinPiece = 4096;
constexpr int64_t kMaxPiece = 32768;
// handed loads from L2 start after this many of the member's slots (InterleaveLoads)
constexpr int64_t kL2LoadsFrom = 2;

bool IsCall(const Stmt& s, const char* op) {
  const auto* e = s.as<EvaluateNode>();
  const auto* c = e ? e->value.as<CallNode>() : nullptr;
  return c && c->op == op;
}

/*! \brief Loops of at most this many trips are counted trip by trip by SlotCounter (their
 * variable known in the conditions inside: an item loop's guard of the last, short round). */
constexpr int64_t kSlotsTripByTrip = 16;

/*! \brief How many `slot` commands core `c` runs in a statement: `core` is `c` (and, `by_round`,
 * the variable of each enclosing loop of at most kSlotsTripByTrip trips its trip) in trip
 * counts and conditions (a core's share of the items, the core with an item of its own, the
 * last round of items that only some cores have), other constant trip counts multiplied, a
 * loop of unknown count taken once, the larger branch of an if neither provably taken.
 * A statement without `slot` commands is not walked, and a short loop whose variable no trip
 * count or condition inside reads is counted once and multiplied: every trip counts the same
 * (a group's members are walked once per core and slot kind; ConvNeXt-T's 123, trip by trip
 * through their 7 x 7 taps, were most of its GroupKernels' time). */
class SlotCounter {
 public:
  SlotCounter(const char* slot, bool by_round) : slot_(slot), by_round_(by_round) {}

  int64_t Run(const Stmt& s, const Var& core, int64_t c) {
    known_ = {{core.get(), c}};
    return Count(s);
  }

 private:
  int64_t Count(const Stmt& s) {
    if (!s.defined() || !HasSlot(s)) return 0;
    if (IsCall(s, slot_)) return 1;
    if (const auto* f = s.as<ForNode>()) {
      auto e = as_const_int(At(f->extent));
      auto m = as_const_int(At(f->min));
      if (by_round_ && e && m && *e <= kSlotsTripByTrip && ReadInControl(f)) {
        int64_t n = 0;
        for (int64_t t = 0; t < *e; ++t) {
          known_.emplace_back(f->loop_var.get(), *m + t);
          n += Count(f->body);
          known_.pop_back();
        }
        return n;
      }
      return (e ? std::max<int64_t>(*e, 0) : 1) * Count(f->body);
    }
    if (const auto* q = s.as<SeqStmtNode>()) {
      int64_t n = 0;
      for (const Stmt& x : q->seq) n += Count(x);
      return n;
    }
    if (const auto* i = s.as<IfThenElseNode>()) {
      const PrimExpr cond = At(i->condition);
      if (auto k = as_const_int(cond)) return Count(*k ? i->then_case : i->else_case);
      return std::max(Count(i->then_case), Count(i->else_case));
    }
    if (const auto* a = s.as<AllocateNode>()) return Count(a->body);
    if (const auto* w = s.as<WhileNode>()) return Count(w->body);
    return 0;
  }

  PrimExpr At(const PrimExpr& e) {
    if (as_const_int(e)) return e;  // (most trip counts: nothing to substitute)
    return an_.Simplify(Substitute(e, [&](const VarNode* v) -> std::optional<PrimExpr> {
      for (const auto& [var, value] : known_)
        if (v == var) return PrimExpr(I32(value));
      return std::nullopt;
    }));
  }

  /*! \brief Whether `s` holds a `slot` command where Count looks. */
  bool HasSlot(const Stmt& s) {
    if (!s.defined()) return false;
    auto it = has_slot_.find(s.get());
    if (it != has_slot_.end()) return it->second;
    bool has = IsCall(s, slot_);
    if (const auto* f = s.as<ForNode>()) has = HasSlot(f->body);
    if (const auto* q = s.as<SeqStmtNode>())
      for (const Stmt& x : q->seq) has = has || HasSlot(x);
    if (const auto* i = s.as<IfThenElseNode>())
      has = HasSlot(i->then_case) || HasSlot(i->else_case);
    if (const auto* a = s.as<AllocateNode>()) has = HasSlot(a->body);
    if (const auto* w = s.as<WhileNode>()) has = HasSlot(w->body);
    has_slot_.emplace(s.get(), has);
    return has;
  }

  /*! \brief Whether a trip count, loop start or condition Count reads inside `f` reads its
   * variable. */
  bool ReadInControl(const ForNode* f) {
    auto it = read_in_control_.find(f);
    if (it != read_in_control_.end()) return it->second;
    const VarNode* var = f->loop_var.get();
    auto reads = [&](const PrimExpr& e) {
      return UsesVar(e, [&](const VarNode* v) { return v == var; });
    };
    std::function<bool(const Stmt&)> walk = [&](const Stmt& s) -> bool {
      if (!s.defined()) return false;
      if (const auto* g = s.as<ForNode>())
        return reads(g->extent) || reads(g->min) || walk(g->body);
      if (const auto* q = s.as<SeqStmtNode>()) {
        for (const Stmt& x : q->seq)
          if (walk(x)) return true;
        return false;
      }
      if (const auto* i = s.as<IfThenElseNode>())
        return reads(i->condition) || walk(i->then_case) || walk(i->else_case);
      if (const auto* a = s.as<AllocateNode>()) return walk(a->body);
      if (const auto* w = s.as<WhileNode>()) return walk(w->body);
      return false;
    };
    const bool read = walk(f->body);
    read_in_control_.emplace(f, read);
    return read;
  }

  const char* slot_;
  bool by_round_;
  std::vector<std::pair<const VarNode*, int64_t>> known_;
  transform::Analyzer an_;
  std::unordered_map<const Object*, bool> has_slot_;
  std::unordered_map<const ForNode*, bool> read_in_control_;
};

/*! \brief The fewest `slot` commands a core of `cores` that runs any runs in `s` (SlotCounter;
 * 0 when none does): spread over more, a core with fewer items would leave its share to
 * after its work. (A core without items issues its pieces at once: it has no work to wait.) */
int64_t FewestSlotsRun(const Stmt& s, const char* slot, const Var& core, int64_t cores,
                       bool by_round) {
  SlotCounter counter(slot, by_round);
  int64_t fewest = 0;
  for (int64_t c = 0; c < std::max<int64_t>(cores, 1); ++c) {
    const int64_t n = counter.Run(s, core, c);
    if (n > 0) fewest = fewest == 0 ? n : std::min(fewest, n);
  }
  return fewest;
}

/*! \brief The commands pieces or loads go after in `s` and how many (FewestSlotsRun): the
 * matrix commands, or the copies of a member without any. (`by_round`: a prefetch's pieces,
 * which a round counted for a core that does not run it leaves to after the work. The
 * handed loads keep the larger count: spread over fewer rounds, ViT int8 was 1% slower.) */
std::pair<const char*, int64_t> Slots(const Stmt& s, const Var& core, int64_t cores,
                                      bool by_round) {
  if (int64_t n = FewestSlotsRun(s, "tile.mm", core, cores, by_round); n > 0) return {"tile.mm", n};
  return {"tile.dma_copy", FewestSlotsRun(s, "tile.dma_copy", core, cores, by_round)};
}

using EnginePair = std::pair<int64_t, int64_t>;

/*! \brief True for a DMA that runs on the DMA-out engine: a prefetch, or a copy out of L1. */
bool OnDmaOut(const CallNode* c, const BufferRegionNode* dst, const BufferRegionNode* src) {
  return c->op == "tile.dma_prefetch" ||
         (c->op == "tile.dma_copy" && dst->buffer->scope != "local" &&
          src->buffer->scope == "local");
}

/*! \brief The sum of `leaf` over the DMA commands of `s`, as run (loops times their extent, the
 *  costlier arm of a branch), split (DMA-in, DMA-out). */
template <typename Leaf>
EnginePair SumOverEngines(const Stmt& s, const Leaf& leaf) {
  if (!s.defined()) return {0, 0};
  if (const auto* e = s.as<EvaluateNode>()) {
    const auto* c = e->value.as<CallNode>();
    return c ? leaf(c) : EnginePair{0, 0};
  }
  auto add = [](EnginePair a, EnginePair b, int64_t k = 1) {
    return EnginePair{a.first + k * b.first, a.second + k * b.second};
  };
  if (const auto* f = s.as<ForNode>()) {
    auto e = as_const_int(f->extent);
    return add({0, 0}, SumOverEngines(f->body, leaf), e ? std::max<int64_t>(*e, 0) : 1);
  }
  if (const auto* q = s.as<SeqStmtNode>()) {
    EnginePair n{0, 0};
    for (const Stmt& x : q->seq) n = add(n, SumOverEngines(x, leaf));
    return n;
  }
  if (const auto* i = s.as<IfThenElseNode>()) {
    auto a = SumOverEngines(i->then_case, leaf), b = SumOverEngines(i->else_case, leaf);
    return a.first + a.second >= b.first + b.second ? a : b;
  }
  if (const auto* a = s.as<AllocateNode>()) return SumOverEngines(a->body, leaf);
  if (const auto* w = s.as<WhileNode>()) return SumOverEngines(w->body, leaf);
  return {0, 0};
}

int64_t LevelLatency(const Buffer& b) {
  const std::string scope(b->scope.view());
  if (scope == "local") return arch::tc1::kL1Latency;
  if (scope == "shared") return arch::tc1::kL2Latency;
  return arch::tc1::kDdrLatency;
}

/*! \brief The beats of a DMA over `r`: a row (its last dimension) in whole beats each. */
int64_t Beats(const BufferRegionNode* r) {
  int64_t rows = 1, row = 1;
  for (size_t k = 0; k < r->extents.size(); ++k) {
    auto v = as_const_int(r->extents[k]);
    const int64_t e = v ? *v : 1;
    if (k + 1 == r->extents.size())
      row = e;
    else
      rows *= e;
  }
  const int64_t bytes = row * r->buffer->dtype.lane_bytes();
  return rows * ((bytes + arch::tc1::kDmaBytesPerCycle - 1) / arch::tc1::kDmaBytesPerCycle);
}

}  // namespace

std::pair<int64_t, int64_t> EngineBytes(const Stmt& s) {
  return SumOverEngines(s, [](const CallNode* c) -> EnginePair {
    if (!IsDmaTransfer(c->op.view())) return {0, 0};
    const auto* dst = c->args[0].as<BufferRegionNode>();
    const auto* src = c->args[1].as<BufferRegionNode>();
    if (!dst || !src) return {0, 0};
    int64_t n = dst->buffer->dtype.lane_bytes();
    for (const PrimExpr& x : dst->extents) n *= as_const_int(x) ? *as_const_int(x) : 1;
    return OnDmaOut(c, dst, src) ? EnginePair{0, n} : EnginePair{n, 0};
  });
}

std::pair<int64_t, int64_t> EngineCycles(const Stmt& s) {
  return SumOverEngines(s, [](const CallNode* c) -> EnginePair {
    if (!IsDmaCommand(c->op.view())) return {0, 0};
    const auto* dst = c->args[0].as<BufferRegionNode>();
    if (!dst) return {0, 0};
    if (c->op == "tile.dma_fill") return {LevelLatency(dst->buffer) + Beats(dst), 0};
    const auto* src = c->args[1].as<BufferRegionNode>();
    if (!src) return {0, 0};
    const int64_t cycles =
        std::max(LevelLatency(dst->buffer), LevelLatency(src->buffer)) + Beats(dst);
    return OnDmaOut(c, dst, src) ? EnginePair{0, cycles} : EnginePair{cycles, 0};
  });
}

const Stmt& Unguarded(const Stmt& s) {
  const auto* g = s.as<IfThenElseNode>();
  return g ? g->then_case : s;
}

Stmt InGuardOf(const Stmt& load, Stmt issue) {
  const auto* g = load.as<IfThenElseNode>();
  return g ? IfThenElse(g->condition, std::move(issue), Stmt(), g->span) : issue;
}

std::pair<int64_t, int64_t> BytesBySource(const std::vector<Stmt>& loads) {
  std::pair<int64_t, int64_t> n{0, 0};
  for (const Stmt& l : loads) {
    const auto* e = Unguarded(l).as<EvaluateNode>();
    const auto* c = e ? e->value.as<CallNode>() : nullptr;
    const auto* src = c && c->args.size() > 1 ? c->args[1].as<BufferRegionNode>() : nullptr;
    auto [in, out] = EngineBytes(l);
    (src && src->buffer->scope == "shared" ? n.second : n.first) += in + out;
  }
  return n;
}

namespace {

/*! \brief The DMA events `s` names with constants. (An asynchronous DMA command is a void
 * call: only an Evaluate statement holds one.) */
std::set<int64_t> EventsUsed(const Stmt& s) {
  std::set<int64_t> used;
  PostOrderVisitStmts(s, [&](const Stmt& n) {
    const auto* ev = n.as<EvaluateNode>();
    const auto* c = ev ? ev->value.as<CallNode>() : nullptr;
    if (!c || c->op.view().rfind("tile.", 0) != 0) return;
    if (!IsAsyncDma(c->op.view())) return;
    if (auto e = as_const_int(c->args.back())) used.insert(*e);
  });
  return used;
}

/*! \brief One copy cut into pieces for `cores` cores, `slots` issue points each. */
struct Pieces {
  PrefetchCopy copy;
  int64_t piece = 0, full = 0, tail = 0;  // piece bytes, full pieces, bytes of the last
};

class Interleaver : public IRMutator {
 public:
  Interleaver(std::vector<PrefetchCopy> copies, int64_t event)
      : copies_(std::move(copies)), event_(event) {}

  Stmt VisitStmt_(const ForNode* op) override {
    if (op->kind != ForKind::kCores || done_) return IRMutator::VisitStmt_(op);
    done_ = true;
    auto cores_c = as_const_int(op->extent);
    const int64_t cores = cores_c ? std::max<int64_t>(*cores_c, 1) : 1;
    core_ = op->loop_var;
    cores_ = cores;
    // the pieces go on the DMA engine the member's own copies keep less busy (a copy into L2 is
    // the DMA-in engine's, a tile.dma_prefetch the DMA-out's): queued behind them, the
    // member's loads or stores wait
    auto [in_cycles, out_cycles] = EngineCycles(op->body);
    on_in_ = in_cycles < out_cycles;
    // pieces go after the matrix commands, or after the copies of a member without any
    // (the vector engine's work is still loops here: EmitTileIntrinsics makes it commands)
    auto [slot, slots] = Slots(op->body, core_, cores, true);
    slot_ = slot;
    slots = std::max<int64_t>(slots, 1);
    // a cursor per copy, then the matrix commands left before the next issue
    // (then each copy's count of full pieces for this core, computed once: the front end
    // compares with it after every matrix command)
    cursor_ = DeclBuffer({I32(2 * int64_t(copies_.size()) + 1)}, DataType::Int(32),
                         "prefetch_cursor", "local");
    for (const PrefetchCopy& c : copies_) {
      Pieces p{c};
      int64_t want = (c.bytes + cores * slots - 1) / (cores * slots);
      p.piece = std::clamp<int64_t>((want + 63) / 64 * 64, kMinPiece, kMaxPiece);
      p.full = c.bytes / p.piece;
      p.tail = c.bytes - p.full * p.piece;
      pieces_.push_back(p);
    }
    // pieces go out every `stride_` matrix commands, spread over the member's work, `per_`
    // of a copy at a time when a core has more than slots (all under way by its last matrix
    // command: a piece issued after the work holds the member's end, DDR latency and all)
    int64_t most = 1;
    for (const Pieces& p : pieces_) most = std::max(most, (p.full + cores - 1) / cores);
    stride_ = std::max<int64_t>(slots / most, 1);
    per_ = (most + slots - 1) / slots;
    std::vector<Stmt> pro{BufferStore(cursor_, I32(stride_), {Countdown()})}, epi;
    for (size_t j = 0; j < pieces_.size(); ++j) {
      const Pieces& p = pieces_[j];
      pro.push_back(BufferStore(cursor_, I32(0), {I32(int64_t(j))}));
      pro.push_back(BufferStore(cursor_, MineOf(p), {MineAt(j)}));
      // the short last piece, first, by the last core: it has the fewest full pieces (dealt
      // from core 0 on), and the fewest items (so are they), where core 0's first loads queued
      // behind it, a DDR latency at the member's start
      if (p.tail)
        pro.push_back(IfThenElse(eq(core_, I32(cores - 1)), Piece(p, I32(p.full), p.tail)));
      PrimExpr cur = BufferLoad(cursor_, {I32(int64_t(j))});
      epi.push_back(While(cur < Mine(j), Issue(j)));
    }
    inside_ = true;
    Stmt body = VisitStmt(op->body);
    inside_ = false;
    // the reader must find every byte: on one core no fence ends the cores loop
    epi.push_back(Intrin("tile.wait", {I32(event_)}));
    body = Allocate(cursor_, Seq({Seq(pro), body, Seq(epi)}));
    return For(op->loop_var, op->min, op->extent, op->kind, body, op->annotations, op->span);
  }

  Stmt VisitStmt_(const EvaluateNode* op) override {
    Stmt s = GetRef<Stmt>(op);
    if (!inside_ || !IsCall(s, slot_)) return s;
    std::vector<Stmt> issue;
    for (size_t j = 0; j < pieces_.size(); ++j) {
      PrimExpr cur = BufferLoad(cursor_, {I32(int64_t(j))});
      for (int64_t k = 0; k < per_; ++k) issue.push_back(IfThenElse(cur < Mine(j), Issue(j)));
    }
    if (stride_ == 1) return Seq({s, Seq(issue)});
    // a countdown to the next issue (a decrement and a test: the front end runs it after
    // every matrix command)
    PrimExpr left = BufferLoad(cursor_, {Countdown()});
    return Seq({s, BufferStore(cursor_, left - I32(1), {Countdown()}),
                IfThenElse(eq(left, I32(0)),  // (left: stored)
                           Seq({BufferStore(cursor_, I32(stride_), {Countdown()}), Seq(issue)}))});
  }

 private:
  PrimExpr Countdown() const { return I32(int64_t(pieces_.size())); }
  // full pieces this core issues: k = q * cores + core for q = 0, 1, ...
  PrimExpr MineOf(const Pieces& p) const {
    return floordiv(I32(p.full + cores_ - 1) - core_, I32(cores_));
  }
  // (where the prologue stored copy j's MineOf, and it read back)
  PrimExpr MineAt(size_t j) const { return I32(int64_t(pieces_.size() + 1 + j)); }
  PrimExpr Mine(size_t j) const { return BufferLoad(cursor_, {MineAt(j)}); }
  Stmt Piece(const Pieces& p, PrimExpr k, int64_t bytes) const {
    PrimExpr at = k * I32(p.piece);
    return Intrin(on_in_ ? "tile.dma_copy" : "tile.dma_prefetch",
                  {Region(p.copy.dst, {I32(p.copy.dst_begin) + at}, {bytes}),
                   Region(p.copy.src, {I32(p.copy.src_begin) + at}, {bytes}), I32(event_)});
  }
  // the core's next piece of copy j, and its cursor moved on
  Stmt Issue(size_t j) const {
    const Pieces& p = pieces_[j];
    PrimExpr cur = BufferLoad(cursor_, {I32(int64_t(j))});
    return Seq({Piece(p, cur * I32(cores_) + core_, p.piece),
                BufferStore(cursor_, cur + I32(1), {I32(int64_t(j))})});
  }

  std::vector<PrefetchCopy> copies_;
  int64_t event_;
  bool done_ = false, inside_ = false, on_in_ = false;
  const char* slot_ = "tile.mm";
  Var core_;
  int64_t cores_ = 1, stride_ = 1, per_ = 1;
  Buffer cursor_;
  std::vector<Pieces> pieces_;
};

/*! \brief `loads` issued `per` at a time after every `stride`-th `slot` command from the
 * `from`-th on, the rest after the work (a cursor counts the commands run and the loads
 * issued). */
class LoadSpreader : public IRMutator {
 public:
  LoadSpreader(std::vector<Stmt> loads, const char* slot, int64_t stride, Buffer cursor,
               PrimExpr stagger, int64_t from = 0, int64_t per = 1)
      : loads_(std::move(loads)),
        slot_(slot),
        stride_(stride),
        from_(from),
        per_(per),
        cursor_(std::move(cursor)),
        stagger_(std::move(stagger)) {}

  Stmt VisitStmt_(const EvaluateNode* op) override {
    Stmt s = GetRef<Stmt>(op);
    if (!IsCall(s, slot_)) return s;
    PrimExpr tick = BufferLoad(cursor_, {I32(0)});
    PrimExpr due = eq(floormod(tick + stagger_, I32(stride_)), I32(0));
    if (from_ > 0) due = (tick >= I32(from_)) && due;
    std::vector<Stmt> next(size_t(per_), Next());
    return Seq({s, BufferStore(cursor_, tick + I32(1), {I32(0)}), IfThenElse(due, Seq(next))});
  }

  // the next load (an if chain on the count issued), the count moved on
  Stmt Next() const {
    PrimExpr cur = BufferLoad(cursor_, {I32(1)});
    Stmt chain;
    for (size_t k = loads_.size(); k-- > 0;) {
      PrimExpr is = eq(cur, I32(int64_t(k)));
      chain = chain.defined() ? IfThenElse(is, loads_[k], chain) : IfThenElse(is, loads_[k]);
    }
    return Seq({chain, BufferStore(cursor_, cur + I32(1), {I32(1)})});
  }

  // the loads not issued yet
  Stmt Rest() const {
    std::vector<Stmt> r;
    PrimExpr cur = BufferLoad(cursor_, {I32(1)});
    for (size_t k = 0; k < loads_.size(); ++k)
      r.push_back(IfThenElse(cur < I32(int64_t(k) + 1), loads_[k]));
    return Seq(r);
  }

 private:
  std::vector<Stmt> loads_;
  const char* slot_;
  int64_t stride_, from_, per_;
  Buffer cursor_;
  PrimExpr stagger_;
};

}  // namespace

Stmt InterleaveLoads(const Stmt& body, const std::vector<Stmt>& loads, const Stmt& member,
                     const Var& core, int64_t cores, int64_t* event) {
  std::set<int64_t> used = EventsUsed(member);
  *event = -1;
  for (int64_t e = transform::kNumDmaEvents - 1; e >= 0; --e) {
    if (!used.count(e)) {
      *event = e;
      break;
    }
  }
  if (*event < 0) TILECORE_THROW(ValueError) << "InterleaveLoads: the member uses every DMA event";
  // on the DMA engine the member's own copies keep less busy, on an event of their own
  auto [in_cycles, out_cycles] = EngineCycles(body);
  const char* op = in_cycles < out_cycles ? "tile.dma_copy" : "tile.dma_prefetch";
  std::vector<Stmt> mine;
  for (const Stmt& l : loads) {
    const auto* c = Unguarded(l).as<EvaluateNode>()->value.as<CallNode>();
    mine.push_back(InGuardOf(l, Intrin(op, {c->args[0], c->args[1], I32(*event)})));
  }
  auto [slot, slots] = Slots(body, core, cores, false);
  // spread over the work, the cores' turns staggered (the DDR serves them one at a time).
  // Loads mostly from L2 (weights a layer group prefetched: the L2 serves them at four times
  // the DDR's rate) start after kL2LoadsFrom slots, when a member's own first loads from
  // L2 have arrived, and go several at a slot so that all are under way a slot before the
  // end (those issued after the work would hold the member's end)
  const auto [other_bytes, l2_bytes] = BytesBySource(loads);
  const bool l2 = 4 * l2_bytes >= 3 * (other_bytes + l2_bytes);
  const int64_t from = l2 ? std::min<int64_t>(slots / 2, kL2LoadsFrom) : 0;
  const int64_t n = int64_t(mine.size()), room = std::max<int64_t>(slots - from - 1, 1);
  const int64_t per = l2 ? (n + room - 1) / room : 1;  // loads at each slot
  const int64_t stride = std::max<int64_t>((slots - from) / ((n + per - 1) / per + 1), 1);
  Buffer cursor = DeclBuffer({I32(2)}, DataType::Int(32), "handoff_cursor", "local");
  LoadSpreader sp(mine, slot, stride, cursor, floormod(core, I32(stride)), from, per);
  Stmt spread = sp.VisitStmt(body);
  return Allocate(cursor, Seq({BufferStore(cursor, I32(0), {I32(0)}),
                               BufferStore(cursor, I32(0), {I32(1)}), spread, sp.Rest()}));
}

Stmt InterleavePrefetch(const Stmt& member, const std::vector<PrefetchCopy>& copies) {
  if (copies.empty()) return member;
  std::set<int64_t> used = EventsUsed(member);
  int64_t event = -1;
  for (int64_t e = transform::kNumDmaEvents - 1; e >= 0; --e) {
    if (!used.count(e)) {
      event = e;
      break;
    }
  }
  if (event < 0)
    TILECORE_THROW(ValueError) << "InterleavePrefetch: the member uses every DMA event";
  Interleaver iv(copies, event);
  Stmt out = iv.VisitStmt(member);
  bool has_cores = false;
  PostOrderVisitStmts(member, [&](const Stmt& n) {
    if (const auto* f = n.as<ForNode>()) has_cores = has_cores || f->kind == ForKind::kCores;
  });
  if (!has_cores) TILECORE_THROW(ValueError) << "InterleavePrefetch: the member has no cores loop";
  return out;
}

}  // namespace compiler
}  // namespace tilecore
