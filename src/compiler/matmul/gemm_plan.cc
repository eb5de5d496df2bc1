/*
 * src/compiler/matmul/gemm_plan.cc — the MatMul strategy's tiling of a product (GemmPlan) and
 * the helpers its plans share.
 */
#include <limits>
#include <utility>

#include "src/compiler/kernel_util.h"
#include "src/compiler/lookup_table.h"
#include "src/compiler/matmul/matmul_plans.h"
#include "src/compiler/matrix_precision.h"
#include "src/compiler/rows_util.h"
#include "tilecore/arch/params.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace matmul {

PrimExpr BatchIndex(const PrimExpr& ob, const std::vector<int64_t>& out_batch,
                    const std::vector<int64_t>& in_batch) {
  // in_batch is right-aligned against out_batch
  PrimExpr idx = I32(0);
  int64_t in_stride = 1, out_stride = 1;
  size_t off = out_batch.size() - in_batch.size();
  for (size_t d = out_batch.size(); d-- > 0;) {
    int64_t od = out_batch[d];
    if (d >= off) {
      int64_t id = in_batch[d - off];
      if (id != 1) idx = idx + floormod(floordiv(ob, I32(out_stride)), I32(od)) * I32(in_stride);
      in_stride *= id;
    }
    out_stride *= od;
  }
  return idx;
}

bool FloatBiasFits(const GemmPlan& g) {
  return g.alpha == 1.0 && (!g.bias.defined() || (g.bm == 1 && g.bn == g.N && g.beta == 1.0));
}

Buffer ColumnBias(const GemmPlan& g) {
  if (g.mp.int8()) return g.qbias;
  return FloatBiasFits(g) ? g.bias : Buffer();
}

void AppendColumnEpilogue(Array<PrimExpr>* mm, bool int8, bool has_bias, const Buffer& Qb,
                          const Buffer& Sc, int64_t n0, int64_t tn, int64_t zero_point) {
  if (!int8 && !has_bias) return;
  const double big = std::numeric_limits<float>::max();
  mm->push_back(has_bias ? PrimExpr(Region(Qb, {I32(0), I32(n0)}, {1, tn})) : I32(0));
  for (PrimExpr e : {int8 ? PrimExpr(Region(Sc, {I32(0), I32(n0)}, {1, tn})) : F32(1.0),
                     I32(zero_point), I32(0), PrimExpr(StringImm("none")), F32(-big), F32(big)})
    mm->push_back(e);
}

Stmt Quantise(const Buffer& dst, const Buffer& src, int64_t rows, int64_t cols, double inv,
              int64_t zp) {
  return Seq(QuantiseSteps(dst, src, inv, zp, [&](const auto& body) {
    return Loop("i", rows, [&](PrimExpr i) {
      return Loop("k", cols, [&](PrimExpr k) { return body(Array<PrimExpr>{i, k}); });
    });
  }));
}

}  // namespace matmul
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
