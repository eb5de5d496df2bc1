/*
 * src/transform/fold_matmul_bias.cc — FoldMatMulBias (fold_matmul_bias.h).
 */
#include "tilecore/transform/fold_matmul_bias.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

/*! \brief A constant Value named `name` holding the int64 vector `vals` (a Reshape shape). */
Value Int64Const(const std::string& name, const std::vector<int64_t>& vals) {
  ffi::NDArray a = ffi::NDArray::Empty({static_cast<int64_t>(vals.size())},
                                       DLDataType{kDLInt, 64, 1}, DLDevice{kDLCPU, 0});
  int64_t* p = a.data<int64_t>();
  for (size_t i = 0; i < vals.size(); ++i) p[i] = vals[i];
  return Value(String(name), TypeOfArray(ffi::Any(a), ir::Type()), ffi::Any(a));
}

/*! \brief Whether a constant of `shape` is N values broadcast along the last axis of a
 * product of rank `rank` only (the Add's result keeps the product's shape). */
bool IsColumnBias(const std::vector<int64_t>& shape, int64_t n, size_t rank) {
  if (shape.empty() || shape.size() > rank || shape.back() != n) return false;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    if (shape[i] != 1) return false;
  return true;
}

Graph Rewrite(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t folded = 0;
  for (const Node& add : g->nodes) {
    if (add->op_type != "Add" || !add->domain.empty() || add->inputs.size() != 2 ||
        add->outputs.size() != 1 || rw.IsDead(add))
      continue;
    if (DtypeOf(add->outputs[0]) != "float32") continue;
    for (int side = 0; side < 2; ++side) {
      Node mm = rw.ProducerIf(add.input(side), "MatMul");
      Value bias = add.input(1 - side);
      if (!mm.defined() || mm->inputs.size() != 2 || rw.IsDead(mm)) continue;
      auto ws = Float32ConstShape(mm.input(1));
      auto bs = Float32ConstShape(bias);
      auto as = StaticShapeOf(mm.input(0));
      if (!ws || ws->size() != 2 || !bs || !as || as->size() < 2) continue;
      const int64_t K = (*ws)[0], N = (*ws)[1];
      if (as->back() != K || !IsColumnBias(*bs, N, as->size())) continue;
      const String& loc = mm->name;
      std::string base = Name(add->outputs[0]);
      Value b1 = Float32Const(rw.Fresh(Name(bias) + "_col"), {N}, *ConstValues(bias));
      std::vector<Node> out;
      Map<String, Any> none;
      if (as->size() == 2) {
        out.push_back(
            MakeNode("Gemm", {mm.input(0), mm.input(1), b1}, {add->outputs[0]}, none, loc, 13));
      } else {
        int64_t rows = 1;
        for (size_t i = 0; i + 1 < as->size(); ++i) rows *= (*as)[i];
        std::vector<int64_t> yshape(as->begin(), as->end());
        yshape.back() = N;
        Value a2(String(rw.Fresh(Name(mm.input(0)) + "_2d")), ir::Type());
        Value y2(String(rw.Fresh(base + "_2d")), ir::Type());
        out.push_back(MakeNode("Reshape",
                               {mm.input(0), Int64Const(rw.Fresh(base + "_rows"), {rows, K})}, {a2},
                               none, loc, 14));
        out.push_back(MakeNode("Gemm", {a2, mm.input(1), b1}, {y2}, none, loc, 13));
        out.push_back(MakeNode("Reshape", {y2, Int64Const(rw.Fresh(base + "_shape"), yshape)},
                               {add->outputs[0]}, none, loc, 14));
      }
      rw.Replace({mm}, add, out);
      ++folded;
      break;
    }
  }
  if (folded == 0) return g;
  ctx->AddStat("transform.FoldMatMulBias.folded", folded);
  return rw.Build();
}

}  // namespace

Pass FoldMatMulBias() { return CreateGraphPass(Rewrite, 0, String("FoldMatMulBias")); }

TILECORE_REGISTER_GLOBAL("transform.FoldMatMulBias").set_body_typed([]() {
  return FoldMatMulBias();
});

}  // namespace transform
}  // namespace tilecore
