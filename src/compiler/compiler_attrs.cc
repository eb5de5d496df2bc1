/*
 * src/compiler/compiler_attrs.cc — the table of the compiler's `tc_*` attributes and
 * CheckCompilerAttrs (compiler_attrs.h). docs/compiler.md, "Compiler attributes", is this
 * table by hand (tests/python/compiler/test_compiler_attrs.py holds them equal).
 *
 * Each doc says what the attribute means, who sets it (the pipeline pass, and its module
 * under python/tilecore/compiler/) and who reads it (the strategy or host kernel).
 */
#include "tilecore/compiler/compiler_attrs.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace compiler {

namespace {
using ffi::Array;
constexpr AttrKind kInt = AttrKind::kInt, kFloat = AttrKind::kFloat, kString = AttrKind::kString,
                   kInts = AttrKind::kInts, kAttrs = AttrKind::kAttrs;

// clang-format off
const std::vector<CompilerAttr>& Table() {
  static const std::vector<CompilerAttr> table = {
    // -- a matrix op's precision and its int8 form (docs/precision.md)
    {"tc_precision", kString,
     "What a matrix op computes in: `f32` (also absent or empty), `f16`, `bf16` or `int8` (the "
     "quantised-node form). Set by Precision (precision.py, qdq.py), or a Graph in that form; "
     "read by Conv, ConvTranspose, MatMul, Gemm (matrix_precision.h)."},
    {"tc_x_scale", kFloat,
     "int8: the scale of input 0 (X), quantised on load, or already int8 with it; a lookup-table "
     "op's, a global pooling's or a LayerNormalization's: its int8 input's. Set by Precision "
     "(precision.py, qdq.py), Int8Edges (int8_edges.py: table ops, global poolings, "
     "LayerNormalization), SiblingGemms (1.0); read by Conv, "
     "MatMul, Gemm (matrix_precision.h), the int8 table ops (strategy_elementwise.cc), "
     "GlobalAveragePool, GlobalMaxPool (strategy_pool.cc), ReduceMean, ReduceMax, ReduceMin "
     "(strategy_reduce.cc), LayerNormalization (strategy_norm.cc)."},
    {"tc_x_zero_point", kInt,
     "int8: X's zero point, in [-128, 127] (default 0; the padding value). Set and read with "
     "`tc_x_scale`."},
    {"tc_b_scale", kFloat,
     "int8 MatMul of two activations: B's per-tensor scale (zero point 0), B quantised on load "
     "or already int8. Set by Precision (precision.py, qdq.py); read by MatMul "
     "(matrix_precision.h, strategy_matmul.cc)."},
    {"tc_y_scale", kFloat,
     "The output stored int8 with this scale, quantised in the op's epilogue. Set by Int8Edges "
     "(int8_edges.py), Precision (qdq.py), SiblingGemms (1.0); read by Conv, MatMul, Gemm, "
     "Softmax, the int8 table ops."},
    {"tc_y_zero_point", kInt,
     "The int8 output's zero point, in [-128, 127] (default 0). Set and read with `tc_y_scale`."},
    {"tc_out_scale", kFloat,
     "int8 MatMul or Gemm: a positive factor its result is multiplied by in the epilogue "
     "(a Div by a power of two folded, or the scales of its operands). Set by FuseEpilogue "
     "(fuse_epilogue.py); read by MatMul, "
     "Gemm (strategy_matmul.cc; matrix_precision.h checks it, for an int8 Conv too, which "
     "does not apply it)."},
    // -- a Conv's fused epilogue (docs/compiler.md, the driver's step 5)
    {"tc_residual", kInt,
     "1: the Conv's last input is added to its result before the activation (a residual Add "
     "fused); 0 or absent: none. Set by FuseEpilogue (fuse_epilogue.py); read by Conv "
     "(fused_epilogue.h)."},
    {"tc_residual_last", kInt,
     "1: the fused residual is added after the activation (Conv -> activation -> Add: YOLO's "
     "bottleneck), f32 in a Conv not in int8; 0 or absent: before it. Set by FuseEpilogue "
     "(fuse_epilogue.py); read by Conv (fused_epilogue.h)."},
    {"tc_residual_scale", kFloat,
     "An int8 fused residual's scale: added in its own units. Set by Int8Edges "
     "(int8_edges.py); read by Conv (fused_epilogue.h)."},
    {"tc_residual_zero_point", kInt,
     "An int8 fused residual's zero point, in [-128, 127] (default 0). Set and read with "
     "`tc_residual_scale`."},
    {"tc_activation", kString,
     "The activation of the Conv's epilogue: `Relu`, `Clip`, `Sigmoid`, `SiLU`, `HardSwish` or "
     "`HardSigmoid`; of a BatchNormalization: `Relu` or `Clip`. Set by FuseEpilogue "
     "(fuse_epilogue.py); read by Conv (fused_epilogue.h), BatchNormalization "
     "(strategy_norm.cc)."},
    {"tc_activation_alpha", kFloat,
     "A fused `HardSigmoid`'s alpha (default 0.2, ONNX's). Set by FuseEpilogue "
     "(fuse_epilogue.py); read by Conv (fused_epilogue.h)."},
    {"tc_activation_beta", kFloat,
     "A fused `HardSigmoid`'s beta (default 0.5, ONNX's). Set and read with "
     "`tc_activation_alpha`."},
    {"tc_clip_min", kFloat,
     "`Clip`'s lower bound (absent: none). Set by FuseEpilogue (fuse_epilogue.py); read by Conv "
     "(fused_epilogue.h), BatchNormalization (strategy_norm.cc)."},
    {"tc_clip_max", kFloat,
     "`Clip`'s upper bound (absent: none). Set by FuseEpilogue (fuse_epilogue.py); read by Conv "
     "(fused_epilogue.h), BatchNormalization (strategy_norm.cc)."},
    {"tc_channel_scale", kInt,
     "1: the Conv multiplies each loaded patch by a per-channel float32 [1, C, ...] appended "
     "after its operands (a Mul folded); 0 or absent: none. Set by FuseEpilogue "
     "(fuse_epilogue.py); read by Conv (strategy_conv.cc)."},
    {"tc_channel_scale.tc_x_scale", kFloat,
     "With `tc_channel_scale`, an int8 Conv whose X is int8: X's code (its producer's "
     "`tc_y_scale`), dequantised on load before the channel scale; `tc_x_scale` then "
     "quantises the scaled patch. Set by Int8Edges (int8_edges.py); read by Conv "
     "(strategy_conv.cc)."},
    {"tc_channel_scale.tc_x_zero_point", kInt,
     "That code's zero point (default 0; the padding value). Set and read with "
     "`tc_channel_scale.tc_x_scale`."},
    // -- a Conv's plan, forced (docs/compiler.md, "How tiling is chosen")
    {"tc_pipeline", kInt,
     "Conv: 1 a pipelined plan whenever one fits, 0 never (absent: the cost model's); a "
     "depthwise Conv's 2: three stages (the matrix form: int8, f16 or bf16). Set by no pass "
     "(tests' and benchmarks' override); read by Conv (strategy_conv.cc)."},
    {"tc_stage_input", kInt,
     "Conv: 1 its input staged in L2 whenever that fits, 0 never (absent: the cost model's). "
     "Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_stage_weights", kInt,
     "Conv: 1 its weights staged in L2 whenever that fits, 0 never (absent: the cost model's). "
     "Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_weights_on_out", kInt,
     "Conv: 1 its weight blocks loaded on the DMA-out engine whenever its plan loads blocks, 0 "
     "never (absent: the cost model's). Set by no pass (an override); read by Conv "
     "(strategy_conv.cc)."},
    {"tc_resident", kInt,
     "Conv: 1 its weights resident in each core's L1 whenever that fits, 0 never (absent: the "
     "cost model's). Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_transposed", kInt,
     "Conv: 1 the transposed plan whenever it fits, 0 never (absent: the cost model's). Set "
     "by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_implicit_items", kInts,
     "int8 1x1 Conv, transposed plan: [num, den], of every den items of a core the first num "
     "computed channel-major (the epilogue on the vector engine), [0, 1] none (absent: the cost "
     "model's). Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_x_major", kInt,
     "int8 Conv, transposed plan: 1 each X tile's items (its blocks of output channels) on "
     "one core whenever that applies (the tiles a multiple of the cores, more than two items "
     "each), 0 never (absent: the cost model's). Set by no pass (an override); read by Conv "
     "(strategy_conv.cc)."},
    {"tc_pool_pipeline", kInt,
     "MaxPool, AveragePool, LpPool: 1 a core's items pipelined (two patches: the loads of one "
     "item while the taps of the one before run) whenever that fits, 0 never (absent: the cost "
     "model's). Set by no pass (an override); read by the poolings (strategy_pool.cc)."},
    {"tc_reduce_pipeline", kInt,
     "ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceLogSum and the global poolings whose "
     "reduced extent fits one tile: 1 the tiles pipelined (the load of one while the one before "
     "is folded and stored), 0 never (absent: the cost model's). Set by no pass (an override); "
     "read by the reductions (strategy_reduce.cc)."},
    {"tc_reduce_matrix", kInt,
     "ReduceMean and GlobalAveragePool of an int8 input over whole rows (a global pooling): 1 "
     "the rows' sums on the matrix engine (a tile of rows times a column of ones, the mean in "
     "its epilogue; an error naming why where that form does not apply: rows longer than the "
     "mm's K limit, or not an int8 mean), 0 never (absent: the cost model's). Set by no pass (an "
     "override); read by the reductions (strategy_reduce.cc)."},
    {"tc_images_per_item", kInt,
     "Conv: K images per work item, a divisor of the batch (1 for a depthwise Conv; absent: the "
     "cost model's). Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_block_diagonal", kInt,
     "Conv: the grouped Conv's groups taken K at a time, its weights block-diagonal (its "
     "`group` the original's divided by K): the products its zeros add are not counted as "
     "MACs, and its roofline is the original's. Set by BlockDiagonalGroups "
     "(block_diagonal_groups.py); read by the driver's MAC count and roofline (driver.py), checked by Conv (strategy_conv.cc)."},
    {"tc_depthwise_matrix", kInt,
     "Depthwise Conv: 1 the matrix form (int8, f16 or bf16), 0 the vector form (absent: the "
     "cost model's). Set by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_depthwise_blocks", kInt,
     "Depthwise Conv, matrix form: the most blocks of 16 channels an item holds, 1, 2, 4 "
     "or 16 (absent: the cost model's). Set by no pass (an override); read by Conv "
     "(strategy_conv.cc)."},
    {"tc_depthwise_col_channels", kInt,
     "Depthwise Conv, matrix form of one block an item: the channels its column matrix is "
     "sized for, 4, 8 or 16 (fewer: more positions an item; absent: the cost model's). Set "
     "by no pass (an override); read by Conv (strategy_conv.cc)."},
    {"tc_depthwise_shifted", kInt,
     "Depthwise Conv, matrix form, unit strides: 1 the taps read in place, an mm a tap from "
     "its offset in the patch (the matrix form then too), 0 unfolded into the column matrix "
     "first (absent: the cost model's). Set by no pass (an override); read by Conv "
     "(conv/depthwise.cc)."},
    {"tc_depthwise_mm_converts", kInt,
     "Depthwise Conv, int8 matrix form: 1 each block's last mm converts its sums to f32 in "
     "the matrix engine's epilogue (the matrix form then too), 0 the vector engine converts "
     "them (absent: the cost model's). Set by no pass (an override); read by Conv "
     "(conv/depthwise.cc)."},
    // -- an int8 MatMul's or Gemm's fused forms (docs/precision.md, "int8 between ops")
    {"tc_y_heads", kInt,
     "MatMul or Gemm: its [M, N] output stored as [N / D, M, D], heads before rows (D divides N "
     "and 128; a head Transpose folded). Set by FuseEpilogue (fuse_epilogue.py); read by "
     "MatMul, Gemm (strategy_matmul.cc)."},
    {"tc_y_rows_first", kInt,
     "Batched MatMul: 1, its [B, M, D] output stored as [M, B, D] (the Transpose back folded). "
     "Set by FuseEpilogue (fuse_epilogue.py); read by MatMul, Gemm (strategy_matmul.cc)."},
    {"tc_lut", kString,
     "int8 MatMul or Gemm: the type of the lookup-table op (Sigmoid, Gelu, ...) that alone "
     "reads its int8 output, applied in its epilogue; int8 Conv: its fused SiLU or HardSwish "
     "as that op's table (in place of tc_activation; tc_y_scale then quantises the Conv's "
     "result before it). Set by Int8Edges (int8_edges.py); read by Conv, MatMul, Gemm "
     "(strategy_conv.cc, strategy_matmul.cc)."},
    {"tc_lut.*", kAttrs,
     "With `tc_lut`: the table op's attributes, each as `tc_lut.<name>` (its ONNX ones, and its "
     "`tc_x_scale`, `tc_x_zero_point`, `tc_y_scale`, `tc_y_zero_point`). Set by Int8Edges "
     "(int8_edges.py); read by Conv, MatMul, Gemm (through lookup_table.h)."},
    {"tc_softmax", kInt,
     "int8 MatMul (attention's scores): 1, the Softmax that alone reads its output computed in "
     "its kernel (present means on: the value is not read). Set by Int8Edges (int8_edges.py); "
     "read by MatMul (strategy_matmul.cc)."},
    {"tc_softmax.tc_y_scale", kFloat,
     "With `tc_softmax`: the probabilities stored int8 with this scale (the Softmax's "
     "`tc_y_scale`; absent: float32). Set by Int8Edges (int8_edges.py); read by MatMul "
     "(strategy_matmul.cc)."},
    {"tc_softmax.tc_y_zero_point", kInt,
     "With `tc_softmax`: the int8 probabilities' zero point (default 0). Set and read with "
     "`tc_softmax.tc_y_scale`."},
    {"tc_softmax.tc_mask", kInt,
     "With `tc_softmax`: 1 an f32 mask [.., M, N] (one matrix for every matrix of the scores: "
     "a causal mask), input 2, added to the scores before the Softmax (the Add between them "
     "fused; tc_context's V is then input 3). Set by Int8Edges (int8_edges.py); read by MatMul "
     "(strategy_matmul.cc)."},
    {"tc_b_heads", kInt,
     "`tc_softmax` MatMul: 1, its int8 B read as [.., N, H, K] and turned in L1 (the keys' "
     "Transpose folded; present means on). Set by Int8Edges (int8_edges.py); read by MatMul "
     "(strategy_matmul.cc)."},
    {"tc_context", kInt,
     "`tc_softmax` MatMul: 1, the int8 MatMul that reads its probabilities as A (attention's "
     "context) computed too, V appended as input 2 (present means on). Set by Int8Edges "
     "(int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_x_scale", kFloat,
     "With `tc_context`: the context MatMul's `tc_x_scale` (the probabilities' scale). Set by "
     "Int8Edges (int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_x_zero_point", kInt,
     "With `tc_context`: the context MatMul's `tc_x_zero_point` (that of "
     "`tc_softmax.tc_y_zero_point`). Set by Int8Edges (int8_edges.py); read by MatMul "
     "(strategy_matmul.cc)."},
    {"tc_context.tc_b_scale", kFloat,
     "With `tc_context`: the context MatMul's `tc_b_scale` (V's scale). Set by Int8Edges "
     "(int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_y_scale", kFloat,
     "With `tc_context`: the context MatMul's `tc_y_scale` (absent: a float32 output). Set by "
     "Int8Edges (int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_y_zero_point", kInt,
     "With `tc_context`: the context MatMul's `tc_y_zero_point`. Set by Int8Edges "
     "(int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_out_scale", kFloat,
     "With `tc_context`: the context MatMul's `tc_out_scale`. Set by Int8Edges "
     "(int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_context.tc_y_rows_first", kInt,
     "With `tc_context`: the context MatMul's `tc_y_rows_first`. Set by Int8Edges "
     "(int8_edges.py); read by MatMul (strategy_matmul.cc)."},
    {"tc_split", kInts,
     "int8 Gemm: the widths its N columns split into, one output each (sibling Gemms of one A "
     "as one). Set by SiblingGemms (sibling_gemms.py); read by Gemm (strategy_matmul.cc)."},
    {"tc_split_heads", kInts,
     "With `tc_split`: per output, a head width D (that output in the layout of `tc_y_heads` D) "
     "or 0 (as it is). Set by SiblingGemms (sibling_gemms.py); read by Gemm "
     "(strategy_matmul.cc)."},
    {"tc_row_norm", kString,
     "int8 Gemm of an int8 A: `LayerNormalization` or `RMSNormalization` of each row of its "
     "result in its epilogue, the norm's Scale, B and skip appended as inputs 4-6. Set by "
     "GemmNorm (gemm_norm.py); read by Gemm (strategy_matmul.cc)."},
    {"tc_norm_epsilon", kFloat,
     "With `tc_row_norm`: the norm's epsilon (default 1e-5). Set by GemmNorm (gemm_norm.py); "
     "read by Gemm (strategy_matmul.cc)."},
    {"tc_norm_q_scale", kFloat,
     "With `tc_row_norm`: the norm's int8 copy of Y (a second output) with this scale (the "
     "norm's `tc_q_scale`). Set by GemmNorm (gemm_norm.py); read by Gemm (strategy_matmul.cc)."},
    {"tc_norm_q_zero_point", kInt,
     "With `tc_row_norm`: that int8 copy's zero point (default 0). Set and read with "
     "`tc_norm_q_scale`."},
    {"tc_row_norm_rows", kInt,
     "With `tc_row_norm`: the rows per chunk, 8, 16, 32 or 64 (absent or 0: the cost model's), "
     "chosen in a layer group. Set by LayerGroups (driver.py); read by Gemm "
     "(strategy_matmul.cc)."},
    // -- norms and quantisation (docs/precision.md, "One quantisation for several readers")
    {"tc_skip", kInt,
     "LayerNormalization: 1, it normalises X + S, S appended as input 3 (a residual Add "
     "fused); 0 or absent: none. Set by FuseEpilogue (fuse_epilogue.py); read by "
     "LayerNormalization (strategy_norm.cc), GemmNorm (gemm_norm.py)."},
    {"tc_q_scale", kFloat,
     "LayerNormalization or RMSNormalization: a second output, Y quantised to int8 with this "
     "scale as its readers quantise on load. Set by ShareQuantisation (shared_quantise.py); "
     "read by the norm (strategy_norm.cc), GemmNorm (gemm_norm.py)."},
    {"tc_q_zero_point", kInt,
     "That int8 copy's zero point (default 0). Set and read with `tc_q_scale`."},
    {"tc_q_alone", kInt,
     "With `tc_q_scale`: 1 the int8 Y is the norm's only output (nothing reads Y in f32, "
     "which is then not stored). Set by ShareQuantisation (shared_quantise.py); read by "
     "LayerNormalization, RMSNormalization (strategy_norm.cc)."},
    {"tc_load_scale", kFloat,
     "QuantizeLinear, per tensor: quantises as its int8 readers quantise on load, x * f32(1 / "
     "scale) + zero point, converted. Set by ShareQuantisation (shared_quantise.py); read by "
     "QuantizeLinear (strategy_quant.cc)."},
    {"tc_load_zero_point", kInt,
     "With `tc_load_scale`: the int8 zero point (default 0). Set and read with "
     "`tc_load_scale`."},
    {"tc_copy_input", kInt,
     "QuantizeLinear with `tc_load_scale`: 1, its float32 input written again as output 1, "
     "which its other npu readers read (present means on). Set by ShareQuantisation "
     "(shared_quantise.py); read by QuantizeLinear (strategy_quant.cc)."},
    // -- constant inputs and layer groups
    {"tc_exponent", kFloat,
     "Pow: its exponent when a one-element constant (2: x * x, one vector command). Set by "
     "Partition (driver.py, CONSTANT_INPUT_ATTRS); read by Pow (strategy_elementwise.cc)."},
    {"tc_in_l2", kInts,
     "Any npu op: the kernel's params (inputs, then outputs) that are a layer group's L2 "
     "intermediates or prefetched weights, priced and placed as L2. Set by LayerGroups, "
     "WeightPrefetch (driver.py); read by every strategy (MakeParams, strategy.cc)."},
    // -- the host's run-time checks (host_check.cc)
    {"tc_what", kString,
     "CheckInput, CheckIndices: the node, op and input checked, for the run's error. Set by "
     "Import and Partition (driver.py); read by CheckInput, CheckIndices (host_check.cc)."},
    {"tc_shape", kString,
     "CheckInput: the output shape the model declares, for the error. Set by Import and "
     "Partition (driver.py); read by CheckInput (host_check.cc)."},
    {"tc_reason", kString,
     "CheckInput: instead of `tc_shape`, what else the kernels were compiled for, for the "
     "error. Set by no pass (its writer, Dropout's value check, went); read by CheckInput "
     "(host_check.cc)."},
    {"tc_counts", kInts,
     "CheckInput, a value check: per element of the input, how many values it may take (0: "
     "any). Set by Import and Partition (input_checks.py); read by CheckInput (host_check.cc)."},
    {"tc_allowed", kInts,
     "CheckInput: the values `tc_counts` counts, element after element. Set by Import and "
     "Partition (input_checks.py); read by CheckInput (host_check.cc)."},
    {"tc_single", kInt,
     "CheckInput: a value that may appear at most once (Reshape's -1). Set by Import and "
     "Partition (input_checks.py); read by CheckInput (host_check.cc)."},
    {"tc_rank", kInt,
     "CheckInput, an axes check: the rank the axes index (negative ones count from it). Set by "
     "Import and Partition (input_checks.py); read by CheckInput (host_check.cc)."},
    {"tc_masks", kInts,
     "CheckInput: the sets of axes that give the shape, each as `tc_rank` 0/1 flags, one after "
     "another. Set by Import and Partition (input_checks.py); read by CheckInput "
     "(host_check.cc)."},
    {"tc_bounds", kInts,
     "CheckIndices: per entry of an index tuple, the length of the data axis it selects along "
     "(valid: -bound <= i < bound). Set by Partition (input_checks.py); read by CheckIndices "
     "(host_check.cc)."},
    {"tc_axes", kInts,
     "CheckIndices: the data axis of each entry of `tc_bounds`, for the error. Set by Partition "
     "(input_checks.py); read by CheckIndices (host_check.cc)."},
  };
  return table;
}
// clang-format on

struct Index {
  std::unordered_map<std::string, const CompilerAttr*> by_name;
  std::vector<std::pair<std::string, const CompilerAttr*>> families;  // ("tc_lut.", row)
  std::string declared;                                               // the names, for errors
};

const Index& GetIndex() {
  static const Index index = [] {
    Index ix;
    for (const CompilerAttr& a : Table()) {
      std::string name = a.name;
      if (a.kind == kAttrs)
        ix.families.emplace_back(name.substr(0, name.size() - 1), &a);
      else
        ix.by_name.emplace(name, &a);
      ix.declared += (ix.declared.empty() ? "" : ", ") + name;
    }
    return ix;
  }();
  return index;
}

std::string Describe(const Any& v) {
  switch (v.type_index()) {
    case kTCFFINone:
      return "None";
    case kTCFFIBool:
      return "a bool";
    case kTCFFIInt:
      return "an int";
    case kTCFFIFloat:
      return "a float";
    default:
      break;
  }
  if (v.try_cast<String>()) return "a string";
  if (v.try_cast<Array<Any>>()) return "a list";
  return "a " + v.GetTypeKey();
}

const char* KindPhrase(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return "an int";
    case AttrKind::kFloat:
      return "a float";
    case AttrKind::kString:
      return "a string";
    case AttrKind::kInts:
      return "a list of ints";
    case AttrKind::kAttrs:
      break;
  }
  return "a family of attributes";
}

// "" when `v` is of `kind` as the readers take it (the casts of AttrInt, AttrFloat, AttrStr,
// AttrInts), else what it is
std::string KindMismatch(const Any& v, AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return v.try_cast<int64_t>() ? "" : Describe(v);
    case AttrKind::kFloat:
      return v.try_cast<double>() ? "" : Describe(v);
    case AttrKind::kString:
      return v.try_cast<String>() ? "" : Describe(v);
    case AttrKind::kInts: {
      auto a = v.try_cast<Array<Any>>();
      if (!a) return Describe(v);
      for (const Any& x : *a)
        if (!x.try_cast<int64_t>()) return "a list holding " + Describe(x);
      return "";
    }
    case AttrKind::kAttrs:
      break;
  }
  return Describe(v);
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string Unknown(const std::string& op_type, const std::string& full) {
  const Index& ix = GetIndex();
  std::string near;
  size_t best = 3;  // (a typo: at most two edits away)
  for (const CompilerAttr& a : Table()) {
    size_t d = EditDistance(full, a.name);
    if (d < best) best = d, near = a.name;
  }
  return op_type + ": unknown compiler attribute `" + full + "` (declared: " + ix.declared + ")" +
         (near.empty() ? "" : "; did you mean `" + near + "`?");
}

// `name` is `full`, or what follows a family's prefix in it (tc_lut.tc_x_scale: tc_x_scale)
std::string CheckOne(const std::string& op_type, const std::string& full, const std::string& name,
                     const Any& v) {
  const Index& ix = GetIndex();
  auto it = ix.by_name.find(name);
  if (it != ix.by_name.end()) {
    std::string got = KindMismatch(v, it->second->kind);
    if (got.empty()) return "";
    return op_type + ": attribute `" + full + "` is " + got + "; it is " +
           KindPhrase(it->second->kind);
  }
  for (const auto& [prefix, row] : ix.families) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string inner = name.substr(prefix.size());
    // the fused op's own attributes: ONNX ones (and the importer's) as they are
    if (inner.rfind("tc_", 0) != 0) return "";
    return CheckOne(op_type, full, inner, v);
  }
  return Unknown(op_type, full);
}

}  // namespace

const char* AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kString:
      return "string";
    case AttrKind::kInts:
      return "ints";
    case AttrKind::kAttrs:
      return "attrs";
  }
  return "?";
}

const std::vector<CompilerAttr>& CompilerAttrs() { return Table(); }

std::string CheckCompilerAttrs(const std::string& op_type, const Map<String, Any>& attrs) {
  if (attrs.empty()) return "";
  for (const auto& [k, v] : attrs.items()) {
    std::string name = k;
    if (name.rfind("tc_", 0) != 0) continue;
    std::string why = CheckOne(op_type, name, name, v);
    if (!why.empty()) return why;
  }
  return "";
}

TILECORE_REGISTER_GLOBAL("compiler.CompilerAttrs").set_body_typed([]() {
  Array<Any> out;
  for (const CompilerAttr& a : CompilerAttrs())
    out.push_back(Array<String>{String(a.name), String(AttrKindName(a.kind)), String(a.doc)});
  return out;
});

}  // namespace compiler
}  // namespace tilecore
