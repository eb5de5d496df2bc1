/*
 * src/compiler/cost_model.cc — EstimateKernel (cost_model.h): the commands each core
 * issues, priced by arch/cost.h, placed on the engines of all cores.
 */
#include "tilecore/compiler/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "tilecore/arch/cost.h"
#include "tilecore/arch/tile_ops.h"
#include "tilecore/codegen/lowering.h"
#include "tilecore/codegen/tile_operand.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/intrinsics.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/stmt.h"
#include "tilecore/runtime/npu_module.h"
#include "tilecore/target/target.h"

namespace tilecore {
namespace compiler {

using namespace ir;  // NOLINT
using arch::Space;

namespace {

constexpr int kDin = 0, kDout = 1, kMm = 2, kVec = 3;
// Front-end estimates (scalar instructions at one cycle each): a command's address
// arithmetic and issue; a loop iteration's increment, compare and taken branch.
constexpr int64_t kIssueCycles = 4;
constexpr int64_t kLoopCycles = 3;
constexpr int64_t kWaitCycles = 2;
// A scalar load or store: its address arithmetic and the access.
constexpr int64_t kScalarAccessCycles = 3;

// the engines' names, indexed as arch::Engine (what the estimate reports)
constexpr const char* kEngineNames[4] = {"din", "dout", "mm", "vec"};

/*! \brief One entry of a core's program as the front end sees it. */
struct Event {
  enum Kind : uint8_t { kIssue, kWaitFrontEnd, kWaitQueue, kBarrier, kScalar, kMember, kDrain };
  explicit Event(Kind k) : kind(k) {}
  Kind kind;
  int8_t engine = 0;  // kIssue: its queue; kWait*: the engine waited on
  int8_t queue = 0;   // kWaitQueue: the queue that waits
  int64_t count = 0;  // kWait*: completion count waited for; kMember: the member index
  int64_t cost = 0;   // front-end cycles (kIssue, kScalar)
  // kIssue: engine cycles (DMA: beats); kMember: which run of the member on this core (0, 1,
  // ...: a group run in slices runs each member once per slice)
  int64_t cycles = 0;
  int64_t latency = 0;  // kIssue: added after the data
  int64_t occ_ddr = 0, occ_l2 = 0;
  bool drains = false;  // kBarrier: the codegen fences first (tir.barrier, not _no_drain)
  bool handed = false;  // kIssue: a load handed on late (after tir.drain): the next member's
  // kIssue: the mm and the vec command counts its queue waits for (0: none; a wait for the
  // n-th command of an engine covers every one before it)
  std::array<int64_t, 2> deps{};
};

/*! \brief A call site's constant facts, decoded once. */
struct Site {
  int engine = 0;
  int64_t cycles = 0, latency = 0, occ_ddr = 0, occ_l2 = 0;
  int64_t cycles_conflict = 0;     // compute: the cycles when the sources share an L1 bank
  PrimExpr off_a, off_b;           // compute: source element offsets (bank check)
  const VarNode* buf_a = nullptr;  // and their buffers
  const VarNode* buf_b = nullptr;
  int es_a = 1, es_b = 1;
  bool check_conflict = false;
  std::vector<const VarNode*> buffers;  // every buffer the command touches
  std::vector<int64_t> units;           // its slab count (codegen ordering.cc), per buffer
  std::vector<PrimExpr> slab;           // the slab it touches, or undefined for all
  bool dma = false;
  uint64_t macs = 0, ddr_bytes = 0;
};

Space SpaceOfScope(const String& scope) {
  std::string_view s = scope.view();
  if (s == "local") return Space::L1;
  if (s == "shared") return Space::L2;
  return Space::DDR;
}

arch::DType ToArch(DataType t) {
  if (t.code == kDLBfloat) return arch::DType::BF16;
  if (t.is_float()) return t.bits() == 16 ? arch::DType::F16 : arch::DType::F32;
  if (t.is_bool()) return arch::DType::Bool;
  bool u = t.is_uint();
  switch (t.bits()) {
    case 8:
      return u ? arch::DType::U8 : arch::DType::I8;
    case 16:
      return u ? arch::DType::U16 : arch::DType::I16;
    default:
      return u ? arch::DType::U32 : arch::DType::I32;
  }
}

struct Shape {
  std::vector<int64_t> shape, strides;
};

// The codegen's normalisation of DMA and vector operands: drop extents of 1, merge
// dimensions contiguous in every operand.
void Squeeze(Shape* t) {
  Shape o;
  for (size_t i = 0; i < t->shape.size(); ++i)
    if (t->shape[i] != 1) {
      o.shape.push_back(t->shape[i]);
      o.strides.push_back(t->strides[i]);
    }
  if (o.shape.empty()) o = Shape{{1}, {1}};
  *t = o;
}

bool IsContiguous(const Shape& t) {
  int64_t s = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != s) return false;
    s *= t.shape[i];
  }
  return true;
}

void Align(std::vector<Shape*> ts) {
  for (Shape* t : ts) Squeeze(t);
  const Shape* model = ts[0];
  for (Shape* t : ts)
    if (!IsContiguous(*t)) model = t;
  for (Shape* t : ts) {
    if (t->shape == model->shape) continue;
    t->shape = model->shape;
    t->strides.assign(t->shape.size(), 1);
    for (size_t i = t->shape.size() - 1; i-- > 0;)
      t->strides[i] = t->strides[i + 1] * t->shape[i + 1];
  }
  bool changed = true;
  while (changed) {
    changed = false;
    size_t r = ts[0]->shape.size();
    for (size_t k = 0; k + 1 < r && !changed; ++k) {
      bool ok = true;
      for (Shape* t : ts) ok = ok && t->strides[k] == t->shape[k + 1] * t->strides[k + 1];
      if (!ok) continue;
      for (Shape* t : ts) {
        t->shape[k] *= t->shape[k + 1];
        t->strides[k] = t->strides[k + 1];
        t->shape.erase(t->shape.begin() + long(k) + 1);
        t->strides.erase(t->strides.begin() + long(k) + 1);
      }
      changed = true;
    }
  }
}

template <typename T>
std::array<T, 4> Dims(const std::vector<int64_t>& v, T fill) {
  std::array<T, 4> a{fill, fill, fill, fill};
  for (size_t i = 0; i < v.size() && i < 4; ++i) a[i] = T(v[i]);
  return a;
}

class Walker {
 public:
  Walker(const PrimFunc& f, int cores) : f_(f), cores_(cores) {
    if (auto v = f->attrs.Get("memory_plan")) {
      auto plan = v->cast<Map<Var, Array<Any>>>();
      for (const auto& [var, entry] : plan.items()) plan_[var.get()] = entry[0].cast<int64_t>();
    }
  }

  /*! \brief The events of core `core` (of `ncores` the kernel's cores loop spans), into
   * `out` (its buffer reused). */
  void Run(int core, std::vector<Event>* out) {
    core_ = core;
    events_.swap(*out);
    events_.clear();
    events_.reserve(events_seen_);  // (the cores run much the same code: one allocation)
    env_.clear();
    mem_.clear();
    issued_ = {0, 0, 0, 0};
    last_.clear();
    fe_pending_ = 0;
    member_ = -1;
    member_runs_.clear();
    handed_off_ = false;
    Visit(f_->body);
    Flush();
    events_seen_ = std::max(events_seen_, events_.size());
    events_.swap(*out);
  }

  uint64_t macs = 0, ddr_bytes = 0;
  std::vector<uint64_t> member_macs;  // per layer-group member, over all cores

 private:
  size_t events_seen_ = 0;  // the most events a core's run gave
  // ---- expressions -------------------------------------------------------------------------
  // (an element read where it is stored, or null when it is not an object: Array::Get's
  // copy of each took a reference count, on every statement and argument of the walk)
  template <typename T>
  static const Object* ObjectAt(const Array<T>& a, size_t i) {
    const TCFFIAny* x = a.raw(i).raw();
    return x->type_index >= kTCFFIStaticObjectBegin
               ? ffi::details::ObjectUnsafe::FromHandle(x->v_obj)
               : nullptr;
  }
  static const Object* ArgOf(const CallNode* c, size_t i) { return ObjectAt(c->args, i); }
  static const StringImmNode* StringOf(const Object* o) {
    return o != nullptr && o->IsInstance<StringImmNode>() ? static_cast<const StringImmNode*>(o)
                                                          : nullptr;
  }
  double EvalArg(const CallNode* c, size_t i) {
    const Object* o = ArgOf(c, i);
    return o != nullptr ? Eval(o) : Eval(c->args[i]);
  }
  double Eval(const PrimExpr& e) { return Eval(e.get()); }
  double Eval(const Object* o) {
    // (a switch on the node's kind: each `as<>` of a chain was a type check)
    switch (NodeKindOf(o)) {
      case NodeKind::kIntImm:
        return double(static_cast<const IntImmNode*>(o)->value);
      case NodeKind::kFloatImm:
        return static_cast<const FloatImmNode*>(o)->value;
      case NodeKind::kVar: {
        auto it = env_.find(static_cast<const VarNode*>(o));
        return it == env_.end() ? 0.0 : it->second;
      }
      case NodeKind::kCast: {
        const auto* n = static_cast<const CastNode*>(o);
        double v = Eval(n->value);
        return n->dtype.is_float() ? v : std::trunc(v);
      }
      case NodeKind::kSelect: {  // scalar code evaluates both sides
        const auto* n = static_cast<const SelectNode*>(o);
        double cond = Eval(n->condition), a = Eval(n->true_value), b = Eval(n->false_value);
        return cond != 0 ? a : b;
      }
      case NodeKind::kCall:
        return ScalarCall(static_cast<const CallNode*>(o));
      case NodeKind::kNot:
        return Eval(static_cast<const NotNode*>(o)->a) == 0 ? 1 : 0;
      case NodeKind::kLet: {
        const auto* n = static_cast<const LetNode*>(o);
        env_[n->var.get()] = Eval(n->value);
        return Eval(n->body);
      }
      case NodeKind::kBufferLoad: {
        const auto* n = static_cast<const BufferLoadNode*>(o);
        scalar_ops_ += kScalarAccessCycles;
        Space sp = SpaceOfScope(n->buffer->scope);
        if (sp != Space::L1) scalar_ops_ += arch::cost::level_latency(sp);
        auto it = mem_.find(n->buffer->data.get());
        if (it == mem_.end() || n->indices.size() != 1) return 0;
        auto idx = int64_t(Eval(n->indices[0]));
        return idx >= 0 && size_t(idx) < it->second.size() ? it->second[size_t(idx)] : 0.0;
      }
#define TILECORE_COST_BINARY_CASE(Name) case NodeKind::k##Name:
        TILECORE_IR_FOR_EACH_BINARY(TILECORE_COST_BINARY_CASE)
#undef TILECORE_COST_BINARY_CASE
        return EvalBinary(static_cast<const BinaryOpNode*>(o), NodeKindOf(o));
      default:
        return 0;
    }
  }

  double EvalBinary(const BinaryOpNode* n, NodeKind kind) {
    ++scalar_ops_;
    double a = Eval(n->a), b = Eval(n->b);
    bool fl = n->a.dtype().is_float();
    switch (kind) {
      case NodeKind::kAdd:
        return a + b;
      case NodeKind::kSub:
        return a - b;
      case NodeKind::kMul:
        return a * b;
      case NodeKind::kDiv:
        return b == 0 ? 0 : (fl ? a / b : std::trunc(a / b));
      case NodeKind::kMod:
        return b == 0 ? 0 : std::fmod(a, b);
      case NodeKind::kFloorDiv:
        return b == 0 ? 0 : std::floor(a / b);
      case NodeKind::kFloorMod:
        return b == 0 ? 0 : a - std::floor(a / b) * b;
      case NodeKind::kMin:
        return std::min(a, b);
      case NodeKind::kMax:
        return std::max(a, b);
      case NodeKind::kEQ:
        return a == b;
      case NodeKind::kNE:
        return a != b;
      case NodeKind::kLT:
        return a < b;
      case NodeKind::kLE:
        return a <= b;
      case NodeKind::kGT:
        return a > b;
      case NodeKind::kGE:
        return a >= b;
      case NodeKind::kAnd:
        return (a != 0) && (b != 0);
      case NodeKind::kOr:
        return (a != 0) || (b != 0);
      default:
        return 0;
    }
  }

  // ---- statements --------------------------------------------------------------------------
  void Visit(const Stmt& s) { Visit(s.get()); }
  // (a switch on the node's kind, and a sequence's statements visited without taking a
  // reference to each: the walk of a layer group's kernel visits every statement per core)
  void Visit(const Object* s) {
    if (s == nullptr) return;
    const NodeKind kind = NodeKindOf(s);
    if (kind == NodeKind::kSeqStmt) {
      const auto* n = static_cast<const SeqStmtNode*>(s);
      for (size_t i = 0, size = n->seq.size(); i < size; ++i) Visit(ObjectAt(n->seq, i));
    } else if (kind == NodeKind::kFor) {
      const auto* n = static_cast<const ForNode*>(s);
      auto lo = int64_t(Eval(n->min)), ext = int64_t(Eval(n->extent));
      if (n->kind == ForKind::kCores) {
        // the codegen fences and synchronises the cores before and after every cores loop
        // (but for a handoff: kCoresHandoffAnnotation)
        const bool handoff = n->annotations.Get(kCoresHandoffAnnotation).has_value();
        if (cores_ > 1 && !handed_off_) Barrier(true);
        handed_off_ = false;
        if (auto m = n->annotations.Get(kGroupMemberAnnotation)) {
          Flush();
          Event e(Event::kMember);
          e.count = m->cast<int64_t>();
          // (a member's body may hold several cores loops: a run begins where another
          // member's ended)
          int64_t& runs = member_runs_[e.count];
          e.cycles = e.count == member_ ? runs - 1 : runs++;
          member_ = e.count;
          events_.push_back(std::move(e));
        }
        if (core_ < ext) {
          env_[n->loop_var.get()] = double(lo + core_);
          drained_ = false;
          Visit(n->body);
          drained_ = false;
        }
        if (cores_ > 1) Barrier(!handoff);
        handed_off_ = handoff;
        return;
      }
      if (n->kind == ForKind::kVectorized) {  // SIMD: about one instruction per 8 lanes
        env_[n->loop_var.get()] = double(lo);
        int64_t before = scalar_ops_;
        Visit(n->body);
        scalar_ops_ = before + (scalar_ops_ - before) * std::max<int64_t>(1, ext / 8);
        return;
      }
      // (the loop variable's entry found once: an unordered_map's elements stay where they
      // are when it grows)
      double& var = env_[n->loop_var.get()];
      const Object* body = n->body.get();
      const int64_t per_iteration = n->kind != ForKind::kUnrolled ? kLoopCycles : 0;
      for (int64_t i = 0; i < ext; ++i) {
        var = double(lo + i);
        scalar_ops_ += per_iteration;
        Visit(body);
      }
    } else if (kind == NodeKind::kAllocate) {
      const auto* n = static_cast<const AllocateNode*>(s);
      const BufferNode* b = n->buffer.get();
      if (b->dtype.is_int() && b->shape.size() == 1) {
        if (auto sz = as_const_int(b->shape[0]); sz && *sz <= 4096)
          mem_[b->data.get()].assign(size_t(*sz), 0.0);
      }
      Visit(n->body);
    } else if (kind == NodeKind::kLetStmt) {
      const auto* n = static_cast<const LetStmtNode*>(s);
      env_[n->var.get()] = Eval(n->value);
      Visit(n->body);
    } else if (kind == NodeKind::kIfThenElse) {
      const auto* n = static_cast<const IfThenElseNode*>(s);
      ++scalar_ops_;
      if (Eval(n->condition) != 0)
        Visit(n->then_case);
      else
        Visit(n->else_case);
    } else if (kind == NodeKind::kWhile) {
      const auto* n = static_cast<const WhileNode*>(s);
      for (int guard = 0; guard < 1000000 && Eval(n->condition) != 0; ++guard) Visit(n->body);
    } else if (kind == NodeKind::kBufferStore) {
      Store(static_cast<const BufferStoreNode*>(s));
    } else if (kind == NodeKind::kEvaluate) {
      const Object* v = static_cast<const EvaluateNode*>(s)->value.get();
      if (NodeKindOf(v) == NodeKind::kCall) Call(static_cast<const CallNode*>(v));
    }
  }

  // A math function in scalar code is a one-element vector command the front end waits
  // for (the codegen's TileScalar); other calls cost an instruction.
  double ScalarCall(const CallNode* c) {
    static const std::unordered_map<std::string_view, arch::Opcode> math = {
        {"tir.exp", arch::Opcode::Texp},        {"tir.log", arch::Opcode::Tlog},
        {"tir.sqrt", arch::Opcode::Tsqrt},      {"tir.rsqrt", arch::Opcode::Trsqrt},
        {"tir.recip", arch::Opcode::Trecip},    {"tir.tanh", arch::Opcode::Ttanh},
        {"tir.sigmoid", arch::Opcode::Tsigmoid}};
    double x = 0;  // the first argument's value (each is evaluated: its scalar work counts)
    for (size_t i = 0, n = c->args.size(); i < n; ++i) {
      const double v = EvalArg(c, i);
      if (i == 0) x = v;
    }
    ++scalar_ops_;
    if (c->op == "tc1.dma_issued")  // (the codegen's increment of the count's register)
      return double(issued_[size_t(!c->args.empty() && x != 0 ? kDout : kDin)]);
    auto it = math.find(c->op.view());
    if (it == math.end()) return 0;
    scalar_ops_ += 2 * kScalarAccessCycles;  // the operand to scratch and the result back
    Flush();
    Event e(Event::kIssue);
    e.engine = kVec;
    arch::DType dt = ToArch(c->dtype);
    e.cycles = arch::cost::vector(it->second, dt, dt, 1, false);
    e.cost = kIssueCycles;
    events_.push_back(std::move(e));
    Event w(Event::kWaitFrontEnd);
    w.engine = kVec;
    w.count = ++issued_[kVec];
    w.cost = kWaitCycles;
    events_.push_back(std::move(w));
    switch (it->second) {
      case arch::Opcode::Texp:
        return std::exp(x);
      case arch::Opcode::Tlog:
        return x > 0 ? std::log(x) : 0;
      case arch::Opcode::Tsqrt:
        return x > 0 ? std::sqrt(x) : 0;
      default:
        return x;
    }
  }

  void Store(const BufferStoreNode* n) {
    const VarNode* data = n->buffer->data.get();
    if (compute_bufs_.count(data)) SyncFrontEnd();
    double v = Eval(n->value);
    scalar_ops_ += kScalarAccessCycles;
    Space sp = SpaceOfScope(n->buffer->scope);
    if (sp != Space::L1) scalar_ops_ += arch::cost::level_latency(sp);
    auto it = mem_.find(data);
    if (it != mem_.end() && n->indices.size() == 1) {
      auto idx = int64_t(Eval(n->indices[0]));
      if (idx >= 0 && size_t(idx) < it->second.size()) it->second[size_t(idx)] = v;
    }
  }

  // Pending scalar cycles become one front-end event before the next synchronising one.
  void Barrier(bool drains) {
    Flush();
    Event e(Event::kBarrier);
    e.drains = drains;
    events_.push_back(std::move(e));
  }

  void Flush() {
    int64_t c = scalar_ops_ + fe_pending_;
    scalar_ops_ = fe_pending_ = 0;
    if (c <= 0) return;
    Event e(Event::kScalar);
    e.cost = c;
    events_.push_back(std::move(e));
  }

  void SyncFrontEnd() {
    for (int eng : {kMm, kVec}) {
      if (!pending_compute_) break;
      Flush();
      Event w(Event::kWaitFrontEnd);
      w.engine = int8_t(eng);
      w.count = issued_[size_t(eng)];
      w.cost = kWaitCycles;
      events_.push_back(std::move(w));
    }
    pending_compute_ = false;
  }

  static std::optional<arch::Engine> EngineOf(const Object* e) {
    const StringImmNode* s = StringOf(e);
    if (!s) return std::nullopt;
    return arch::parse_engine(std::string(s->value.view()));
  }

  void Call(const CallNode* c) {
    const std::string_view op = c->op.view();
    if (op == "tc1.wait") {
      auto on = EngineOf(ArgOf(c, 1));
      if (!on) return;
      auto count = int64_t(EvalArg(c, 2));
      Flush();
      const Object* q0 = ArgOf(c, 0);
      const StringImmNode* q = StringOf(q0);
      if (q && q->value.view() == "sc") {
        Event w(Event::kWaitFrontEnd);
        w.engine = int8_t(*on);
        w.count = count;
        w.cost = kWaitCycles;
        events_.push_back(std::move(w));
      } else if (auto qe = EngineOf(q0)) {
        Event w(Event::kWaitQueue);
        w.engine = int8_t(*on);
        w.queue = int8_t(*qe);
        w.count = count;
        w.cost = kWaitCycles;
        events_.push_back(std::move(w));
      }
      return;
    }
    if (IsBarrier(op)) {
      Barrier(op == "tir.barrier");
      return;
    }
    if (op == "tir.drain") {
      Flush();
      events_.push_back(Event(Event::kDrain));
      drained_ = true;
      return;
    }
    bool dma = op == "tc1.dma_in" || op == "tc1.dma_out" || op == "tc1.dma_fill_in";
    bool compute = op == "tile.mm" || op.rfind("tile.vec_", 0) == 0;
    if (!dma && !compute) return;
    const Site& site = SiteOf(c, op);
    macs += site.macs;
    ddr_bytes += site.ddr_bytes;
    if (member_ >= 0) {
      if (member_macs.size() <= size_t(member_)) member_macs.resize(size_t(member_) + 1, 0);
      member_macs[size_t(member_)] += site.macs;
    }
    Event e(Event::kIssue);
    e.handed = drained_;
    e.engine = int8_t(site.engine);
    e.cycles = site.cycles;
    e.latency = site.latency;
    e.occ_ddr = site.occ_ddr;
    e.occ_l2 = site.occ_l2;
    e.cost = kIssueCycles;
    if (site.check_conflict) {
      auto addr = [&](const VarNode* b, const PrimExpr& off, int es) {
        auto it = plan_.find(b);
        return uint64_t((it == plan_.end() ? 0 : it->second) + int64_t(Eval(off)) * es);
      };
      if (arch::cost::l1_bank(addr(site.buf_a, site.off_a, site.es_a)) ==
          arch::cost::l1_bank(addr(site.buf_b, site.off_b, site.es_b)))
        e.cycles = site.cycles_conflict;
    }
    // The codegen's ordering: a command waits in its queue for the last command of the
    // other compute engine (both, for a DMA) on each buffer it touches.
    const size_t nbuf = site.buffers.size();
    std::vector<int64_t>& slabs = slabs_;  // (one vector for every command: no allocation each)
    slabs.resize(nbuf);
    for (size_t k = 0; k < nbuf; ++k) {
      slabs[k] = site.slab[k].defined() ? int64_t(Eval(site.slab[k])) : -1;
      auto it = last_.find(site.buffers[k]);
      if (it == last_.end()) continue;
      auto& per = it->second;
      for (int other : {kMm, kVec}) {
        if (other == site.engine) continue;
        int64_t cnt = 0;
        for (size_t u = 0; u < per.size(); ++u)
          if (slabs[k] < 0 || int64_t(u) == slabs[k])
            cnt = std::max(cnt, per[u][size_t(other - kMm)]);
        int64_t& dep = e.deps[size_t(other - kMm)];
        dep = std::max(dep, cnt);
      }
    }
    Flush();
    int64_t n = ++issued_[size_t(site.engine)];
    if (compute) {
      for (size_t k = 0; k < site.buffers.size(); ++k) {
        auto& per = last_[site.buffers[k]];
        if (per.empty()) per.assign(size_t(site.units[k]), {0, 0});
        for (size_t u = 0; u < per.size(); ++u)
          if (slabs[k] < 0 || int64_t(u) == slabs[k]) per[u][size_t(site.engine - kMm)] = n;
      }
      pending_compute_ = true;
    }
    events_.push_back(std::move(e));
  }

  const Site& SiteOf(const CallNode* c, std::string_view op) {
    auto it = sites_.find(c);
    if (it != sites_.end()) return it->second;
    auto fail = [&](const std::string& what) {
      TILECORE_THROW(ValueError) << "cost model: " << what;
    };
    Site s;
    auto decode = [&](const PrimExpr& arg) {
      codegen::TileOperand t = codegen::DecodeTileOperand(arg, c, fail);
      s.buffers.push_back(t.buffer->data.get());
      // The codegen tracks a buffer per slab of its outermost dimension when that has 2..8
      // entries; a region of one slab (constant or not) waits for that slab only.
      const auto* r = arg.as<BufferRegionNode>();
      int64_t units = 1;
      PrimExpr slab;
      if (r->buffer->shape.size() >= 2) {
        if (auto n0 = as_const_int(r->buffer->shape[0]); n0 && *n0 > 1 && *n0 <= 8) units = *n0;
      }
      if (units > 1 && is_const_int(r->extents[0], 1)) slab = r->begin[0];
      s.units.push_back(units);
      s.slab.push_back(slab);
      return t;
    };
    if (op.rfind("tc1.dma", 0) == 0) {
      bool fill = op == "tc1.dma_fill_in";
      s.dma = true;
      s.engine = op == "tc1.dma_out" ? kDout : kDin;
      codegen::TileOperand d = decode(c->args[0]);
      codegen::TileOperand src = fill ? d : decode(c->args[1]);
      Shape ds{d.shape, d.strides}, ss{src.shape, src.strides};
      if (fill) {
        Align({&ds});
        ss = ds;
      } else {
        Align({&ds, &ss});
      }
      arch::DmaDesc desc;
      desc.src_dtype = ToArch(src.dtype);
      desc.dst_dtype = ToArch(d.dtype);
      desc.rank = uint8_t(std::min<size_t>(ds.shape.size(), 4));
      desc.shape = Dims<uint32_t>(ds.shape, 1);
      desc.src_stride = Dims<int32_t>(ss.strides, 0);
      desc.dst_stride = Dims<int32_t>(ds.strides, 0);
      if (fill) desc.flags |= arch::DmaDesc::kFill;
      Space dsp = SpaceOfScope(d.buffer->scope), ssp = SpaceOfScope(src.buffer->scope);
      arch::cost::DmaCost k = arch::cost::dma(desc, dsp, ssp);
      s.cycles = k.beats;
      s.latency = k.latency;
      s.occ_ddr = k.occupancy(Space::DDR, dsp, ssp, fill);
      s.occ_l2 = k.occupancy(Space::L2, dsp, ssp, fill);
      s.ddr_bytes = (dsp == Space::DDR ? k.bytes_written : 0) +
                    (ssp == Space::DDR && !fill ? k.bytes_read : 0);
    } else if (op == "tile.mm") {
      s.engine = kMm;
      codegen::TileOperand C = decode(c->args[0]), A = decode(c->args[1]), B = decode(c->args[2]);
      auto rows = [](const codegen::TileOperand& t) { return t.shape[t.shape.size() - 2]; };
      auto cols = [](const codegen::TileOperand& t) { return t.shape.back(); };
      arch::MmDesc md;
      md.m = uint32_t(rows(C));
      md.n = uint32_t(cols(C));
      md.k = uint32_t(cols(A));
      codegen::MatmulEpilogue epi = codegen::DecodeMatmulEpilogue(c, md.m, md.n, fail);
      if (epi.present) {
        md.flags = arch::MmDesc::kEpilogue;
        md.out_dtype = ToArch(C.dtype);
        if (epi.channel_scale) md.flags |= arch::MmDesc::kChannelScale;
        if (epi.has_residual) {
          md.flags |= arch::MmDesc::kResidual;
          md.res_dtype = ToArch(epi.residual.dtype);
        }
      }
      arch::DType in = ToArch(A.dtype);
      s.cycles = arch::cost::matrix(in, md, false).cycles;
      s.cycles_conflict = arch::cost::matrix(in, md, true).cycles;
      s.macs = arch::cost::matrix(in, md, false).macs;
      s.check_conflict = true;
      s.buf_a = A.buffer->data.get();
      s.buf_b = B.buffer->data.get();
      s.off_a = A.offset;
      s.off_b = B.offset;
      s.es_a = s.es_b = A.dtype.bits() / 8;
    } else {
      s.engine = kVec;
      const arch::TileOpInfo* row = arch::FindTileIntrinsic(op);
      codegen::TileOperand d = decode(c->args[0]), a = decode(c->args[1]);
      uint64_t n = 1;
      for (int64_t x : a.shape) n *= uint64_t(x);
      arch::DType dt = ToArch(d.dtype), at = dt;
      if (op == "tile.vec_lut") {  // tlut: outside the table of tile operations
        s.cycles = s.cycles_conflict = arch::cost::vector(arch::Opcode::Tlut, dt, dt, n, false);
        for (const VarNode* b : s.buffers) compute_bufs_.insert(b);
        return sites_.emplace(c, std::move(s)).first->second;
      }
      if (row == nullptr) fail("unknown vector intrinsic `" + std::string(op) + "`");
      if (row->form == arch::TileForm::Convert || row->form == arch::TileForm::Requant)
        at = ToArch(a.dtype);
      s.cycles = arch::cost::vector(row->op, dt, at, n, false);
      s.cycles_conflict = arch::cost::vector(row->op, dt, at, n, true);
      if (row->form == arch::TileForm::Binary) {
        codegen::TileOperand b = decode(c->args[2]);
        s.check_conflict = true;
        s.buf_a = a.buffer->data.get();
        s.buf_b = b.buffer->data.get();
        s.off_a = a.offset;
        s.off_b = b.offset;
        s.es_a = s.es_b = std::max(1, d.dtype.bits() / 8);
      }
      for (const VarNode* b : s.buffers) compute_bufs_.insert(b);
    }
    if (s.engine == kMm)
      for (const VarNode* b : s.buffers) compute_bufs_.insert(b);
    return sites_.emplace(c, std::move(s)).first->second;
  }

  PrimFunc f_;
  int cores_;
  int core_ = 0;
  std::unordered_map<const VarNode*, int64_t> plan_;
  std::unordered_map<const VarNode*, double> env_;
  std::unordered_map<const VarNode*, std::vector<double>> mem_;
  std::unordered_map<const CallNode*, Site> sites_;
  std::unordered_set<const VarNode*> compute_bufs_;
  // per buffer and slab: the count of the last mm and vector command that touched it
  std::unordered_map<const VarNode*, std::vector<std::array<int64_t, 2>>> last_;
  std::array<int64_t, 4> issued_{};
  std::vector<Event> events_;
  std::vector<int64_t> slabs_;  // Call's: the slab each buffer of the command touches
  int64_t scalar_ops_ = 0, fe_pending_ = 0;
  int64_t member_ = -1;  // the layer-group member whose cores loop is being walked
  std::unordered_map<int64_t, int64_t> member_runs_;  // member -> its runs walked so far
  bool handed_off_ = false;  // the last cores loop was a handoff: the next opens without a barrier
  bool drained_ = false;     // after tir.drain in a cores loop: loads handed to the next member
  bool pending_compute_ = false;
};

/*! \brief Places every core's events on its engines and the shared levels. */
KernelCost Schedule(const std::vector<std::vector<Event>>& progs) {
  const int64_t kDepth = 32;
  // A command the front end has issued that has not started: its queue takes its commands
  // in order, and commands of the other queues may start before it.
  struct Issued {
    const Event* e = nullptr;
    int64_t at = 0;                 // when the front end issued it
    int64_t member = -1;            // the member it belongs to
    int64_t run = 0;                // and which run of it
    std::array<int64_t, 4> gate{};  // per engine, the count its queue waits for (tc1.wait)
  };
  struct Core {
    size_t pos = 0;
    int64_t fe = 0, fe_busy = 0;
    std::array<int64_t, 4> free{};
    std::array<std::array<int64_t, 4>, 4> gate{};  // per queue, per engine: count waited for
    std::array<std::vector<int64_t>, 4> done, start;
    std::array<std::deque<Issued>, 4> queued;
    std::array<int64_t, 4> busy{};
    bool at_barrier = false;
    int64_t member = -1;  // the layer-group member it runs (kMember), or -1
    int64_t run = 0;      // which run of it
    bool idle() const {
      for (const auto& q : queued)
        if (!q.empty()) return false;
      return true;
    }
  };
  std::vector<MemberCost> members;
  // per member, per run: [start, end) over the cores (a member runs once per slice)
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs;
  auto member_of = [&](int64_t m) -> MemberCost& {
    if (members.size() <= size_t(m)) {
      members.resize(size_t(m) + 1);
      runs.resize(size_t(m) + 1);
    }
    return members[size_t(m)];
  };
  auto run_of = [&](int64_t m, int64_t r) -> std::pair<int64_t, int64_t>& {
    member_of(m);
    auto& v = runs[size_t(m)];
    if (v.size() <= size_t(r)) v.resize(size_t(r) + 1, {-1, 0});
    return v[size_t(r)];
  };
  std::vector<Core> cs(progs.size());
  for (size_t i = 0; i < cs.size(); ++i) {  // (each time and done list: one allocation)
    std::array<size_t, 4> issued{};
    for (const Event& e : progs[i])
      if (e.kind == Event::kIssue) ++issued[size_t(e.engine)];
    for (size_t q = 0; q < 4; ++q) {
      cs[i].start[q].reserve(issued[q]);
      cs[i].done[q].reserve(issued[q]);
    }
  }
  int64_t ddr_free = 0, l2_free = 0, ddr_total = 0, l2_total = 0;
  int64_t commands = 0;
  auto placed = [](const Core& c, int eng, int64_t count) {
    return count <= int64_t(c.done[size_t(eng)].size());
  };
  auto done_at = [](const Core& c, int eng, int64_t count) -> int64_t {
    if (count <= 0) return 0;
    const auto& d = c.done[size_t(eng)];
    if (d.empty()) return 0;
    return d[size_t(std::min<int64_t>(count, int64_t(d.size())) - 1)];
  };
  // Runs a core's front end as far as it goes without a start or completion time that is
  // not known yet: it issues commands into the queues, which the loop below starts.
  auto advance = [&](Core& c, const std::vector<Event>& prog) {
    while (c.pos < prog.size()) {
      const Event& e = prog[c.pos];
      if (e.kind == Event::kIssue) {
        const size_t q = size_t(e.engine);
        const size_t total = c.start[q].size() + c.queued[q].size();
        if (total >= size_t(kDepth)) {  // the queue is full until its oldest entry starts
          const size_t oldest = total - size_t(kDepth);
          if (oldest >= c.start[q].size()) return;
          c.fe = std::max(c.fe, c.start[q][oldest]);
        }
        c.fe += e.cost;
        c.fe_busy += e.cost;
        c.queued[q].push_back({&e, c.fe, c.member, c.run, c.gate[q]});
        ++c.pos;
        continue;
      }
      if (e.kind == Event::kDrain) {  // tir.drain: the core's commands have ended
        if (!c.idle()) return;
        for (int64_t f : c.free) c.fe = std::max(c.fe, f);
        c.fe += 1;
        ++c.pos;
        continue;
      }
      if (e.kind == Event::kBarrier) {  // placed once the core's queued commands start
        if (!c.idle()) return;          // (a draining barrier also waits for them to end)
        if (e.drains)
          for (int64_t f : c.free) c.fe = std::max(c.fe, f);
        c.fe += 1;
        c.at_barrier = true;
        return;
      }
      if (e.kind == Event::kMember) {
        c.member = e.count;
        c.run = e.cycles;
        auto& span = run_of(e.count, e.cycles);
        span.first = span.first < 0 ? c.fe : std::min(span.first, c.fe);
        span.second = std::max(span.second, c.fe);
      } else if (e.kind == Event::kScalar) {
        c.fe += e.cost;
      } else if (e.kind == Event::kWaitFrontEnd) {
        if (!placed(c, e.engine, e.count)) return;
        c.fe = std::max(c.fe, done_at(c, e.engine, e.count)) + e.cost;
      } else {  // kWaitQueue: the queue's later commands start no earlier
        int64_t& g = c.gate[size_t(e.queue)][size_t(e.engine)];
        g = std::max(g, e.count);
        c.fe += e.cost;
      }
      c.fe_busy += e.cost;
      ++c.pos;
    }
  };
  // When the oldest command of a queue would start, or -1 while it waits for a command
  // not started yet.
  auto start_of = [&](const Core& c, const Issued& is, size_t q) -> int64_t {
    int64_t t = std::max(is.at, c.free[q]);
    for (int eng = 0; eng < 4; ++eng) {
      if (is.gate[size_t(eng)] <= 0) continue;
      if (!placed(c, eng, is.gate[size_t(eng)])) return -1;
      t = std::max(t, done_at(c, eng, is.gate[size_t(eng)]));
    }
    for (int k = 0; k < 2; ++k) {
      const int64_t cnt = is.e->deps[size_t(k)];
      if (cnt <= 0) continue;
      if (!placed(c, kMm + k, cnt)) return -1;
      t = std::max(t, done_at(c, kMm + k, cnt));
    }
    return t;
  };
  // Commands are placed in the order they start on any engine of any core, as the
  // simulator's events run, so the shared levels see them in time order.
  for (;;) {
    int pick = -1;
    size_t pick_q = 0;
    int64_t pick_t = 0;
    bool any_left = false;
    for (size_t i = 0; i < cs.size(); ++i) {
      Core& c = cs[i];
      advance(c, progs[i]);
      if (c.pos >= progs[i].size() && c.idle()) continue;
      any_left = true;
      for (size_t q = 0; q < 4; ++q) {
        if (c.queued[q].empty()) continue;
        int64_t t = start_of(c, c.queued[q].front(), q);
        if (t >= 0 && (pick < 0 || t < pick_t)) {
          pick = int(i);
          pick_q = q;
          pick_t = t;
        }
      }
    }
    if (!any_left) break;
    if (pick < 0) {  // every unfinished core waits at the barrier
      bool all = true;
      for (size_t i = 0; i < cs.size(); ++i)
        if ((cs[i].pos < progs[i].size() || !cs[i].idle()) && !cs[i].at_barrier) all = false;
      if (!all)  // the waits form a cycle: the program would hang (the plan is refused)
        TILECORE_THROW(ValueError) << "EstimateKernel: the cores' waits form a cycle (a core "
                                   << "waits for a command that cannot start)";
      int64_t release = 0;
      for (auto& c : cs) release = std::max(release, c.fe);
      release += arch::tc1::kBarrierLatency;
      for (auto& c : cs) {
        if (!c.at_barrier) continue;
        c.at_barrier = false;
        c.fe = release;
        if (c.member >= 0) {
          auto& span = run_of(c.member, c.run);
          span.second = std::max(span.second, release);
        }
        ++c.pos;
      }
      continue;
    }
    Core& c = cs[size_t(pick)];
    const size_t q = pick_q;
    const Issued is = c.queued[q].front();
    c.queued[q].pop_front();
    const Event& e = *is.e;
    int64_t t = pick_t;
    int64_t data_end = t + e.cycles, drained = data_end;
    if (e.occ_ddr) {
      ddr_free = std::max(ddr_free, t) + e.occ_ddr;
      drained = std::max(drained, ddr_free);
      ddr_total += e.occ_ddr;
    }
    if (e.occ_l2) {
      l2_free = std::max(l2_free, t) + e.occ_l2;
      drained = std::max(drained, l2_free);
      l2_total += e.occ_l2;
    }
    int64_t end = drained + e.latency;
    const int64_t busy =
        end - t - (drained - data_end);  // the wait for the shared level is not work
    c.busy[q] += busy;
    if (is.member >= 0) {
      MemberCost& m = member_of(is.member);
      auto& span = run_of(is.member, is.run);
      if (!e.handed) span.second = std::max(span.second, end);  // (a handed load: the next's)
      m.busy[q] += busy;
      m.ddr_cycles += e.occ_ddr;
    }
    c.start[q].push_back(t);
    c.done[q].push_back(end);
    c.free[q] = end;
    ++commands;
  }
  KernelCost k;
  for (const Core& c : cs) {
    int64_t end = c.fe;
    for (int64_t f : c.free) end = std::max(end, f);
    k.cycles = std::max(k.cycles, end);
    k.engine_busy.push_back(c.busy);
    k.front_end.push_back(c.fe_busy);
  }
  k.ddr_cycles = ddr_total;
  k.l2_cycles = l2_total;
  k.commands = commands;
  for (size_t m = 0; m < members.size(); ++m) {
    for (const auto& [start, end] : runs[m]) {
      if (start < 0) continue;
      MemberCost& c = members[m];
      c.start = c.runs == 0 ? start : std::min(c.start, start);
      c.end = std::max(c.end, end);
      c.cycles += end - start;
      ++c.runs;
    }
  }
  k.members = std::move(members);
  // The bounding resource: the busiest engine of any core, or the shared DDR.
  int64_t best = -1;
  for (const Core& c : cs) {
    for (int q = 0; q < 4; ++q)
      if (c.busy[size_t(q)] > best) {
        best = c.busy[size_t(q)];
        k.bound_by = kEngineNames[q];
      }
    if (c.fe_busy > best) {
      best = c.fe_busy;
      k.bound_by = "sc";
    }
  }
  if (ddr_total > best) k.bound_by = "ddr";
  return k;
}

}  // namespace

std::string MemberCost::BoundBy(int cores) const {
  std::string by = "sc";
  int64_t best = 0;
  for (int q = 0; q < 4; ++q)
    if (busy[size_t(q)] / std::max(cores, 1) > best) {
      best = busy[size_t(q)] / std::max(cores, 1);
      by = kEngineNames[q];
    }
  return ddr_cycles > best ? "ddr" : by;
}

KernelCost EstimateKernel(const PrimFunc& lowered, int cores) {
  Walker w(lowered, cores);
  // The cores' event buffers are kept for the next estimate (a compile prices hundreds of
  // plans; a fresh buffer each time cost more than the walk's own allocations), up to
  // kKeptEvents each; an estimate within one (none today) takes buffers of its own.
  constexpr size_t kKeptEvents = size_t(1) << 18;
  thread_local std::vector<std::vector<Event>> kept;
  thread_local bool kept_in_use = false;
  std::vector<std::vector<Event>> own;
  std::vector<std::vector<Event>>& progs = kept_in_use ? own : kept;
  struct Release {
    std::vector<std::vector<Event>>& progs;
    bool& in_use;
    bool mine;
    ~Release() {
      if (!mine) return;
      for (std::vector<Event>& p : progs)
        if (p.capacity() > kKeptEvents) std::vector<Event>().swap(p);
      in_use = false;
    }
  } release{progs, kept_in_use, !kept_in_use};
  kept_in_use = true;
  progs.resize(size_t(cores));
  for (int c = 0; c < cores; ++c) w.Run(c, &progs[size_t(c)]);
  KernelCost k = Schedule(progs);
  for (size_t m = 0; m < k.members.size() && m < w.member_macs.size(); ++m)
    k.members[m].macs = w.member_macs[m];
  k.macs = w.macs;
  k.ddr_bytes = w.ddr_bytes;
  return k;
}

KernelCost EstimateStrategy(const PrimFunc& func, int64_t l1_bytes, int cores) {
  // lowered as the npu build lowers it (its L1 less the argument block), so the build of
  // the plan chosen finds it lowered (codegen::LowerKernels keeps the last ones)
  const int64_t l1 = std::min<int64_t>(l1_bytes, int64_t(runtime::kNpuArgBlock));
  IRModule lowered = codegen::LowerKernels(IRModule::FromFunction(func),
                                           codegen::LowerOptions{l1, std::nullopt, true, "npu"});
  KernelCost k;
  for (const auto& [name, fn] : lowered->functions.items()) {
    KernelCost one = EstimateKernel(fn, cores);
    one.cycles += k.cycles;  // functions of one module run one after another
    one.local_bytes = k.local_bytes;
    if (fn->attrs.count("local_bytes"))
      one.local_bytes = std::max(one.local_bytes, fn->attrs.at("local_bytes").cast<int64_t>());
    k = one;
  }
  return k;
}

int64_t MatrixCommandCycles(int64_t m, int64_t n, int64_t k, DataType operand) {
  arch::MmDesc d;
  d.m = uint32_t(m), d.n = uint32_t(n), d.k = uint32_t(k);
  return arch::cost::matrix(ToArch(operand), d, false).cycles;
}

int64_t MatrixBlockRows(DataType operand) { return arch::cost::mm_block(ToArch(operand)).m; }

TILECORE_REGISTER_GLOBAL("compiler.EstimateKernelCost")
    .set_body_typed([](PrimFunc f, target::Target target) {
      KernelCost k =
          EstimateStrategy(f, target.GetInt("l1"), static_cast<int>(target.GetInt("cores")));
      Map<String, Any> out;
      out.Set("cycles", Any(k.cycles));
      out.Set("ddr_cycles", Any(k.ddr_cycles));
      out.Set("l2_cycles", Any(k.l2_cycles));
      out.Set("ddr_bytes", Any(int64_t(k.ddr_bytes)));
      out.Set("macs", Any(int64_t(k.macs)));
      out.Set("commands", Any(k.commands));
      out.Set("local_bytes", Any(k.local_bytes));
      out.Set("bound_by", Any(String(k.bound_by)));
      Array<Any> per_core;
      for (size_t i = 0; i < k.engine_busy.size(); ++i) {
        Map<String, Any> m;
        for (int q = 0; q < 4; ++q) m.Set(kEngineNames[q], Any(k.engine_busy[i][size_t(q)]));
        m.Set("sc", Any(k.front_end[i]));
        per_core.push_back(Any(m));
      }
      out.Set("engine_busy", Any(per_core));
      Array<Any> members;
      for (const MemberCost& m : k.members) {
        Map<String, Any> e;
        e.Set("start", Any(m.start));
        e.Set("cycles", Any(m.cycles));
        e.Set("runs", Any(m.runs));
        e.Set("end", Any(m.end));
        e.Set("macs", Any(int64_t(m.macs)));
        e.Set("ddr_cycles", Any(m.ddr_cycles));
        e.Set("bound_by", Any(String(m.BoundBy(int(k.engine_busy.size())))));
        members.push_back(Any(e));
      }
      out.Set("members", Any(members));
      return out;
    });

}  // namespace compiler
}  // namespace tilecore
