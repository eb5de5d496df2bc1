/*
 * src/compiler/strategy_gather.cc — Gather with run-time int32 indices.
 *
 * Data is viewed as (outer, A, inner) around `axis`, the output as (outer, K, inner)
 * with K the number of indices. The indices are cut into chunks that go to the cores
 * round robin; a chunk is DMAed to L1, and for each index the front end reads it,
 * wraps a negative one (ONNX counts it from the end), clamps it into [0, A) (an index
 * out of range is an error in ONNX; here it reads the nearest slice and never
 * touches memory outside the data) and issues one strided DMA of the (outer, 1,
 * inner) slice straight from DDR to DDR. No data passes through L1, so any shape fits.
 *
 * int64 indices (what exporters emit) stay on the host: TC1 has no 64-bit integers,
 * and the front end could not read them (HasStrategy says so for every 64-bit
 * input). Constant int64 indices can be narrowed to int32 when compiling.
 */
#include <algorithm>

#include "kernel_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kChunk = 4096;  // indices per chunk (16 KiB of L1)

PrimFunc LowerGather(const OpCall& c) {
  Params p = MakeParams(c);
  auto ds = Shape(c.inputs[0]);
  int64_t r = static_cast<int64_t>(ds.size());
  int64_t axis = AttrInt(c.attrs, "axis", 0);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1, A = ds[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= ds[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= ds[d];
  int64_t K = c.inputs[1]->numel();
  if (c.outputs.size() != 1 || c.outputs[0]->numel() != outer * K * inner || c.outputs[0]->dtype != c.inputs[0]->dtype)
    TILECORE_THROW(ValueError) << "LowerOp(Gather): the output must be " << outer * K * inner << " elements of "
                               << c.inputs[0]->dtype.str();
  if (outer == 0 || inner == 0 || K == 0) return MakeFunc(c, p, Evaluate(I32(0)));
  if (A == 0)
    TILECORE_THROW(ValueError) << "LowerOp(Gather): indices into an empty axis " << axis;
  Buffer X = View(p.in[0], {outer, A, inner}, "X");
  Buffer I = View(p.in[1], {K}, "I");
  Buffer Y = View(p.out[0], {outer, K, inner}, "Y");
  int64_t ck = std::min(kChunk, std::max<int64_t>(1, (K + c.cores - 1) / c.cores));
  int64_t rotation = 0;
  Stmt body = OverCores(c.cores, [&](PrimExpr core) {
    Buffer L = Local({ck}, DataType::Int(32), "Il");
    std::vector<Stmt> s;
    for (auto [count, size] : std::vector<std::pair<int64_t, int64_t>>{{K / ck, ck}, {K % ck ? 1 : 0, K % ck}}) {
      int64_t base = size == ck ? 0 : (K / ck) * ck;
      s.push_back(ForEachItem(core, c.cores, count, &rotation, "t", [&, size = size, base = base](PrimExpr t) {
        PrimExpr start = I32(base) + t * I32(ck);
        Stmt load = DmaWait(Region(L, {I32(0)}, {size}), Region(I, {start}, {size}), 0);
        Stmt copies = Loop("j", size, [&](PrimExpr j) {
          Var v("v", DataType::Int(32));
          PrimExpr raw = BufferLoad(L, {j});
          PrimExpr wrapped = select(raw < I32(0), raw + I32(A), raw);
          PrimExpr idx = max(min(v, I32(A - 1)), I32(0));
          Stmt cp = Intrin("tile.dma_copy", {Region(Y, {I32(0), start + j, I32(0)}, {outer, 1, inner}),
                                             Region(X, {I32(0), idx, I32(0)}, {outer, 1, inner}), I32(0)});
          return LetStmt(v, wrapped, cp);
        });
        return Seq({load, copies});
      }));
    }
    s.push_back(Intrin("tile.wait", {I32(0)}));
    return Allocate(L, Seq(s));
  });
  return MakeFunc(c, p, body);
}

std::string CheckGather(const std::string& op, const Map<String, Any>& attrs, const std::vector<TensorSpec>& inputs) {
  if (inputs.size() != 2 || !inputs[0].defined() || !inputs[1].defined()) return "Gather: expects data and indices";
  std::string why = CheckDTypes({inputs[0]},
                                {DataType::Float(32), DataType::Int(32), DataType::UInt(32), DataType::Float(16),
                                 DataType::Int(16), DataType::Int(8), DataType::UInt(8), DataType::Bool()},
                                op);
  if (!why.empty()) return why;
  if (inputs[1]->dtype != DataType::Int(32))
    return "Gather: indices are " + inputs[1]->dtype.str() + "; the npu reads int32 indices";
  int64_t r = static_cast<int64_t>(inputs[0]->shape.size());
  int64_t axis = AttrInt(attrs, "axis", 0);
  if (r == 0 || axis < -r || axis >= r) return "Gather: axis " + std::to_string(axis) + " out of range";
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("Gather", Strategy{detail::CheckGather, detail::LowerGather,
                                      [](const OpCall&, int) { return std::string("onnx"); }, -1});
});

}  // namespace compiler
}  // namespace tilecore
