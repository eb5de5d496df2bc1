/*
 * src/transform/plan_local_memory.cc — the PlanLocalMemory pass (plan_local_memory.h).
 */
#include "tilecore/transform/plan_local_memory.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/analyzer.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

constexpr int64_t kBank = 64 * 1024;
constexpr int64_t kAlign = 64;
constexpr int64_t kSmall = 4 * 1024;
// small mm sources this large or larger take different banks (below: a vector, a row of
// scales, whose mms are few blocks)
constexpr int64_t kMmTileBytes = 1024;

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/*! \brief Buffer data variable -> the buffers whose regions one compute command reads
 * beside it as its other source (an mm's A and B, a binary vector command's two sources):
 * the pairs whose starts TC1 wants in different banks. */
using Partners = std::unordered_map<const VarNode*, std::unordered_set<const VarNode*>>;

struct SourcePairs {
  Partners all;  // every command's
  Partners mm;   // the matrix engine's: an mm read from one bank pays twice for every block
};

SourcePairs SourcePartners(const Stmt& body) {
  // (a walk that memoises only shared nodes: each call is met, most once)
  struct Finder : IRVisitor {
    SourcePairs pairs;
    void VisitExpr_(const CallNode* c) override {
      IRVisitor::VisitExpr_(c);
      if (c->args.size() < 3) return;
      const std::string_view op = c->op.view();
      const bool mm = op == "tile.mm";
      // (a table lookup reads its table apart from its stream: no conflict)
      if (!mm && (op.rfind("tile.vec_", 0) != 0 || op == "tile.vec_lut")) return;
      const auto* a = c->args[1].as<BufferRegionNode>();
      const auto* b = c->args[2].as<BufferRegionNode>();
      if (a == nullptr || b == nullptr || a->buffer->data.same_as(b->buffer->data)) return;
      for (Partners* m : {&pairs.all, mm ? &pairs.mm : nullptr}) {
        if (m == nullptr) continue;
        (*m)[a->buffer->data.get()].insert(b->buffer->data.get());
        (*m)[b->buffer->data.get()].insert(a->buffer->data.get());
      }
    }
  } finder;
  finder.VisitStmt(body);
  return std::move(finder.pairs);
}

class Planner : public IRVisitor {
 public:
  // `small_bytes`: the L1 the small buffers take at the bottom (their peak, measured by a
  // first pass); the others start at the first bank above them. `packed`: no buffer is
  // moved up to a bank's start.
  // `pinned`: buffers at fixed offsets in an area of `reserved` bytes above the small
  // buffers (kL1PinnedAttr); the others start above it. `partners` (SourcePartners): a
  // buffer not placed at a bank's start moves up to the next one when it would share a
  // bank with a live buffer read beside it, if it fits there.
  Planner(int64_t l1, int64_t l2, int64_t small_bytes = 0, bool packed = false,
          std::unordered_map<const VarNode*, int64_t> pinned = {}, int64_t reserved = 0,
          const Partners* partners = nullptr, const Partners* mm_partners = nullptr)
      : packed_(packed),
        pinned_(std::move(pinned)),
        partners_(partners),
        mm_partners_(mm_partners) {
    cap_[0] = l1;
    cap_[1] = l2;
    pinned_base_ = AlignUp(small_bytes, kAlign);
    if (small_bytes > 0 || reserved > 0)
      top_[0] = std::min(l1, AlignUp(pinned_base_ + reserved, kBank));
    peak_[0] = reserved > 0 ? pinned_base_ + reserved : 0;
  }

  // (allocations are statements: the walk need not enter expressions)
  void VisitExpr(const PrimExpr&) override {}

  void VisitStmt_(const AllocateNode* op) override {
    const BufferNode* b = op->buffer.get();
    if (auto it = pinned_.find(b->data.get()); it != pinned_.end()) {
      int64_t bytes = b->dtype.lane_bytes() * b->dtype.lanes();
      for (const PrimExpr& d : b->shape) bytes *= as_const_int(d) ? *as_const_int(d) : 0;
      plan_.Set(b->data, Array<int64_t>{pinned_base_ + it->second, bytes,
                                        (pinned_base_ + it->second) / kBank});
      live_at_[b->data.get()] = {pinned_base_ + it->second, bytes};
      VisitStmt(op->body);
      live_at_.erase(b->data.get());
      return;
    }
    int s = b->scope.view() == "local" ? 0 : 1;
    Analyzer an;
    int64_t elems = 1;
    for (size_t i = 0; i < b->shape.size(); ++i) {
      auto c = as_const_int(an.Simplify(b->shape[i]));
      if (!c) {
        TILECORE_THROW(ValueError)
            << "PlanLocalMemory: buffer `" << b->name.view() << "` has a shape that is not "
            << "constant (dimension " << i << "); local and shared buffers need constant shapes"
            << At(op->span);
      }
      elems *= *c;
    }
    int64_t bytes = elems * b->dtype.lane_bytes() * b->dtype.lanes();
    // Small buffers have a stack of their own, below the others (see the pass's top); one
    // read beside a live pinned buffer of that bank (a tile a layer group's member before
    // loaded, pinned just above the small buffers), or by an mm beside a live small one
    // of the stack, both of 1 KiB or more (a 1x1 Conv's kept weights and its X tiles;
    // kMmTileBytes), goes on top of the others instead, in another bank, when it fits
    // there: the command reading both would pay twice (an mm for every block). Not where
    // buffers are pinned: a layer group's early handoff planned its area with the small
    // buffers below it, and its groups measured slower with them moved.
    const bool small = s == 0 && bytes <= kSmall;
    const int64_t above = AlignUp(top_[0], kAlign);  // (the others' top)
    const int64_t in_stack = AlignUp(small_top_, kAlign);
    const bool stacked =
        small &&
        !((PinnedPartnerInBank(b->data.get(), in_stack) ||
           (pinned_.empty() && bytes >= kMmTileBytes &&
            SharesBankWithPartner(b->data.get(), in_stack, bytes, mm_partners_, kMmTileBytes))) &&
          !PinnedPartnerInBank(b->data.get(), above) &&
          !SharesBankWithPartner(b->data.get(), above, bytes) && above + bytes <= cap_[0]);
    int64_t& top = stacked ? small_top_ : top_[s];
    int64_t saved = top;
    int64_t offset = AlignUp(top, kAlign);
    // A buffer starts at a bank when it fits (engines reading two sources from one bank pay
    // twice).
    if (s == 0 && !small && !packed_ && AlignUp(top, kBank) + bytes <= cap_[0])
      offset = AlignUp(top, kBank);
    else if (s == 0 && !small && SharesBankWithPartner(b->data.get(), offset, bytes) &&
             AlignUp(offset, kBank) + bytes <= cap_[0])
      offset = AlignUp(offset, kBank);
    live_[s].emplace_back(std::string(b->name.view()), bytes);
    if (offset + bytes > cap_[s]) {
      std::ostringstream msg;
      int64_t total = 0;
      for (const auto& [n, sz] : live_[s]) total += sz;
      msg << "PlanLocalMemory: " << (s == 0 ? "local memory (L1)" : "shared memory (L2)")
          << " overflows: " << cap_[s] << " bytes available" << (s == 0 ? " per core" : "")
          << ", the live buffers need " << total << " bytes (";
      for (size_t i = 0; i < live_[s].size(); ++i) {
        msg << (i ? ", " : "") << "`" << live_[s][i].first << "` " << live_[s][i].second << " B";
      }
      msg << ")" << At(op->span);
      TILECORE_THROW(ValueError) << msg.str();
    }
    top = offset + bytes;
    peak_[s] = std::max(peak_[s], top);
    if (stacked) small_peak_ = std::max(small_peak_, top);
    plan_.Set(b->data, Array<int64_t>{offset, bytes, s == 0 ? offset / kBank : -1});
    if (s == 0) live_at_[b->data.get()] = {offset, bytes};
    VisitStmt(op->body);
    if (s == 0) live_at_.erase(b->data.get());
    live_[s].pop_back();
    top = saved;
  }

  Map<Var, Array<int64_t>> plan_;
  int64_t peak_[2] = {0, 0};
  int64_t small_peak_ = 0;

 private:
  // Whether a pinned buffer read beside `data` starts in the bank of `offset` (live now or
  // not: its place is fixed, and it may be allocated after `data`).
  bool PinnedPartnerInBank(const VarNode* data, int64_t offset) const {
    if (partners_ == nullptr || pinned_.empty()) return false;
    auto it = partners_->find(data);
    if (it == partners_->end()) return false;
    for (const VarNode* p : it->second) {
      auto at = pinned_.find(p);
      if (at != pinned_.end() && (pinned_base_ + at->second) / kBank == offset / kBank) return true;
    }
    return false;
  }

  // Whether [offset, offset + bytes) shares a bank with a live buffer read beside `data`
  // (by a command of `which`: partners_ when null).
  bool SharesBankWithPartner(const VarNode* data, int64_t offset, int64_t bytes,
                             const Partners* which = nullptr, int64_t min_bytes = 0) const {
    if (which == nullptr) which = partners_;
    if (which == nullptr) return false;
    auto it = which->find(data);
    if (it == which->end()) return false;
    for (const VarNode* p : it->second) {
      auto at = live_at_.find(p);
      if (at == live_at_.end()) continue;
      const auto [o, n] = at->second;
      if (n < min_bytes) continue;
      if (offset / kBank <= (o + n - 1) / kBank && o / kBank <= (offset + bytes - 1) / kBank)
        return true;
    }
    return false;
  }

  bool packed_ = false;
  std::unordered_map<const VarNode*, int64_t> pinned_;
  const Partners* partners_ = nullptr;
  const Partners* mm_partners_ = nullptr;                                    // (SourcePairs::mm)
  std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>> live_at_;  // [offset, bytes]
  int64_t pinned_base_ = 0;
  int64_t cap_[2];
  int64_t top_[2] = {0, 0};
  int64_t small_top_ = 0;
  std::vector<std::pair<std::string, int64_t>> live_[2];
};

}  // namespace

Pass PlanLocalMemory() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext ctx) {
        const int64_t l1 = ctx.GetConfig<int64_t>("tc1.l1_bytes", int64_t(arch::tc1::kL1Bytes));
        const int64_t l2 = ctx.GetConfig<int64_t>("tc1.l2_bytes", int64_t(arch::tc1::kL2Bytes));
        // Small buffers (a DMA state, a row of scales) share the lowest bank(s) instead of
        // taking one each, and never start in the bank of a tile a command also reads.
        // Buffers that overflow L1 when each starts on a bank are packed instead, the two
        // sources of a command still in different banks where that fits; only when it does
        // not are they packed regardless: a slower stream where two sources share a bank
        // beats a kernel that does not fit.
        std::unordered_map<const VarNode*, int64_t> pinned;
        int64_t reserved = 0;
        if (auto v = f->attrs.Get(kL1PinnedAttr)) {
          for (const auto& [var, at] : v->cast<Map<Var, Array<int64_t>>>().items()) {
            pinned[var.get()] = at[0];
            reserved = std::max(reserved, at[1]);
          }
        }
        const SourcePairs pairs = SourcePartners(f->body);
        Planner p(l1, l2);
        auto plan = [&](bool packed, const Partners* apart) {
          Planner measure(l1, l2, 0, packed, pinned);
          measure.VisitStmt(f->body);
          p = Planner(l1, l2, measure.small_peak_, packed, pinned, reserved, apart,
                      apart ? &pairs.mm : nullptr);
          p.VisitStmt(f->body);
        };
        try {
          try {
            plan(false, &pairs.all);
          } catch (const ffi::Error&) {
            try {
              plan(true, &pairs.all);
            } catch (const ffi::Error&) {
              plan(true, nullptr);
            }
          }
        } catch (const ffi::Error& e) {
          std::string fn = f.global_symbol();
          if (fn.empty()) throw;
          throw ffi::Error(std::string(e.kind()),
                           "kernel `" + fn + "`: " + std::string(e.message()),
                           std::string(e.backtrace()));
        }
        return f.WithAttr("memory_plan", p.plan_)
            .WithAttr("local_bytes", p.peak_[0])
            .WithAttr("shared_bytes", p.peak_[1]);
      },
      0, "PlanLocalMemory");
}

TILECORE_REGISTER_GLOBAL("transform.PlanLocalMemory").set_body_typed([]() {
  return PlanLocalMemory();
});

}  // namespace transform
}  // namespace tilecore
