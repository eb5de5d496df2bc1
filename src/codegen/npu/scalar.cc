// src/codegen/npu/scalar.cc — scalar instruction selection: integer ALU, float
// arithmetic in SIMD lane 0, conversions, and the float functions TC1 has only on
// the vector engine (run on one element in L1 scratch).
#if TILECORE_ENABLE_NPU
#include <cstring>

#include "emitter.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/ffi/error.h"

namespace tilecore::codegen::npu {

using namespace ir;  // NOLINT

arch::DType TC1Type(DataType t) {
  t = t.element_of();
  if (t.is_bool()) return arch::DType::Bool;
  if (t.code == kDLBfloat && t.bits() == 16) return arch::DType::BF16;
  if (t.code == kDLFloat) {
    if (t.bits() == 16) return arch::DType::F16;
    if (t.bits() == 32) return arch::DType::F32;
  }
  if (t.is_int()) {
    if (t.bits() == 8) return arch::DType::I8;
    if (t.bits() == 16) return arch::DType::I16;
    if (t.bits() == 32) return arch::DType::I32;
  }
  if (t.is_uint()) {
    if (t.bits() == 8) return arch::DType::U8;
    if (t.bits() == 16) return arch::DType::U16;
    if (t.bits() == 32) return arch::DType::U32;
  }
  TILECORE_THROW(ValueError) << "npu codegen: dtype " << t.str()
                             << " has no TC1 type (nothing 64-bit on the NPU)";
}

arch::Space SpaceOf(const std::string& scope) {
  if (scope == "local") return arch::Space::L1;
  if (scope == "shared") return arch::Space::L2;
  return arch::Space::DDR;
}

int Log2(int64_t v) {
  int k = 0;
  while (k < 63 && (int64_t(1) << k) < v) ++k;
  return (int64_t(1) << k) == v ? k : -1;
}

namespace {

uint32_t F32Bits(double v) {
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Bit pattern of `v` in a 16-bit float format (round to nearest even).
uint32_t HalfBits(double v, bool bf16) {
  uint32_t x = F32Bits(v);
  if (bf16) {
    if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFF)) return 0x7FC0;
    return (x + 0x7FFF + ((x >> 16) & 1)) >> 16;
  }
  uint32_t s = (x >> 16) & 0x8000;
  int32_t e = int32_t((x >> 23) & 0xFF) - 127 + 15;
  uint32_t m = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return s | 0x7C00 | (m ? 0x200 : 0);
  if (e >= 31) return s | 0x7C00;
  if (e <= 0) {
    if (e < -10) return s;
    m |= 0x800000;
    uint32_t shift = uint32_t(14 - e), r = m >> shift, rem = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return s | r;
  }
  uint32_t r = (uint32_t(e) << 10) | (m >> 13), rem = m & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return s | r;
}

}  // namespace

uint32_t ScalarBits(DataType t, double v) {
  if (t.code == kDLBfloat) return HalfBits(v, true);
  if (t.is_float() && t.bits() == 16) return HalfBits(v, false);
  if (t.is_float()) return F32Bits(v);
  return static_cast<uint32_t>(static_cast<int64_t>(v));
}

XR NpuEmitter::Imm(int64_t v) {
  XR r{AllocX(), true};
  Li(r.r, static_cast<int32_t>(static_cast<uint32_t>(v)));
  return r;
}

XR NpuEmitter::Eval(const PrimExpr& e) {
  if (e.dtype().is_vector())
    Fail("a vector value where a scalar is needed (" + e.dtype().str() + ")", e->span);
  const Object* n = e.get();
  DataType t = e.dtype();
  switch (NodeKindOf(n)) {
    case NodeKind::kIntImm: {
      int64_t v = static_cast<const IntImmNode*>(n)->value;
      if (v == 0) return XR{0, false};
      bool fits =
          t.is_uint() ? (v >= 0 && v <= int64_t(UINT32_MAX)) : (v >= INT32_MIN && v <= INT32_MAX);
      if (!fits) {
        Fail("the constant " + std::to_string(v) + " (beyond TC1's 32-bit registers)", e->span);
      }
      return Imm(v);
    }
    case NodeKind::kFloatImm:
      return Imm(ScalarBits(t, static_cast<const FloatImmNode*>(n)->value));
    case NodeKind::kVar:
      return GetVar(static_cast<const VarNode*>(n));
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul:
    case NodeKind::kDiv:
    case NodeKind::kMod:
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod:
    case NodeKind::kMin:
    case NodeKind::kMax:
      return Arith(NodeKindOf(n), static_cast<const BinaryOpNode*>(n));
    case NodeKind::kEQ:
    case NodeKind::kNE:
    case NodeKind::kLT:
    case NodeKind::kLE:
    case NodeKind::kGT:
    case NodeKind::kGE:
      return Compare(NodeKindOf(n), static_cast<const BinaryOpNode*>(n));
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      auto* b = static_cast<const BinaryOpNode*>(n);
      XR x = Hold(Eval(b->a));
      XR y = Reload(Eval(b->b));
      x = Reload(x);
      int d = Dest(x, y);
      R3(NodeKindOf(n) == NodeKind::kAnd ? Op::And : Op::Or, d, x.r, y.r);
      return XR{d, true};
    }
    case NodeKind::kNot: {
      XR x = Reload(Eval(static_cast<const NotNode*>(n)->a));
      int d = Dest(x);
      RI(Op::Xori, d, x.r, 1);
      return XR{d, true};
    }
    case NodeKind::kSelect: {
      auto* s = static_cast<const SelectNode*>(n);
      XR c = Hold(Eval(s->condition));
      XR a = Hold(Eval(s->true_value));
      XR b = Reload(Eval(s->false_value));
      a = Reload(a);
      c = Reload(c);
      // r = b ^ ((a ^ b) & -c)
      int m = Dest(c);
      R3(Op::Sub, m, 0, c.r);
      int d = AllocX();
      R3(Op::Xor, d, a.r, b.r);
      R3(Op::And, d, d, m);
      R3(Op::Xor, d, d, b.r);
      xpool_.Free(m);
      Free(a);
      Free(b);
      return XR{d, true};
    }
    case NodeKind::kCast: {
      auto* c = static_cast<const CastNode*>(n);
      XR v = Reload(Eval(c->value));
      return CastScalar(v, c->value.dtype(), t);
    }
    case NodeKind::kLet: {
      auto* l = static_cast<const LetNode*>(n);
      BindLet(l->var, l->value);
      XR r = Reload(Eval(l->body));
      if (!r.tmp) {  // the body is the variable itself: copy before unbinding
        XR c{AllocX(), true};
        Mov(c.r, r.r);
        r = c;
      }
      Unbind(l->var);
      return r;
    }
    case NodeKind::kBufferLoad: {
      auto* l = static_cast<const BufferLoadNode*>(n);
      if (l->indices.size() != 1)
        Fail("a multi-dimensional load (run FlattenBuffer first)", e->span);
      TC1Type(l->buffer->dtype);
      SyncFrontEnd(l->buffer);
      Addr a = ElementAddr(l->buffer, l->indices[0]);
      int d = Dest(a.base);
      DataType bt = l->buffer->dtype;
      Op op = bt.bits() == 8    ? (bt.is_int() ? Op::Lb : Op::Lbu)
              : bt.bits() == 16 ? (bt.is_int() ? Op::Lh : Op::Lhu)
                                : Op::Lw;
      E(op, {O::X(d), Mem(a)});
      return XR{d, true};
    }
    case NodeKind::kCall:
      return CallScalar(static_cast<const CallNode*>(n));
    default:
      Fail("expression `" + std::string(e->GetTypeKey()) + "`", e->span);
  }
}

// Scalar float arithmetic runs in SIMD lane 0 (v0, v1 scratch).
XR NpuEmitter::FloatBinary(Op op, XR a, XR b, DataType t) {
  arch::DType dt = TC1Type(t);
  E(Op::Vsplat, {O::V(0), O::X(a.r)}, dt);
  E(Op::Vsplat, {O::V(1), O::X(b.r)}, dt);
  E(op, {O::V(0), O::V(0), O::V(1)}, dt);
  int d = Dest(a, b);
  E(Op::Vext, {O::X(d), O::V(0), O::Imm(0)}, dt);
  return XR{d, true};
}

XR NpuEmitter::Arith(NodeKind k, const BinaryOpNode* b) {
  DataType t = b->dtype;
  if (t.is_float()) {
    if (k == NodeKind::kDiv) return TileScalar(Op::Tdiv, {b->a, b->b}, t);
    Op op = k == NodeKind::kAdd   ? Op::Vadd
            : k == NodeKind::kSub ? Op::Vsub
            : k == NodeKind::kMul ? Op::Vmul
            : k == NodeKind::kMin ? Op::Vmin
            : k == NodeKind::kMax ? Op::Vmax
                                  : Op::Nop;
    if (op == Op::Nop) Fail(std::string("float ") + b->GetTypeKey(), b->span);
    XR x = Hold(Eval(b->a));
    XR y = Reload(Eval(b->b));
    x = Reload(x);
    return FloatBinary(op, x, y, t);
  }
  bool u = t.is_uint();
  auto c = as_const_int(b->b);
  // Immediate forms.
  if (c && (k == NodeKind::kAdd || k == NodeKind::kSub || k == NodeKind::kMul) &&
      *c >= INT32_MIN + 1 && *c <= INT32_MAX) {
    XR x = Reload(Eval(b->a));
    int d = Dest(x);
    int64_t v = k == NodeKind::kSub ? -*c : *c;
    RI(k == NodeKind::kMul ? Op::Muli : Op::Addi, d, x.r, v);
    Normalize(d, t);
    return XR{d, true};
  }
  if (c && *c > 0 && Log2(*c) >= 0 &&
      (k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod ||
       (u && (k == NodeKind::kDiv || k == NodeKind::kMod)))) {
    XR x = Reload(Eval(b->a));
    int d = Dest(x);
    bool div = k == NodeKind::kFloorDiv || k == NodeKind::kDiv;
    if (div)
      RI(u ? Op::Srli : Op::Srai, d, x.r, Log2(*c));
    else
      RI(Op::Andi, d, x.r, *c - 1);
    return XR{d, true};
  }
  XR x = Hold(Eval(b->a));
  XR y = Reload(Eval(b->b));
  x = Reload(x);
  // (a floor division of a non-negative by a positive is the truncating one: the item
  // index math of every tiled loop, six instructions fewer each)
  bool floor_signed = !u && (k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod) &&
                      !(ranges_.ConstIntBound(b->a).lo >= 0 && ranges_.ConstIntBound(b->b).lo >= 1);
  int d = floor_signed ? -1 : Dest(x, y);
  auto rr = [&](Op op) { R3(op, d, x.r, y.r); };
  switch (k) {
    case NodeKind::kAdd:
      rr(Op::Add);
      Normalize(d, t);
      break;
    case NodeKind::kSub:
      rr(Op::Sub);
      Normalize(d, t);
      break;
    case NodeKind::kMul:
      rr(Op::Mul);
      Normalize(d, t);
      break;
    case NodeKind::kDiv:
      rr(u ? Op::Divu : Op::Div);
      Normalize(d, t);
      break;
    case NodeKind::kMod:
      rr(u ? Op::Remu : Op::Rem);
      break;
    case NodeKind::kMin:
      rr(u ? Op::Minu : Op::Min);
      break;
    case NodeKind::kMax:
      rr(u ? Op::Maxu : Op::Max);
      break;
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod: {
      if (u) {
        rr(k == NodeKind::kFloorDiv ? Op::Divu : Op::Remu);
        break;
      }
      if (!floor_signed) {
        rr(k == NodeKind::kFloorDiv ? Op::Div : Op::Rem);
        break;
      }
      // q = div(a, b), r = rem(a, b); if r != 0 and sign(r) != sign(b): q -= 1, r += b.
      int r = AllocX(), q = AllocX(), tt = AllocX();
      R3(Op::Rem, r, x.r, y.r);
      R3(Op::Div, q, x.r, y.r);
      R3(Op::Xor, tt, r, y.r);
      R3(Op::Slt, tt, tt, 0);
      R3(Op::Sltu, kScratch1, 0, r);
      R3(Op::And, tt, tt, kScratch1);
      if (k == NodeKind::kFloorMod) R3(Op::Mul, tt, tt, y.r);
      d = Dest(x, y);
      if (k == NodeKind::kFloorDiv)
        R3(Op::Sub, d, q, tt);
      else
        R3(Op::Add, d, r, tt);
      xpool_.Free(r);
      xpool_.Free(q);
      xpool_.Free(tt);
      break;
    }
    default:
      Fail(b->GetTypeKey(), b->span);
  }
  return XR{d, true};
}

XR NpuEmitter::Compare(NodeKind k, const BinaryOpNode* b) {
  DataType t = b->a.dtype();
  XR x = Hold(Eval(b->a));
  XR y = Reload(Eval(b->b));
  x = Reload(x);
  if (t.is_float()) {
    arch::DType dt = TC1Type(t);
    bool swap = k == NodeKind::kGT || k == NodeKind::kGE;
    E(Op::Vsplat, {O::V(0), O::X((swap ? y : x).r)}, dt);
    E(Op::Vsplat, {O::V(1), O::X((swap ? x : y).r)}, dt);
    Op op = (k == NodeKind::kEQ || k == NodeKind::kNE)   ? Op::Vcmpeq
            : (k == NodeKind::kLT || k == NodeKind::kGT) ? Op::Vcmplt
                                                         : Op::Vcmple;
    int p = AllocP();
    E(op, {O::P(p), O::V(0), O::V(1)}, dt);
    int d = Dest(x, y);
    Li(d, 1);
    E(Op::Vsplat, {O::V(0), O::X(d)}, arch::DType::I32);
    E(Op::Vsplat, {O::V(1), O::X(0)}, arch::DType::I32);
    E(Op::Vsel, {O::V(0), O::V(0), O::V(1), O::P(p)}, arch::DType::I32);
    E(Op::Vext, {O::X(d), O::V(0), O::Imm(0)}, arch::DType::I32);
    FreeP(p);
    if (k == NodeKind::kNE) RI(Op::Xori, d, d, 1);
    return XR{d, true};
  }
  bool u = t.is_uint();
  int d = Dest(x, y);
  Op slt = u ? Op::Sltu : Op::Slt;
  switch (k) {
    case NodeKind::kLT:
      R3(slt, d, x.r, y.r);
      break;
    case NodeKind::kGT:
      R3(slt, d, y.r, x.r);
      break;
    case NodeKind::kLE:
      R3(slt, d, y.r, x.r);
      RI(Op::Xori, d, d, 1);
      break;
    case NodeKind::kGE:
      R3(slt, d, x.r, y.r);
      RI(Op::Xori, d, d, 1);
      break;
    case NodeKind::kEQ:
      R3(Op::Xor, d, x.r, y.r);
      RI(Op::Sltiu, d, d, 1);
      break;
    default:
      R3(Op::Xor, d, x.r, y.r);
      R3(Op::Sltu, d, 0, d);
      break;
  }
  return XR{d, true};
}

// Scalar conversions through SIMD lane 0 (vcvt has TC1's rounding and saturation).
XR NpuEmitter::CastScalar(XR v, DataType from, DataType to) {
  if (from == to) return v;
  arch::DType s = TC1Type(from), d = TC1Type(to);
  if (from.is_integer() && to.is_integer() && from.bits() == 32 && to.bits() == 32 &&
      from.code == to.code)
    return v;
  E(Op::Vsplat, {O::V(0), O::X(v.r)}, s);
  E(Op::Vcvt, {O::V(1), O::V(0)}, d, s);
  int r = Dest(v);
  E(Op::Vext, {O::X(r), O::V(1), O::Imm(0)}, d);
  if (to.is_float() && to.bits() == 16) RI(Op::Andi, r, r, 65535);
  return XR{r, true};
}

// A float operation TC1 has only on the vector engine, run on one element in L1 scratch.
XR NpuEmitter::TileScalar(Op op, std::vector<PrimExpr> args, DataType t) {
  int64_t esz = t.lane_bytes();
  if (!scratch_) scratch_ = b_.Block(3 * kVecBytes, kVecBytes);
  // every operand is evaluated before any is stored: an operand that is itself a tile
  // scalar op (a / sqrt(y)) goes through the same scratch slots
  std::vector<XR> vals;
  for (const PrimExpr& a : args) vals.push_back(Hold(Eval(a)));
  for (size_t i = 0; i < vals.size(); ++i) {
    XR a = Reload(vals[i]);
    StL1(esz == 2 ? Op::Sh : Op::Sw, a.r, scratch_ + kVecBytes * int64_t(i));
    Free(a);
  }
  arch::VecDesc vd;
  vd.rank = 1;
  vd.shape = {1, 1, 1, 1};
  vd.d_stride = vd.a_stride = vd.b_stride = {1, 0, 0, 0};
  auto bytes = vd.to_bytes();
  int64_t desc = Descriptor(bytes, true, "vecdesc shape=[1]");
  XR r{AllocX(), true};
  Li(kScratch1, scratch_);
  Li(kScratch2, scratch_ + kVecBytes);
  Li(kScratch3, scratch_ + 2 * kVecBytes);
  arch::DType dt = TC1Type(t);
  if (args.size() == 2)
    E(op, {O::X(kScratch3), O::X(kScratch1), O::X(kScratch2), O::Desc(0, desc)}, dt);
  else
    E(op, {O::X(kScratch3), O::X(kScratch1), O::Desc(0, desc)}, dt);
  CountIssued(arch::Engine::Vector);
  WaitFor(O::FrontEnd(), arch::Engine::Vector, kVecCount);
  LdL1(esz == 2 ? Op::Lhu : Op::Lw, r.r, scratch_ + 2 * kVecBytes);
  return r;
}

XR NpuEmitter::CallScalar(const CallNode* c) {
  std::string op(c->op.view());
  DataType t = c->dtype;
  if (op == "tir.core_id") {
    XR r{AllocX(), true};
    E(Op::Csrr, {O::X(r.r), O::Csr(arch::Csr::CoreId)});
    return r;
  }
  if (op == "tir.num_cores") return Imm(cores_);
  if (op == "tc1.dma_issued") {  // the count's register (CollectBufferUses)
    auto engine = as_const_int(c->args[0]);
    if (!engine || (*engine != 0 && *engine != 1))
      Fail("`tc1.dma_issued` of a DMA engine numbered neither 0 (DMA-in) nor 1 (DMA-out)", c->span);
    return XR{dma_issued_reg_[*engine], false};
  }
  static const std::map<std::string, Op> math = {
      {"tir.exp", Op::Texp},        {"tir.log", Op::Tlog},     {"tir.sqrt", Op::Tsqrt},
      {"tir.rsqrt", Op::Trsqrt},    {"tir.recip", Op::Trecip}, {"tir.tanh", Op::Ttanh},
      {"tir.sigmoid", Op::Tsigmoid}};
  if (auto it = math.find(op); it != math.end()) return TileScalar(it->second, {c->args[0]}, t);
  static const std::map<std::string, Op> bit = {{"tir.bitwise_and", Op::And},
                                                {"tir.bitwise_or", Op::Or},
                                                {"tir.bitwise_xor", Op::Xor},
                                                {"tir.shift_left", Op::Sll}};
  if (auto it = bit.find(op); it != bit.end()) {
    if (op == "tir.shift_left" && t.bits() < 32) Fail("a narrow-integer shift", c->span);
    XR x = Hold(Eval(c->args[0]));
    XR y = Reload(Eval(c->args[1]));
    x = Reload(x);
    int d = Dest(x, y);
    R3(it->second, d, x.r, y.r);
    Normalize(d, t);
    return XR{d, true};
  }
  if (op == "tir.shift_right") {
    if (t.bits() < 32) Fail("a narrow-integer shift", c->span);
    XR x = Hold(Eval(c->args[0]));
    XR y = Reload(Eval(c->args[1]));
    x = Reload(x);
    int d = Dest(x, y);
    R3(t.is_uint() ? Op::Srl : Op::Sra, d, x.r, y.r);
    return XR{d, true};
  }
  if (op == "tir.bitwise_not") {
    XR x = Reload(Eval(c->args[0]));
    int d = Dest(x);
    RI(Op::Xori, d, x.r, -1);
    Normalize(d, t);
    return XR{d, true};
  }
  static const std::map<std::string, Op> red = {
      {"tc1.vredsum", Op::Vredsum}, {"tc1.vredmax", Op::Vredmax}, {"tc1.vredmin", Op::Vredmin}};
  if (auto it = red.find(op); it != red.end()) {
    VR a = ReloadV(EvalV(c->args[0]));
    arch::DType dt = TC1Type(c->args[0].dtype());
    E(it->second, {O::V(0), O::V(a.r)}, dt);
    Free(a);
    XR r{AllocX(), true};
    E(Op::Vext, {O::X(r.r), O::V(0), O::Imm(0)}, dt);
    return r;
  }
  Fail("intrinsic `" + op + "` (as a value)", c->span);
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
