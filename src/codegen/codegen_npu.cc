// src/codegen/codegen_npu.cc — Kernel IR -> TC1 assembly (see codegen/codegen_npu.h).
#if TILECORE_ENABLE_NPU
#include "tilecore/codegen/codegen_npu.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/program_object.h"
#include "tilecore/codegen/codegen_c.h"
#include "tilecore/codegen/tile_operand.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/runtime/npu_module.h"
#include "tilecore/transform/analyzer.h"
#include "tilecore/transform/flatten_buffer.h"
#include "tilecore/transform/lower_async_dma.h"
#include "tilecore/transform/plan_local_memory.h"
#include "tilecore/transform/simplify.h"
#include "tilecore/transform/unroll_loop.h"

namespace tilecore::codegen {
namespace {

using namespace ir;  // NOLINT

constexpr int kVecCount = 30;  // x30: vector-engine commands issued
constexpr int kMmCount = 31;   // x31: matrix-engine commands issued
constexpr int kFirstPoolX = 4;
constexpr int kLastPoolX = 29;
constexpr int kFirstPoolV = 3;
constexpr int kMinFreeForTemps = 8;  // variables leave this many registers to temporaries

std::string DT(DataType t) {
  t = t.element_of();
  if (t.is_bool()) return "bool";
  if (t.code == kDLBfloat) return "bf16";
  if (t.code == kDLFloat) {
    if (t.bits() == 16) return "f16";
    if (t.bits() == 32) return "f32";
  }
  if (t.is_int() && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32)) return "i" + std::to_string(t.bits());
  if (t.is_uint() && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32)) return "u" + std::to_string(t.bits());
  TILECORE_THROW(ValueError) << "npu codegen: dtype " << t.str() << " has no TC1 type (nothing 64-bit on the NPU)";
}

std::string Space(const String& scope) {
  if (scope.view() == "local") return "l1";
  if (scope.view() == "shared") return "l2";
  return "ddr";
}

int Log2(int64_t v) {
  int k = 0;
  while ((int64_t(1) << k) < v) ++k;
  return (int64_t(1) << k) == v ? k : -1;
}

std::string FloatText(double v) {
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

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
    uint32_t shift = uint32_t(14 - e), r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return s | r;
  }
  uint32_t r = (uint32_t(e) << 10) | (m >> 13), rem = m & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return s | r;
}

uint32_t ScalarBits(DataType t, double v) {
  if (t.code == kDLBfloat) return HalfBits(v, true);
  if (t.is_float() && t.bits() == 16) return HalfBits(v, false);
  if (t.is_float()) return F32Bits(v);
  return static_cast<uint32_t>(static_cast<int64_t>(v));
}

// A tensor operand of a tile command: address expression plus shape and strides.
struct Tensor {
  Buffer buffer;
  DataType dtype;
  PrimExpr offset;  // elements from the buffer's data pointer
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

struct XR {
  int r = 0;
  bool tmp = false;
};
struct VR {
  int r = 0;
  bool tmp = false;
};

struct VarLoc {
  int xreg = -1;
  int vreg = -1;
  int preg = -1;
  int64_t mem = -1;  // L1 address of a variable that lives in memory
};

// Where a buffer's compute-engine bookkeeping lives: `units` pairs of words
// (last mm count, last vec count), one unit per slab of the outermost dimension.
struct Track {
  int64_t addr = 0;
  int64_t units = 1;
  int engines = 0;  // bit 0: some matrix command touches the buffer, bit 1: some vector command
};

class NpuEmitter {
 public:
  NpuEmitter(const PrimFunc& f, std::string name, int max_cores, int64_t l1_limit)
      : f_(f), name_(std::move(name)), max_cores_(max_cores), l1_limit_(l1_limit) {}

  NpuAssembly Run() {
    ReadPlan();
    cores_ = CountCores(f_->body);
    CollectTileOperands();
    for (int r = kFirstPoolX; r <= kLastPoolX; ++r) xfree_[r] = true;
    for (int r = kFirstPoolV; r < 32; ++r) vfree_[r] = true;
    for (int r = 1; r < 8; ++r) pfree_[r] = true;
    Emit("li x" + std::to_string(kVecCount) + ", 0");
    Emit("li x" + std::to_string(kMmCount) + ", 0");
    // Parameters: scalars and buffer addresses from the argument block.
    for (size_t i = 0; i < f_->params.size(); ++i) {
      Var p = f_->params[i];
      int64_t slot = int64_t(runtime::kNpuArgBlock) + 4 * int64_t(i);
      VarLoc loc;
      DataType t = f_->buffer_map.count(p) ? DataType::Int(32) : p->dtype;
      if (!f_->buffer_map.count(p) && !t.is_scalar()) Fail("vector parameter `" + std::string(p->name.view()) + "`");
      bool plain = f_->buffer_map.count(p) || t == DataType::Int(32) || t == DataType::UInt(32) ||
                   t == DataType::Float(32);
      if (FreeX() > kMinFreeForTemps) {
        loc.xreg = AllocX();
        Emit("lw x" + S(loc.xreg) + ", [l1: x0 + " + S(slot) + "]");
        if (!plain) Normalize(loc.xreg, t);
      } else if (plain) {
        loc.mem = slot;
      } else {
        XR r{AllocX(), true};
        Emit("lw x" + S(r.r) + ", [l1: x0 + " + S(slot) + "]");
        Normalize(r.r, t);
        loc.mem = NewWords(1);
        Emit("sw x" + S(r.r) + ", [l1: x0 + " + S(loc.mem) + "]");
        Free(r);
      }
      vars_[p.get()] = loc;
    }
    Stmt(f_->body);
    if (cores_ > 1) Emit("fence");
    Emit("halt");
    return Finish();
  }

 private:
  // ---- output -------------------------------------------------------------------------------
  static std::string S(int64_t v) { return std::to_string(v); }
  static std::string X(int r) { return "x" + std::to_string(r); }
  static std::string V(int r) { return "v" + std::to_string(r); }
  static std::string P(int r) { return "p" + std::to_string(r); }

  void Emit(const std::string& line) {
    text_.push_back("        " + line);
    locs_.push_back(loc_);
  }
  void Label(const std::string& l) {
    text_.push_back(l + ":");
    locs_.push_back("");
  }
  std::string NewLabel(const char* stem) { return std::string("Lk_") + stem + "_" + std::to_string(labels_++); }

  [[noreturn]] void Fail(const std::string& what, const Span& span = Span()) {
    std::ostringstream os;
    os << "npu codegen: " << what << " cannot be emitted for TC1 (kernel `" << name_ << "`";
    Span sp = span.defined() ? span : span_;
    if (sp.defined()) os << ", at " << sp->file.view() << ":" << sp->line;
    os << ")";
    TILECORE_THROW(ValueError) << os.str();
  }

  // Data segment (L1, above the planned buffers).
  int64_t NewWords(int64_t n) {
    int64_t a = data_top_;
    data_lines_.push_back("        .zero " + S(4 * n));
    data_top_ += 4 * n;
    return a;
  }
  int64_t NewAligned32(int64_t bytes) {
    int64_t pad = (32 - data_top_ % 32) % 32;
    if (pad) data_lines_.push_back("        .zero " + S(pad));
    data_top_ += pad;
    int64_t a = data_top_;
    data_lines_.push_back("        .zero " + S(bytes));
    data_top_ += bytes;
    return a;
  }
  // A descriptor (directive text); identical static descriptors are shared.
  int64_t Descriptor(const std::string& directive, int64_t size, bool shared = true) {
    if (shared) {
      auto it = descs_.find(directive);
      if (it != descs_.end()) return it->second;
    }
    int64_t a = data_top_;
    data_lines_.push_back("        " + directive);
    data_top_ += size;
    if (shared) descs_[directive] = a;
    return a;
  }
  int64_t IotaTable(DataType t) {
    int bits = t.bits();
    auto it = iota_.find(bits);
    if (it != iota_.end()) return it->second;
    int64_t a = NewAligned32(0);
    int lanes = 256 / bits;
    std::string d = bits == 32 ? ".word " : bits == 16 ? ".half " : ".byte ";
    for (int i = 0; i < lanes; ++i) d += (i ? ", " : "") + S(i);
    data_lines_.push_back("        " + d);
    data_top_ += 32;
    iota_[bits] = a;
    return a;
  }

  NpuAssembly Finish() {
    int64_t base = data_base_;
    if (data_top_ > l1_limit_) {
      TILECORE_THROW(ValueError) << "npu codegen: kernel `" << name_ << "`: local memory (L1) overflows: the buffers "
                                 << "need " << base << " bytes and the descriptors and scratch " << (data_top_ - base)
                                 << " more, beyond the " << l1_limit_ << " bytes available per core";
    }
    NpuAssembly out;
    out.cores = cores_;
    auto push = [&](const std::string& l, const std::string& loc) {
      out.text += l + "\n";
      out.line_locations.push_back(loc);
    };
    push("# kernel " + name_ + " (" + S(cores_) + " cores), generated by tilecore", "");
    push(cores_ > 1 ? ".core 0-" + S(cores_ - 1) : ".core 0", "");
    if (!data_lines_.empty()) {
      push(".data l1, " + S(base), "");
      for (const std::string& l : data_lines_) push(l, "");
      push(".text", "");
    }
    for (size_t i = 0; i < text_.size(); ++i) push(text_[i], locs_[i]);
    return out;
  }

  // ---- setup --------------------------------------------------------------------------------
  void ReadPlan() {
    int64_t local_bytes = 0;
    if (auto v = f_->attrs.Get("local_bytes")) local_bytes = v->cast<int64_t>();
    if (auto v = f_->attrs.Get("memory_plan")) {
      auto plan = v->cast<Map<Var, Array<Any>>>();
      for (const auto& [var, entry] : plan.items()) plan_[var.get()] = entry[0].cast<int64_t>();
    }
    data_base_ = data_top_ = (local_bytes + 63) / 64 * 64;
  }

  int CountCores(const ir::Stmt& s) {
    int n = 1;
    PostOrderVisit(s, [&](const ObjectRef& o) {
      if (const auto* f = o.as<ForNode>(); f && f->kind == ForKind::kCores) {
        auto e = as_const_int(f->extent);
        auto m = as_const_int(f->min);
        if (!e || !m) Fail("a `cores` loop with a non-constant range (for " + std::string(f->loop_var->name.view()) + ")", f->span);
        if (*e > max_cores_) {
          TILECORE_THROW(ValueError) << "npu codegen: kernel `" << name_ << "`: the cores loop `"
                                     << f->loop_var->name.view() << "` has " << *e << " iterations but the target has "
                                     << max_cores_ << " cores (-cores=" << max_cores_ << ")";
        }
        n = std::max<int>(n, int(*e));
      }
    });
    return n;
  }

  void CollectTileOperands() {
    PostOrderVisit(f_->body, [&](const ObjectRef& o) {
      const auto* c = o.as<CallNode>();
      if (!c) return;
      std::string op(c->op.view());
      if (op.rfind("tile.vec_", 0) == 0 || op == "tile.mm") {
        for (const PrimExpr& a : c->args) {
          if (const auto* r = a.as<BufferRegionNode>()) {
            tile_bufs_.insert(r->buffer->data.get());
            engines_[r->buffer->data.get()] |= op == "tile.mm" ? 1 : 2;
          }
        }
      }
    });
  }

  // ---- registers ----------------------------------------------------------------------------
  int FreeX() const {
    int n = 0;
    for (int r = kFirstPoolX; r <= kLastPoolX; ++r) n += xfree_[r];
    return n;
  }
  int AllocX() {
    for (int r = kFirstPoolX; r <= kLastPoolX; ++r) {
      if (xfree_[r]) {
        xfree_[r] = false;
        return r;
      }
    }
    Fail("an expression this deep (out of scalar registers; split it with lets)");
  }
  int AllocV() {
    for (int r = kFirstPoolV; r < 32; ++r) {
      if (vfree_[r]) {
        vfree_[r] = false;
        return r;
      }
    }
    Fail("a vector expression this deep (out of SIMD registers)");
  }
  int AllocP() {
    for (int r = 1; r < 8; ++r) {
      if (pfree_[r]) {
        pfree_[r] = false;
        return r;
      }
    }
    Fail("this many live vector conditions (out of predicate registers)");
  }
  void Free(XR r) {
    if (r.tmp) xfree_[r.r] = true;
  }
  void Free(VR r) {
    if (r.tmp) vfree_[r.r] = true;
  }
  void FreeP(int p) {
    if (p > 0) pfree_[p] = true;
  }
  // A temporary to write into: reuse `a` if it is one.
  int Dest(XR a) { return a.tmp ? a.r : AllocX(); }
  int Dest(XR a, XR b) {
    if (a.tmp) {
      Free(b);
      return a.r;
    }
    if (b.tmp) return b.r;
    return AllocX();
  }

  // Canonical register form of a narrow integer: sign- or zero-extended (wraps).
  void Normalize(int r, DataType t) {
    if (t.is_bool() || t.is_float()) {
      if (t.is_float() && t.bits() == 16) Emit("andi " + X(r) + ", " + X(r) + ", 65535");
      return;
    }
    int bits = t.bits();
    if (bits >= 32) return;
    if (t.is_uint()) {
      Emit("andi " + X(r) + ", " + X(r) + ", " + S((int64_t(1) << bits) - 1));
    } else {
      Emit("slli " + X(r) + ", " + X(r) + ", " + S(32 - bits));
      Emit("srai " + X(r) + ", " + X(r) + ", " + S(32 - bits));
    }
  }

  // ---- variables ----------------------------------------------------------------------------
  VarLoc BindScalar(const Var& v) {
    VarLoc loc;
    if (FreeX() > kMinFreeForTemps) {
      loc.xreg = AllocX();
    } else {
      loc.mem = NewWords(1);
    }
    vars_[v.get()] = loc;
    return loc;
  }
  void Unbind(const Var& v) {
    auto it = vars_.find(v.get());
    if (it == vars_.end()) return;
    if (it->second.xreg >= 0) xfree_[it->second.xreg] = true;
    if (it->second.vreg >= 0) vfree_[it->second.vreg] = true;
    if (it->second.preg >= 0) pfree_[it->second.preg] = true;
    vars_.erase(it);
  }
  void SetVar(const VarLoc& loc, XR value) {
    if (loc.xreg >= 0) {
      if (loc.xreg != value.r) Emit("add " + X(loc.xreg) + ", " + X(value.r) + ", x0");
    } else {
      Emit("sw " + X(value.r) + ", [l1: x0 + " + S(loc.mem) + "]");
    }
  }
  XR GetVar(const VarNode* v) {
    auto it = vars_.find(v);
    if (it == vars_.end()) Fail("a use of the unbound variable `" + std::string(v->name.view()) + "`");
    if (it->second.xreg >= 0) return XR{it->second.xreg, false};
    if (it->second.mem < 0) Fail("vector variable `" + std::string(v->name.view()) + "` used as a scalar");
    XR r{AllocX(), true};
    Emit("lw " + X(r.r) + ", [l1: x0 + " + S(it->second.mem) + "]");
    return r;
  }

  // ---- buffers and addresses ----------------------------------------------------------------
  struct Addr {
    XR base;
    int64_t imm = 0;
    std::string space;
  };

  // x register holding the buffer's base address (params), or x0 with a constant.
  Addr BufferBase(const Buffer& b) {
    Addr a;
    a.space = Space(b->scope);
    auto it = plan_.find(b->data.get());
    if (it != plan_.end()) {
      a.base = XR{0, false};
      a.imm = it->second;
      return a;
    }
    if (vars_.count(b->data.get())) {
      a.base = GetVar(b->data.get());
      return a;
    }
    Fail("an access to buffer `" + std::string(b->name.view()) + "` (neither a parameter nor a planned allocation)");
  }

  // Address of element `index` (elements, scalar int) of `b`.
  Addr ElementAddr(const Buffer& b, const PrimExpr& index) {
    int64_t esize = b->dtype.lane_bytes();
    Addr a = BufferBase(b);
    PrimExpr idx = index;
    int64_t cst = 0;
    if (auto c = as_const_int(idx)) {
      a.imm += *c * esize;
      return a;
    }
    if (const auto* add = idx.as<AddNode>()) {
      if (auto c = as_const_int(add->b)) {
        cst = *c;
        idx = add->a;
      }
    }
    XR i = Eval(idx);
    int d = Dest(i);
    int k = Log2(esize);
    if (k > 0) Emit("slli " + X(d) + ", " + X(i.r) + ", " + S(k));
    else if (d != i.r) Emit("add " + X(d) + ", " + X(i.r) + ", x0");
    if (a.base.r != 0) {
      Emit("add " + X(d) + ", " + X(d) + ", " + X(a.base.r));
      Free(a.base);
    }
    a.base = XR{d, true};
    a.imm += cst * esize;
    return a;
  }
  std::string Mem(const Addr& a) { return "[" + a.space + ": " + X(a.base.r) + " + " + S(a.imm) + "]"; }

  // Address of a tensor's first element in a register.
  XR TensorAddr(const Tensor& t) {
    int64_t esize = t.dtype.lane_bytes();
    Addr a = ElementAddr(t.buffer, t.offset);
    (void)esize;
    if (a.imm == 0 && a.base.tmp) return a.base;
    int d = Dest(a.base);
    Emit("addi " + X(d) + ", " + X(a.base.r) + ", " + S(a.imm));
    return XR{d, true};
  }

  // Waits the front end for the compute engines before touching a tile operand.
  void SyncFrontEnd(const Buffer& b) {
    if (!pending_compute_ || !tile_bufs_.count(b->data.get())) return;
    Emit("wait sc, mm, " + X(kMmCount));
    Emit("wait sc, vec, " + X(kVecCount));
    pending_compute_ = false;
  }

  // ---- expressions --------------------------------------------------------------------------
  XR Imm(int64_t v) {
    XR r{AllocX(), true};
    Emit("li " + X(r.r) + ", " + S(static_cast<int32_t>(static_cast<uint32_t>(v))));
    return r;
  }

  XR Eval(const PrimExpr& e) {
    if (e.dtype().is_vector()) Fail("a vector value where a scalar is needed (" + e.dtype().str() + ")", e->span);
    const Object* n = e.get();
    DataType t = e.dtype();
    switch (NodeKindOf(n)) {
      case NodeKind::kIntImm: {
        int64_t v = static_cast<const IntImmNode*>(n)->value;
        if (v == 0) return XR{0, false};
        return Imm(v);
      }
      case NodeKind::kFloatImm: return Imm(ScalarBits(t, static_cast<const FloatImmNode*>(n)->value));
      case NodeKind::kVar: return GetVar(static_cast<const VarNode*>(n));
      case NodeKind::kAdd:
      case NodeKind::kSub:
      case NodeKind::kMul:
      case NodeKind::kDiv:
      case NodeKind::kMod:
      case NodeKind::kFloorDiv:
      case NodeKind::kFloorMod:
      case NodeKind::kMin:
      case NodeKind::kMax: return Arith(NodeKindOf(n), static_cast<const BinaryOpNode*>(n));
      case NodeKind::kEQ:
      case NodeKind::kNE:
      case NodeKind::kLT:
      case NodeKind::kLE:
      case NodeKind::kGT:
      case NodeKind::kGE: return Compare(NodeKindOf(n), static_cast<const BinaryOpNode*>(n));
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        auto* b = static_cast<const BinaryOpNode*>(n);
        XR x = Eval(b->a), y = Eval(b->b);
        int d = Dest(x, y);
        Emit(std::string(NodeKindOf(n) == NodeKind::kAnd ? "and " : "or ") + X(d) + ", " + X(x.r) + ", " + X(y.r));
        return XR{d, true};
      }
      case NodeKind::kNot: {
        XR x = Eval(static_cast<const NotNode*>(n)->a);
        int d = Dest(x);
        Emit("xori " + X(d) + ", " + X(x.r) + ", 1");
        return XR{d, true};
      }
      case NodeKind::kSelect: {
        auto* s = static_cast<const SelectNode*>(n);
        XR c = Eval(s->condition), a = Eval(s->true_value), b = Eval(s->false_value);
        // r = b ^ ((a ^ b) & -c)
        int m = Dest(c);
        Emit("sub " + X(m) + ", x0, " + X(c.r));
        int d = AllocX();
        Emit("xor " + X(d) + ", " + X(a.r) + ", " + X(b.r));
        Emit("and " + X(d) + ", " + X(d) + ", " + X(m));
        Emit("xor " + X(d) + ", " + X(d) + ", " + X(b.r));
        xfree_[m] = true;
        Free(a);
        Free(b);
        return XR{d, true};
      }
      case NodeKind::kCast: {
        auto* c = static_cast<const CastNode*>(n);
        XR v = Eval(c->value);
        return CastScalar(v, c->value.dtype(), t);
      }
      case NodeKind::kLet: {
        auto* l = static_cast<const LetNode*>(n);
        BindLet(l->var, l->value);
        XR r = Eval(l->body);
        if (!r.tmp) {  // the body is the variable itself: copy before unbinding
          XR c{AllocX(), true};
          Emit("add " + X(c.r) + ", " + X(r.r) + ", x0");
          r = c;
        }
        Unbind(l->var);
        return r;
      }
      case NodeKind::kBufferLoad: {
        auto* l = static_cast<const BufferLoadNode*>(n);
        if (l->indices.size() != 1) Fail("a multi-dimensional load (run FlattenBuffer first)", e->span);
        SyncFrontEnd(l->buffer);
        Addr a = ElementAddr(l->buffer, l->indices[0]);
        int d = Dest(a.base);
        DataType bt = l->buffer->dtype;
        std::string op = bt.bits() == 8 ? (bt.is_int() ? "lb" : "lbu") : bt.bits() == 16 ? (bt.is_int() ? "lh" : "lhu") : "lw";
        Emit(op + " " + X(d) + ", " + Mem(a));
        return XR{d, true};
      }
      case NodeKind::kCall: return CallScalar(static_cast<const CallNode*>(n));
      default: Fail("expression `" + std::string(e->GetTypeKey()) + "`", e->span);
    }
  }

  // Scalar float arithmetic runs in SIMD lane 0 (v0, v1 scratch).
  XR FloatBinary(const std::string& op, XR a, XR b, DataType t) {
    std::string dt = DT(t);
    Emit("vsplat." + dt + " v0, " + X(a.r));
    Emit("vsplat." + dt + " v1, " + X(b.r));
    Emit(op + "." + dt + " v0, v0, v1");
    int d = Dest(a, b);
    Emit("vext." + dt + " " + X(d) + ", v0, 0");
    return XR{d, true};
  }

  XR Arith(NodeKind k, const BinaryOpNode* b) {
    DataType t = b->dtype;
    if (t.is_float()) {
      if (k == NodeKind::kDiv) return TileScalar("tdiv", {b->a, b->b}, t);
      XR x = Eval(b->a), y = Eval(b->b);
      const char* op = k == NodeKind::kAdd   ? "vadd"
                       : k == NodeKind::kSub ? "vsub"
                       : k == NodeKind::kMul ? "vmul"
                       : k == NodeKind::kMin ? "vmin"
                       : k == NodeKind::kMax ? "vmax"
                                             : nullptr;
      if (!op) Fail(std::string("float ") + b->GetTypeKey(), b->span);
      return FloatBinary(op, x, y, t);
    }
    bool u = t.is_uint();
    auto c = as_const_int(b->b);
    // Immediate forms.
    if (c && (k == NodeKind::kAdd || k == NodeKind::kSub || k == NodeKind::kMul)) {
      XR x = Eval(b->a);
      int d = Dest(x);
      int64_t v = k == NodeKind::kSub ? -*c : *c;
      Emit(std::string(k == NodeKind::kMul ? "muli " : "addi ") + X(d) + ", " + X(x.r) + ", " + S(v));
      Normalize(d, t);
      return XR{d, true};
    }
    if (c && *c > 0 && Log2(*c) >= 0 && (k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod ||
                                         (u && (k == NodeKind::kDiv || k == NodeKind::kMod)))) {
      XR x = Eval(b->a);
      int d = Dest(x);
      bool div = k == NodeKind::kFloorDiv || k == NodeKind::kDiv;
      if (div) Emit(std::string(u ? "srli " : "srai ") + X(d) + ", " + X(x.r) + ", " + S(Log2(*c)));
      else Emit("andi " + X(d) + ", " + X(x.r) + ", " + S(*c - 1));
      return XR{d, true};
    }
    XR x = Eval(b->a), y = Eval(b->b);
    bool floor_signed = !u && (k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod);
    int d = floor_signed ? -1 : Dest(x, y);
    auto rr = [&](const char* op) { Emit(std::string(op) + " " + X(d) + ", " + X(x.r) + ", " + X(y.r)); };
    switch (k) {
      case NodeKind::kAdd: rr("add"); Normalize(d, t); break;
      case NodeKind::kSub: rr("sub"); Normalize(d, t); break;
      case NodeKind::kMul: rr("mul"); Normalize(d, t); break;
      case NodeKind::kDiv: rr(u ? "divu" : "div"); Normalize(d, t); break;
      case NodeKind::kMod: rr(u ? "remu" : "rem"); break;
      case NodeKind::kMin: rr(u ? "minu" : "min"); break;
      case NodeKind::kMax: rr(u ? "maxu" : "max"); break;
      case NodeKind::kFloorDiv:
      case NodeKind::kFloorMod: {
        if (u) {
          rr(k == NodeKind::kFloorDiv ? "divu" : "remu");
          break;
        }
        // q = div(a, b), r = rem(a, b); if r != 0 and sign(r) != sign(b): q -= 1, r += b.
        int r = AllocX(), q = AllocX(), tt = AllocX();
        Emit("rem " + X(r) + ", " + X(x.r) + ", " + X(y.r));
        Emit("div " + X(q) + ", " + X(x.r) + ", " + X(y.r));
        Emit("xor " + X(tt) + ", " + X(r) + ", " + X(y.r));
        Emit("slt " + X(tt) + ", " + X(tt) + ", x0");
        Emit("sltu x1, x0, " + X(r));
        Emit("and " + X(tt) + ", " + X(tt) + ", x1");
        if (k == NodeKind::kFloorMod) Emit("mul " + X(tt) + ", " + X(tt) + ", " + X(y.r));
        d = Dest(x, y);
        if (k == NodeKind::kFloorDiv) {
          Emit("sub " + X(d) + ", " + X(q) + ", " + X(tt));
        } else {
          Emit("add " + X(d) + ", " + X(r) + ", " + X(tt));
        }
        xfree_[r] = xfree_[q] = xfree_[tt] = true;
        break;
      }
      default: Fail(b->GetTypeKey(), b->span);
    }
    return XR{d, true};
  }

  XR Compare(NodeKind k, const BinaryOpNode* b) {
    DataType t = b->a.dtype();
    if (t.is_float()) {
      XR x = Eval(b->a), y = Eval(b->b);
      std::string dt = DT(t);
      bool swap = k == NodeKind::kGT || k == NodeKind::kGE;
      Emit("vsplat." + dt + " v0, " + X((swap ? y : x).r));
      Emit("vsplat." + dt + " v1, " + X((swap ? x : y).r));
      const char* op = (k == NodeKind::kEQ || k == NodeKind::kNE) ? "vcmpeq"
                       : (k == NodeKind::kLT || k == NodeKind::kGT) ? "vcmplt" : "vcmple";
      int p = AllocP();
      Emit(std::string(op) + "." + dt + " " + P(p) + ", v0, v1");
      int d = Dest(x, y);
      Emit("li " + X(d) + ", 1");
      Emit("vsplat.i32 v0, " + X(d));
      Emit("vsplat.i32 v1, x0");
      Emit("vsel.i32 v0, v0, v1, " + P(p));
      Emit("vext.i32 " + X(d) + ", v0, 0");
      FreeP(p);
      if (k == NodeKind::kNE) Emit("xori " + X(d) + ", " + X(d) + ", 1");
      return XR{d, true};
    }
    bool u = t.is_uint();
    XR x = Eval(b->a), y = Eval(b->b);
    int d = Dest(x, y);
    std::string slt = u ? "sltu " : "slt ";
    switch (k) {
      case NodeKind::kLT: Emit(slt + X(d) + ", " + X(x.r) + ", " + X(y.r)); break;
      case NodeKind::kGT: Emit(slt + X(d) + ", " + X(y.r) + ", " + X(x.r)); break;
      case NodeKind::kLE:
        Emit(slt + X(d) + ", " + X(y.r) + ", " + X(x.r));
        Emit("xori " + X(d) + ", " + X(d) + ", 1");
        break;
      case NodeKind::kGE:
        Emit(slt + X(d) + ", " + X(x.r) + ", " + X(y.r));
        Emit("xori " + X(d) + ", " + X(d) + ", 1");
        break;
      case NodeKind::kEQ:
        Emit("xor " + X(d) + ", " + X(x.r) + ", " + X(y.r));
        Emit("sltiu " + X(d) + ", " + X(d) + ", 1");
        break;
      default:
        Emit("xor " + X(d) + ", " + X(x.r) + ", " + X(y.r));
        Emit("sltu " + X(d) + ", x0, " + X(d));
        break;
    }
    return XR{d, true};
  }

  // Scalar conversions through SIMD lane 0 (vcvt has TC1's rounding and saturation).
  XR CastScalar(XR v, DataType from, DataType to) {
    if (from == to) return v;
    if (from.is_integer() && to.is_integer() && from.bits() == 32 && to.bits() == 32 && from.code == to.code) return v;
    std::string s = DT(from), d = DT(to);
    Emit("vsplat." + s + " v0, " + X(v.r));
    Emit("vcvt." + d + "." + s + " v1, v0");
    int r = Dest(v);
    Emit("vext." + d + " " + X(r) + ", v1, 0");
    if (to.is_float() && to.bits() == 16) Emit("andi " + X(r) + ", " + X(r) + ", 65535");
    return XR{r, true};
  }

  // A float operation TC1 has only on the vector engine, run on one element in L1 scratch.
  XR TileScalar(const std::string& op, std::vector<PrimExpr> args, DataType t) {
    int64_t esz = t.lane_bytes();
    if (!scratch_) scratch_ = NewAligned32(96);
    std::string st = esz == 2 ? "sh " : "sw ";
    for (size_t i = 0; i < args.size(); ++i) {
      XR a = Eval(args[i]);
      Emit(st + X(a.r) + ", [l1: x0 + " + S(scratch_ + 32 * int64_t(i)) + "]");
      Free(a);
    }
    int64_t desc = Descriptor(".vecdesc shape=[1] d_stride=[1] a_stride=[1] b_stride=[1]", 80);
    XR r{AllocX(), true};
    Emit("li x1, " + S(scratch_));
    Emit("li x2, " + S(scratch_ + 32));
    Emit("li x3, " + S(scratch_ + 64));
    if (args.size() == 2) Emit(op + "." + DT(t) + " x3, x1, x2, [x0 + " + S(desc) + "]");
    else Emit(op + "." + DT(t) + " x3, x1, [x0 + " + S(desc) + "]");
    Emit("addi " + X(kVecCount) + ", " + X(kVecCount) + ", 1");
    Emit("wait sc, vec, " + X(kVecCount));
    Emit(std::string(esz == 2 ? "lhu " : "lw ") + X(r.r) + ", [l1: x0 + " + S(scratch_ + 64) + "]");
    return r;
  }

  XR CallScalar(const CallNode* c) {
    std::string op(c->op.view());
    DataType t = c->dtype;
    if (op == "tir.core_id") {
      XR r{AllocX(), true};
      Emit("csrr " + X(r.r) + ", coreid");
      return r;
    }
    if (op == "tir.num_cores") return Imm(cores_);
    static const std::map<std::string, std::string> math = {
        {"tir.exp", "texp"},     {"tir.log", "tlog"},   {"tir.sqrt", "tsqrt"},      {"tir.rsqrt", "trsqrt"},
        {"tir.recip", "trecip"}, {"tir.tanh", "ttanh"}, {"tir.sigmoid", "tsigmoid"}};
    if (auto it = math.find(op); it != math.end()) return TileScalar(it->second, {c->args[0]}, t);
    static const std::map<std::string, std::string> bit = {{"tir.bitwise_and", "and"}, {"tir.bitwise_or", "or"},
                                                           {"tir.bitwise_xor", "xor"}, {"tir.shift_left", "sll"}};
    if (auto it = bit.find(op); it != bit.end()) {
      XR x = Eval(c->args[0]), y = Eval(c->args[1]);
      int d = Dest(x, y);
      Emit(it->second + " " + X(d) + ", " + X(x.r) + ", " + X(y.r));
      if (op == "tir.shift_left" && t.bits() < 32) {
        // shift amount is b & (bits - 1) for narrow types
        Fail("a narrow-integer shift", c->span);
      }
      Normalize(d, t);
      return XR{d, true};
    }
    if (op == "tir.shift_right") {
      if (t.bits() < 32) Fail("a narrow-integer shift", c->span);
      XR x = Eval(c->args[0]), y = Eval(c->args[1]);
      int d = Dest(x, y);
      Emit(std::string(t.is_uint() ? "srl " : "sra ") + X(d) + ", " + X(x.r) + ", " + X(y.r));
      return XR{d, true};
    }
    if (op == "tir.bitwise_not") {
      XR x = Eval(c->args[0]);
      int d = Dest(x);
      Emit("xori " + X(d) + ", " + X(x.r) + ", -1");
      Normalize(d, t);
      return XR{d, true};
    }
    if (op == "tc1.vredsum" || op == "tc1.vredmax" || op == "tc1.vredmin") {
      VR a = EvalV(c->args[0]);
      std::string dt = DT(c->args[0].dtype());
      Emit(op.substr(4) + "." + dt + " v0, " + V(a.r));
      Free(a);
      XR r{AllocX(), true};
      Emit("vext." + dt + " " + X(r.r) + ", v0, 0");
      return r;
    }
    Fail("intrinsic `" + op + "` (as a value)", c->span);
  }

  // ---- vector expressions -------------------------------------------------------------------
  void CheckFull(DataType t, const Span& sp) {
    if (!t.is_bool() && t.lanes() * t.bits() != 256) {
      Fail("vector type " + t.str() + " (TC1 vectors fill one 256-bit register)", sp);
    }
  }

  VR EvalV(const PrimExpr& e) {
    DataType t = e.dtype();
    if (t.is_bool()) Fail("a bool vector used as data", e->span);
    const Object* n = e.get();
    std::string dt = DT(t);
    switch (NodeKindOf(n)) {
      case NodeKind::kVar: {
        auto it = vars_.find(static_cast<const VarNode*>(n));
        if (it == vars_.end() || it->second.vreg < 0) Fail("vector variable", e->span);
        return VR{it->second.vreg, false};
      }
      case NodeKind::kBroadcast: {
        auto* b = static_cast<const BroadcastNode*>(n);
        XR x = Eval(b->value);
        VR r{AllocV(), true};
        Emit("vsplat." + dt + " " + V(r.r) + ", " + X(x.r));
        Free(x);
        return r;
      }
      case NodeKind::kRamp: {
        auto* rp = static_cast<const RampNode*>(n);
        CheckFull(t, e->span);
        if (!t.is_integer()) Fail("a float Ramp", e->span);
        int64_t iota = IotaTable(t);
        VR r{AllocV(), true};
        Emit("vld " + V(r.r) + ", [l1: x0 + " + S(iota) + "]");
        if (!is_const_int(rp->stride, 1)) {
          XR s = Eval(rp->stride);
          Emit("vsplat." + dt + " v0, " + X(s.r));
          Emit("vmul." + dt + " " + V(r.r) + ", " + V(r.r) + ", v0");
          Free(s);
        }
        XR base = Eval(rp->base);
        Emit("vsplat." + dt + " v0, " + X(base.r));
        Emit("vadd." + dt + " " + V(r.r) + ", " + V(r.r) + ", v0");
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
        const char* op = k == NodeKind::kAdd   ? "vadd"
                         : k == NodeKind::kSub ? "vsub"
                         : k == NodeKind::kMul ? "vmul"
                         : k == NodeKind::kMin ? "vmin"
                                               : "vmax";
        return VBin(op, b->a, b->b, dt);
      }
      case NodeKind::kDiv: {
        auto* b = static_cast<const BinaryOpNode*>(n);
        if (!t.is_float()) Fail("integer vector division (TC1 has no SIMD divide)", e->span);
        return TileVector("tdiv", {b->a, b->b}, t);
      }
      case NodeKind::kSelect: {
        auto* s = static_cast<const SelectNode*>(n);
        int p = EvalP(s->condition);
        VR a = EvalV(s->true_value), b = EvalV(s->false_value);
        VR r{AllocV(), true};
        Emit("vsel." + dt + " " + V(r.r) + ", " + V(a.r) + ", " + V(b.r) + ", " + P(p));
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
          Emit("vsplat." + dt + " v0, " + X(one.r));
          Free(one);
          Emit("vsplat." + dt + " v1, x0");
          std::string ot = t.is_float() ? dt : dt;
          (void)ot;
          Emit("vcvt." + dt + ".i32 v0, v0");
          Emit("vsel." + dt + " " + V(r.r) + ", v0, v1, " + P(p));
          FreeP(p);
          return r;
        }
        VR a = EvalV(c->value);
        VR r{AllocV(), true};
        Emit("vcvt." + dt + "." + DT(from) + " " + V(r.r) + ", " + V(a.r));
        Free(a);
        return r;
      }
      case NodeKind::kBufferLoad: {
        auto* l = static_cast<const BufferLoadNode*>(n);
        if (l->indices.size() != 1) Fail("a multi-dimensional vector load (run FlattenBuffer first)", e->span);
        SyncFrontEnd(l->buffer);
        const PrimExpr& idx = l->indices[0];
        if (const auto* bc = idx.as<BroadcastNode>()) {
          Addr a = ElementAddr(l->buffer, bc->value);
          int d = Dest(a.base);
          DataType bt = l->buffer->dtype;
          std::string op = bt.bits() == 8 ? "lbu" : bt.bits() == 16 ? "lhu" : "lw";
          Emit(op + " " + X(d) + ", " + Mem(a));
          VR r{AllocV(), true};
          Emit("vsplat." + dt + " " + V(r.r) + ", " + X(d));
          xfree_[d] = true;
          return r;
        }
        const auto* rp = idx.as<RampNode>();
        if (!rp || !is_const_int(rp->stride, 1)) Fail("a vector load with a non-contiguous index (gather)", e->span);
        CheckFull(t, e->span);
        Addr a = ElementAddr(l->buffer, rp->base);
        VR r{AllocV(), true};
        Emit("vld " + V(r.r) + ", " + Mem(a));
        Free(a.base);
        return r;
      }
      case NodeKind::kLet: {
        auto* l = static_cast<const LetNode*>(n);
        BindLet(l->var, l->value);
        VR r = EvalV(l->body);
        if (!r.tmp) {
          VR c{AllocV(), true};
          Emit("vor." + std::string("i32 ") + V(c.r) + ", " + V(r.r) + ", " + V(r.r));
          r = c;
        }
        Unbind(l->var);
        return r;
      }
      case NodeKind::kCall: {
        auto* c = static_cast<const CallNode*>(n);
        std::string op(c->op.view());
        if (op == "tc1.vadds" || op == "tc1.vsubs") return VBin(op.substr(4).c_str(), c->args[0], c->args[1], dt);
        static const std::map<std::string, std::string> bit = {
            {"tir.bitwise_and", "vand"}, {"tir.bitwise_or", "vor"}, {"tir.bitwise_xor", "vxor"}};
        if (auto it = bit.find(op); it != bit.end()) return VBin(it->second.c_str(), c->args[0], c->args[1], dt);
        static const std::map<std::string, std::string> math = {
            {"tir.exp", "texp"},     {"tir.log", "tlog"},   {"tir.sqrt", "tsqrt"},      {"tir.rsqrt", "trsqrt"},
            {"tir.recip", "trecip"}, {"tir.tanh", "ttanh"}, {"tir.sigmoid", "tsigmoid"}};
        if (auto it = math.find(op); it != math.end()) return TileVector(it->second, {c->args[0]}, t);
        Fail("intrinsic `" + op + "` on vectors", c->span);
      }
      default: Fail("vector expression `" + std::string(e->GetTypeKey()) + "`", e->span);
    }
  }

  VR VBin(const char* op, const PrimExpr& a, const PrimExpr& b, const std::string& dt) {
    VR x = EvalV(a), y = EvalV(b);
    int d = x.tmp ? x.r : y.tmp ? y.r : AllocV();
    Emit(std::string(op) + "." + dt + " " + V(d) + ", " + V(x.r) + ", " + V(y.r));
    if (x.tmp && d != x.r) Free(x);
    if (y.tmp && d != y.r) Free(y);
    return VR{d, true};
  }

  VR TileVector(const std::string& op, std::vector<PrimExpr> args, DataType t) {
    CheckFull(t, Span());
    if (!scratch_) scratch_ = NewAligned32(96);
    for (size_t i = 0; i < args.size(); ++i) {
      VR a = EvalV(args[i]);
      Emit("vst." + DT(t) + " " + V(a.r) + ", [l1: x0 + " + S(scratch_ + 32 * int64_t(i)) + "]");
      Free(a);
    }
    int lanes = t.lanes();
    int64_t desc = Descriptor(".vecdesc shape=[" + S(lanes) + "] d_stride=[1] a_stride=[1] b_stride=[1]", 80);
    Emit("li x1, " + S(scratch_));
    Emit("li x2, " + S(scratch_ + 32));
    Emit("li x3, " + S(scratch_ + 64));
    if (args.size() == 2) Emit(op + "." + DT(t) + " x3, x1, x2, [x0 + " + S(desc) + "]");
    else Emit(op + "." + DT(t) + " x3, x1, [x0 + " + S(desc) + "]");
    Emit("addi " + X(kVecCount) + ", " + X(kVecCount) + ", 1");
    Emit("wait sc, vec, " + X(kVecCount));
    VR r{AllocV(), true};
    Emit("vld " + V(r.r) + ", [l1: x0 + " + S(scratch_ + 64) + "]");
    return r;
  }

  // Lane count -> a dtype of that many lanes per register.
  static std::string LaneDT(int lanes) { return lanes == 8 ? "i32" : lanes == 16 ? "i16" : "i8"; }

  // A bool vector into a predicate register (allocated; free with FreeP).
  int EvalP(const PrimExpr& e) {
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
        VR x = EvalV(swap ? b->b : b->a), y = EvalV(swap ? b->a : b->b);
        const char* op = (k == NodeKind::kEQ || k == NodeKind::kNE) ? "vcmpeq"
                         : (k == NodeKind::kLT || k == NodeKind::kGT) ? "vcmplt" : "vcmple";
        int p = AllocP();
        Emit(std::string(op) + "." + DT(b->a.dtype()) + " " + P(p) + ", " + V(x.r) + ", " + V(y.r));
        if (k == NodeKind::kNE) Emit("pnot " + P(p) + ", " + P(p));
        Free(x);
        Free(y);
        return p;
      }
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        auto* b = static_cast<const BinaryOpNode*>(n);
        int x = EvalP(b->a), y = EvalP(b->b);
        Emit(std::string(NodeKindOf(n) == NodeKind::kAnd ? "pand " : "por ") + P(x) + ", " + P(x) + ", " + P(y));
        FreeP(y);
        return x;
      }
      case NodeKind::kNot: {
        int x = EvalP(static_cast<const NotNode*>(n)->a);
        Emit("pnot " + P(x) + ", " + P(x));
        return x;
      }
      case NodeKind::kBroadcast: {
        XR c = Eval(static_cast<const BroadcastNode*>(n)->value);
        int p = AllocP();
        int d = Dest(c);
        Emit("muli " + X(d) + ", " + X(c.r) + ", " + S(t.lanes()));
        Emit("pwhile." + LaneDT(t.lanes()) + " " + P(p) + ", " + X(d));
        xfree_[d] = true;
        return p;
      }
      case NodeKind::kVar: {
        auto it = vars_.find(static_cast<const VarNode*>(n));
        if (it == vars_.end() || it->second.preg < 0) Fail("bool vector variable", e->span);
        int p = AllocP();
        Emit("por " + P(p) + ", " + P(it->second.preg) + ", " + P(it->second.preg));
        return p;
      }
      default: Fail("bool vector `" + std::string(e->GetTypeKey()) + "`", e->span);
    }
  }

  void BindLet(const Var& v, const PrimExpr& value) {
    DataType t = value.dtype();
    VarLoc loc;
    if (t.is_vector() && t.is_bool()) {
      loc.preg = EvalP(value);
    } else if (t.is_vector()) {
      VR r = EvalV(value);
      if (!r.tmp) {
        VR c{AllocV(), true};
        Emit("vor.i32 " + V(c.r) + ", " + V(r.r) + ", " + V(r.r));
        r = c;
      }
      loc.vreg = r.r;
    } else {
      XR r = Eval(value);
      if (r.tmp && FreeX() >= kMinFreeForTemps) {
        loc.xreg = r.r;
      } else {
        vars_[v.get()] = BindScalar(v);
        SetVar(vars_[v.get()], r);
        Free(r);
        return;
      }
    }
    vars_[v.get()] = loc;
  }

  // ---- statements ---------------------------------------------------------------------------
  std::string Location(const ir::Stmt& s) {
    if (s->span.defined() && s->span->line > 0) return std::string(s->span->file.view()) + ":" + S(s->span->line);
    return loc_;
  }

  bool HasCores(const ir::Stmt& s) {
    bool found = false;
    PostOrderVisit(s, [&](const ObjectRef& o) {
      if (const auto* f = o.as<ForNode>()) found = found || f->kind == ForKind::kCores;
    });
    return found;
  }
  bool HasCompute(const ir::Stmt& s) {
    bool found = false;
    PostOrderVisit(s, [&](const ObjectRef& o) {
      if (const auto* c = o.as<CallNode>()) {
        std::string op(c->op.view());
        found = found || op == "tile.mm" || op.rfind("tile.vec_", 0) == 0;
      }
    });
    return found;
  }

  void Stmt(const ir::Stmt& s) {
    std::string saved_loc = loc_;
    Span saved_span = span_;
    loc_ = Location(s);
    if (s->span.defined()) span_ = s->span;
    // Outside `cores` loops a multi-core kernel runs effects on core 0 only.
    NodeKind k = NodeKindOf(s.get());
    bool guard = cores_ > 1 && !in_cores_ && !HasCores(s) &&
                 (k == NodeKind::kBufferStore || k == NodeKind::kEvaluate || k == NodeKind::kFor ||
                  k == NodeKind::kWhile || k == NodeKind::kIfThenElse);
    std::string skip;
    if (guard) {
      skip = NewLabel("core0");
      Emit("csrr x1, coreid");
      Emit("bne x1, x0, " + skip);
    }
    StmtInner(s);
    if (guard) Label(skip);
    loc_ = saved_loc;
    span_ = saved_span;
  }

  void StmtInner(const ir::Stmt& s) {
    const Object* n = s.get();
    switch (NodeKindOf(n)) {
      case NodeKind::kSeqStmt:
        for (const ir::Stmt& x : static_cast<const SeqStmtNode*>(n)->seq) Stmt(x);
        return;
      case NodeKind::kBufferStore: return Store(static_cast<const BufferStoreNode*>(n));
      case NodeKind::kLetStmt: {
        auto* l = static_cast<const LetStmtNode*>(n);
        BindLet(l->var, l->value);
        Stmt(l->body);
        Unbind(l->var);
        return;
      }
      case NodeKind::kAllocate: {
        auto* a = static_cast<const AllocateNode*>(n);
        if (!plan_.count(a->buffer->data.get())) Fail("allocation `" + std::string(a->buffer->name.view()) + "` without a memory plan (run PlanLocalMemory)", s->span);
        if (tile_bufs_.count(a->buffer->data.get())) MakeTrack(a->buffer);
        Stmt(a->body);
        return;
      }
      case NodeKind::kFor: return Loop(static_cast<const ForNode*>(n));
      case NodeKind::kWhile: {
        auto* w = static_cast<const WhileNode*>(n);
        std::string top = NewLabel("while"), end = NewLabel("wend");
        if (HasCompute(w->body)) pending_compute_ = true;
        Label(top);
        XR c = Eval(w->condition);
        Emit("beq " + X(c.r) + ", x0, " + end);
        Free(c);
        Stmt(w->body);
        Emit("jal x0, " + top);
        Label(end);
        return;
      }
      case NodeKind::kIfThenElse: {
        auto* i = static_cast<const IfThenElseNode*>(n);
        std::string els = NewLabel("else"), end = NewLabel("endif");
        XR c = Eval(i->condition);
        Emit("beq " + X(c.r) + ", x0, " + els);
        Free(c);
        bool pend = pending_compute_;
        Stmt(i->then_case);
        bool pend_then = pending_compute_;
        pending_compute_ = pend;
        if (i->else_case.defined()) {
          Emit("jal x0, " + end);
          Label(els);
          Stmt(i->else_case);
          Label(end);
        } else {
          Label(els);
        }
        pending_compute_ = pending_compute_ || pend_then;
        return;
      }
      case NodeKind::kEvaluate: {
        const PrimExpr& v = static_cast<const EvaluateNode*>(n)->value;
        if (NodeKindOf(v.get()) == NodeKind::kIntImm) return;
        if (const auto* c = v.as<CallNode>(); c && c->dtype.is_void()) return EffectCall(c);
        if (v.dtype().is_vector()) {
          Free(EvalV(v));
        } else {
          Free(Eval(v));
        }
        return;
      }
      default: Fail("statement `" + std::string(s->GetTypeKey()) + "`", s->span);
    }
  }

  void Store(const BufferStoreNode* st) {
    if (st->indices.size() != 1) Fail("a multi-dimensional store (run FlattenBuffer first)", st->span);
    SyncFrontEnd(st->buffer);
    DataType bt = st->buffer->dtype;
    const PrimExpr& idx = st->indices[0];
    if (st->value.dtype().is_vector()) {
      const auto* rp = idx.as<RampNode>();
      if (!rp || !is_const_int(rp->stride, 1)) Fail("a vector store with a non-contiguous index (scatter)", st->span);
      CheckFull(st->value.dtype(), st->span);
      VR v = EvalV(st->value);
      int p = st->predicate.defined() ? EvalP(st->predicate) : 0;
      Addr a = ElementAddr(st->buffer, rp->base);
      Emit("vst." + DT(bt) + " " + V(v.r) + ", " + Mem(a) + (p ? ", " + P(p) : ""));
      Free(a.base);
      Free(v);
      FreeP(p);
      return;
    }
    XR v = Eval(st->value);
    Addr a = ElementAddr(st->buffer, idx);
    std::string op = bt.bits() == 8 ? "sb" : bt.bits() == 16 ? "sh" : "sw";
    Emit(op + " " + X(v.r) + ", " + Mem(a));
    Free(a.base);
    Free(v);
  }

  void Loop(const ForNode* f) {
    if (f->kind == ForKind::kCores) return CoresLoop(f);
    auto ext = as_const_int(f->extent);
    if (ext && *ext <= 0) return;
    VarLoc loc = BindScalar(f->loop_var);
    XR mn = Eval(f->min);
    SetVar(loc, mn);
    // end = min + extent, held in a register (or an L1 word) for the loop.
    VarLoc end;
    {
      XR e;
      if (ext && as_const_int(f->min)) {
        e = Imm(*as_const_int(f->min) + *ext);
      } else {
        XR x = Eval(f->extent);
        int d = Dest(x, mn);
        Emit("add " + X(d) + ", " + X(mn.r) + ", " + X(x.r));
        e = XR{d, true};
        mn = XR{};
      }
      Free(mn);
      if (FreeX() > kMinFreeForTemps) {
        end.xreg = AllocX();
        Emit("add " + X(end.xreg) + ", " + X(e.r) + ", x0");
      } else {
        end.mem = NewWords(1);
        Emit("sw " + X(e.r) + ", [l1: x0 + " + S(end.mem) + "]");
      }
      Free(e);
    }
    std::string top = NewLabel("loop"), done = NewLabel("done");
    if (!ext) {
      XR v = GetLoc(loc), e = GetLoc(end);
      Emit("bge " + X(v.r) + ", " + X(e.r) + ", " + done);
      Free(v);
      Free(e);
    }
    if (HasCompute(f->body)) pending_compute_ = true;
    Emit("# for " + std::string(f->loop_var->name.view()));
    Label(top);
    Stmt(f->body);
    {
      XR v = GetLoc(loc);
      int d = v.tmp ? v.r : v.r;
      Emit("addi " + X(d) + ", " + X(v.r) + ", 1");
      if (loc.mem >= 0) Emit("sw " + X(d) + ", [l1: x0 + " + S(loc.mem) + "]");
      XR e = GetLoc(end);
      Emit("blt " + X(d) + ", " + X(e.r) + ", " + top);
      Free(v);
      Free(e);
    }
    Label(done);
    if (HasCompute(f->body)) pending_compute_ = true;
    Unbind(f->loop_var);
    if (end.xreg >= 0) xfree_[end.xreg] = true;
  }

  XR GetLoc(const VarLoc& l) {
    if (l.xreg >= 0) return XR{l.xreg, false};
    XR r{AllocX(), true};
    Emit("lw " + X(r.r) + ", [l1: x0 + " + S(l.mem) + "]");
    return r;
  }

  void CoresLoop(const ForNode* f) {
    if (in_cores_) Fail("a `cores` loop inside another `cores` loop", f->span);
    int64_t mn = *as_const_int(f->min), ext = *as_const_int(f->extent);
    if (cores_ > 1) {
      Emit("fence");
      Emit("barrier");
    }
    std::string skip = NewLabel("cores_end");
    VarLoc loc = BindScalar(f->loop_var);
    XR id{AllocX(), true};
    Emit("csrr " + X(id.r) + ", coreid");
    if (ext < cores_) {
      Emit("li x1, " + S(ext));
      Emit("bge " + X(id.r) + ", x1, " + skip);
    }
    if (mn != 0) Emit("addi " + X(id.r) + ", " + X(id.r) + ", " + S(mn));
    SetVar(loc, id);
    Free(id);
    in_cores_ = true;
    Stmt(f->body);
    in_cores_ = false;
    Label(skip);
    Unbind(f->loop_var);
    if (cores_ > 1) {
      Emit("fence");
      Emit("barrier");
    }
  }

  // ---- tile operands ------------------------------------------------------------------------
  Tensor Region(const PrimExpr& e, const CallNode* c) {
    TileOperand op = DecodeTileOperand(e, c, [&](const std::string& what) { Fail(what, c->span); });
    return Tensor{op.buffer, op.dtype, op.offset, std::move(op.shape), std::move(op.strides)};
  }

  static int64_t Count(const Tensor& t) {
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    return n;
  }

  // Drops dimensions of extent 1 (keeping at least one).
  static void Squeeze(Tensor* t) {
    std::vector<int64_t> sh, st;
    for (size_t i = 0; i < t->shape.size(); ++i) {
      if (t->shape[i] != 1) {
        sh.push_back(t->shape[i]);
        st.push_back(t->strides[i]);
      }
    }
    if (sh.empty()) {
      sh.push_back(1);
      st.push_back(1);
    }
    t->shape = sh;
    t->strides = st;
  }

  // Merges adjacent dimensions that are contiguous in every operand.
  static void MergeJoint(std::vector<Tensor*> ts) {
    bool changed = true;
    while (changed) {
      changed = false;
      size_t r = ts[0]->shape.size();
      for (size_t k = 0; k + 1 < r; ++k) {
        bool ok = true;
        for (Tensor* t : ts) ok = ok && t->strides[k] == t->shape[k + 1] * t->strides[k + 1];
        if (!ok) continue;
        for (Tensor* t : ts) {
          t->shape[k] *= t->shape[k + 1];
          t->strides[k] = t->strides[k + 1];
          t->shape.erase(t->shape.begin() + long(k) + 1);
          t->strides.erase(t->strides.begin() + long(k) + 1);
        }
        changed = true;
        break;
      }
    }
  }

  static bool Contiguous(const Tensor& t) {
    int64_t s = 1;
    for (size_t i = t.shape.size(); i-- > 0;) {
      if (t.shape[i] != 1 && t.strides[i] != s) return false;
      s *= t.shape[i];
    }
    return true;
  }

  // Gives the operands one iteration shape (same rank, same extents).
  void Align(std::vector<Tensor*> ts, const CallNode* c) {
    for (Tensor* t : ts) Squeeze(t);
    bool same = true;
    for (Tensor* t : ts) same = same && t->shape == ts[0]->shape;
    if (!same) {
      // A contiguous operand takes the shape of a non-contiguous one.
      const Tensor* model = nullptr;
      for (Tensor* t : ts) {
        if (!Contiguous(*t)) model = t;
      }
      if (!model) model = ts[0];
      for (Tensor* t : ts) {
        if (t->shape == model->shape) continue;
        if (Count(*t) != Count(*model) || !Contiguous(*t)) {
          Fail("`" + std::string(c->op.view()) + "` with operands of different shapes", c->span);
        }
        t->shape = model->shape;
        t->strides.assign(t->shape.size(), 1);
        for (size_t i = t->shape.size() - 1; i-- > 0;) t->strides[i] = t->strides[i + 1] * t->shape[i + 1];
      }
    }
    MergeJoint(ts);
    if (ts[0]->shape.size() > 4) Fail("`" + std::string(c->op.view()) + "` over more than 4 dimensions", c->span);
  }

  static std::string List(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  // Compute-engine bookkeeping of a tile operand's buffer.
  void MakeTrack(const Buffer& b) {
    if (tracks_.count(b->data.get())) return;
    Track t;
    if (b->shape.size() >= 2) {
      if (auto n = as_const_int(b->shape[0]); n && *n > 1 && *n <= 8) t.units = *n;
    }
    t.addr = NewWords(2 * t.units);
    t.engines = engines_[b->data.get()];
    tracks_[b->data.get()] = t;
    track_shape0_[b->data.get()] = b->shape.size();
  }

  // The unit (slab of the outermost dimension) a region touches, or -1 for all.
  struct Unit {
    const Track* track = nullptr;
    PrimExpr index;  // undefined: every unit
  };
  Unit UnitOf(const PrimExpr& region) {
    const auto* r = region.as<BufferRegionNode>();
    Unit u;
    auto it = tracks_.find(r->buffer->data.get());
    if (it == tracks_.end()) {
      if (!tile_bufs_.count(r->buffer->data.get())) return u;
      MakeTrack(r->buffer);  // a parameter or shared buffer used by a compute command
      it = tracks_.find(r->buffer->data.get());
    }
    u.track = &it->second;
    if (u.track->units > 1 && r->buffer->shape.size() == track_shape0_[r->buffer->data.get()] &&
        is_const_int(r->extents[0], 1)) {
      u.index = r->begin[0];
    }
    return u;
  }
  // Emits `wait queue, engine, count` for each unit of `u` (slot 0 mm, 1 vec).
  void WaitUnit(const Unit& u, const std::string& queue, const std::string& engine) {
    int slot = engine == "mm" ? 0 : 1;
    if (!u.track || !(u.track->engines & (1 << slot))) return;  // that engine never touches the buffer
    if (u.index.defined()) {
      if (auto c = as_const_int(u.index)) {
        Emit("lw x1, [l1: x0 + " + S(u.track->addr + *c * 8 + slot * 4) + "]");
      } else {
        XR i = Eval(u.index);
        Emit("slli x1, " + X(i.r) + ", 3");
        Free(i);
        Emit("lw x1, [l1: x1 + " + S(u.track->addr + slot * 4) + "]");
      }
      Emit("wait " + queue + ", " + engine + ", x1");
      return;
    }
    for (int64_t k = 0; k < u.track->units; ++k) {
      Emit("lw x1, [l1: x0 + " + S(u.track->addr + k * 8 + slot * 4) + "]");
      Emit("wait " + queue + ", " + engine + ", x1");
    }
  }
  void RecordUnit(const Unit& u, const std::string& engine) {
    if (!u.track) return;
    int slot = engine == "mm" ? 0 : 1;
    std::string cnt = X(engine == "mm" ? kMmCount : kVecCount);
    if (u.index.defined()) {
      if (auto c = as_const_int(u.index)) {
        Emit("sw " + cnt + ", [l1: x0 + " + S(u.track->addr + *c * 8 + slot * 4) + "]");
      } else {
        XR i = Eval(u.index);
        Emit("slli x1, " + X(i.r) + ", 3");
        Free(i);
        Emit("sw " + cnt + ", [l1: x1 + " + S(u.track->addr + slot * 4) + "]");
      }
      return;
    }
    for (int64_t k = 0; k < u.track->units; ++k) {
      Emit("sw " + cnt + ", [l1: x0 + " + S(u.track->addr + k * 8 + slot * 4) + "]");
    }
  }

  // A compute command on `engine` ("mm"/"vec") over `regions`: waits, issue, bookkeeping.
  void Compute(const std::string& engine, const std::vector<PrimExpr>& regions, const std::function<void()>& issue) {
    std::string other = engine == "mm" ? "vec" : "mm";
    std::vector<Unit> units;
    for (const PrimExpr& r : regions) units.push_back(UnitOf(r));
    for (const Unit& u : units) WaitUnit(u, engine, other);
    issue();
    int cnt = engine == "mm" ? kMmCount : kVecCount;
    Emit("addi " + X(cnt) + ", " + X(cnt) + ", 1");
    for (const Unit& u : units) RecordUnit(u, engine);
    pending_compute_ = true;
  }

  static std::string VecDesc(const Tensor& d, const Tensor& a, const Tensor* b, const std::string& extra) {
    std::string s = ".vecdesc shape=" + List(a.shape) + " d_stride=" + List(d.strides) + " a_stride=" + List(a.strides);
    if (b) s += " b_stride=" + List(b->strides);
    else s += " b_stride=" + List(std::vector<int64_t>(a.shape.size(), 0));
    return s + extra;
  }

  // Scalar field of a descriptor: constant text, or stored at run time.
  struct Field {
    std::string text;  // constant value text, "" when dynamic
    PrimExpr dynamic;
  };

  void EffectCall(const CallNode* c) {
    std::string op(c->op.view());
    if (op == "tir.barrier") {
      if (cores_ > 1) {
        Emit("fence");
        Emit("barrier");
      }
      return;
    }
    if (op == "tc1.wait") {
      std::string q(c->args[0].as<StringImmNode>()->value.view());
      std::string e(c->args[1].as<StringImmNode>()->value.view());
      XR n = Eval(c->args[2]);
      Emit("wait " + q + ", " + e + ", " + X(n.r));
      Free(n);
      return;
    }
    if (op == "tc1.dma_in" || op == "tc1.dma_out" || op == "tc1.dma_fill_in") return Dma(c, op);
    if (op == "tile.mm") return Matmul(c);
    if (op.rfind("tile.vec_", 0) == 0) return VecOp(c, op.substr(9));
    if (op == "tile.dma_copy" || op == "tile.dma_fill" || op == "tile.wait") {
      Fail("`" + op + "` (run LowerAsyncDMA first)", c->span);
    }
    Fail("intrinsic `" + op + "`", c->span);
  }

  void Dma(const CallNode* c, const std::string& op) {
    bool fill = op == "tc1.dma_fill_in";
    std::string queue = op == "tc1.dma_out" ? "dout" : "din";
    Tensor d = Region(c->args[0], c);
    Tensor s = fill ? d : Region(c->args[1], c);
    if (!fill && Count(d) != Count(s)) Fail("`" + op + "` between regions of different sizes", c->span);
    if (!fill) {
      Align({&d, &s}, c);
    } else {
      Squeeze(&d);
      MergeJoint({&d});
      if (d.shape.size() > 4) Fail("a DMA fill over more than 4 dimensions", c->span);
    }
    // Order after compute commands touching either side.
    for (size_t i = 0; i < (fill ? 1u : 2u); ++i) {
      Unit u = UnitOf(c->args[i]);
      WaitUnit(u, queue, "mm");
      WaitUnit(u, queue, "vec");
    }
    std::string desc = ".dmadesc src=" + DT(s.dtype) + " dst=" + DT(d.dtype) + " shape=" + List(d.shape) +
                       " src_stride=" + List(s.strides) + " dst_stride=" + List(d.strides);
    int64_t addr;
    if (fill) {
      PrimExpr v = c->args[1];
      std::optional<double> cv;
      if (auto ci = as_const_int(v)) cv = double(*ci);
      if (auto cf = as_const_float(v)) cv = *cf;
      if (cv) {
        addr = Descriptor(desc + " fill=" + FloatText(*cv) + " fill_only=1", 72);
      } else {
        addr = Descriptor(desc + " fill_only=1", 72, false);
        XR x = Eval(v);
        XR b = CastScalar(x, v.dtype(), d.dtype);
        Emit("sw " + X(b.r) + ", [l1: x0 + " + S(addr + 4) + "]");
        Free(b);
      }
    } else {
      addr = Descriptor(desc, 72);
    }
    XR da = TensorAddr(d);
    XR sa = fill ? XR{0, false} : TensorAddr(s);
    std::string mnem = op == "tc1.dma_out" ? "dma.out" : "dma.in";
    Emit(mnem + " " + Space(d.buffer->scope) + ":" + X(da.r) + ", " + (fill ? Space(d.buffer->scope) : Space(s.buffer->scope)) +
         ":" + X(sa.r) + ", [x0 + " + S(addr) + "]");
    Free(da);
    Free(sa);
  }

  void Matmul(const CallNode* c) {
    Tensor C = Region(c->args[0], c), A = Region(c->args[1], c), B = Region(c->args[2], c);
    auto mat = [&](Tensor& t, const char* what) {
      size_t r = t.shape.size();
      if (r < 2) Fail(std::string("`tile.mm` with a 1-D ") + what, c->span);
      for (size_t i = 0; i + 2 < r; ++i) {
        if (t.shape[i] != 1) Fail(std::string("`tile.mm` with a batched ") + what, c->span);
      }
      if (t.strides[r - 1] != 1 && t.shape[r - 1] != 1) Fail(std::string("`tile.mm` with non-contiguous rows in ") + what, c->span);
    };
    mat(C, "c");
    mat(A, "a");
    mat(B, "b");
    auto rows = [](const Tensor& t) { return t.shape[t.shape.size() - 2]; };
    auto cols = [](const Tensor& t) { return t.shape[t.shape.size() - 1]; };
    auto ld = [](const Tensor& t) { return t.strides[t.strides.size() - 2]; };
    int64_t M = rows(C), N = cols(C), K = cols(A);
    if (rows(A) != M || rows(B) != K || cols(B) != N) Fail("`tile.mm` with mismatched shapes", c->span);
    if (M > 4096 || N > 4096 || K > 4096) Fail("`tile.mm` larger than 4096 in a dimension", c->span);
    int64_t desc = Descriptor(".mmdesc m=" + S(M) + " n=" + S(N) + " k=" + S(K) + " lda=" + S(ld(A)) + " ldb=" +
                                  S(ld(B)) + " ldc=" + S(ld(C)),
                              52);
    std::string dt = DT(A.dtype);
    Compute("mm", {c->args[0], c->args[1], c->args[2]}, [&] {
      XR xc = TensorAddr(C), xa = TensorAddr(A), xb = TensorAddr(B);
      auto acc = as_const_int(c->args[3]);
      if (acc) {
        Emit(std::string(*acc ? "mma." : "mm.") + dt + " " + X(xc.r) + ", " + X(xa.r) + ", " + X(xb.r) + ", [x0 + " +
             S(desc) + "]");
      } else {
        std::string l0 = NewLabel("mm"), l1 = NewLabel("mmdone");
        XR f = Eval(c->args[3]);
        Emit("beq " + X(f.r) + ", x0, " + l0);
        Free(f);
        Emit("mma." + dt + " " + X(xc.r) + ", " + X(xa.r) + ", " + X(xb.r) + ", [x0 + " + S(desc) + "]");
        Emit("jal x0, " + l1);
        Label(l0);
        Emit("mm." + dt + " " + X(xc.r) + ", " + X(xa.r) + ", " + X(xb.r) + ", [x0 + " + S(desc) + "]");
        Label(l1);
      }
      Free(xc);
      Free(xa);
      Free(xb);
    });
  }

  void VecOp(const CallNode* c, const std::string& op) {
    static const std::map<std::string, std::string> three = {{"add", "tadd"}, {"sub", "tsub"}, {"mul", "tmul"},
                                                             {"max", "tmax"}, {"min", "tmin"}, {"div", "tdiv"}};
    static const std::map<std::string, std::string> scal = {
        {"adds", "tadds"}, {"muls", "tmuls"}, {"maxs", "tmaxs"}, {"mins", "tmins"}};
    static const std::map<std::string, std::string> unary = {
        {"exp", "texp"},     {"log", "tlog"},   {"recip", "trecip"},     {"sqrt", "tsqrt"}, {"rsqrt", "trsqrt"},
        {"tanh", "ttanh"},   {"sigmoid", "tsigmoid"}, {"relu", "trelu"}};
    static const std::map<std::string, std::string> red = {
        {"redsum", "tredsum"}, {"redmax", "tredmax"}, {"redmin", "tredmin"}};
    Tensor d = Region(c->args[0], c), a = Region(c->args[1], c);
    std::vector<PrimExpr> regions{c->args[0], c->args[1]};
    std::string dt = DT(d.dtype);
    if (auto it = three.find(op); it != three.end()) {
      Tensor b = Region(c->args[2], c);
      regions.push_back(c->args[2]);
      Align({&d, &a, &b}, c);
      int64_t desc = Descriptor(VecDesc(d, a, &b, ""), 80);
      Compute("vec", regions, [&] {
        XR xd = TensorAddr(d), xa = TensorAddr(a), xb = TensorAddr(b);
        Emit(it->second + "." + dt + " " + X(xd.r) + ", " + X(xa.r) + ", " + X(xb.r) + ", [x0 + " + S(desc) + "]");
        Free(xd);
        Free(xa);
        Free(xb);
      });
      return;
    }
    if (auto it = red.find(op); it != red.end()) {
      // a: [..., K]; d: [..., 1] or [...]; the innermost axis is folded.
      std::vector<int64_t> dstr = d.strides;
      if (d.shape.size() + 1 == a.shape.size()) dstr.push_back(0);
      if (dstr.size() != a.shape.size()) Fail("`tile.vec_" + op + "` with operands of different ranks", c->span);
      std::vector<int64_t> sh, as, ds;
      for (size_t i = 0; i < a.shape.size(); ++i) {
        if (a.shape[i] == 1 && i + 1 != a.shape.size()) continue;
        sh.push_back(a.shape[i]);
        as.push_back(a.strides[i]);
        ds.push_back(dstr[i]);
      }
      if (sh.size() > 4) Fail("`tile.vec_" + op + "` over more than 4 dimensions", c->span);
      a.shape = d.shape = sh;
      a.strides = as;
      d.strides = ds;
      int64_t desc = Descriptor(VecDesc(d, a, nullptr, ""), 80);
      Compute("vec", regions, [&] {
        XR xd = TensorAddr(d), xa = TensorAddr(a);
        Emit(it->second + "." + dt + " " + X(xd.r) + ", " + X(xa.r) + ", [x0 + " + S(desc) + "]");
        Free(xd);
        Free(xa);
      });
      return;
    }
    Align({&d, &a}, c);
    std::string mnem, extra;
    std::vector<std::pair<int64_t, PrimExpr>> dyn;  // (byte offset, f32 / i32 value)
    auto scalar_field = [&](const PrimExpr& v, const char* key, int64_t offset) {
      std::optional<double> cv;
      if (auto ci = as_const_int(v)) cv = double(*ci);
      if (auto cf = as_const_float(v)) cv = *cf;
      if (cv && std::isfinite(*cv)) {
        extra += std::string(" ") + key + "=" + FloatText(*cv);
      } else {
        dyn.emplace_back(offset, v);
      }
    };
    if (auto it = scal.find(op); it != scal.end()) {
      mnem = it->second + "." + dt;
      scalar_field(c->args[2], "scalar", 68);
    } else if (auto it2 = unary.find(op); it2 != unary.end()) {
      mnem = it2->second + "." + dt;
    } else if (op == "copy") {
      mnem = "tcvt." + dt + "." + DT(a.dtype);
    } else if (op == "requant") {
      mnem = "trequant." + dt + "." + DT(a.dtype);
      scalar_field(c->args[2], "scale", 72);
      if (auto zp = as_const_int(c->args[3])) {
        extra += " zp=" + S(*zp);
      } else {
        dyn.emplace_back(76, c->args[3]);
      }
    } else {
      Fail("`tile.vec_" + op + "`", c->span);
    }
    int64_t desc = Descriptor(VecDesc(d, a, nullptr, extra), 80, dyn.empty());
    for (auto& [off, v] : dyn) {
      XR x = Eval(v);
      if (off != 76) x = CastScalar(x, v.dtype(), DataType::Float(32));
      Emit("sw " + X(x.r) + ", [l1: x0 + " + S(desc + off) + "]");
      Free(x);
    }
    Compute("vec", regions, [&] {
      XR xd = TensorAddr(d), xa = TensorAddr(a);
      Emit(mnem + " " + X(xd.r) + ", " + X(xa.r) + ", [x0 + " + S(desc) + "]");
      Free(xd);
      Free(xa);
    });
  }

  PrimFunc f_;
  std::string name_;
  int max_cores_;
  int64_t l1_limit_;
  int cores_ = 1;
  bool in_cores_ = false;
  bool pending_compute_ = false;
  std::vector<std::string> text_, locs_, data_lines_;
  std::string loc_;
  Span span_;
  int labels_ = 0;
  int64_t data_base_ = 0, data_top_ = 0, scratch_ = 0;
  std::map<std::string, int64_t> descs_;
  std::map<int, int64_t> iota_;
  std::unordered_map<const Object*, int64_t> plan_;
  std::unordered_map<const Object*, VarLoc> vars_;
  std::unordered_set<const Object*> tile_bufs_;
  std::unordered_map<const Object*, int> engines_;
  std::unordered_map<const Object*, Track> tracks_;
  std::unordered_map<const Object*, size_t> track_shape0_;
  bool xfree_[32] = {};
  bool vfree_[32] = {};
  bool pfree_[8] = {};
};

std::string Sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

}  // namespace

NpuAssembly GenerateNpuAssembly(const PrimFunc& lowered, const std::string& name, int max_cores, int64_t l1_limit) {
  return NpuEmitter(lowered, name, max_cores, l1_limit).Run();
}

namespace {

// The kernel pipeline under the current PassContext, with L1 capped below the argument block.
IRModule Lower(const IRModule& mod, int64_t l1_limit) {
  transform::PassContext cur = transform::PassContext::Current();
  transform::PassContext ctx = transform::PassContext::Create();
  ctx->opt_level = cur->opt_level;
  ctx->disabled = cur->disabled;
  ctx->instruments = cur->instruments;
  Map<String, Any> config = cur->config;
  int64_t l1 = l1_limit;
  if (auto v = config.Get("tc1.l1_bytes")) l1 = std::min<int64_t>(l1, v->cast<int64_t>());
  config.Set("tc1.l1_bytes", Any(l1));
  ctx->config = config;
  transform::PassContextScope scope(ctx);
  if (auto pipeline = ffi::Function::GetGlobal("transform.DefaultKernelPipeline")) {
    transform::Pass p = (*pipeline)(int64_t(ctx->opt_level)).cast<transform::Pass>();
    return p(mod);
  }
  transform::Pass p = transform::Sequential({transform::Simplify(), transform::UnrollLoop(), transform::LowerAsyncDMA(),
                                             transform::FlattenBuffer(), transform::Simplify(),
                                             transform::PlanLocalMemory()},
                                            "NpuKernelPipeline");
  return p(mod);
}

}  // namespace

runtime::Module BuildNpu(const IRModule& mod, const target::Target& target) {
  int max_cores = static_cast<int>(target.GetInt("cores"));
  int64_t l1_limit = std::min<int64_t>(target.GetInt("l1"), int64_t(runtime::kNpuArgBlock));
  IRModule lowered = Lower(mod, l1_limit);
  std::vector<runtime::NpuKernel> kernels;
  for (const auto& [gname, func] : lowered->functions.items()) {
    std::string name = Sanitize(std::string(gname.view()));
    NpuAssembly a = GenerateNpuAssembly(func, name, max_cores, l1_limit);
    runtime::NpuKernel k;
    k.name = name;
    try {
      k.program = arch::assemble(a.text);
    } catch (const arch::AsmError& e) {
      TILECORE_THROW(InternalError) << "npu codegen: kernel `" << name << "`: generated assembly does not assemble: "
                                    << e.what() << "\n" << a.text;
    }
    k.assembly = a.text;
    k.params = KernelParams(func);
    k.cores = a.cores;
    if (!k.program.text.empty()) {
      const arch::TextSection& sec = k.program.text[0];
      for (size_t pc = 0; pc < sec.lines.size(); ++pc) {
        int line = sec.lines[pc];
        if (line >= 1 && size_t(line) <= a.line_locations.size() && !a.line_locations[size_t(line) - 1].empty()) {
          k.lines.push_back(runtime::LineEntry{0, int32_t(pc), a.line_locations[size_t(line) - 1]});
        }
      }
    }
    kernels.push_back(std::move(k));
  }
  return runtime::NpuModuleCreate(std::move(kernels));
}

TILECORE_REGISTER_GLOBAL("codegen.build_npu").set_body_typed([](ffi::Any mod, target::Target t) {
  return BuildNpu(AsIRModule(mod), t);
});

}  // namespace tilecore::codegen
#endif  // TILECORE_ENABLE_NPU
