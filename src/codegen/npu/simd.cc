// src/codegen/npu/simd.cc — SIMD instruction selection: vector values in v
// registers (one 256-bit register per IR vector), bool vectors in predicate
// registers, contiguous vector loads and stores, and vector functions TC1 has
// only on the vector engine (run on one register's worth of L1 scratch).
#if TILECORE_ENABLE_NPU
#include "emitter.h"
#include "tilecore/arch/descriptors.h"

namespace tilecore::codegen::npu {

using namespace ir;  // NOLINT

namespace {
// Lane count -> a dtype of that many lanes per register.
arch::DType LaneType(int lanes) {
  return lanes == kVecBytes / 4   ? arch::DType::I32
         : lanes == kVecBytes / 2 ? arch::DType::I16
                                  : arch::DType::I8;
}
}  // namespace

void NpuEmitter::CheckFull(DataType t, const Span& sp) {
  if (!t.is_bool() && t.lanes() * t.bits() != kVecBytes * 8) {
    Fail("vector type " + t.str() + " (TC1 vectors fill one " + std::to_string(kVecBytes * 8) +
             "-bit register)",
         sp);
  }
}

VR NpuEmitter::EvalV(const PrimExpr& e) {
  DataType t = e.dtype();
  if (t.is_bool()) Fail("a bool vector used as data", e->span);
  const Object* n = e.get();
  arch::DType dt = TC1Type(t);
  switch (NodeKindOf(n)) {
    case NodeKind::kVar: {
      auto it = vars_.find(static_cast<const VarNode*>(n));
      if (it == vars_.end() || it->second.vreg < 0) Fail("vector variable", e->span);
      return VR{it->second.vreg, false};
    }
    case NodeKind::kBroadcast: {
      auto* b = static_cast<const BroadcastNode*>(n);
      XR x = Reload(Eval(b->value));
      VR r{AllocV(), true};
      E(Op::Vsplat, {O::V(r.r), O::X(x.r)}, dt);
      Free(x);
      return r;
    }
    case NodeKind::kRamp: {
      auto* rp = static_cast<const RampNode*>(n);
      CheckFull(t, e->span);
      if (!t.is_integer()) Fail("a float Ramp", e->span);
      int64_t iota = IotaTable(t);
      VR r{AllocV(), true};
      E(Op::Vld, {O::V(r.r), O::Mem(arch::Space::L1, 0, iota)});
      if (!is_const_int(rp->stride, 1)) {
        XR s = Reload(Eval(rp->stride));
        E(Op::Vsplat, {O::V(0), O::X(s.r)}, dt);
        E(Op::Vmul, {O::V(r.r), O::V(r.r), O::V(0)}, dt);
        Free(s);
      }
      r = HoldV(r);
      XR base = Reload(Eval(rp->base));
      r = ReloadV(r);
      E(Op::Vsplat, {O::V(0), O::X(base.r)}, dt);
      E(Op::Vadd, {O::V(r.r), O::V(r.r), O::V(0)}, dt);
      Free(base);
      return r;
    }
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul:
    case NodeKind::kMin:
    case NodeKind::kMax: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      NodeKind k = NodeKindOf(n);
      Op op = k == NodeKind::kAdd   ? Op::Vadd
              : k == NodeKind::kSub ? Op::Vsub
              : k == NodeKind::kMul ? Op::Vmul
              : k == NodeKind::kMin ? Op::Vmin
                                    : Op::Vmax;
      return VBin(op, b->a, b->b, dt);
    }
    case NodeKind::kDiv:
    case NodeKind::kMod:
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      NodeKind k = NodeKindOf(n);
      if (t.is_float() && k == NodeKind::kDiv) return TileVector(Op::Tdiv, {b->a, b->b}, t);
      if (t.is_float()) Fail("a float vector remainder", e->span);
      // TC1 has no SIMD divide: lane by lane with the scalar div/rem (same results as scalar code).
      return LaneWise(t, {b->a, b->b}, [k](const std::vector<Var>& v) -> PrimExpr {
        switch (k) {
          case NodeKind::kDiv:
            return v[0] / v[1];
          case NodeKind::kMod:
            return v[0] % v[1];
          case NodeKind::kFloorDiv:
            return floordiv(v[0], v[1]);
          default:
            return floormod(v[0], v[1]);
        }
      });
    }
    case NodeKind::kSelect: {
      auto* s = static_cast<const SelectNode*>(n);
      int p = EvalP(s->condition);
      VR a = HoldV(EvalV(s->true_value));
      VR b = ReloadV(EvalV(s->false_value));
      a = ReloadV(a);
      VR r{AllocV(), true};
      E(Op::Vsel, {O::V(r.r), O::V(a.r), O::V(b.r), O::P(p)}, dt);
      Free(a);
      Free(b);
      FreeP(p);
      return r;
    }
    case NodeKind::kCast: {
      auto* c = static_cast<const CastNode*>(n);
      DataType from = c->value.dtype();
      if (from.is_bool()) {
        int p = EvalP(c->value);
        VR r{AllocV(), true};
        XR one = Imm(1);
        E(Op::Vsplat, {O::V(0), O::X(one.r)}, dt);
        Free(one);
        E(Op::Vsplat, {O::V(1), O::X(0)}, dt);
        E(Op::Vcvt, {O::V(0), O::V(0)}, dt, arch::DType::I32);
        E(Op::Vsel, {O::V(r.r), O::V(0), O::V(1), O::P(p)}, dt);
        FreeP(p);
        return r;
      }
      VR a = ReloadV(EvalV(c->value));
      VR r{AllocV(), true};
      E(Op::Vcvt, {O::V(r.r), O::V(a.r)}, dt, TC1Type(from));
      Free(a);
      return r;
    }
    case NodeKind::kBufferLoad:
      return VectorLoad(static_cast<const BufferLoadNode*>(n), t, e->span);
    case NodeKind::kLet: {
      auto* l = static_cast<const LetNode*>(n);
      BindLet(l->var, l->value);
      VR r = ReloadV(EvalV(l->body));
      if (!r.tmp) {
        VR c{AllocV(), true};
        E(Op::Vor, {O::V(c.r), O::V(r.r), O::V(r.r)}, arch::DType::I32);
        r = c;
      }
      Unbind(l->var);
      return r;
    }
    case NodeKind::kCall: {
      auto* c = static_cast<const CallNode*>(n);
      std::string op(c->op.view());
      if (op == "tc1.vadds") return VBin(Op::Vadds, c->args[0], c->args[1], dt);
      if (op == "tc1.vsubs") return VBin(Op::Vsubs, c->args[0], c->args[1], dt);
      static const std::map<std::string, Op> bit = {{"tir.bitwise_and", Op::Vand},
                                                    {"tir.bitwise_or", Op::Vor},
                                                    {"tir.bitwise_xor", Op::Vxor}};
      if (auto it = bit.find(op); it != bit.end())
        return VBin(it->second, c->args[0], c->args[1], dt);
      static const std::map<std::string, Op> math = {
          {"tir.exp", Op::Texp},        {"tir.log", Op::Tlog},     {"tir.sqrt", Op::Tsqrt},
          {"tir.rsqrt", Op::Trsqrt},    {"tir.recip", Op::Trecip}, {"tir.tanh", Op::Ttanh},
          {"tir.sigmoid", Op::Tsigmoid}};
      if (auto it = math.find(op); it != math.end()) return TileVector(it->second, {c->args[0]}, t);
      if (op == "tir.bitwise_not") {
        VR a = ReloadV(EvalV(c->args[0]));
        XR ones = Imm(-1);
        E(Op::Vsplat, {O::V(0), O::X(ones.r)}, dt);
        Free(ones);
        int d = a.tmp ? a.r : AllocV();
        E(Op::Vxor, {O::V(d), O::V(a.r), O::V(0)}, dt);
        return VR{d, true};
      }
      if (op == "tir.shift_left" || op == "tir.shift_right") {
        // TC1 has no SIMD shift: lane by lane with sll / sra / srl on the element type.
        int bits = t.bits();
        bool left = op == "tir.shift_left";
        return LaneWise(t, {c->args[0], c->args[1]}, [&](const std::vector<Var>& v) -> PrimExpr {
          DataType w = v[0]->dtype;
          PrimExpr amount = Call(w, "tir.bitwise_and", {v[1], make_const(w, bits - 1)});
          return Call(w, left ? "tir.shift_left" : "tir.shift_right", {v[0], amount});
        });
      }
      if (op == "tc1.vshls") {
        return LaneWiseRegs(t, {c->args[0], c->args[1]}, [&](const std::vector<Var>& v) {
          return SaturatingShiftLeft(t.element_of(), v[0], v[1]);
        });
      }
      if (op == "tc1.vcvt") return ConvertPart(c, t);
      Fail("intrinsic `" + op + "` on vectors", c->span);
    }
    default:
      Fail("vector expression `" + std::string(e->GetTypeKey()) + "`", e->span);
  }
}

VR NpuEmitter::VectorLoad(const BufferLoadNode* l, DataType t, const Span& sp) {
  if (l->indices.size() != 1) Fail("a multi-dimensional vector load (run FlattenBuffer first)", sp);
  SyncFrontEnd(l->buffer);
  arch::DType dt = TC1Type(t);
  const PrimExpr& idx = l->indices[0];
  if (const auto* bc = idx.as<BroadcastNode>()) {
    Addr a = ElementAddr(l->buffer, bc->value);
    int d = Dest(a.base);
    DataType bt = l->buffer->dtype;
    Op op = bt.bits() == 8 ? Op::Lbu : bt.bits() == 16 ? Op::Lhu : Op::Lw;
    E(op, {O::X(d), Mem(a)});
    VR r{AllocV(), true};
    E(Op::Vsplat, {O::V(r.r), O::X(d)}, dt);
    xpool_.Free(d);
    return r;
  }
  const auto* rp = idx.as<RampNode>();
  if (rp && !is_const_int(rp->stride, 1)) return StridedLoad(l, rp, t);
  if (!rp) Fail("a vector load with a computed index vector (gather; TC1 has no SIMD gather)", sp);
  CheckFull(t, sp);
  Addr a = ElementAddr(l->buffer, rp->base);
  VR r{AllocV(), true};
  E(Op::Vld, {O::V(r.r), Mem(a)});
  Free(a.base);
  return r;
}

void NpuEmitter::VectorStore(const BufferStoreNode* st) {
  const PrimExpr& idx = st->indices[0];
  const auto* rp = idx.as<RampNode>();
  if (!rp || !is_const_int(rp->stride, 1))
    Fail("a vector store with a non-contiguous index (scatter)", st->span);
  CheckFull(st->value.dtype(), st->span);
  VR v = HoldV(EvalV(st->value));
  int p = st->predicate.defined() ? EvalP(st->predicate) : 0;
  Addr a = ElementAddr(st->buffer, rp->base);
  v = ReloadV(v);
  if (p)
    E(Op::Vst, {O::V(v.r), Mem(a), O::P(p)}, TC1Type(st->buffer->dtype));
  else
    E(Op::Vst, {O::V(v.r), Mem(a)}, TC1Type(st->buffer->dtype));
  Free(a.base);
  Free(v);
  FreeP(p);
}

VR NpuEmitter::VBin(Op op, const PrimExpr& a, const PrimExpr& b, arch::DType dt) {
  VR x = HoldV(EvalV(a));
  VR y = ReloadV(EvalV(b));
  x = ReloadV(x);
  int d = x.tmp ? x.r : y.tmp ? y.r : AllocV();
  E(op, {O::V(d), O::V(x.r), O::V(y.r)}, dt);
  if (x.tmp && d != x.r) Free(x);
  if (y.tmp && d != y.r) Free(y);
  return VR{d, true};
}

VR NpuEmitter::TileVector(Op op, std::vector<PrimExpr> args, DataType t) {
  CheckFull(t, Span());
  if (!scratch_) scratch_ = b_.Block(3 * kVecBytes, kVecBytes);
  arch::DType dt = TC1Type(t);
  for (size_t i = 0; i < args.size(); ++i) {
    VR a = ReloadV(EvalV(args[i]));
    E(Op::Vst, {O::V(a.r), O::Mem(arch::Space::L1, 0, scratch_ + kVecBytes * int64_t(i))}, dt);
    Free(a);
  }
  arch::VecDesc vd;
  vd.rank = 1;
  vd.shape = {uint32_t(t.lanes()), 1, 1, 1};
  vd.d_stride = vd.a_stride = vd.b_stride = {1, 0, 0, 0};
  int64_t desc =
      Descriptor(vd.to_bytes(), true, "vecdesc shape=[" + std::to_string(t.lanes()) + "]");
  Li(kScratch1, scratch_);
  Li(kScratch2, scratch_ + kVecBytes);
  Li(kScratch3, scratch_ + 2 * kVecBytes);
  if (args.size() == 2)
    E(op, {O::X(kScratch3), O::X(kScratch1), O::X(kScratch2), O::Desc(0, desc)}, dt);
  else
    E(op, {O::X(kScratch3), O::X(kScratch1), O::Desc(0, desc)}, dt);
  CountIssued(arch::Engine::Vector);
  WaitFor(O::FrontEnd(), arch::Engine::Vector, kVecCount);
  VR r{AllocV(), true};
  E(Op::Vld, {O::V(r.r), O::Mem(arch::Space::L1, 0, scratch_ + 2 * kVecBytes)});
  return r;
}

// A bool vector into a predicate register (allocated; free with FreeP).
int NpuEmitter::EvalP(const PrimExpr& e) {
  const Object* n = e.get();
  DataType t = e.dtype();
  switch (NodeKindOf(n)) {
    case NodeKind::kEQ:
    case NodeKind::kNE:
    case NodeKind::kLT:
    case NodeKind::kLE:
    case NodeKind::kGT:
    case NodeKind::kGE: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      NodeKind k = NodeKindOf(n);
      bool swap = k == NodeKind::kGT || k == NodeKind::kGE;
      // ramp(base, 1) < broadcast(n) (a tail mask, any index width): pwhile with n - base.
      const PrimExpr& lo = swap ? b->b : b->a;
      const PrimExpr& hi = swap ? b->a : b->b;
      const auto* rp = lo.as<RampNode>();
      const auto* bc = hi.as<BroadcastNode>();
      if ((k == NodeKind::kLT || k == NodeKind::kGT) && rp && bc && is_const_int(rp->stride, 1) &&
          rp->base.dtype().bits() <= 32) {
        XR cnt = Hold(Eval(bc->value));
        XR base = Reload(Eval(rp->base));
        cnt = Reload(cnt);
        int d = Dest(cnt, base);
        R3(Op::Sub, d, cnt.r, base.r);
        R3(Op::Max, d, d, 0);  // pwhile counts unsigned: no lanes below 0
        int p = AllocP();
        E(Op::Pwhile, {O::P(p), O::X(d)}, LaneType(t.lanes()));
        xpool_.Free(d);
        return p;
      }
      VR x = HoldV(EvalV(swap ? b->b : b->a));
      VR y = ReloadV(EvalV(swap ? b->a : b->b));
      x = ReloadV(x);
      Op op = (k == NodeKind::kEQ || k == NodeKind::kNE)   ? Op::Vcmpeq
              : (k == NodeKind::kLT || k == NodeKind::kGT) ? Op::Vcmplt
                                                           : Op::Vcmple;
      int p = AllocP();
      E(op, {O::P(p), O::V(x.r), O::V(y.r)}, TC1Type(b->a.dtype()));
      if (k == NodeKind::kNE) E(Op::Pnot, {O::P(p), O::P(p)});
      Free(x);
      Free(y);
      return p;
    }
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      int x = EvalP(b->a), y = EvalP(b->b);
      E(NodeKindOf(n) == NodeKind::kAnd ? Op::Pand : Op::Por, {O::P(x), O::P(x), O::P(y)});
      FreeP(y);
      return x;
    }
    case NodeKind::kNot: {
      int x = EvalP(static_cast<const NotNode*>(n)->a);
      E(Op::Pnot, {O::P(x), O::P(x)});
      return x;
    }
    case NodeKind::kBroadcast: {
      XR c = Reload(Eval(static_cast<const BroadcastNode*>(n)->value));
      int p = AllocP();
      int d = Dest(c);
      RI(Op::Muli, d, c.r, t.lanes());
      E(Op::Pwhile, {O::P(p), O::X(d)}, LaneType(t.lanes()));
      xpool_.Free(d);
      return p;
    }
    case NodeKind::kVar: {
      auto it = vars_.find(static_cast<const VarNode*>(n));
      if (it == vars_.end() || it->second.preg < 0) Fail("bool vector variable", e->span);
      int p = AllocP();
      E(Op::Por, {O::P(p), O::P(it->second.preg), O::P(it->second.preg)});
      return p;
    }
    default:
      Fail("bool vector `" + std::string(e->GetTypeKey()) + "`", e->span);
  }
}

int64_t NpuEmitter::LaneScratch() {
  if (!lane_scratch_) lane_scratch_ = b_.Block(kLaneSlots * kVecBytes, kVecBytes);
  return lane_scratch_;
}

namespace {
// The 32-bit type a lane of `t` is computed in (loads sign- or zero-extend).
DataType Wide(DataType t) { return t.is_uint() ? DataType::UInt(32) : DataType::Int(32); }
Op LoadOp(DataType t) {
  if (t.bits() == 8) return t.is_int() ? Op::Lb : Op::Lbu;
  if (t.bits() == 16) return t.is_int() ? Op::Lh : Op::Lhu;
  return Op::Lw;
}
Op StoreOp(DataType t) { return t.bits() == 8 ? Op::Sb : t.bits() == 16 ? Op::Sh : Op::Sw; }
}  // namespace

VR NpuEmitter::LaneWiseRegs(DataType t, const std::vector<PrimExpr>& vargs,
                            const std::function<XR(const std::vector<Var>&)>& scalar) {
  CheckFull(t, span_);
  if (int(vargs.size()) + 1 > kLaneSlots) Fail("a lane-wise fallback with this many operands");
  for (const PrimExpr& a : vargs) {
    CheckFull(a.dtype(), span_);
    if (a.dtype().lanes() != t.lanes())
      Fail("a lane-wise operation over vectors of different lane counts");
  }
  // Evaluate every operand first (nested fallbacks use the scratch), then store them.
  std::vector<VR> regs;
  for (const PrimExpr& a : vargs) regs.push_back(HoldV(EvalV(a)));
  int64_t base = LaneScratch();
  for (size_t i = 0; i < regs.size(); ++i) {
    VR r = ReloadV(regs[i]);
    E(Op::Vst, {O::V(r.r), O::Mem(arch::Space::L1, 0, base + kVecBytes * int64_t(i))},
      TC1Type(vargs[i].dtype()));
    Free(r);
  }
  int64_t out = base + kVecBytes * int64_t(vargs.size());
  std::vector<Var> vars;
  for (size_t i = 0; i < vargs.size(); ++i)
    vars.push_back(Var("lane" + std::to_string(i), Wide(vargs[i].dtype())));
  for (int lane = 0; lane < t.lanes(); ++lane) {
    for (size_t i = 0; i < vargs.size(); ++i) {
      DataType et = vargs[i].dtype().element_of();
      VarLoc loc;
      loc.xreg = AllocX();
      LdL1(LoadOp(et), loc.xreg, base + kVecBytes * int64_t(i) + lane * et.lane_bytes());
      vars_[vars[i].get()] = loc;
    }
    XR r = Reload(scalar(vars));
    StL1(StoreOp(t.element_of()), r.r, out + lane * t.element_of().lane_bytes());
    Free(r);
    for (const Var& v : vars) Unbind(v);
  }
  VR r{AllocV(), true};
  E(Op::Vld, {O::V(r.r), O::Mem(arch::Space::L1, 0, out)});
  return r;
}

VR NpuEmitter::LaneWise(DataType t, const std::vector<PrimExpr>& vargs,
                        const std::function<PrimExpr(const std::vector<Var>&)>& expr) {
  return LaneWiseRegs(t, vargs, [&](const std::vector<Var>& v) { return Eval(expr(v)); });
}

// a << (b & (bits - 1)), clamped to the range of `t` (tc1.vshls on one lane).
XR NpuEmitter::SaturatingShiftLeft(DataType t, const Var& av, const Var& bv) {
  XR a = GetVar(av.get()), b = GetVar(bv.get());
  int bits = t.bits();
  int s = AllocX(), r = AllocX();
  RI(Op::Andi, s, b.r, bits - 1);
  R3(Op::Sll, r, a.r, s);
  if (bits < 32) {
    // |a| < 2^(bits-1) and s < bits: a << s fits in 32 bits; clamp it.
    int64_t hi = t.is_uint() ? (int64_t(1) << bits) - 1 : (int64_t(1) << (bits - 1)) - 1;
    int64_t lo = t.is_uint() ? 0 : -(int64_t(1) << (bits - 1));
    Li(s, hi);
    R3(t.is_uint() ? Op::Minu : Op::Min, r, r, s);
    if (!t.is_uint()) {
      Li(s, lo);
      R3(Op::Max, r, r, s);
    }
    xpool_.Free(s);
    return XR{r, true};
  }
  // 32 bits: overflow when shifting back does not give a; then the bound of a's sign.
  int back = AllocX(), sat = AllocX();
  R3(t.is_uint() ? Op::Srl : Op::Sra, back, r, s);
  R3(Op::Xor, back, back, a.r);
  R3(Op::Sltu, back, 0, back);  // 1 on overflow
  R3(Op::Sub, back, 0, back);   // all ones on overflow
  if (t.is_uint()) {
    Li(sat, -1);
  } else {
    RI(Op::Srai, sat, a.r, 31);
    RI(Op::Xori, sat, sat, INT32_MAX);  // a < 0: INT_MIN, else INT_MAX
  }
  R3(Op::Xor, sat, sat, r);
  R3(Op::And, sat, sat, back);
  R3(Op::Xor, r, r, sat);  // r ^ ((r ^ sat) & mask)
  xpool_.Free(s);
  xpool_.Free(back);
  xpool_.Free(sat);
  return XR{r, true};
}

// tc1.vcvt(a, part): widening converts lanes [part*L, part*L + L) of a; narrowing
// puts a's lanes at [part*La, part*La + La) of the result (other lanes 0).
VR NpuEmitter::ConvertPart(const CallNode* c, DataType t) {
  const PrimExpr& a = c->args[0];
  auto part = as_const_int(c->args[1]);
  if (!part) Fail("`tc1.vcvt` with a non-constant part", c->span);
  DataType from = a.dtype();
  CheckFull(t, c->span);
  CheckFull(from, c->span);
  arch::DType dt = TC1Type(t), st = TC1Type(from);
  VR v = ReloadV(EvalV(a));
  int64_t base = LaneScratch();
  int64_t lt = t.lanes(), la = from.lanes();
  int d = AllocV();
  if (lt <= la) {  // widening (or same width): bring lanes [part*lt, ...) to lane 0
    if (*part < 0 || (*part + 1) * lt > la)
      Fail("`tc1.vcvt` part " + std::to_string(*part) + " beyond the source lanes", c->span);
    int64_t off = *part * lt * from.element_of().lane_bytes();
    if (off == 0) {
      E(Op::Vcvt, {O::V(d), O::V(v.r)}, dt, st);
    } else {
      E(Op::Vst, {O::V(v.r), O::Mem(arch::Space::L1, 0, base)}, st);
      for (int64_t k = 0; k < kVecBytes - off; k += 4) {
        LdL1(Op::Lw, kScratch1, base + off + k);
        StL1(Op::Sw, kScratch1, base + kVecBytes + k);
      }
      E(Op::Vld, {O::V(0), O::Mem(arch::Space::L1, 0, base + kVecBytes)});
      E(Op::Vcvt, {O::V(d), O::V(0)}, dt, st);
    }
  } else {  // narrowing: converted lanes go to [part*la, ...)
    if (*part < 0 || (*part + 1) * la > lt)
      Fail("`tc1.vcvt` part " + std::to_string(*part) + " beyond the result lanes", c->span);
    E(Op::Vcvt, {O::V(d), O::V(v.r)}, dt, st);
    int64_t off = *part * la * t.element_of().lane_bytes();
    if (off != 0) {
      int64_t bytes = la * t.element_of().lane_bytes();
      E(Op::Vst, {O::V(d), O::Mem(arch::Space::L1, 0, base)}, dt);
      E(Op::Vsplat, {O::V(0), O::X(0)}, arch::DType::I32);
      E(Op::Vst, {O::V(0), O::Mem(arch::Space::L1, 0, base + kVecBytes)}, arch::DType::I32);
      for (int64_t k = 0; k < bytes; k += 4) {
        LdL1(Op::Lw, kScratch1, base + k);
        StL1(Op::Sw, kScratch1, base + kVecBytes + off + k);
      }
      E(Op::Vld, {O::V(d), O::Mem(arch::Space::L1, 0, base + kVecBytes)});
    }
  }
  Free(v);
  return VR{d, true};
}

// A vector load with a constant or run-time stride: element by element into L1
// scratch, then one vld (TC1's vld reads 32 contiguous aligned bytes only).
VR NpuEmitter::StridedLoad(const BufferLoadNode* l, const RampNode* rp, DataType t) {
  CheckFull(t, l->span);
  DataType et = t.element_of();
  int64_t esize = et.lane_bytes();
  int64_t out = LaneScratch() + kVecBytes * (kLaneSlots - 1);
  XR stride = Hold(Eval(rp->stride));
  Addr a = ElementAddr(l->buffer, rp->base);
  int p = Dest(a.base);
  if (p != a.base.r) Mov(p, a.base.r);
  stride = Reload(stride);
  int step = AllocX();
  int k = Log2(esize);
  if (k > 0)
    RI(Op::Slli, step, stride.r, k);
  else
    Mov(step, stride.r);
  Free(stride);
  int x = AllocX();
  for (int lane = 0; lane < t.lanes(); ++lane) {
    E(LoadOp(et), {O::X(x), O::Mem(a.space, p, a.imm)});
    StL1(StoreOp(et), x, out + lane * esize);
    if (lane + 1 < t.lanes()) R3(Op::Add, p, p, step);
  }
  xpool_.Free(x);
  xpool_.Free(step);
  xpool_.Free(p);
  VR r{AllocV(), true};
  E(Op::Vld, {O::V(r.r), O::Mem(arch::Space::L1, 0, out)});
  return r;
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
