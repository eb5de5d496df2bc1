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
  return lanes == kVecBytes / 4 ? arch::DType::I32 : lanes == kVecBytes / 2 ? arch::DType::I16 : arch::DType::I8;
}
}  // namespace

void NpuEmitter::CheckFull(DataType t, const Span& sp) {
  if (!t.is_bool() && t.lanes() * t.bits() != kVecBytes * 8) {
    Fail("vector type " + t.str() + " (TC1 vectors fill one " + std::to_string(kVecBytes * 8) + "-bit register)", sp);
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
    case NodeKind::kDiv: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      if (!t.is_float()) Fail("integer vector division (TC1 has no SIMD divide)", e->span);
      return TileVector(Op::Tdiv, {b->a, b->b}, t);
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
      static const std::map<std::string, Op> bit = {
          {"tir.bitwise_and", Op::Vand}, {"tir.bitwise_or", Op::Vor}, {"tir.bitwise_xor", Op::Vxor}};
      if (auto it = bit.find(op); it != bit.end()) return VBin(it->second, c->args[0], c->args[1], dt);
      static const std::map<std::string, Op> math = {
          {"tir.exp", Op::Texp},     {"tir.log", Op::Tlog},   {"tir.sqrt", Op::Tsqrt},      {"tir.rsqrt", Op::Trsqrt},
          {"tir.recip", Op::Trecip}, {"tir.tanh", Op::Ttanh}, {"tir.sigmoid", Op::Tsigmoid}};
      if (auto it = math.find(op); it != math.end()) return TileVector(it->second, {c->args[0]}, t);
      Fail("intrinsic `" + op + "` on vectors", c->span);
    }
    default: Fail("vector expression `" + std::string(e->GetTypeKey()) + "`", e->span);
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
  if (!rp || !is_const_int(rp->stride, 1)) Fail("a vector load with a non-contiguous index (gather)", sp);
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
  if (!rp || !is_const_int(rp->stride, 1)) Fail("a vector store with a non-contiguous index (scatter)", st->span);
  CheckFull(st->value.dtype(), st->span);
  VR v = HoldV(EvalV(st->value));
  int p = st->predicate.defined() ? EvalP(st->predicate) : 0;
  Addr a = ElementAddr(st->buffer, rp->base);
  v = ReloadV(v);
  if (p) E(Op::Vst, {O::V(v.r), Mem(a), O::P(p)}, TC1Type(st->buffer->dtype));
  else E(Op::Vst, {O::V(v.r), Mem(a)}, TC1Type(st->buffer->dtype));
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
  int64_t desc = Descriptor(vd.to_bytes(), true, "vecdesc shape=[" + std::to_string(t.lanes()) + "]");
  Li(kScratch1, scratch_);
  Li(kScratch2, scratch_ + kVecBytes);
  Li(kScratch3, scratch_ + 2 * kVecBytes);
  if (args.size() == 2) E(op, {O::X(kScratch3), O::X(kScratch1), O::X(kScratch2), O::Desc(0, desc)}, dt);
  else E(op, {O::X(kScratch3), O::X(kScratch1), O::Desc(0, desc)}, dt);
  RI(Op::Addi, kVecCount, kVecCount, 1);
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
      VR x = HoldV(EvalV(swap ? b->b : b->a));
      VR y = ReloadV(EvalV(swap ? b->a : b->b));
      x = ReloadV(x);
      Op op = (k == NodeKind::kEQ || k == NodeKind::kNE) ? Op::Vcmpeq
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
    default: Fail("bool vector `" + std::string(e->GetTypeKey()) + "`", e->span);
  }
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
