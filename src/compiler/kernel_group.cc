/*
 * src/compiler/kernel_group.cc — GroupKernels (kernel_group.h): each member's parameter
 * buffers rebound to the group's parameters or to its L2 intermediates.
 */
#include "tilecore/compiler/kernel_group.h"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilecore/compiler/cost_model.h"
#include "tilecore/compiler/memory_plan.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"

namespace tilecore {
namespace compiler {

using namespace ir;  // NOLINT

namespace {

/*! \brief Every buffer on one of `to`'s data variables gets that buffer's data and scope
 * (shape, strides, offset and dtype stay: a view stays a view). */
class RebindBuffers : public IRMutator {
 public:
  explicit RebindBuffers(std::unordered_map<const VarNode*, Buffer> to) : to_(std::move(to)) {}

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
    Buffer r(t->data, b->dtype, b->shape, b->strides, offset, t->scope, b->name);
    done_.emplace(b.get(), r);
    return r;
  }
  std::unordered_map<const VarNode*, Buffer> to_;
  std::unordered_map<const BufferNode*, Buffer> done_;
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

}  // namespace

PrimFunc GroupKernels(const std::vector<PrimFunc>& funcs,
                      const std::vector<std::vector<int64_t>>& args,
                      const std::vector<int64_t>& inputs, const std::vector<int64_t>& outputs,
                      const std::string& name) {
  if (funcs.empty() || funcs.size() != args.size())
    TILECORE_THROW(ValueError) << "GroupKernels: " << funcs.size() << " kernels and " << args.size()
                               << " argument lists";
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
    Buffer nb = DeclBuffer(b->shape, b->dtype, String("t" + std::to_string(id)), scope);
    tensor.emplace(id, nb);
    return nb;
  };
  for (const auto* ids : {&inputs, &outputs}) {
    for (int64_t id : *ids) {
      Buffer b = declare(id, "global");
      params.push_back(b->data);
      buffer_map.Set(b->data, b);
    }
  }
  // The intermediates share one L2 arena, planned as the DDR's is (memory_plan.h): each
  // lives from the first member that takes it to the last (the members run one after
  // another, each fenced, so a dead intermediate's place is free).
  std::vector<int64_t> ids;
  std::vector<BufferLife> lives;
  for (const auto& [id, b] : first) {
    if (tensor.count(id)) continue;
    BufferLife life{b->dtype.lane_bytes(), -1, -1};
    for (size_t i = 0; i < args.size(); ++i) {
      for (int64_t a : args[i]) {
        if (a != id) continue;
        if (life.first < 0) life.first = int64_t(i);
        life.last = int64_t(i);
      }
    }
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
  const MemoryPlan plan = PlanMemory(lives);
  Buffer arena;
  if (!lives.empty())
    arena = DeclBuffer({IntImm(DataType::Int(32), plan.arena_size)}, DataType::Int(8), String("l2"),
                       "shared");
  for (size_t k = 0; k < ids.size(); ++k) {
    const Buffer& b = first.at(ids[k]);
    Buffer nb(arena->data, b->dtype, b->shape, {},
              IntImm(DataType::Int(32), plan.offsets[k] / b->dtype.lane_bytes()), String("shared"),
              String("t" + std::to_string(ids[k])));
    tensor.emplace(ids[k], nb);
  }
  std::vector<Stmt> bodies;
  for (size_t i = 0; i < funcs.size(); ++i) {
    std::unordered_map<const VarNode*, Buffer> to;
    for (size_t k = 0; k < args[i].size(); ++k)
      to.emplace(funcs[i]->params[k].get(), tensor.at(args[i][k]));
    Stmt member = RebindBuffers(std::move(to)).VisitStmt(funcs[i]->body);
    bodies.push_back(TagMember(int64_t(i)).VisitStmt(member));
  }
  Stmt body = bodies.size() == 1 ? bodies[0] : SeqStmt(bodies);
  if (arena.defined()) body = Allocate(arena, body);
  Map<String, Any> attrs;
  attrs.Set("global_symbol", String(name));
  attrs.Set("op_type", String("group"));
  attrs.Set("input_params", static_cast<int64_t>(inputs.size()));
  return PrimFunc(params, body, buffer_map, attrs);
}

TILECORE_REGISTER_GLOBAL("compiler.GroupKernels")
    .set_body_typed([](Array<PrimFunc> funcs, Array<Array<int64_t>> args, Array<int64_t> inputs,
                       Array<int64_t> outputs, String name) -> PrimFunc {
      auto ints = [](const Array<int64_t>& v) {
        std::vector<int64_t> out;
        for (int64_t x : v) out.push_back(x);
        return out;
      };
      std::vector<PrimFunc> f;
      for (const PrimFunc& x : funcs) f.push_back(x);
      std::vector<std::vector<int64_t>> a;
      for (const auto& row : args) a.push_back(ints(row));
      return GroupKernels(f, a, ints(inputs), ints(outputs), std::string(name));
    });

}  // namespace compiler
}  // namespace tilecore
