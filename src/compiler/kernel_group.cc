/*
 * src/compiler/kernel_group.cc — GroupKernels (kernel_group.h): each member's parameter
 * buffers rebound to the group's parameters or to its L2 intermediates.
 */
#include "tilecore/compiler/kernel_group.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernel_util.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/compiler/member_handoff.h"
#include "tilecore/compiler/memory_plan.h"
#include "tilecore/compiler/weight_prefetch.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"
#include "tilecore/runtime/npu_module.h"
#include "tilecore/transform/plan_local_memory.h"

namespace tilecore {
namespace compiler {

using namespace ir;  // NOLINT

namespace {

/*! \brief Every buffer on one of `to`'s data variables gets that buffer's data and scope
 * (shape, strides, offset and dtype stay: a view stays a view). A buffer the member
 * allocates gets a data variable of its own: two members lowered from one kernel share
 * their variables, and the code generator places local buffers by variable, so a
 * member's buffers would take the place planned for the other's (whose allocations can
 * differ: a prefetch cursor in one of them). */
class RebindBuffers : public IRMutator {
 public:
  /*! `sliced`: the data variables of the group's params that hold a whole batch, each with
   * the bytes of one slice; a member's buffer on one (the param, or any view of it the kernel
   * made) is moved to the `slice`-th. */
  explicit RebindBuffers(std::unordered_map<const VarNode*, Buffer> to,
                         std::unordered_map<const VarNode*, int64_t> sliced = {},
                         PrimExpr slice = {})
      : to_(std::move(to)), sliced_(std::move(sliced)), slice_(std::move(slice)) {}

  Stmt VisitStmt_(const AllocateNode* op) override {
    const Buffer& b = op->buffer;
    Var data(b->data->name, b->data->type_annotation, b->data->span);
    Buffer fresh(data, b->dtype, b->shape, b->strides, b->elem_offset, b->scope, b->name);
    to_[b->data.get()] = fresh;
    done_.emplace(b.get(), fresh);
    Stmt body = VisitStmt(op->body);
    return Allocate(fresh, body, op->span);
  }

  PrimExpr VisitExpr_(const BufferLoadNode* op) override {
    Array<PrimExpr> idx = VisitArray(op->indices);
    return BufferLoad(Rebind(op->buffer), idx, op->span);
  }
  PrimExpr VisitExpr_(const BufferRegionNode* op) override {
    Array<PrimExpr> begin = VisitArray(op->begin), ext = VisitArray(op->extents);
    return BufferRegion(Rebind(op->buffer), begin, ext, op->span);
  }
  Stmt VisitStmt_(const BufferStoreNode* op) override {
    PrimExpr value = VisitExpr(op->value), pred = VisitExpr(op->predicate);
    Array<PrimExpr> idx = VisitArray(op->indices);
    return BufferStore(Rebind(op->buffer), value, idx, pred, op->span);
  }

 private:
  Buffer Rebind(const Buffer& b) {
    auto it = to_.find(b->data.get());
    if (it == to_.end()) return b;
    auto done = done_.find(b.get());
    if (done != done_.end()) return done->second;
    const Buffer& t = it->second;
    // t may start inside the group's L2 arena: its offset (64-byte aligned) in b's elements
    PrimExpr offset = b->elem_offset;
    if (const auto* o = t->elem_offset.as<IntImmNode>(); o && o->value != 0)
      offset = offset +
               IntImm(DataType::Int(32), o->value * t->dtype.lane_bytes() / b->dtype.lane_bytes());
    // (the stride is the param's slice, not the buffer's size: a view may cover it otherwise)
    if (auto sl = sliced_.find(t->data.get()); sl != sliced_.end()) {
      if (sl->second % b->dtype.lane_bytes() != 0)
        TILECORE_THROW(ValueError)
            << "GroupKernels: a slice of " << sl->second << " bytes is no whole number of `"
            << b->name.view() << "`'s elements";
      offset = offset + slice_ * IntImm(DataType::Int(32), sl->second / b->dtype.lane_bytes());
    }
    Buffer r(t->data, b->dtype, b->shape, b->strides, offset, t->scope, b->name);
    done_.emplace(b.get(), r);
    return r;
  }
  std::unordered_map<const VarNode*, Buffer> to_;
  std::unordered_map<const BufferNode*, Buffer> done_;
  std::unordered_map<const VarNode*, int64_t> sliced_;
  PrimExpr slice_;
};

/*! \brief Annotates the cores loops of one member with its index, so that the cost model
 * can say what each member costs. */
class TagMember : public IRMutator {
 public:
  explicit TagMember(int64_t index) : index_(index) {}
  Stmt VisitStmt_(const ForNode* op) override {
    if (op->kind != ForKind::kCores) return IRMutator::VisitStmt_(op);
    Map<String, Any> ann = op->annotations;
    ann.Set(kGroupMemberAnnotation, Any(index_));
    return For(op->loop_var, op->min, op->extent, op->kind, op->body, ann, op->span);
  }

 private:
  int64_t index_;
};

/*! \brief The L2 a member's own buffers take (its staging), at most: the sum of its
 * shared allocations. */
int64_t OwnL2Bytes(const Stmt& body) {
  int64_t bytes = 0;
  PostOrderVisitStmts(body, [&](const Stmt& n) {
    const auto* a = n.as<AllocateNode>();
    if (!a || a->buffer->scope != "shared") return;
    bytes += compiler::detail::ShapeBytes(a->buffer, 0);
  });
  return bytes;
}

int64_t ConstBytes(const Buffer& b) {
  int64_t n = b->dtype.lane_bytes() * b->dtype.lanes();
  for (const PrimExpr& d : b->shape) {
    const auto* c = d.as<IntImmNode>();
    if (!c) return -1;
    n *= c->value;
  }
  return n;
}

/*! \brief The constant value of an element offset (sums of constants), or none. */
std::optional<int64_t> ConstOffset(const PrimExpr& e) {
  if (const auto* c = e.as<IntImmNode>()) return c->value;
  if (const auto* a = e.as<AddNode>()) {
    auto x = ConstOffset(a->a), y = ConstOffset(a->b);
    if (x && y) return *x + *y;
  }
  return std::nullopt;
}

// an early handoff's bytes at most this fraction of the giving member's own copies
constexpr int64_t kEarlyShare = 6;

/*! \brief A member's body with nothing to do: its cores loop, empty (the loop keeps the
 * member's place among the fenced members, and its tag). */
Stmt EmptyCores(const Stmt& body) {
  Stmt out = Evaluate(IntImm(DataType::Int(32), 0));
  bool found = false;
  PostOrderVisitStmts(body, [&](const Stmt& n) {
    const auto* f = n.as<ForNode>();
    if (found || !f || f->kind != ForKind::kCores) return;
    out = For(f->loop_var, f->min, f->extent, f->kind, out, f->annotations, f->span);
    found = true;
  });
  return out;
}

/*! \brief Places: id -> (the id whose bytes hold it, byte offset there). */
using Places = std::map<int64_t, std::pair<int64_t, int64_t>>;

/*! \brief The id at the end of `id`'s chain of places (itself if it has none), and `id`'s
 * byte offset in it. */
std::pair<int64_t, int64_t> RootOf(const Places& place, int64_t id) {
  int64_t at = 0;
  for (auto it = place.find(id); it != place.end(); it = place.find(id)) {
    at += it->second.second;
    id = it->second.first;
  }
  return {id, at};
}

/*! \brief Where each input of the group's in-place Concats lives: id -> (the id whose bytes
 * hold it, byte offset there), for the Concat members whose inputs can be written in place
 * (kernel_group.h); `members` gets those members. `intermediate` says which ids have a
 * place in the arena. */
Places PlaceConcatInputs(const std::vector<PrimFunc>& funcs,
                         const std::vector<std::vector<int64_t>>& args,
                         const std::map<int64_t, Buffer>& first,
                         const std::function<bool(int64_t)>& intermediate,
                         std::vector<int64_t>* members) {
  Places place;
  for (size_t i = 0; i < funcs.size(); ++i) {
    auto offsets = funcs[i]->attrs.Get(String(kConcatOffsetsAttr));
    if (!offsets || args[i].size() < 2) continue;
    auto elems = offsets->try_cast<Array<int64_t>>();
    const int64_t out = args[i].back();
    if (!elems || elems->size() + 1 != args[i].size() || !intermediate(out)) continue;
    const Buffer& ob = first.at(out);
    const int64_t out_bytes = ConstBytes(ob),
                  elem_bytes = ob->dtype.lane_bytes() * ob->dtype.lanes();
    std::map<int64_t, int64_t> where;  // the root of each input -> its byte offset in `out`
    bool ok = out_bytes > 0;
    for (size_t k = 0; ok && k + 1 < args[i].size(); ++k) {
      const int64_t id = args[i][k], at = (*elems)[k] * elem_bytes;
      const Buffer& b = first.at(id);
      ok = id != out && intermediate(id) && at % 64 == 0 && b->dtype == ob->dtype &&
           ConstBytes(b) > 0;
      if (!ok) break;
      auto [root, in_root] = RootOf(place, id);
      const int64_t rel = at - in_root;
      auto [it, fresh] = where.emplace(root, rel);
      ok = root != out && (fresh || it->second == rel) && rel >= 0 &&
           rel + ConstBytes(first.at(root)) <= out_bytes;
    }
    // the roots' runs of bytes in `out` must not overlap
    int64_t end = 0;
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (const auto& [root, rel] : where) runs.emplace_back(rel, rel + ConstBytes(first.at(root)));
    std::sort(runs.begin(), runs.end());
    for (const auto& [lo, hi] : runs) {
      ok = ok && lo >= end;
      end = hi;
    }
    if (!ok) continue;
    for (const auto& [root, rel] : where) place[root] = {out, rel};
    members->push_back(int64_t(i));
  }
  return place;
}

}  // namespace

namespace {
// A test hook, off unless a test sets it (compiler.testing.PrefetchedPlacesReadOnlyForever):
// a prefetched weight's place stays read-only to the handoffs after its last reader, the
// layer-group defect that once broke mobilenet_v3_small, so the tools that find a wrong
// group (tilecore compare's bisection) are tested on a real one.
bool testing_prefetched_places_read_only_forever = false;
}  // namespace

PrimFunc GroupKernels(const std::vector<PrimFunc>& funcs,
                      const std::vector<std::vector<int64_t>>& args,
                      const std::vector<int64_t>& inputs, const std::vector<int64_t>& outputs,
                      const std::string& name, const std::vector<GroupPrefetch>& prefetch,
                      int64_t l2_bytes, int64_t l1_bytes, Handoff handoff, bool concat_in_place,
                      int64_t slices, const std::vector<int64_t>& sliced) {
  if (funcs.empty() || funcs.size() != args.size())
    TILECORE_THROW(ValueError) << "GroupKernels: " << funcs.size() << " kernels and " << args.size()
                               << " argument lists";
  if (slices < 1)
    TILECORE_THROW(ValueError) << "GroupKernels: " << slices << " slices (at least 1)";
  if (slices > 1 && !prefetch.empty())
    TILECORE_THROW(ValueError)
        << "GroupKernels: a group run in " << slices
        << " slices prefetches nothing (a prefetch would run once per slice)";
  if (slices == 1 && !sliced.empty())
    TILECORE_THROW(ValueError) << "GroupKernels: sliced tensors in a group of one slice";
  // each tensor's buffer as the first member that takes it declares it
  std::map<int64_t, Buffer> first;
  for (size_t i = 0; i < funcs.size(); ++i) {
    if (funcs[i]->params.size() != args[i].size())
      TILECORE_THROW(ValueError) << "GroupKernels: kernel " << i << " has "
                                 << funcs[i]->params.size() << " params, given " << args[i].size()
                                 << " tensors";
    for (size_t k = 0; k < args[i].size(); ++k)
      first.emplace(args[i][k], funcs[i]->buffer_map.at(funcs[i]->params[k]));
  }
  std::map<int64_t, Buffer> tensor;  // id -> the group's buffer (a param or in L2)
  Array<Var> params;
  Map<Var, Buffer> buffer_map;
  auto declare = [&](int64_t id, const std::string& scope) {
    auto it = first.find(id);
    if (it == first.end())
      TILECORE_THROW(ValueError) << "GroupKernels: tensor " << id << " is used by no kernel";
    if (tensor.count(id))
      TILECORE_THROW(ValueError) << "GroupKernels: tensor " << id << " is listed twice";
    const Buffer& b = it->second;
    Array<PrimExpr> shape = b->shape;
    if (std::find(sliced.begin(), sliced.end(), id) != sliced.end()) {
      // the whole batch: the members' slices one after another along the first dimension
      const auto lead = shape.empty() ? std::nullopt : as_const_int(shape[0]);
      if (!lead || compiler::detail::ShapeBytes(b, -1) < 0)
        TILECORE_THROW(ValueError)
            << "GroupKernels: sliced tensor " << id << " has no constant first dimension to slice";
      shape.Set(0, IntImm(shape[0].dtype(), *lead * slices));
    }
    Buffer nb = DeclBuffer(shape, b->dtype, String("t" + std::to_string(id)), scope);
    tensor.emplace(id, nb);
    return nb;
  };
  for (int64_t id : sliced) {
    if (std::find(inputs.begin(), inputs.end(), id) == inputs.end() &&
        std::find(outputs.begin(), outputs.end(), id) == outputs.end())
      TILECORE_THROW(ValueError) << "GroupKernels: sliced tensor " << id
                                 << " is not an input or output of the group";
  }
  // the params each slice takes a part of -> the bytes of a slice
  std::unordered_map<const VarNode*, int64_t> sliced_vars;
  for (const auto* ids : {&inputs, &outputs}) {
    for (int64_t id : *ids) {
      Buffer b = declare(id, "global");
      params.push_back(b->data);
      buffer_map.Set(b->data, b);
      if (std::find(sliced.begin(), sliced.end(), id) != sliced.end())
        sliced_vars.emplace(b->data.get(), ConstBytes(b) / slices);
    }
  }
  Var slice("slice", DataType::Int(32));
  // A kernel with more parameters than an npu kernel takes would fail at its build, after
  // the group had been planned and priced (DenseNet-121's first try at one group of 213
  // layers: 419): refused here, the group is split before any of that.
  runtime::CheckNpuParamCount(name, params.size());
  // The intermediates share one L2 arena, planned as the DDR's is (memory_plan.h): each
  // lives from the first member that takes it to the last (the members run one after
  // another, each fenced, so a dead intermediate's place is free). A prefetched input
  // lives from the first member that fetches it to the last that reads it; the members up
  // to the last that fetches it read it from the DDR.
  std::map<int64_t, std::pair<int64_t, int64_t>> uses;  // id -> first, last member
  for (size_t i = 0; i < args.size(); ++i) {
    for (int64_t a : args[i]) {
      auto [it, fresh] = uses.emplace(a, std::make_pair(int64_t(i), int64_t(i)));
      if (!fresh) it->second.second = int64_t(i);
    }
  }
  std::map<int64_t, int64_t> fetched_from;  // prefetched id -> first member fetching it
  // prefetched id -> last member fetching it: the members up to it read the DDR (an input
  // read by an earlier member too, such as a residual, is fetched for its later readers)
  std::map<int64_t, int64_t> fetched_until;
  for (const GroupPrefetch& p : prefetch) {
    auto t = tensor.find(p.tensor);
    if (t == tensor.end() || std::find(inputs.begin(), inputs.end(), p.tensor) == inputs.end())
      TILECORE_THROW(ValueError) << "GroupKernels: prefetched tensor " << p.tensor
                                 << " is not an input of the group";
    const int64_t bytes = ConstBytes(t->second);
    if (p.member < 0 || p.member >= uses.at(p.tensor).second)
      TILECORE_THROW(ValueError) << "GroupKernels: tensor " << p.tensor
                                 << " is prefetched in member " << p.member
                                 << ", not before its last reader " << uses.at(p.tensor).second;
    if (p.begin < 0 || p.end <= p.begin || p.end > bytes)
      TILECORE_THROW(ValueError) << "GroupKernels: prefetch of bytes [" << p.begin << ", " << p.end
                                 << ") of tensor " << p.tensor << " (" << bytes << " bytes)";
    auto [it, fresh] = fetched_from.emplace(p.tensor, p.member);
    if (!fresh) it->second = std::min(it->second, p.member);
    auto [jt, fresh2] = fetched_until.emplace(p.tensor, p.member);
    if (!fresh2) jt->second = std::max(jt->second, p.member);
  }
  // a prefetched tensor's rows cover it, once: its readers read all of it from L2
  for (const auto& [id, m] : fetched_from) {
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const GroupPrefetch& p : prefetch)
      if (p.tensor == id) spans.emplace_back(p.begin, p.end);
    std::sort(spans.begin(), spans.end());
    int64_t at = 0;
    for (const auto& [b, e] : spans) {
      if (b != at) break;
      at = e;
    }
    const int64_t bytes = ConstBytes(tensor.at(id));
    if (at != bytes)
      TILECORE_THROW(ValueError) << "GroupKernels: the prefetches of tensor " << id
                                 << " do not cover its " << bytes << " bytes once (a gap or an "
                                 << "overlap at byte " << at << ")";
  }
  int64_t own = 0;  // the most L2 a member's own buffers take, above the arena
  for (const PrimFunc& f : funcs) own = std::max(own, OwnL2Bytes(f->body));
  // The in-place Concats' inputs: each lives at a byte offset of another intermediate (its
  // `root`), which lives from the first of them used to the last.
  std::vector<int64_t> in_place;
  Places place_in;
  if (concat_in_place)
    place_in = PlaceConcatInputs(
        funcs, args, first, [&](int64_t id) { return tensor.count(id) == 0; }, &in_place);
  std::vector<int64_t> ids;
  std::vector<BufferLife> lives;
  MemoryPlan plan;
  // the prefetches that fit, the latest reader's dropped first (its reader reads the DDR)
  while (true) {
    ids.clear();
    lives.clear();
    std::map<int64_t, std::pair<int64_t, int64_t>> span;  // a root -> the uses of all it holds
    for (const auto& [id, use] : uses) {
      if (tensor.count(id)) continue;
      auto [it, fresh] = span.emplace(RootOf(place_in, id).first, use);
      if (!fresh)
        it->second = {std::min(it->second.first, use.first),
                      std::max(it->second.second, use.second)};
    }
    for (const auto& [id, b] : first) {
      bool fetched = fetched_from.count(id) > 0;
      if (tensor.count(id) && !fetched) continue;
      if (place_in.count(id)) continue;
      BufferLife life{b->dtype.lane_bytes(), fetched ? fetched_from.at(id) : span.at(id).first,
                      fetched ? uses.at(id).second : span.at(id).second};
      for (const PrimExpr& d : b->shape) {
        const auto* c = d.as<IntImmNode>();
        if (!c)
          TILECORE_THROW(ValueError)
              << "GroupKernels: intermediate " << id << " has a shape that is not constant";
        life.size *= c->value;
      }
      ids.push_back(id);
      lives.push_back(life);
    }
    plan = PlanMemory(lives);
    if (!place_in.empty() && plan.arena_size + own > l2_bytes) {  // the Concats copy instead
      place_in.clear();
      in_place.clear();
      continue;
    }
    if (fetched_from.empty() || plan.arena_size + own <= l2_bytes) break;
    // (the reader: the first member after the last fetching it)
    auto reader = [&](int64_t id) {
      for (size_t i = size_t(fetched_until.at(id)) + 1; i < args.size(); ++i)
        if (std::find(args[i].begin(), args[i].end(), id) != args[i].end()) return int64_t(i);
      return int64_t(args.size());
    };
    int64_t latest = fetched_from.begin()->first;
    for (const auto& [id, m] : fetched_from)
      if (reader(id) > reader(latest)) latest = id;
    fetched_from.erase(latest);
  }
  Buffer arena;
  if (!lives.empty())
    arena = DeclBuffer({IntImm(DataType::Int(32), plan.arena_size)}, DataType::Int(8), String("l2"),
                       "shared");
  std::map<int64_t, Buffer> param_of;  // prefetched id -> its DDR param
  std::map<int64_t, int64_t> offset_of;
  for (size_t k = 0; k < ids.size(); ++k) {
    const Buffer& b = first.at(ids[k]);
    Buffer nb(arena->data, b->dtype, b->shape, {},
              IntImm(DataType::Int(32), plan.offsets[k] / b->dtype.lane_bytes()), String("shared"),
              String("t" + std::to_string(ids[k])));
    offset_of[ids[k]] = plan.offsets[k];
    if (tensor.count(ids[k])) param_of.emplace(ids[k], tensor.at(ids[k]));
    tensor[ids[k]] = nb;
  }
  for (const auto& [id, parent] : place_in) {
    const Buffer& b = first.at(id);
    auto [root, at] = RootOf(place_in, id);
    const int64_t offset = offset_of.at(root) + at;
    tensor[id] = Buffer(arena->data, b->dtype, b->shape, {},
                        IntImm(DataType::Int(32), offset / b->dtype.lane_bytes()), String("shared"),
                        String("t" + std::to_string(id)));
    offset_of[id] = offset;
  }
  // the members with code of their own (an in-place Concat copies nothing)
  std::vector<bool> has_code(funcs.size(), true);
  for (int64_t k : in_place) has_code[size_t(k)] = false;
  std::vector<Stmt> rebound;
  for (size_t i = 0; i < funcs.size(); ++i) {
    std::unordered_map<const VarNode*, Buffer> to;
    for (size_t k = 0; k < args[i].size(); ++k) {
      const int64_t id = args[i][k];
      const bool before = param_of.count(id) && int64_t(i) <= fetched_until.at(id);
      to.emplace(funcs[i]->params[k].get(), before ? param_of.at(id) : tensor.at(id));
    }
    rebound.push_back(
        has_code[i] ? RebindBuffers(std::move(to), sliced_vars, slice).VisitStmt(funcs[i]->body)
                    : EmptyCores(funcs[i]->body));
  }
  // Each member's first loads of the group's inputs (read-only) handed to its giver, the
  // member before it that has code (member_handoff.h; an in-place Concat has none, and
  // handed to it the loads would run alone, their latency exposed): early (the loads in
  // buffers with places of their own, the members with code alternately in two halves of
  // an area, a member's live from its giver on) when the giver reads none of the inputs
  // (the DDR is idle meanwhile), moves kEarlyShare times their bytes or more itself (queued
  // between its own copies, they delay them less) and every member's own buffers fit
  // beside the area; else late, each engine's loads in their order.
  std::unordered_set<const VarNode*> read_only;
  for (size_t k = 0; k < inputs.size(); ++k) read_only.insert(params[k].get());
  const size_t n = funcs.size();
  const std::vector<Stmt> original = rebound;
  std::vector<FirstLoads> handed(n);
  std::vector<int64_t> giver(n, -1), half(n, 0);  // half: of the early handoffs' area
  {
    int64_t last = -1, with_code = 0;
    for (size_t i = 0; i < n; ++i) {
      giver[i] = last;
      half[i] = with_code % 2;
      if (has_code[i]) {
        last = int64_t(i);
        ++with_code;
      }
    }
  }
  // A weight prefetched into L2 during a member before member i's giver (so the barrier
  // ending it is behind) is as read-only to member i's handoff as the DDR's inputs. Only
  // while it lives: once its last reader is done, its place in the arena is another
  // intermediate's, which a member before i may still be writing.
  const bool forever = testing_prefetched_places_read_only_forever;
  auto settled_before = [&](size_t i) {
    return [&, i](const Buffer& b) {
      if (!arena.defined() || !b->data.same_as(arena->data)) return false;
      const auto off = ConstOffset(b->elem_offset);
      const int64_t bytes = ConstBytes(b);
      if (!off || bytes < 0) return false;
      const int64_t lo = *off * b->dtype.lane_bytes(), hi = lo + bytes;
      for (const auto& [id, from] : fetched_from) {
        if (fetched_until.at(id) >= giver[i] || (uses.at(id).second < int64_t(i) && !forever))
          continue;
        const int64_t at = offset_of.at(id);
        if (lo >= at && hi <= at + ConstBytes(tensor.at(id))) return true;
      }
      return false;
    };
  };
  auto take = [&](size_t i, bool keep_order) {
    rebound[i] = original[i];
    if (giver[i] < 0) return;
    handed[i] = TakeFirstLoads(&rebound[i], read_only, keep_order, settled_before(i));
    if (!handed[i].loads.empty() && !CanHandOff(rebound[giver[i]], handed[i])) {
      rebound[i] = original[i];
      handed[i] = FirstLoads();
    }
  };
  std::vector<bool> early(n, false);
  for (size_t i = 1; handoff != Handoff::kNone && i < n; ++i) take(i, false);
  for (size_t i = 1; i < n; ++i) {
    if (handed[i].loads.empty()) continue;
    auto [in, out] = EngineBytes(rebound[giver[i]]);
    // (a load from L2 holds the shared level a quarter as long as one from the DDR)
    const auto [from_ddr, from_l2] = BytesBySource(handed[i].loads);
    early[i] = !ReadsInputs(rebound[giver[i]], read_only) &&
               from_ddr * kEarlyShare + from_l2 * kEarlyShare / 4 <= in + out;
  }
  int64_t area[2] = {0, 0};
  std::vector<std::vector<int64_t>> offsets(n);
  auto place = [&]() {
    area[0] = area[1] = 0;
    for (size_t i = 1; i < n; ++i) {
      offsets[i].clear();
      int64_t at = 0;
      for (const Buffer& b : early[i] ? handed[i].buffers : std::vector<Buffer>{}) {
        offsets[i].push_back(at);
        at += (ConstBytes(b) + 63) / 64 * 64;
      }
      area[half[i]] = std::max(area[half[i]], at);
    }
    return area[0] + area[1];
  };
  bool fits = place() > 0;
  for (const Stmt& m : rebound) fits = fits && LocalBound(m) + area[0] + area[1] <= l1_bytes;
  if (!fits || handoff != Handoff::kEarly) early.assign(n, false);
  for (size_t i = 1; handoff != Handoff::kNone && i < n; ++i)
    if (!early[i]) take(i, true);
  const int64_t reserved = place();
  Map<Var, Array<int64_t>> pinned;
  for (size_t i = 1; i < n; ++i) {
    for (size_t k = 0; k < offsets[i].size(); ++k)
      pinned.Set(handed[i].buffers[k]->data,
                 Array<int64_t>{(half[i] ? area[0] : 0) + offsets[i][k], reserved});
  }
  std::vector<int64_t> receiver(n, -1);  // the member whose first loads a member issues
  for (size_t i = 1; i < n; ++i)
    if (!handed[i].loads.empty()) receiver[giver[i]] = int64_t(i);
  std::vector<Stmt> bodies;
  for (size_t i = 0; i < funcs.size(); ++i) {
    Stmt member = rebound[i];
    if (handed[i].event >= 0) member = WaitHanded(member, handed[i]);
    // handed early: spread over the member's own work (the prefetch's pieces then go between)
    const bool hand = receiver[i] >= 0;
    if (hand && early[receiver[i]]) member = HandOff(member, &handed[receiver[i]], &read_only);
    std::vector<PrefetchCopy> copies;
    for (const GroupPrefetch& p : prefetch) {
      if (p.member != int64_t(i) || !param_of.count(p.tensor)) continue;
      const Buffer& src = param_of.at(p.tensor);
      Buffer bytes(src->data, DataType::Int(8), {IntImm(DataType::Int(32), ConstBytes(src))}, {},
                   IntImm(DataType::Int(32), 0), src->scope,
                   String(std::string(src->name.view()) + "_bytes"));
      copies.push_back({bytes, arena, p.begin, offset_of.at(p.tensor) + p.begin, p.end - p.begin});
    }
    member = InterleavePrefetch(member, copies);
    // (handed late: after the prefetch's pieces, the member's last statements, into L1 none
    // of its own uses after them)
    if (hand && !early[receiver[i]]) member = HandOff(member, &handed[receiver[i]]);
    bodies.push_back(TagMember(int64_t(i)).VisitStmt(member));
  }
  Stmt body = bodies.size() == 1 ? bodies[0] : SeqStmt(bodies);
  // the members run once per slice of the batch, their intermediates in the same places
  if (slices > 1)
    body = For(slice, IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), slices),
               ForKind::kSerial, body);
  if (arena.defined()) body = Allocate(arena, body);
  Map<String, Any> attrs;
  attrs.Set("global_symbol", String(name));
  attrs.Set("op_type", String("group"));
  attrs.Set("input_params", static_cast<int64_t>(inputs.size()));
  // what the driver's prefetch planner needs to know: the L2 taken, and what was kept
  attrs.Set("arena_bytes", plan.arena_size);
  attrs.Set("own_l2_bytes", own);
  Array<Any> kept;  // the prefetch rows kept
  for (const GroupPrefetch& p : prefetch) {
    if (fetched_from.count(p.tensor))
      kept.push_back(Any(Array<int64_t>{p.tensor, p.member, p.begin, p.end}));
  }
  attrs.Set("prefetch", kept);
  attrs.Set("early_handoffs", int64_t(std::count(early.begin(), early.end(), true)));
  attrs.Set("in_place_concats", Array<int64_t>(in_place));
  if (slices > 1) attrs.Set("slices", slices);
  // each member's plan, as its strategy named it (plan_registry.h; "" where none did)
  Array<String> member_plans;
  for (const PrimFunc& f : funcs) {
    auto plan = f->attrs.Get("plan");
    auto text = plan ? plan->try_cast<String>() : std::nullopt;
    member_plans.push_back(text ? *text : String(""));
  }
  attrs.Set("member_plans", member_plans);
  // where each intermediate (and prefetched input) lives while it lives, for the debuggers:
  // [id, byte offset in the arena, dtype, shape], the whole tensor row-major
  Array<Any> places;
  for (const auto& [id, at] : offset_of) {
    const Buffer& b = tensor.at(id);
    Array<int64_t> shape;
    for (const PrimExpr& d : b->shape) shape.push_back(d.as<IntImmNode>()->value);
    places.push_back(Any(Array<Any>{Any(id), Any(at), Any(String(b->dtype.str())), Any(shape)}));
  }
  attrs.Set("l2_places", places);
  if (!pinned.empty()) attrs.Set(transform::kL1PinnedAttr, pinned);
  return PrimFunc(params, body, buffer_map, attrs);
}

TILECORE_REGISTER_GLOBAL("compiler.GroupKernels")
    .set_body_typed([](Array<PrimFunc> funcs, Array<Array<int64_t>> args, Array<int64_t> inputs,
                       Array<int64_t> outputs, String name, Array<Array<int64_t>> prefetch,
                       int64_t l2_bytes, int64_t l1_bytes, int64_t handoff, bool concat_in_place,
                       int64_t slices, Array<int64_t> sliced) -> PrimFunc {
      auto ints = [](const Array<int64_t>& v) {
        std::vector<int64_t> out;
        for (int64_t x : v) out.push_back(x);
        return out;
      };
      std::vector<PrimFunc> f;
      for (const PrimFunc& x : funcs) f.push_back(x);
      std::vector<std::vector<int64_t>> a;
      for (const auto& row : args) a.push_back(ints(row));
      std::vector<GroupPrefetch> p;
      for (const auto& row : prefetch) {
        if (row.size() != 4)
          TILECORE_THROW(ValueError) << "GroupKernels: a prefetch is [tensor, member, begin, end]";
        p.push_back({row[0], row[1], row[2], row[3]});
      }
      if (handoff < 0 || handoff > 2)
        TILECORE_THROW(ValueError)
            << "GroupKernels: handoff " << handoff << " (0 none, 1 late, 2 early)";
      return GroupKernels(f, a, ints(inputs), ints(outputs), std::string(name), p, l2_bytes,
                          l1_bytes, Handoff(handoff), concat_in_place, slices, ints(sliced));
    });

// the most parameters a group kernel may take (its inputs and outputs): the npu's
TILECORE_REGISTER_GLOBAL("compiler.GroupMaxParams").set_body_typed([]() -> int64_t {
  return runtime::kNpuMaxArgs;
});

TILECORE_REGISTER_GLOBAL("compiler.testing.PrefetchedPlacesReadOnlyForever")
    .set_body_typed([](bool on) -> bool {
      const bool was = testing_prefetched_places_read_only_forever;
      testing_prefetched_places_read_only_forever = on;
      return was;
    });

}  // namespace compiler
}  // namespace tilecore
