/*
 * src/compiler/conv/geometry.cc — a Conv's geometry from its inputs and attributes (ConvGeom).
 */
#include <algorithm>
#include <string>

#include "src/compiler/conv/conv_plans.h"
#include "src/compiler/fused_epilogue.h"
#include "src/compiler/kernel_util.h"
#include "src/compiler/matrix_precision.h"
#include "tilecore/arch/params.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace conv {

bool Geometry(const std::vector<TensorSpec>& ins, const Map<String, Any>& attrs, ConvGeom* g,
              std::string* why) {
  auto xs = Shape(ins[0]), ws = Shape(ins[1]);
  if (xs.size() != ws.size() || (xs.size() != 3 && xs.size() != 4)) {
    *why = "Conv: only 1-D and 2-D convolutions (X and W of rank 3 or 4)";
    return false;
  }
  bool one_d = xs.size() == 3;
  if (one_d) {
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
  }
  g->N = xs[0];
  g->C = xs[1];
  g->H = xs[2];
  g->W = xs[3];
  g->M = ws[0];
  g->KH = ws[2];
  g->KW = ws[3];
  g->G = AttrInt(attrs, "group", 1);
  if (g->G <= 0 || g->C % g->G != 0 || g->M % g->G != 0 || ws[1] * g->G != g->C) {
    *why = "Conv: channels do not match the group count";
    return false;
  }
  g->Cg = g->C / g->G;
  g->Mg = g->M / g->G;
  size_t nd = one_d ? 1 : 2;
  auto strides = AttrInts(attrs, "strides", std::vector<int64_t>(nd, 1));
  auto dil = AttrInts(attrs, "dilations", std::vector<int64_t>(nd, 1));
  auto pads = AttrInts(attrs, "pads", std::vector<int64_t>(2 * nd, 0));
  if (strides.size() != nd || dil.size() != nd || pads.size() != 2 * nd) {
    *why = "Conv: strides, dilations or pads of the wrong length";
    return false;
  }
  if (one_d) {
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  g->sh = strides[0];
  g->sw = strides[1];
  g->dh = dil[0];
  g->dw = dil[1];
  std::string ap = AttrStr(attrs, "auto_pad", "NOTSET");
  int64_t in[2] = {g->H, g->W}, k[2] = {g->KH, g->KW}, s[2] = {g->sh, g->sw}, d[2] = {g->dh, g->dw};
  int64_t pb[2] = {pads[0], pads[1]}, pe[2] = {pads[2], pads[3]}, out[2];
  for (int i = 0; i < 2; ++i) {
    int64_t ek = (k[i] - 1) * d[i] + 1;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>((out[i] - 1) * s[i] + ek - in[i], 0);
      pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (ap == "VALID") {
      pb[i] = pe[i] = 0;
    }
    out[i] = (in[i] + pb[i] + pe[i] - ek) / s[i] + 1;
  }
  if (one_d) pb[0] = pe[0] = 0;
  g->pt = pb[0];
  g->pl = pb[1];
  g->pb = pe[0];
  g->pr = pe[1];
  g->OH = out[0];
  g->OW = out[1];
  if (g->OH <= 0 || g->OW <= 0) {
    *why = "Conv: empty output";
    return false;
  }
  if (g->KH * g->KW > kMaxK) {
    *why = "Conv: kernel window larger than " + std::to_string(kMaxK) + " taps";
    return false;
  }
  return true;
}

}  // namespace conv
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
