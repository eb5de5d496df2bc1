/*
 * src/transform/emit_tile_intrinsics.cc — the EmitTileIntrinsics pass
 * (emit_tile_intrinsics.h).
 *
 * Structure: NestEmitter walks the kernel; at each serial loop it collects the
 * perfect nest below and tries its suffixes (longest first) with Matcher, which
 * analyses every access against the nest's loops (AccessMap) and builds the
 * operand regions. A failed match leaves a reason for the report.
 */
#include "tilecore/transform/emit_tile_intrinsics.h"
#include "tilecore/arch/tile_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/ffi/structural.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/printer.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/flatten_buffer.h"

namespace tilecore {
namespace transform {

using namespace ir;  // NOLINT(*)

namespace {

constexpr size_t kMaxEngineRank = 4;
constexpr int64_t kMaxMatrixDim = arch::tc1::kMaxMmDim;

struct NoMatch {
  std::string reason;
};
[[noreturn]] void Fail(std::string reason) { throw NoMatch{std::move(reason)}; }

std::string Name(const Buffer& b) { return "`" + std::string(b->name.view()) + "`"; }

struct Loop {
  Var var;
  PrimExpr min;
  int64_t extent;
};

/*! \brief How an access X[indices] walks the loops of a nest. */
struct AccessMap {
  Buffer buffer;
  Array<PrimExpr> indices;
  std::vector<int> loop_of_dim;  // loop index used by each dimension, or -1
  Array<PrimExpr> begin;         // each index with the loop variables at their minimum
  bool Uses(int j) const {
    return std::find(loop_of_dim.begin(), loop_of_dim.end(), j) != loop_of_dim.end();
  }
  int DimOf(int j) const {
    for (size_t k = 0; k < loop_of_dim.size(); ++k) {
      if (loop_of_dim[k] == j) return static_cast<int>(k);
    }
    return -1;
  }
};

class Matcher {
 public:
  Matcher(std::vector<Loop> loops, bool allow_saturation, Analyzer* an)
      : loops_(std::move(loops)), allow_sat_(allow_saturation), an_(an) {}

  /*! \brief The tile command for `body` under the loops, or NoMatch. */
  Stmt Match(const Stmt& body) {
    bool_conversion_ = false;  // (Elementwise sets it for a bool <-> integer conversion)
    if (const auto* st = body.as<BufferStoreNode>()) return MatchStore(st);
    const auto* seq = body.as<SeqStmtNode>();
    if (seq && seq->seq.size() == 2) {
      const auto* init = seq->seq[0].as<BufferStoreNode>();
      const auto* kloop = seq->seq[1].as<ForNode>();
      if (init && kloop && kloop->kind == ForKind::kSerial && kloop->body.as<BufferStoreNode>()) {
        auto ext = as_const_int(an_->Simplify(kloop->extent));
        if (!ext)
          Fail("the extent of loop `" + std::string(kloop->loop_var->name.view()) +
               "` is not constant");
        for (const Loop& l : loops_) {
          if (UsesVar(kloop->min, [&](const VarNode* x) { return x == l.var.get(); })) {
            Fail("the bounds of loop `" + std::string(kloop->loop_var->name.view()) +
                 "` depend on another loop");
          }
        }
        loops_.push_back(Loop{kloop->loop_var, kloop->min, *ext});
        return MatchInitialized(init, kloop->body.as<BufferStoreNode>());
      }
    }
    Fail("the loop body is not one store (nor an initial store and a reduction loop)");
  }

  /*! \brief The access map of X[indices] (public: fission checks use it). */
  AccessMap Analyze(const Buffer& buf, const Array<PrimExpr>& indices) {
    AccessMap am{buf, indices, {}, {}};
    for (size_t k = 0; k < indices.size(); ++k) {
      const PrimExpr& idx = indices[k];
      int used = -1;
      for (size_t j = 0; j < loops_.size(); ++j) {
        const VarNode* v = loops_[j].var.get();
        if (!UsesVar(idx, [&](const VarNode* x) { return x == v; })) continue;
        if (used >= 0)
          Fail("index " + std::to_string(k) + " of " + Name(buf) + " mixes two loop variables");
        used = static_cast<int>(j);
      }
      if (used < 0) {
        am.loop_of_dim.push_back(-1);
        am.begin.push_back(an_->Simplify(idx));
        continue;
      }
      const Loop& l = loops_[used];
      if (am.Uses(used)) {
        Fail(Name(buf) + " uses loop `" + std::string(l.var->name.view()) + "` in two dimensions");
      }
      PrimExpr at_min = an_->Simplify(Subst(idx, l.var, l.min));
      PrimExpr rest = an_->Simplify(idx - (l.var - l.min) - at_min);
      if (!is_const_int(rest, 0)) {
        Fail("index " + std::to_string(k) + " of " + Name(buf) + " is not `base + " +
             std::string(l.var->name.view()) + "`");
      }
      am.loop_of_dim.push_back(used);
      am.begin.push_back(at_min);
    }
    return am;
  }

  const std::vector<Loop>& loops() const { return loops_; }

 private:
  static PrimExpr Subst(const PrimExpr& e, const Var& v, const PrimExpr& value) {
    return Substitute(e, [&](const VarNode* x) -> std::optional<PrimExpr> {
      if (x == v.get()) return value;
      return std::nullopt;
    });
  }

  // -- operands ------------------------------------------------------------------
  std::vector<int64_t> ConstStrides(const Buffer& b) {
    std::vector<int64_t> out;
    for (const PrimExpr& s : BufferStrides(b)) {
      auto c = as_const_int(an_->Simplify(s));
      if (!c) Fail(Name(b) + " has strides that are not constant (descriptors need constants)");
      out.push_back(*c);
    }
    return out;
  }

  void CheckLocal(const Buffer& b) {
    if (b->scope.view() != "local") {
      Fail(Name(b) + " is in " + std::string(b->scope.view()) +
           " memory; tile engines read and write L1 only");
    }
    if (b->dtype.is_bool() && !bool_conversion_)
      Fail(Name(b) + " holds bool, which the engines do not compute on");
  }

  /*!
   * \brief The region of an access for a command iterating `dims` (loop indices,
   * outermost first). A plain window when the access takes every loop, in order;
   * otherwise (if `allow_view`) a window of a view with stride-0 / permuted dims.
   */
  BufferRegion Region(const AccessMap& am, const std::vector<int>& dims, bool allow_view) {
    CheckLocal(am.buffer);
    std::vector<int64_t> strides = ConstStrides(am.buffer);
    for (size_t k = 0; k < am.loop_of_dim.size(); ++k) {
      int j = am.loop_of_dim[k];
      if (j >= 0 && std::find(dims.begin(), dims.end(), j) == dims.end()) {
        Fail(Name(am.buffer) + " depends on loop `" + std::string(loops_[j].var->name.view()) +
             "`, which the command does not iterate");
      }
    }
    bool plain = true;
    int last = -1;
    for (int j : dims) {
      int k = am.DimOf(j);
      if (k < 0 || k < last) plain = false;
      last = std::max(last, k);
    }
    // A source with a constant index after its last loop dim (X[i, j, 0]) as a plain
    // window would make that extent-1 dim the innermost, the one a reduction folds;
    // its view puts the constant dims outermost instead.
    for (size_t k = static_cast<size_t>(std::max(last, 0)) + 1;
         allow_view && plain && k < am.loop_of_dim.size(); ++k) {
      if (am.loop_of_dim[k] < 0) plain = false;
    }
    DataType it = DataType::Int(32);
    if (plain) {
      Array<PrimExpr> ext;
      for (size_t k = 0; k < am.loop_of_dim.size(); ++k) {
        int j = am.loop_of_dim[k];
        ext.push_back(IntImm(am.begin[k].dtype(), j < 0 ? 1 : loops_[j].extent));
      }
      return BufferRegion(am.buffer, am.begin, ext);
    }
    if (!allow_view) {
      Fail("the destination " + Name(am.buffer) + " does not take the loops in order");
    }
    Array<PrimExpr> shape, vstrides, begin, ext;
    for (size_t k = 0; k < am.loop_of_dim.size(); ++k) {
      if (am.loop_of_dim[k] >= 0) continue;
      shape.push_back(am.buffer->shape[k]);
      vstrides.push_back(IntImm(it, strides[k]));
      begin.push_back(am.begin[k]);
      ext.push_back(IntImm(it, 1));
    }
    for (int j : dims) {
      int k = am.DimOf(j);
      shape.push_back(k < 0 ? PrimExpr(IntImm(it, loops_[j].extent)) : am.buffer->shape[k]);
      vstrides.push_back(IntImm(it, k < 0 ? 0 : strides[k]));
      begin.push_back(k < 0 ? PrimExpr(IntImm(it, 0)) : am.begin[k]);
      ext.push_back(IntImm(it, loops_[j].extent));
    }
    Buffer view(am.buffer->data, am.buffer->dtype, shape, vstrides, am.buffer->elem_offset,
                am.buffer->scope, std::string(am.buffer->name.view()) + "_view", am.buffer->span);
    return BufferRegion(view, begin, ext);
  }

  std::vector<int> AllLoops(size_t n) const {
    std::vector<int> d;
    for (size_t j = 0; j < n; ++j) d.push_back(static_cast<int>(j));
    return d;
  }

  // -- element-wise ---------------------------------------------------------------
  Stmt MatchStore(const BufferStoreNode* st) {
    if (st->predicate.defined() || st->value.dtype().is_vector())
      Fail("the store is a vector store");
    AccessMap d = Analyze(st->buffer, st->indices);
    bool all = true;
    for (size_t j = 0; j < loops_.size(); ++j) all = all && d.Uses(static_cast<int>(j));
    if (!all) {
      if (loops_.size() == 3) {
        if (auto mm = TryMatmul(st, d, /*accumulate=*/true)) return *mm;
      }
      Fail(
          "the store to " + Name(st->buffer) +
          " does not use every loop variable (a reduction needs an initial store before its loop)");
    }
    if (loops_.size() > kMaxEngineRank) Fail("the nest is deeper than 4 loops");
    return Elementwise(st, d);
  }

  const BufferLoadNode* AsLoad(const PrimExpr& e) { return e.as<BufferLoadNode>(); }

  BufferRegion Source(const BufferLoadNode* ld, const BufferStoreNode* st) {
    if (ld->dtype.is_vector()) Fail("a source is a vector load");
    if (ld->buffer->data.same_as(st->buffer->data) &&
        !ffi::StructuralEqual(ld->indices, st->indices)) {
      Fail("the store reads its destination " + Name(st->buffer) + " at another index");
    }
    return Region(Analyze(ld->buffer, ld->indices), AllLoops(loops_.size()), true);
  }

  /*! \brief A constant that the descriptor's f32 scalar holds exactly. */
  std::optional<PrimExpr> ExactScalar(const PrimExpr& e, bool negate) {
    if (auto i = as_const_int(e)) {
      double v = static_cast<double>(negate ? -*i : *i);
      if (static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
      return make_const(e.dtype(), negate ? -*i : *i);
    }
    if (auto f = as_const_float(e)) {
      double v = negate ? -*f : *f;
      if (!std::isnan(v) && static_cast<double>(static_cast<float>(v)) != v) return std::nullopt;
      return make_const(e.dtype(), v);
    }
    return std::nullopt;
  }

  struct Quant {
    const BufferLoadNode* load;
    PrimExpr scale, zp;
  };
  /*! \brief `f32(f32(x * scale) + zp)` of an f32 load x, an f32 scale and an integral zp
   * (either may be absent: 1, 0) converted to the integer type `t`: tquant's operands. */
  std::optional<Quant> Quantisation(const PrimExpr& e, DataType t) {
    if (!t.is_integer() || t.is_bool() || e.dtype() != DataType::Float(32)) return std::nullopt;
    PrimExpr prod = e;
    double zp = 0.0;
    if (const auto* add = e.as<AddNode>()) {
      auto c = as_const_float(add->b);
      prod = add->a;
      if (!c) {
        c = as_const_float(add->a);
        prod = add->b;
      }
      if (!c || std::floor(*c) != *c || std::fabs(*c) > 2147483647.0) return std::nullopt;
      zp = *c;
    }
    double scale = 1.0;
    const BufferLoadNode* ld = AsLoad(prod);
    if (const auto* mul = prod.as<MulNode>()) {
      ld = AsLoad(mul->a);
      auto c = as_const_float(mul->b);
      if (!ld || !c) {
        ld = AsLoad(mul->b);
        c = as_const_float(mul->a);
      }
      if (!ld || !c || static_cast<double>(static_cast<float>(*c)) != *c) return std::nullopt;
      scale = *c;
    }
    if (!ld || ld->dtype != DataType::Float(32)) return std::nullopt;
    return Quant{ld, make_const(DataType::Float(32), scale),
                 make_const(DataType::Int(32), static_cast<int64_t>(zp))};
  }

  Stmt Emit(const std::string& op, Array<PrimExpr> args) {
    matched_op = op;
    return Evaluate(call(op, std::move(args)));
  }

  Stmt Elementwise(const BufferStoreNode* st, const AccessMap& dmap) {
    // a conversion between bool and an integer type is tcvt's (to bool: x != 0; from
    // bool: 0 or 1), as the IR's Cast; a float's NaN would differ (tcvt gives false)
    const auto* cast = st->value.as<CastNode>();
    bool_conversion_ =
        cast != nullptr && AsLoad(cast->value) != nullptr &&
        (st->buffer->dtype.is_bool() != cast->value.dtype().is_bool()) &&
        (st->buffer->dtype.is_bool() ? cast->value.dtype() : st->buffer->dtype).is_integer();
    BufferRegion d = Region(dmap, AllLoops(loops_.size()), false);
    DataType t = st->buffer->dtype;
    const PrimExpr& v = st->value;
    auto saturating = [&](const char* what) {
      if (t.is_integer() && !allow_sat_) {
        Fail(std::string("integer ") + what +
             " saturates on the vector engine but wraps in the IR "
             "(set transform.EmitTileIntrinsics.allow_saturation to accept)");
      }
    };
    if (const auto* ld = AsLoad(v)) return Emit("tile.vec_copy", {d, Source(ld, st)});
    if (const auto* c = v.as<CastNode>()) {
      if (const auto* ld = AsLoad(c->value)) return Emit("tile.vec_copy", {d, Source(ld, st)});
      if (auto q = Quantisation(c->value, t))
        return Emit("tile.vec_quant", {d, Source(q->load, st), q->scale, q->zp});
      Fail("a cast of something other than a load");
    }
    if (const auto* c = v.as<CallNode>()) {
      // The scalar intrinsic's tile operation, from the table of tile operations.
      const arch::TileOpInfo* row = arch::FindTileOpForScalar(c->op.view());
      if (row == nullptr || c->args.size() != 1 || !AsLoad(c->args[0])) {
        Fail("the call `" + std::string(c->op.view()) +
             "` has no vector-engine form for these arguments");
      }
      return Emit("tile.vec_" + std::string(row->name), {d, Source(AsLoad(c->args[0]), st)});
    }
    const auto* bin = v.as<BinaryOpNode>();
    if (bin == nullptr) Fail("the stored value is not an element-wise operation of loads");
    NodeKind kind = NodeKindOf(v.get());
    const BufferLoadNode* la = AsLoad(bin->a);
    const BufferLoadNode* lb = AsLoad(bin->b);
    if (la && lb) {
      switch (kind) {
        case NodeKind::kAdd:
          saturating("add");
          return Emit("tile.vec_add", {d, Source(la, st), Source(lb, st)});
        case NodeKind::kSub:
          saturating("sub");
          return Emit("tile.vec_sub", {d, Source(la, st), Source(lb, st)});
        case NodeKind::kMul:
          saturating("mul");
          return Emit("tile.vec_mul", {d, Source(la, st), Source(lb, st)});
        case NodeKind::kMax:
          return Emit("tile.vec_max", {d, Source(la, st), Source(lb, st)});
        case NodeKind::kMin:
          return Emit("tile.vec_min", {d, Source(la, st), Source(lb, st)});
        case NodeKind::kDiv:
          if (!t.is_float()) Fail("integer division has no vector-engine form");
          return Emit("tile.vec_div", {d, Source(la, st), Source(lb, st)});
        default:
          Fail("the operation `" + v->GetTypeKey() + "` has no vector-engine form");
      }
    }
    // One load and one constant.
    const BufferLoadNode* ld = la ? la : lb;
    PrimExpr s = la ? bin->b : bin->a;
    if (ld == nullptr) Fail("the stored value is not an element-wise operation of loads");
    if (kind == NodeKind::kDiv && lb && !la && t.is_float() && as_const_float(bin->a) &&
        *as_const_float(bin->a) == 1.0) {
      return Emit("tile.vec_recip", {d, Source(lb, st)});
    }
    bool negate = kind == NodeKind::kSub;
    if (negate && !la) Fail("`constant - X` has no vector-engine form");
    std::optional<PrimExpr> c = ExactScalar(s, negate);
    if (!c) Fail("the scalar operand is not a constant that f32 holds exactly");
    switch (kind) {
      case NodeKind::kAdd:
      case NodeKind::kSub:
        saturating("add");
        return Emit("tile.vec_adds", {d, Source(ld, st), *c});
      case NodeKind::kMul:
        saturating("mul");
        return Emit("tile.vec_muls", {d, Source(ld, st), *c});
      case NodeKind::kMax:
        if (is_const_int(*c, 0) || (as_const_float(*c) && *as_const_float(*c) == 0.0)) {
          return Emit("tile.vec_relu", {d, Source(ld, st)});
        }
        return Emit("tile.vec_maxs", {d, Source(ld, st), *c});
      case NodeKind::kMin:
        return Emit("tile.vec_mins", {d, Source(ld, st), *c});
      default:
        Fail("the operation `" + v->GetTypeKey() + "` with a constant has no vector-engine form");
    }
  }

  // -- reductions and matmul with an initial store ---------------------------------
  Stmt MatchInitialized(const BufferStoreNode* init, const BufferStoreNode* acc) {
    if (!init->buffer->data.same_as(acc->buffer->data) ||
        !ffi::StructuralEqual(init->indices, acc->indices)) {
      Fail("the initial store and the loop's store differ");
    }
    AccessMap d = Analyze(acc->buffer, acc->indices);
    int k = static_cast<int>(loops_.size()) - 1;
    if (d.Uses(k)) Fail("the store in the inner loop uses its variable: not a reduction");
    for (int j = 0; j < k; ++j) {
      if (!d.Uses(j))
        Fail("the reduction's destination does not use loop `" +
             std::string(loops_[j].var->name.view()) + "`");
    }
    if (loops_.size() == 3) {
      if (!is_const_int(init->value, 0) &&
          !(as_const_float(init->value) && *as_const_float(init->value) == 0.0)) {
        Fail("the matmul's initial value is not 0");
      }
      if (auto mm = TryMatmul(acc, d, /*accumulate=*/false)) return *mm;
    }
    if (loops_.size() > kMaxEngineRank) Fail("the nest is deeper than 4 loops");
    return Reduction(init, acc, d);
  }

  Stmt Reduction(const BufferStoreNode* init, const BufferStoreNode* acc, const AccessMap& dmap) {
    DataType t = acc->buffer->dtype;
    const auto* bin = acc->value.as<BinaryOpNode>();
    NodeKind kind = bin ? NodeKindOf(acc->value.get()) : NodeKind::kUnknown;
    if (kind != NodeKind::kAdd && kind != NodeKind::kMax && kind != NodeKind::kMin) {
      Fail("the reduction is not a sum, max or min");
    }
    auto is_self = [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      return l && l->buffer->data.same_as(acc->buffer->data) &&
             ffi::StructuralEqual(l->indices, acc->indices);
    };
    const BufferLoadNode* src =
        is_self(bin->a) ? AsLoad(bin->b) : (is_self(bin->b) ? AsLoad(bin->a) : nullptr);
    if (src == nullptr) Fail("the reduction does not combine its destination with a load");
    if (src->buffer->data.same_as(acc->buffer->data))
      Fail("the reduction reads its own destination");
    const char* op = nullptr;
    bool identity = false;
    if (kind == NodeKind::kAdd) {
      op = "tile.vec_redsum";
      if (t.is_integer() && !allow_sat_) {
        Fail(
            "integer sums saturate on the vector engine but wrap in the IR "
            "(set transform.EmitTileIntrinsics.allow_saturation to accept)");
      }
      if (t.is_float() && t.bits() != 32)
        Fail("the engine sums " + t.str() + " in f32, the IR in " + t.str());
      identity = is_const_int(init->value, 0) ||
                 (as_const_float(init->value) && *as_const_float(init->value) == 0.0);
    } else {
      bool is_max = kind == NodeKind::kMax;
      op = is_max ? "tile.vec_redmax" : "tile.vec_redmin";
      if (auto f = as_const_float(init->value)) {
        identity = std::isinf(*f) && ((*f < 0) == is_max);
      } else if (auto i = as_const_int(init->value)) {
        int64_t lo = t.is_uint() ? 0 : -(int64_t(1) << (t.bits() - 1));
        int64_t hi =
            t.is_uint() ? (int64_t(1) << t.bits()) - 1 : (int64_t(1) << (t.bits() - 1)) - 1;
        identity = *i == (is_max ? lo : hi);
      }
    }
    if (!identity) {
      Fail("the initial value " + AsScript(init->value) + " is not the identity of the reduction");
    }
    std::vector<int> outer = AllLoops(loops_.size() - 1);
    BufferRegion d = Region(dmap, outer, false);
    BufferRegion a = Region(Analyze(src->buffer, src->indices), AllLoops(loops_.size()), true);
    return Emit(op, {d, a});
  }

  // -- matmul ------------------------------------------------------------------------
  /*! \brief The load inside `e`, through a widening cast to `acc`. */
  const BufferLoadNode* Factor(const PrimExpr& e, DataType acc) {
    if (const auto* l = AsLoad(e))
      return l->dtype == acc && acc == DataType::Float(32) ? l : nullptr;
    const auto* c = e.as<CastNode>();
    if (c == nullptr || c->dtype != acc) return nullptr;
    const auto* l = AsLoad(c->value);
    if (l == nullptr) return nullptr;
    DataType in = l->dtype;
    bool ok =
        (acc == DataType::Int(32) && in == DataType::Int(8)) ||
        (acc == DataType::Float(32) && (in == DataType::Float(16) || in == DataType::BFloat16()));
    return ok ? l : nullptr;
  }

  std::optional<Stmt> TryMatmul(const BufferStoreNode* st, const AccessMap& cmap, bool accumulate) {
    DataType acc = st->buffer->dtype;
    if (acc != DataType::Int(32) && acc != DataType::Float(32)) return std::nullopt;
    const auto* add = st->value.as<AddNode>();
    if (add == nullptr) return std::nullopt;
    auto is_self = [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      return l && l->buffer->data.same_as(st->buffer->data) &&
             ffi::StructuralEqual(l->indices, st->indices);
    };
    PrimExpr prod = is_self(add->a) ? add->b : (is_self(add->b) ? add->a : PrimExpr());
    const auto* mul = prod.defined() ? prod.as<MulNode>() : nullptr;
    if (mul == nullptr) return std::nullopt;
    const BufferLoadNode* f0 = Factor(mul->a, acc);
    const BufferLoadNode* f1 = Factor(mul->b, acc);
    if (f0 == nullptr || f1 == nullptr || f0->dtype != f1->dtype) return std::nullopt;
    // C uses i (its row) and j (its column); k is the third loop.
    int rank_c = static_cast<int>(cmap.loop_of_dim.size());
    if (rank_c < 2)
      Fail("the matmul destination " + Name(st->buffer) + " has fewer than 2 dimensions");
    int i = cmap.loop_of_dim[rank_c - 2], j = cmap.loop_of_dim[rank_c - 1];
    if (i < 0 || j < 0) Fail("the matmul destination's last two dimensions are not its loops");
    int k = 3 - i - j;
    AccessMap m0 = Analyze(f0->buffer, f0->indices), m1 = Analyze(f1->buffer, f1->indices);
    auto is_matrix = [](const AccessMap& m, int row, int col) {
      int r = static_cast<int>(m.loop_of_dim.size());
      if (r < 2 || m.loop_of_dim[r - 2] != row || m.loop_of_dim[r - 1] != col) return false;
      for (int q = 0; q < r - 2; ++q) {
        if (m.loop_of_dim[q] >= 0) return false;
      }
      return true;
    };
    const AccessMap* a = nullptr;
    const AccessMap* b = nullptr;
    if (is_matrix(m0, i, k) && is_matrix(m1, k, j)) {
      a = &m0;
      b = &m1;
    } else if (is_matrix(m1, i, k) && is_matrix(m0, k, j)) {
      a = &m1;
      b = &m0;
    } else {
      Fail(
          "the matmul operands are not A[i, k] and B[k, j] in their last two dimensions (a "
          "transposed operand?)");
    }
    for (const AccessMap* m : {&cmap, a, b}) {
      CheckLocal(m->buffer);
      if (ConstStrides(m->buffer).back() != 1)
        Fail("the rows of " + Name(m->buffer) + " are not contiguous");
      if (m != &cmap && m->buffer->data.same_as(st->buffer->data))
        Fail("the matmul reads its destination");
    }
    for (int q : {i, j, k}) {
      if (loops_[q].extent > kMaxMatrixDim)
        Fail("a matmul dimension exceeds " + std::to_string(kMaxMatrixDim));
    }
    BufferRegion rc = Region(cmap, {i, j}, false), ra = Region(*a, {i, k}, false),
                 rb = Region(*b, {k, j}, false);
    return Emit("tile.mm", {rc, ra, rb, IntImm(DataType::Bool(), accumulate)});
  }

 public:
  std::string matched_op;

 private:
  std::vector<Loop> loops_;
  bool allow_sat_;
  bool bool_conversion_ = false;  // matching a bool <-> integer conversion
  Analyzer* an_;
};

bool HasPragma(const ForNode* f) { return f->annotations.Get("pragma_tile").has_value(); }

/*! \brief Whether a loop of the chain carries `tile_no_overflow`: its lowering bounded the
 *  integer operands, so saturating and wrapping arithmetic agree there. */
bool NoOverflow(const std::vector<const ForNode*>& chain) {
  for (const ForNode* f : chain)
    if (f->annotations.Get("tile_no_overflow").has_value()) return true;
  return false;
}

class NestEmitter : public IRMutator {
 public:
  explicit NestEmitter(bool allow_saturation) : allow_sat_(allow_saturation) {}

  Map<String, int64_t> counts;
  Array<String> report;

  Stmt VisitStmt_(const ForNode* op) override {
    if (op->kind != ForKind::kSerial) return IRMutator::VisitStmt_(op);
    std::vector<const ForNode*> chain{op};
    Stmt body = op->body;
    while (const auto* f = body.as<ForNode>()) {
      if (f->kind != ForKind::kSerial) break;
      chain.push_back(f);
      body = f->body;
    }
    bool pragma = false;
    for (const ForNode* f : chain) pragma = pragma || HasPragma(f);
    std::string where = "loop `" + std::string(op->loop_var->name.view()) + "`" + At(op->span);
    std::string reason;
    if (std::optional<Stmt> s = TryChain(chain, body, where, &reason)) return *s;
    if (std::optional<Stmt> s = TryFission(chain, body, where)) return *s;
    int64_t before = Total();
    Stmt inner = VisitStmt(body);
    if (Total() == before) {
      if (pragma) {
        TILECORE_THROW(ValueError)
            << "EmitTileIntrinsics: " << where
            << " is marked pragma_tile but no tile command matches: " << reason;
      }
      report.push_back(where + ": kept as a loop: " + reason);
    }
    for (size_t q = chain.size(); q-- > 0;) inner = Rebuild(chain[q], inner);
    return inner;
  }

 private:
  int64_t Total() const {
    int64_t n = 0;
    for (const auto& [k, v] : counts.items()) n += v;
    return n;
  }

  static Stmt Rebuild(const ForNode* f, const Stmt& body) {
    if (body.same_as(f->body)) return GetRef<Stmt>(f);
    return For(f->loop_var, f->min, f->extent, f->kind, body, f->annotations, f->span);
  }

  /*! \brief Tries the suffixes of the chain, longest first. */
  std::optional<Stmt> TryChain(const std::vector<const ForNode*>& chain, const Stmt& body,
                               const std::string& where, std::string* reason) {
    for (size_t s = 0; s < chain.size(); ++s) {
      std::vector<Loop> loops;
      bool ok = true;
      for (size_t q = s; q < chain.size(); ++q) {
        auto ext = as_const_int(an_.Simplify(chain[q]->extent));
        if (!ext) {
          ok = false;
          break;
        }
        loops.push_back(Loop{chain[q]->loop_var, chain[q]->min, *ext});
      }
      // A loop whose bounds depend on an outer loop of the nest (a triangle) is not a box.
      for (size_t q = 0; ok && q < loops.size(); ++q) {
        ok = !UsesVar(loops[q].min, [&](const VarNode* x) {
          for (const Loop& l : loops) {
            if (l.var.get() == x) return true;
          }
          return false;
        });
      }
      if (!ok) {
        if (reason->empty())
          *reason = "a loop extent is not constant, or a loop's bounds depend on another loop";
        continue;
      }
      Matcher m(loops, allow_sat_ || NoOverflow(chain), &an_);
      try {
        Stmt cmd = m.Match(body);
        std::string shape;
        for (const Loop& l : m.loops())
          shape += (shape.empty() ? "" : " x ") + std::to_string(l.extent);
        counts.Set(m.matched_op, counts.Get(m.matched_op).value_or(0) + 1);
        report.push_back(where + ": " + m.matched_op + " over " + shape +
                         (s ? " inside " + std::to_string(s) + " loop(s)" : std::string()));
        for (size_t q = s; q-- > 0;)
          cmd = For(chain[q]->loop_var, chain[q]->min, chain[q]->extent, chain[q]->kind, cmd,
                    chain[q]->annotations, chain[q]->span);
        return cmd;
      } catch (const NoMatch& e) {
        if (reason->empty()) *reason = e.reason;
      }
    }
    return std::nullopt;
  }

  /*!
   * \brief A body of several stores becomes one nest per store when legal: every
   * buffer written by one store and touched by another is accessed at one index
   * that takes every loop (so the same element means the same iteration).
   */
  std::optional<Stmt> TryFission(const std::vector<const ForNode*>& chain, const Stmt& body,
                                 const std::string& where) {
    const auto* seq = body.as<SeqStmtNode>();
    if (seq == nullptr || seq->seq.size() < 2) return std::nullopt;
    std::vector<const BufferStoreNode*> stores;
    for (const Stmt& s : seq->seq) {
      const auto* st = s.as<BufferStoreNode>();
      if (st == nullptr) return std::nullopt;
      stores.push_back(st);
    }
    std::vector<Loop> loops;
    for (const ForNode* f : chain) loops.push_back(Loop{f->loop_var, f->min, 0});
    Matcher m(loops, allow_sat_ || NoOverflow(chain), &an_);
    std::unordered_map<const VarNode*, Array<PrimExpr>> written;
    for (const BufferStoreNode* st : stores) written.emplace(st->buffer->data.get(), st->indices);
    try {
      for (size_t p = 0; p < stores.size(); ++p) {
        std::vector<std::pair<Buffer, Array<PrimExpr>>> accesses{
            {stores[p]->buffer, stores[p]->indices}};
        PostOrderVisit(stores[p]->value, [&](const ObjectRef& n) {
          if (const auto* l = n.as<BufferLoadNode>()) accesses.emplace_back(l->buffer, l->indices);
        });
        for (const auto& [buf, idx] : accesses) {
          auto it = written.find(buf->data.get());
          if (it == written.end()) continue;
          if (!ffi::StructuralEqual(it->second, idx)) return std::nullopt;
          AccessMap am = m.Analyze(buf, idx);
          for (size_t j = 0; j < loops.size(); ++j) {
            if (!am.Uses(static_cast<int>(j))) return std::nullopt;
          }
        }
      }
    } catch (const NoMatch&) {
      return std::nullopt;
    }
    Array<Stmt> pieces;
    std::vector<String> lines;
    bool any = false;
    for (const BufferStoreNode* st : stores) {
      std::string reason;
      std::optional<Stmt> s = TryChain(chain, GetRef<Stmt>(st), where, &reason);
      if (s) {
        any = true;
        pieces.push_back(*s);
        continue;
      }
      Stmt loop = GetRef<Stmt>(st);
      for (size_t q = chain.size(); q-- > 0;) {
        loop = For(chain[q]->loop_var, chain[q]->min, chain[q]->extent, chain[q]->kind, loop,
                   chain[q]->annotations, chain[q]->span);
      }
      lines.push_back(where + ": after fission, the store to `" +
                      std::string(st->buffer->name.view()) + "` stays a loop: " + reason);
      pieces.push_back(loop);
    }
    if (!any) return std::nullopt;
    for (const String& l : lines) report.push_back(l);
    return SeqStmt(pieces);
  }

  bool allow_sat_;
  Analyzer an_;
};

}  // namespace

Pass EmitTileIntrinsics() {
  return CreatePrimFuncPass(
      [](PrimFunc f, IRModule, PassContext ctx) {
        NestEmitter e(ctx.GetConfig<bool>("transform.EmitTileIntrinsics.allow_saturation", false));
        Stmt body = e.VisitStmt(f->body);
        if (e.report.empty()) return f;
        PrimFunc out = body.same_as(f->body) ? f : f.WithBody(body);
        return out.WithAttr("tile_emit_counts", e.counts).WithAttr("tile_emit_report", e.report);
      },
      0, "EmitTileIntrinsics");
}

TILECORE_REGISTER_GLOBAL("transform.EmitTileIntrinsics").set_body_typed([]() {
  return EmitTileIntrinsics();
});

}  // namespace transform
}  // namespace tilecore
