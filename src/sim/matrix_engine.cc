// src/sim/matrix_engine.cc — functional semantics of mm / mma.
//
// acc = (mma ? C : 0) + A x B, with int32 accumulation (wrapping) for i8 and f32
// accumulation (k ascending, no fusion) for f16/bf16/f32; f16/bf16 products are
// exact in f32. Without an epilogue acc is stored at C (ldc). With one, each
// value goes through: + bias[j] (accumulator dtype, wrapping for i32), to f32,
// x scale (f32; scales[j] with a per-channel scale), + f32(R[i][j]) (the
// residual), relu, + zero_point (f32), clamp [lo, hi], convert to out_dtype
// (round to nearest even, saturate, NaN -> 0 for integers) and is stored at C
// with ldo. Every f32 operation rounds once to nearest even.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "byte_rounding.h"
#include "machine.h"
#include "mm_kernels.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::sim {

namespace {

// f16 -> f32 through a table of all 65,536 values (exact, built once): converting each
// element through the generic loader was most of an f16 GEMM's host time.
const float* F16Table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = float(arch::f16_to_f32(uint16_t(h)));
    return t;
  }();
  return table.data();
}

/*! \brief n elements of dtype `in` at `src` as f32 at `dst` (exact for f16, bf16, f32). */
void RowToF32(DType in, const uint8_t* src, int n, float* dst) {
  if (in == DType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
  } else if (in == DType::BF16) {
    for (int j = 0; j < n; ++j) {
      uint16_t h;
      std::memcpy(&h, src + 2 * j, 2);
      uint32_t bits = uint32_t(h) << 16;
      std::memcpy(dst + j, &bits, 4);
    }
  } else if (in == DType::F16) {
    const float* t = F16Table();
    for (int j = 0; j < n; ++j) {
      uint16_t h;
      std::memcpy(&h, src + 2 * j, 2);
      dst[j] = t[h];
    }
  } else {
    int es = arch::dtype_size(in);
    for (int j = 0; j < n; ++j) dst[j] = float(arch::load_as_double(in, src + int64_t(j) * es));
  }
}

}  // namespace

void Machine::execute_matrix(Core& c, const Command& cmd) {
  const arch::MmDesc& d = std::get<arch::MmDesc>(cmd.desc);
  DType in = cmd.inst.dtype();
  bool acc_flag = cmd.inst.op == Opcode::Mma;
  uint8_t* l1 = mem.base(Space::L1, c.id);
  const int m = int(d.m), n = int(d.n), k = int(d.k);
  uint8_t* C = l1 + cmd.addr[0];

  // Without an epilogue the product is C itself: when C shares no byte with A or B (the
  // byte ranges issue.cc recorded for them: A, B, then C), the kernels accumulate in place
  // (the same operations on the same values, without the copies in and out of a tile).
  if (!d.epilogue() && cmd.nranges == 3 && !Overlap(cmd.ranges[2], cmd.ranges[0]) &&
      !Overlap(cmd.ranges[2], cmd.ranges[1])) {
    if (in == DType::I8) {
      gemm_i8(m, n, k, reinterpret_cast<const int8_t*>(l1 + cmd.addr[1]), int(d.lda),
              reinterpret_cast<const int8_t*>(l1 + cmd.addr[2]), int(d.ldb),
              reinterpret_cast<int32_t*>(C), int(d.ldc), acc_flag);
      return;
    }
    if (in == DType::F32) {
      gemm_f32(m, n, k, reinterpret_cast<const float*>(l1 + cmd.addr[1]), int(d.lda),
               reinterpret_cast<const float*>(l1 + cmd.addr[2]), int(d.ldb),
               reinterpret_cast<float*>(C), int(d.ldc), acc_flag);
      return;
    }
  }

  // The accumulator tile, contiguous (C in L1 is bytes; copy to typed storage). Not zeroed:
  // without mma the kernels write every element (mm_kernels.h), with it C is copied in.
  std::vector<int32_t>& acc_i = mm_acc_i_;
  std::vector<float>& acc_f = mm_acc_f_;
  if (in == DType::I8) {
    acc_i.resize(size_t(m) * size_t(n));
    if (acc_flag)
      for (int i = 0; i < m; ++i)
        std::memcpy(&acc_i[size_t(i) * size_t(n)], C + int64_t(i) * d.ldc * 4, size_t(n) * 4);
    gemm_i8(m, n, k, reinterpret_cast<const int8_t*>(l1 + cmd.addr[1]), int(d.lda),
            reinterpret_cast<const int8_t*>(l1 + cmd.addr[2]), int(d.ldb), acc_i.data(), n,
            acc_flag);
  } else {
    acc_f.resize(size_t(m) * size_t(n));
    if (acc_flag)
      for (int i = 0; i < m; ++i)
        std::memcpy(&acc_f[size_t(i) * size_t(n)], C + int64_t(i) * d.ldc * 4, size_t(n) * 4);
    if (in == DType::F32) {
      // f32 operands are read in place (4-byte aligned, checked at issue); the product
      // goes to acc_f, so C may overlap them.
      gemm_f32(m, n, k, reinterpret_cast<const float*>(l1 + cmd.addr[1]), int(d.lda),
               reinterpret_cast<const float*>(l1 + cmd.addr[2]), int(d.ldb), acc_f.data(), n,
               acc_flag);
    } else {
      int es = arch::dtype_size(in);
      std::vector<float> a(size_t(m) * size_t(k)), b(size_t(k) * size_t(n));
      for (int i = 0; i < m; ++i)
        RowToF32(in, l1 + cmd.addr[1] + int64_t(i) * d.lda * es, k, &a[size_t(i) * size_t(k)]);
      for (int kk = 0; kk < k; ++kk)
        RowToF32(in, l1 + cmd.addr[2] + int64_t(kk) * d.ldb * es, n, &b[size_t(kk) * size_t(n)]);
      gemm_f32(m, n, k, a.data(), k, b.data(), n, acc_f.data(), n, acc_flag);
    }
  }

  if (!d.epilogue()) {
    for (int i = 0; i < m; ++i)
      std::memcpy(C + int64_t(i) * d.ldc * 4,
                  in == DType::I8 ? static_cast<const void*>(&acc_i[size_t(i) * size_t(n)])
                                  : static_cast<const void*>(&acc_f[size_t(i) * size_t(n)]),
                  size_t(n) * 4);
    return;
  }
  int oes = arch::dtype_size(d.out_dtype);
  const uint8_t* bias = l1 + d.bias_addr;
  const uint8_t* scales = l1 + d.scale_addr;
  const uint8_t* res = l1 + d.res_addr;
  const int res_es = arch::dtype_size(d.res_dtype);
  const float zp = float(d.zero_point);
  // the commonest residual and output types read and written inline (the same conversions
  // as load_as_double / store_from_double)
  const ByteRounding to_int8(-128.0f, 127.0f);
  auto residual_at = [&](int i, int j) -> float {
    const uint8_t* r = res + (int64_t(i) * d.ldr + j) * res_es;
    if (d.res_dtype == DType::I8) return float(int8_t(*r));
    if (d.res_dtype == DType::F32) {
      float f;
      std::memcpy(&f, r, 4);
      return f;
    }
    return float(arch::load_as_double(d.res_dtype, r));
  };
  auto store = [&](int i, int j, float v) {
    uint8_t* o = C + (int64_t(i) * d.ldo + j) * oes;
    if (d.out_dtype == DType::I8) {
      *o = uint8_t(int8_t(to_int8(v)));
    } else if (d.out_dtype == DType::F32) {
      std::memcpy(o, &v, 4);
    } else {
      arch::store_from_double(d.out_dtype, double(v), o);
    }
  };
  // The steps row by row, each a loop of its own over the row (the branches hoisted, the
  // loops vectorised): per element the same operations in the same order.
  std::vector<float> row(static_cast<size_t>(n)), scale_row(static_cast<size_t>(n), d.scale);
  std::vector<int32_t> bias_i(static_cast<size_t>(n), 0);
  std::vector<float> bias_f;
  if (d.bias()) {
    if (in == DType::I8) {
      std::memcpy(bias_i.data(), bias, size_t(n) * 4);
    } else {
      bias_f.resize(size_t(n));
      std::memcpy(bias_f.data(), bias, size_t(n) * 4);
    }
  }
  if (d.channel_scale()) std::memcpy(scale_row.data(), scales, size_t(n) * 4);
  const bool relu = d.act == arch::Activation::Relu;
  const float lo = d.clamp_lo, hi = d.clamp_hi;
  float* v = row.data();
  for (int i = 0; i < m; ++i) {
    if (in == DType::I8) {
      const int32_t* a = &acc_i[size_t(i) * size_t(n)];
      for (int j = 0; j < n; ++j)
        v[j] = float(int32_t(uint32_t(a[j]) + uint32_t(bias_i[size_t(j)])));
    } else {
      const float* a = &acc_f[size_t(i) * size_t(n)];
      if (d.bias()) {
        for (int j = 0; j < n; ++j) v[j] = a[j] + bias_f[size_t(j)];
      } else {
        std::memcpy(v, a, size_t(n) * 4);
      }
    }
    for (int j = 0; j < n; ++j) v[j] = v[j] * scale_row[size_t(j)];
    if (d.residual())
      for (int j = 0; j < n; ++j) v[j] = v[j] + residual_at(i, j);
    if (relu)
      for (int j = 0; j < n; ++j) v[j] = v[j] < 0.0f ? 0.0f : v[j];
    for (int j = 0; j < n; ++j) {
      float x = v[j] + zp;
      x = x < lo ? lo : x;
      v[j] = x > hi ? hi : x;
    }
    if (d.out_dtype == DType::F32) {
      std::memcpy(C + int64_t(i) * d.ldo * 4, v, size_t(n) * 4);
    } else {
      for (int j = 0; j < n; ++j) store(i, j, v[j]);
    }
  }
}

}  // namespace tilecore::sim
