// src/codegen/npu/tile.cc — tile commands: DMA, matrix-engine and vector-engine
// commands with their descriptors (arch/descriptors.h) in the L1 data segment.
// Static descriptor fields are constants; a dynamic scalar field is stored into a
// per-site descriptor before the command.
#if TILECORE_ENABLE_NPU
#include <cmath>
#include <cstring>

#include "emitter.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/numeric.h"
#include "tilecore/arch/tile_ops.h"
#include "tilecore/codegen/tile_operand.h"

namespace tilecore::codegen::npu {

using namespace ir;  // NOLINT

int64_t Count(const Tensor& t) {
  int64_t n = 1;
  for (int64_t s : t.shape) n *= s;
  return n;
}

// Drops dimensions of extent 1 (keeping at least one).
void Squeeze(Tensor* t) {
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
void MergeJoint(std::vector<Tensor*> ts) {
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

bool Contiguous(const Tensor& t) {
  int64_t s = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != s) return false;
    s *= t.shape[i];
  }
  return true;
}

namespace {

constexpr size_t kMaxRank = 4;  // descriptors hold up to 4 dimensions

std::string List(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

template <typename T>
std::array<T, 4> Dims(const std::vector<int64_t>& v, T fill) {
  std::array<T, 4> a{fill, fill, fill, fill};
  for (size_t i = 0; i < v.size() && i < 4; ++i) a[i] = T(v[i]);
  return a;
}

arch::VecDesc MakeVecDesc(const Tensor& d, const Tensor& a, const Tensor* b) {
  arch::VecDesc v;
  v.rank = uint8_t(a.shape.size());
  v.shape = Dims<uint32_t>(a.shape, 1);
  v.d_stride = Dims<int32_t>(d.strides, 0);
  v.a_stride = Dims<int32_t>(a.strides, 0);
  v.b_stride = b ? Dims<int32_t>(b->strides, 0) : std::array<int32_t, 4>{0, 0, 0, 0};
  return v;
}

std::string VecNote(const Tensor& d, const Tensor& a, const Tensor* b) {
  return "vecdesc shape=" + List(a.shape) + " d_stride=" + List(d.strides) +
         " a_stride=" + List(a.strides) + (b ? " b_stride=" + List(b->strides) : std::string());
}

std::optional<double> ConstValue(const PrimExpr& v) {
  if (auto ci = as_const_int(v)) return double(*ci);
  if (auto cf = as_const_float(v)) return *cf;
  return std::nullopt;
}

}  // namespace

Tensor NpuEmitter::Region(const PrimExpr& e, const CallNode* c) {
  TileOperand op = DecodeTileOperand(e, c, [&](const std::string& what) { Fail(what, c->span); });
  TC1Type(op.dtype);
  return Tensor{op.buffer, op.dtype, op.offset, std::move(op.shape), std::move(op.strides)};
}

// Gives the operands one iteration shape (same rank, same extents).
void NpuEmitter::Align(std::vector<Tensor*> ts, const CallNode* c) {
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
      for (size_t i = t->shape.size() - 1; i-- > 0;)
        t->strides[i] = t->strides[i + 1] * t->shape[i + 1];
    }
  }
  MergeJoint(ts);
  if (ts[0]->shape.size() > kMaxRank)
    Fail("`" + std::string(c->op.view()) + "` over more than 4 dimensions", c->span);
}

void NpuEmitter::Dma(const CallNode* c, const std::string& op) {
  bool fill = op == "tc1.dma_fill_in";
  Op opcode = op == "tc1.dma_out" ? Op::DmaOut : Op::DmaIn;
  arch::Engine queue = op == "tc1.dma_out" ? arch::Engine::DmaOut : arch::Engine::DmaIn;
  Tensor d = Region(c->args[0], c);
  Tensor s = fill ? d : Region(c->args[1], c);
  if (!fill && Count(d) != Count(s))
    Fail("`" + op + "` between regions of different sizes", c->span);
  if (!fill) {
    Align({&d, &s}, c);
  } else {
    Squeeze(&d);
    MergeJoint({&d});
    if (d.shape.size() > kMaxRank) Fail("a DMA fill over more than 4 dimensions", c->span);
    s = d;
  }
  // Order after compute commands touching either side.
  for (size_t i = 0; i < (fill ? 1u : 2u); ++i) {
    Unit u = UnitOf(c->args[i]);
    WaitUnit(u, O::Queue(queue), arch::Engine::Matrix);
    WaitUnit(u, O::Queue(queue), arch::Engine::Vector);
  }
  arch::DmaDesc desc;
  desc.src_dtype = TC1Type(s.dtype);
  desc.dst_dtype = TC1Type(d.dtype);
  desc.rank = uint8_t(d.shape.size());
  desc.shape = Dims<uint32_t>(d.shape, 1);
  desc.src_stride = Dims<int32_t>(s.strides, 0);
  desc.dst_stride = Dims<int32_t>(d.strides, 0);
  std::string note = "dmadesc src=" + std::string(arch::dtype_name(desc.src_dtype)) +
                     " dst=" + std::string(arch::dtype_name(desc.dst_dtype)) +
                     " shape=" + List(d.shape) + " src_stride=" + List(s.strides) +
                     " dst_stride=" + List(d.strides);
  int64_t addr;
  if (fill) {
    desc.flags |= arch::DmaDesc::kFill;
    PrimExpr v = c->args[1];
    if (auto cv = ConstValue(v)) {
      uint8_t bits[4] = {0, 0, 0, 0};
      arch::store_from_double(desc.dst_dtype, *cv, bits);
      std::memcpy(&desc.fill_bits, bits, 4);
      addr = Descriptor(desc.to_bytes(), true, note + " fill");
    } else {
      addr = Descriptor(desc.to_bytes(), false, note + " fill (value stored at run time)");
      XR x = Reload(Eval(v));
      XR b = CastScalar(x, v.dtype(), d.dtype);
      StL1(Op::Sw, b.r, addr + 4);
      Free(b);
    }
  } else {
    addr = Descriptor(desc.to_bytes(), true, note);
  }
  XR da = TensorAddr(d);
  da = Hold(da);
  XR sa = fill ? XR{0, false} : TensorAddr(s);
  da = Reload(da);
  arch::Space sspace = SpaceOf(std::string((fill ? d : s).buffer->scope.view()));
  E(opcode, {O::At(SpaceOf(std::string(d.buffer->scope.view())), da.r), O::At(sspace, sa.r),
             O::Desc(0, addr)});
  if (const int count = dma_issued_reg_[opcode == Op::DmaOut ? 1 : 0]; count >= 0)
    RI(Op::Addi, count, count, 1);
  Free(da);
  Free(sa);
}

void NpuEmitter::Matmul(const CallNode* c) {
  Tensor C = Region(c->args[0], c), A = Region(c->args[1], c), B = Region(c->args[2], c);
  auto mat = [&](Tensor& t, const char* what) {
    size_t r = t.shape.size();
    if (r < 2) Fail(std::string("`tile.mm` with a 1-D ") + what, c->span);
    for (size_t i = 0; i + 2 < r; ++i) {
      if (t.shape[i] != 1) Fail(std::string("`tile.mm` with a batched ") + what, c->span);
    }
    if (t.strides[r - 1] != 1 && t.shape[r - 1] != 1)
      Fail(std::string("`tile.mm` with non-contiguous rows in ") + what, c->span);
  };
  mat(C, "c");
  mat(A, "a");
  mat(B, "b");
  auto rows = [](const Tensor& t) { return t.shape[t.shape.size() - 2]; };
  auto cols = [](const Tensor& t) { return t.shape[t.shape.size() - 1]; };
  auto ld = [](const Tensor& t) { return t.strides[t.strides.size() - 2]; };
  int64_t M = rows(C), N = cols(C), K = cols(A);
  if (rows(A) != M || rows(B) != K || cols(B) != N)
    Fail("`tile.mm` with mismatched shapes", c->span);
  int64_t lim = arch::tc1::kMaxMmDim;
  if (M > lim || N > lim || K > lim) {
    Fail("`tile.mm` larger than " + std::to_string(lim) + " in a dimension", c->span);
  }
  arch::MmDesc md;
  md.m = uint32_t(M);
  md.n = uint32_t(N);
  md.k = uint32_t(K);
  md.lda = uint32_t(ld(A));
  md.ldb = uint32_t(ld(B));
  md.ldc = uint32_t(ld(C));
  md.ldo = uint32_t(N);
  std::string note = "mmdesc m=" + std::to_string(M) + " n=" + std::to_string(N) +
                     " k=" + std::to_string(K) + " lda=" + std::to_string(ld(A)) +
                     " ldb=" + std::to_string(ld(B)) + " ldc=" + std::to_string(ld(C));
  // The fused epilogue (tile.mm's optional block): C is the output (ldo); bias, scales and
  // residual are L1 addresses stored into this site's descriptor before the command, as
  // are a non-constant scale and zero point.
  MatmulEpilogue epi =
      DecodeMatmulEpilogue(c, M, N, [&](const std::string& what) { Fail(what, c->span); });
  std::vector<PrimExpr> regions{c->args[0], c->args[1], c->args[2]};
  std::vector<std::pair<int64_t, PrimExpr>> dyn;  // (byte offset, f32 / i32 value)
  std::vector<std::pair<int64_t, int>> addrs;     // (byte offset, argument index)
  if (epi.present) {
    md.flags = arch::MmDesc::kEpilogue;
    md.ldc = uint32_t(N);
    md.ldo = uint32_t(ld(C));
    md.out_dtype = TC1Type(C.dtype);
    md.act = epi.relu ? arch::Activation::Relu : arch::Activation::None;
    note += " ldo=" + std::to_string(ld(C)) +
            " out=" + std::string(arch::dtype_name(md.out_dtype)) + (epi.relu ? " act=relu" : "");
    auto f32_field = [&](const PrimExpr& v, float* field, const char* key, int64_t offset) {
      auto cv = ConstValue(v);
      if (cv && std::isfinite(*cv)) {
        *field = float(*cv);
        note += std::string(" ") + key + "=" + std::to_string(*cv);
      } else {
        dyn.emplace_back(offset, v);
      }
    };
    if (!epi.channel_scale) f32_field(epi.scale, &md.scale, "scale", 32);
    f32_field(epi.clamp_lo, &md.clamp_lo, "lo", 36);
    f32_field(epi.clamp_hi, &md.clamp_hi, "hi", 40);
    if (auto zp = as_const_int(epi.zero_point)) {
      md.zero_point = int32_t(*zp);
      note += " zp=" + std::to_string(*zp);
    } else {
      dyn.emplace_back(44, epi.zero_point);
    }
    if (epi.has_bias) {
      md.flags |= arch::MmDesc::kBias;
      addrs.emplace_back(28, 4);
      note += " bias";
    }
    if (epi.channel_scale) {
      md.flags |= arch::MmDesc::kChannelScale;
      addrs.emplace_back(52, 5);
      note += " scales";
    }
    if (epi.has_residual) {
      md.flags |= arch::MmDesc::kResidual;
      md.res_dtype = TC1Type(epi.residual.dtype);
      md.ldr = uint32_t(epi.ldr);
      addrs.emplace_back(56, 7);
      note += " res ldr=" + std::to_string(epi.ldr);
    }
    for (auto& [off, arg] : addrs) regions.push_back(c->args[size_t(arg)]);
  }
  int64_t desc = Descriptor(md.to_bytes(), dyn.empty() && addrs.empty(), note);
  for (auto& [off, v] : dyn) {
    XR x = Reload(Eval(v));
    if (off != 44) x = CastScalar(x, v.dtype(), DataType::Float(32));
    StL1(Op::Sw, x.r, desc + off);
    Free(x);
  }
  arch::DType dt = TC1Type(A.dtype);
  Compute(arch::Engine::Matrix, regions, [&] {
    for (auto& [off, arg] : addrs) {
      XR x = TensorAddr(Region(c->args[size_t(arg)], c));
      StL1(Op::Sw, x.r, desc + off);
      Free(x);
    }
    XR xc = Hold(TensorAddr(C));
    XR xa = Hold(TensorAddr(A));
    XR xb = TensorAddr(B);
    xa = Reload(xa);
    xc = Reload(xc);
    auto issue = [&](Op op) { E(op, {O::X(xc.r), O::X(xa.r), O::X(xb.r), O::Desc(0, desc)}, dt); };
    auto acc = as_const_int(c->args[3]);
    if (acc) {
      issue(*acc ? Op::Mma : Op::Mm);
    } else {
      Label l0 = b_.NewLabel("fresh"), l1 = b_.NewLabel("issued");
      XR f = Reload(Eval(c->args[3]));
      Branch(Op::Beq, f.r, 0, l0);
      Free(f);
      issue(Op::Mma);
      Jump(l1);
      Place(l0);
      issue(Op::Mm);
      Place(l1);
    }
    Free(xc);
    Free(xa);
    Free(xb);
  });
}

// tir.call_packed: the host-call block of docs/tc1.md ("Host calls") in the data segment,
// its run-time fields (tensor addresses, non-constant scalars) stored before the call;
// `fence` first, so the host sees every tile command before it completed.
void NpuEmitter::CallPacked(const CallNode* c) {
  std::string name(c->args[0].as<StringImmNode>()->value.view());
  if (name.empty() || name.size() > 255)
    Fail("`tir.call_packed` with a function name of " + std::to_string(name.size()) +
             " bytes (1..255)",
         c->span);
  size_t n = c->args.size() - 1;
  if (n > 16) Fail("`tir.call_packed` with more than 16 arguments", c->span);
  std::vector<uint8_t> nm(name.begin(), name.end());
  nm.push_back(0);
  while (nm.size() % 4) nm.push_back(0);
  int64_t name_addr = Descriptor(nm, true, "host function " + name);
  std::vector<uint8_t> blk(8 + 48 * n, 0);
  auto put32 = [&](size_t off, uint32_t v) { std::memcpy(&blk[off], &v, 4); };
  put32(0, uint32_t(name_addr));
  put32(4, uint32_t(n));
  std::vector<std::pair<int64_t, PrimExpr>> dyn;  // (byte offset, int / f32 value)
  std::vector<std::pair<int64_t, size_t>> addrs;  // (byte offset, argument index)
  for (size_t i = 0; i < n; ++i) {
    const PrimExpr& a = c->args[i + 1];
    size_t r = 8 + 48 * i;
    if (a.as<BufferRegionNode>()) {
      Tensor t = Region(a, c);
      if (t.shape.size() > 4) Squeeze(&t);
      if (t.shape.size() > 4)
        Fail("`tir.call_packed` argument " + std::to_string(i + 1) + " over more than 4 dimensions",
             c->span);
      blk[r] = 2;
      blk[r + 1] = uint8_t(TC1Type(t.dtype));
      blk[r + 2] = uint8_t(t.shape.size());
      blk[r + 3] = uint8_t(SpaceOf(std::string(t.buffer->scope.view())));
      for (size_t k = 0; k < t.shape.size(); ++k) {
        if (t.strides[k] < 0)
          Fail("`tir.call_packed` argument " + std::to_string(i + 1) + " with a negative stride",
               c->span);
        put32(r + 16 + 4 * k, uint32_t(t.shape[k]));
        put32(r + 32 + 4 * k, uint32_t(t.strides[k]));
      }
      addrs.emplace_back(int64_t(r + 12), i + 1);
    } else if (a.dtype().is_float()) {
      blk[r] = 1;
      auto cv = ConstValue(a);
      if (cv) {
        float f = float(*cv);
        std::memcpy(&blk[r + 8], &f, 4);
      } else {
        dyn.emplace_back(int64_t(r + 8), a);
      }
    } else {
      if (auto ci = as_const_int(a))
        put32(r + 4, uint32_t(int32_t(*ci)));
      else
        dyn.emplace_back(int64_t(r + 4), a);
    }
  }
  int64_t block = Descriptor(blk, false, "host call " + name);
  E(Op::Fence, {});
  for (auto& [off, v] : dyn) {
    XR x = Reload(Eval(v));
    if (v.dtype().is_float()) x = CastScalar(x, v.dtype(), DataType::Float(32));
    StL1(Op::Sw, x.r, block + off);
    Free(x);
  }
  for (auto& [off, arg] : addrs) {
    XR x = TensorAddr(Region(c->args[arg], c));
    StL1(Op::Sw, x.r, block + off);
    Free(x);
  }
  E(Op::Hcall, {O::X(0), O::X(0), O::Imm(block)});
}

void NpuEmitter::LutOp(const CallNode* c) {
  // tlut: d = table[a], a's bytes the indices; the table is 256 contiguous elements.
  Tensor d = Region(c->args[0], c), a = Region(c->args[1], c), t = Region(c->args[2], c);
  Squeeze(&t);
  MergeJoint({&t});
  if (Count(t) != 256 || !Contiguous(t))
    Fail("`tile.vec_lut` with a table that is not 256 contiguous elements", c->span);
  Align({&d, &a}, c);
  int64_t desc = Descriptor(MakeVecDesc(d, a, nullptr).to_bytes(), true, VecNote(d, a, nullptr));
  Compute(arch::Engine::Vector, {c->args[0], c->args[1], c->args[2]}, [&] {
    XR xd = Hold(TensorAddr(d));
    XR xa = Hold(TensorAddr(a));
    XR xt = TensorAddr(t);
    xa = Reload(xa);
    xd = Reload(xd);
    E(Op::Tlut, {O::X(xd.r), O::X(xa.r), O::X(xt.r), O::Desc(0, desc)}, TC1Type(d.dtype));
    Free(xd);
    Free(xa);
    Free(xt);
  });
}

void NpuEmitter::VecOp(const CallNode* c, const std::string& op) {
  // The operation's row of the table of tile operations (arch/tile_ops.def) gives its
  // opcode and operand form.
  const arch::TileOpInfo* row = arch::FindTileIntrinsic(op);
  if (row == nullptr) Fail("`" + op + "`", c->span);
  const Op opcode = row->op;
  const arch::TileForm form = row->form;
  Tensor d = Region(c->args[0], c), a = Region(c->args[1], c);
  std::vector<PrimExpr> regions{c->args[0], c->args[1]};
  arch::DType dt = TC1Type(d.dtype);
  auto issue2 = [&](Op opc, int64_t desc, arch::DType dst, arch::DType src) {
    XR xd = Hold(TensorAddr(d));
    XR xa = TensorAddr(a);
    xd = Reload(xd);
    E(opc, {O::X(xd.r), O::X(xa.r), O::Desc(0, desc)}, dst, src);
    Free(xd);
    Free(xa);
  };
  if (form == arch::TileForm::Binary) {
    Tensor b = Region(c->args[2], c);
    regions.push_back(c->args[2]);
    Align({&d, &a, &b}, c);
    int64_t desc = Descriptor(MakeVecDesc(d, a, &b).to_bytes(), true, VecNote(d, a, &b));
    Compute(arch::Engine::Vector, regions, [&] {
      XR xd = Hold(TensorAddr(d));
      XR xa = Hold(TensorAddr(a));
      XR xb = TensorAddr(b);
      xa = Reload(xa);
      xd = Reload(xd);
      E(opcode, {O::X(xd.r), O::X(xa.r), O::X(xb.r), O::Desc(0, desc)}, dt);
      Free(xd);
      Free(xa);
      Free(xb);
    });
    return;
  }
  if (form == arch::TileForm::Reduce) {
    // a: [..., K]; d: [..., 1] or [...]; the innermost axis is folded.
    std::vector<int64_t> dstr = d.strides;
    if (d.shape.size() + 1 == a.shape.size()) dstr.push_back(0);
    if (dstr.size() != a.shape.size())
      Fail("`" + op + "` with operands of different ranks", c->span);
    std::vector<int64_t> sh, as, ds;
    for (size_t i = 0; i < a.shape.size(); ++i) {
      if (a.shape[i] == 1 && i + 1 != a.shape.size()) continue;
      sh.push_back(a.shape[i]);
      as.push_back(a.strides[i]);
      ds.push_back(dstr[i]);
    }
    if (sh.size() > kMaxRank) Fail("`" + op + "` over more than 4 dimensions", c->span);
    a.shape = d.shape = sh;
    a.strides = as;
    d.strides = ds;
    int64_t desc = Descriptor(MakeVecDesc(d, a, nullptr).to_bytes(), true, VecNote(d, a, nullptr));
    Compute(arch::Engine::Vector, regions, [&] { issue2(opcode, desc, dt, dt); });
    return;
  }
  Align({&d, &a}, c);
  arch::VecDesc vd = MakeVecDesc(d, a, nullptr);
  std::string note = VecNote(d, a, nullptr);
  arch::DType src = dt;
  std::vector<std::pair<int64_t, PrimExpr>> dyn;  // (byte offset, f32 / i32 value)
  auto scalar_field = [&](const PrimExpr& v, float* field, const char* key, int64_t offset) {
    auto cv = ConstValue(v);
    if (cv && std::isfinite(*cv)) {
      *field = float(*cv);
      note += std::string(" ") + key + "=" + std::to_string(*cv);
    } else {
      dyn.emplace_back(offset, v);
    }
  };
  Op opc = opcode;
  if (form == arch::TileForm::Scalar) {
    scalar_field(c->args[2], &vd.scalar, "scalar", 68);
  } else if (form == arch::TileForm::Convert) {
    src = TC1Type(a.dtype);
  } else if (form == arch::TileForm::Requant) {
    src = TC1Type(a.dtype);
    scalar_field(c->args[2], &vd.scale, "scale", 72);
    if (auto zp = as_const_int(c->args[3])) {
      vd.zero_point = int32_t(*zp);
      note += " zp=" + std::to_string(*zp);
    } else {
      dyn.emplace_back(76, c->args[3]);
    }
  }
  int64_t desc = Descriptor(vd.to_bytes(), dyn.empty(), note);
  for (auto& [off, v] : dyn) {
    XR x = Reload(Eval(v));
    if (off != 76) x = CastScalar(x, v.dtype(), DataType::Float(32));
    StL1(Op::Sw, x.r, desc + off);
    Free(x);
  }
  Compute(arch::Engine::Vector, regions, [&] { issue2(opc, desc, dt, src); });
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
