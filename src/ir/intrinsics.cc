/*
 * src/ir/intrinsics.cc — the intrinsic table (intrinsics.h) and the checks that
 * Call's constructor runs against it.
 */
#include "tilecore/ir/intrinsics.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>

#include "tilecore/arch/tile_ops.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ir {
namespace {

using A = IntrinArg;
using R = IntrinResult;
using Rule = IntrinRule;

std::vector<IntrinsicInfo> MakeTable() {
  std::vector<IntrinsicInfo> t;
  auto add = [&](const char* name, std::vector<A> args, R result, Rule rule, bool effect,
                 const char* unit, const char* arg_names, const char* doc) {
    t.push_back(IntrinsicInfo{name, std::move(args), result, rule, effect, unit, arg_names, doc});
  };
  // --- front end ------------------------------------------------------------
  add("tir.core_id", {}, R::kInt32, Rule::kNone, false, "front end", "",
      "index of the executing core, 0 .. num_cores-1 (CSR coreid)");
  add("tir.num_cores", {}, R::kInt32, Rule::kNone, false, "front end", "",
      "number of cores running the kernel (CSR ncores)");
  add("tir.barrier", {}, R::kVoid, Rule::kNone, true, "front end", "",
      "cluster-wide barrier of the front ends, after draining this core's engine queues (fence)");
  add("tir.barrier_no_drain", {}, R::kVoid, Rule::kNone, true, "front end", "",
      "cluster-wide barrier of the front ends that leaves the engines running: a core first waits "
      "(tile.wait) for each of its commands whose result another core reads, or whose source "
      "another core overwrites, after the barrier");
  add("tir.drain", {}, R::kVoid, Rule::kNone, true, "front end", "",
      "waits until this core's engines have finished every command issued before it (the fence "
      "tir.barrier starts with), without waiting for the other cores");
  // --- scalar / SIMD math (pure; float only) ------------------------------------
  add("tir.call_packed", {A::kString, A::kRegionOrScalar}, R::kVoid, Rule::kNone, true, "front end",
      "name, args",
      "calls the registered global function `name` on the host, synchronously, with each region as "
      "an NDArray "
      "view of it (valid during the call only; the function may read and write it) and each scalar "
      "as an int "
      "or float; an error raised by the function fails the kernel call with that error");
  t.back().variadic = true;
  t.back().required = 1;
  add("tir.exp", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "e to the x (float)");
  add("tir.log", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "natural logarithm (float)");
  add("tir.sqrt", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "square root (float)");
  add("tir.rsqrt", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "1 / sqrt(x) (float)");
  add("tir.recip", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "1 / x (float)");
  add("tir.tanh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "hyperbolic tangent (float)");
  add("tir.sigmoid", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "1 / (1 + exp(-x)) (float)");
  add("tir.reinterpret", {A::kScalar}, R::kRequested, Rule::kNone, false, "front end", "x",
      "the bits of x read as the call's dtype, of the same width (ONNX's BitCast)");
  // the narrow floats (float8_*, float4_e2m1fn) are storage types: a cast to one with
  // ONNX's options (host kernels through the c target; TC1 has no such type)
  add("tir.narrow_float", {A::kFloat, A::kInt, A::kInt}, R::kRequested, Rule::kNone, false,
      "front end", "x, saturate, round_mode",
      "x rounded to the call's narrow float dtype: saturate 1 clamps to the largest finite "
      "value, 0 overflows to inf or NaN; round_mode 0 nearest even, 1 up, 2 down "
      "(float8_e8m0fnu; the other formats round to nearest even)");
  // trigonometric and hyperbolic functions (host kernels through the c target; no TC1 instruction)
  add("tir.sin", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x", "sine (float)");
  add("tir.cos", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "cosine (float)");
  add("tir.tan", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "tangent (float)");
  add("tir.asin", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "arc sine (float)");
  add("tir.acos", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "arc cosine (float)");
  add("tir.atan", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "arc tangent (float)");
  add("tir.sinh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "hyperbolic sine (float)");
  add("tir.cosh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "hyperbolic cosine (float)");
  add("tir.asinh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "inverse hyperbolic sine (float)");
  add("tir.acosh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "inverse hyperbolic cosine (float)");
  add("tir.atanh", {A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "x",
      "inverse hyperbolic tangent (float)");
  add("tir.fmod", {A::kScalar, A::kScalar}, R::kArg0, Rule::kFloatOnly, false, "front end", "a, b",
      "the remainder of a / b with the sign of a, exact (C's fmod; float)");
  // --- bitwise operations and shifts (pure; integers, scalar or vector) ---------------
  add("tir.bitwise_and", {A::kIntAny, A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end",
      "a, b", "a & b, lane-wise on vectors (and / vand)");
  add("tir.bitwise_or", {A::kIntAny, A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end",
      "a, b", "a | b, lane-wise on vectors (or / vor)");
  add("tir.bitwise_xor", {A::kIntAny, A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end",
      "a, b", "a ^ b, lane-wise on vectors (xor / vxor)");
  add("tir.bitwise_not", {A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end", "a",
      "~a, lane-wise on vectors");
  add("tir.shift_left", {A::kIntAny, A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end",
      "a, b", "a << (b & (bits - 1)), keeping the low bits (sll)");
  add("tir.shift_right", {A::kIntAny, A::kIntAny}, R::kArg0, Rule::kIntegerOnly, false, "front end",
      "a, b",
      "a >> (b & (bits - 1)): arithmetic for signed, logical for unsigned dtypes (sra / srl)");
  // --- SIMD without an IR operator ----------------------------------------------
  add("tc1.vshls", {A::kVector, A::kVector}, R::kArg0, Rule::kIntegerOnly, false, "simd", "a, b",
      "lane-wise saturating left shift a << (b & (bits - 1)), clamped to the dtype's range");
  add("tc1.vcvt", {A::kVector, A::kInt}, R::kRequested, Rule::kNone, false, "simd", "a, part",
      "conversion between lane counts (vcvt; TC1 rounding and saturation), part a constant: "
      "widening "
      "(result lanes L <= lanes of a) converts lanes [part*L, part*L + L) of a; narrowing puts a's "
      "lanes "
      "at [part*La, part*La + La) of the result; other lanes are 0");
  add("tc1.vadds", {A::kVector, A::kVector}, R::kArg0, Rule::kIntegerOnly, false, "simd", "a, b",
      "lane-wise saturating add of integer vectors (vadds)");
  add("tc1.vsubs", {A::kVector, A::kVector}, R::kArg0, Rule::kIntegerOnly, false, "simd", "a, b",
      "lane-wise saturating subtract of integer vectors (vsubs)");
  add("tc1.vredsum", {A::kVector}, R::kArg0Elem, Rule::kNone, false, "simd", "a",
      "sum of the lanes in lane order (integers wrap; float accumulates in f32) (vredsum)");
  add("tc1.vredmax", {A::kVector}, R::kArg0Elem, Rule::kNone, false, "simd", "a",
      "largest lane (vredmax)");
  add("tc1.vredmin", {A::kVector}, R::kArg0Elem, Rule::kNone, false, "simd", "a",
      "smallest lane (vredmin)");
  // --- DMA and events -------------------------------------------------------------
  add("tile.dma_copy", {A::kRegion, A::kRegion, A::kInt}, R::kVoid, Rule::kNone, true, "dma",
      "dst, src, event",
      "asynchronous copy src -> dst (equal element counts; cast when dtypes differ); signals "
      "`event` "
      "(an int32 id, 0..15) when done. Into local/shared memory it uses the DMA-in engine, "
      "otherwise DMA-out");
  add("tile.dma_prefetch", {A::kRegion, A::kRegion, A::kInt}, R::kVoid, Rule::kNone, true, "dma",
      "dst, src, event",
      "tile.dma_copy on the DMA-out engine whatever the direction: a prefetch (a layer group's "
      "weights into L2) that must not queue behind the core's own loads");
  add("tile.dma_copy_in", {A::kRegion, A::kRegion, A::kInt}, R::kVoid, Rule::kNone, true, "dma",
      "dst, src, event",
      "tile.dma_copy on the DMA-in engine whatever the direction: part of a long store out of "
      "local memory beside the rest on DMA-out, when the core loads nothing more");
  add("tile.dma_fill", {A::kRegion, A::kScalar, A::kInt}, R::kVoid, Rule::kNone, true, "dma",
      "dst, value, event",
      "asynchronous fill of dst with value (converted to dst's dtype); signals `event` when done");
  add("tile.wait", {A::kInt}, R::kVoid, Rule::kNone, true, "front end", "event",
      "stalls until every copy that signals `event` and was issued before this point has "
      "completed");
  // --- matrix engine --------------------------------------------------------------
  add("tile.mm",
      {A::kRegion, A::kRegion, A::kRegion, A::kBool, A::kRegionOrNone, A::kRegionOrScalar, A::kInt,
       A::kRegionOrNone, A::kString, A::kFloat, A::kFloat},
      R::kVoid, Rule::kMatmul, true, "matrix",
      "c, a, b, accumulate, bias, scale, zero_point, residual, act, clamp_lo, clamp_hi",
      "c[M,N] = (accumulate ? c : 0) + a[M,K] x b[K,N] on local tiles; a, b of i8 (c i32) or "
      "f16/bf16/f32 "
      "(c f32) (mm / mma). With the optional epilogue (the last seven arguments, all or none) c is "
      "the output, "
      "of any non-bool dtype, and each element becomes c = cast(clamp(act(f32(acc + bias[j]) * "
      "scale + "
      "f32(residual[i,j])) + zero_point, clamp_lo, clamp_hi)) as in TC1's mm epilogue "
      "(docs/tc1.md); bias "
      "(N values of the accumulator dtype) and residual (M x N) may be 0 for absent; scale is a "
      "scalar or a "
      "region of N float32 per-channel scales; act is \"none\" or \"relu\"; with accumulate (a "
      "constant) acc starts from the M x N accumulator values (rows of N) stored at c's address, "
      "which the output then replaces");
  t.back().required = 4;
  // --- vector engine ----------------------------------------------------------------
  // The vector engine's operations: one intrinsic per row of the table of tile operations
  // (arch/tile_ops.def), named tile.vec_<name>, documented by the instruction's summary.
  static std::deque<std::string> text;  // the names and docs built here live as long as the table
  for (const arch::TileOpInfo& op : arch::kTileOpRows) {
    const char* name = text.emplace_back("tile.vec_" + std::string(op.name)).c_str();
    bool float_only = op.types == arch::TileTypes::Float;
    const char* doc =
        text.emplace_back(std::string(op.summary) + (float_only ? ", float only" : "") + " (" +
                          std::string(op.mnemonic) + ")")
            .c_str();
    Rule rule = float_only ? Rule::kFloatOnly : Rule::kSameRegionDType;
    switch (op.form) {
      case arch::TileForm::Binary:
        add(name, {A::kRegion, A::kRegion, A::kRegion}, R::kVoid, rule, true, "vector", "d, a, b",
            doc);
        break;
      case arch::TileForm::Scalar:
        add(name, {A::kRegion, A::kRegion, A::kScalar}, R::kVoid, rule, true, "vector", "d, a, s",
            doc);
        break;
      case arch::TileForm::Unary:
      case arch::TileForm::Reduce:
        add(name, {A::kRegion, A::kRegion}, R::kVoid, rule, true, "vector", "d, a", doc);
        break;
      case arch::TileForm::Convert:
        add(name, {A::kRegion, A::kRegion}, R::kVoid, Rule::kNone, true, "vector", "d, a", doc);
        break;
      case arch::TileForm::Requant:
        add(name, {A::kRegion, A::kRegion, A::kFloat, A::kInt}, R::kVoid, Rule::kNone, true,
            "vector", "d, a, scale, zero_point", doc);
        break;
    }
  }
  // tlut sits outside the table of tile operations (its opcode predates it)
  add("tile.vec_lut", {A::kRegion, A::kRegion, A::kRegion}, R::kVoid, Rule::kLut, true, "vector",
      "d, a, table",
      "d = table[a]: a of uint8 or int8 (the byte is the index 0..255), table 256 elements of "
      "d's dtype, contiguous (tlut)");
  // --- low level: what LowerAsyncDMA produces -------------------------------------
  add("tc1.dma_in", {A::kRegion, A::kRegion}, R::kVoid, Rule::kNone, true, "dma", "dst, src",
      "dma.in: copy on the DMA-in engine; no event");
  add("tc1.dma_out", {A::kRegion, A::kRegion}, R::kVoid, Rule::kNone, true, "dma", "dst, src",
      "dma.out: copy on the DMA-out engine; no event");
  add("tc1.dma_fill_in", {A::kRegion, A::kScalar}, R::kVoid, Rule::kNone, true, "dma", "dst, value",
      "dma.in with the fill flag");
  add("tc1.wait", {A::kString, A::kString, A::kInt}, R::kVoid, Rule::kNone, true, "front end",
      "queue, engine, count",
      "wait queue, engine, count: queue `sc` stalls the front end (an engine name inserts a queue "
      "marker) "
      "until engine (din, dout, mm, vec) has completed `count` commands");
  // (an effect: its value depends on where it stands, so no pass may move, merge or drop it)
  add("tc1.dma_issued", {A::kInt}, R::kInt32, Rule::kNone, true, "front end", "engine",
      "the commands this core has issued to DMA engine `engine` (0: DMA-in, 1: DMA-out) so far, "
      "counted in a register by the code generator; LowerAsyncDMA's event counts");
  return t;
}

const std::vector<IntrinsicInfo>& Table() {
  static const std::vector<IntrinsicInfo> table = MakeTable();
  return table;
}

const std::unordered_map<std::string_view, const IntrinsicInfo*>& Index() {
  static const auto index = [] {
    std::unordered_map<std::string_view, const IntrinsicInfo*> m;
    for (const IntrinsicInfo& row : Table()) m.emplace(row.name, &row);
    return m;
  }();
  return index;
}

bool Matches(IntrinArg kind, const PrimExpr& e) {
  DataType t = e.dtype();
  switch (kind) {
    case A::kInt:
      return t.is_integer() && t.is_scalar();
    case A::kFloat:
      return t.is_float() && t.is_scalar();
    case A::kScalar:
      return (t.is_integer() || t.is_float()) && t.is_scalar();
    case A::kBool:
      return (t.is_bool() || t.is_integer()) && t.is_scalar();
    case A::kVector:
      return (t.is_integer() || t.is_float()) && t.is_vector();
    case A::kIntAny:
      return t.is_integer();
    case A::kRegion:
      return e.as<BufferRegionNode>() != nullptr;
    case A::kString:
      return e.as<StringImmNode>() != nullptr;
    case A::kRegionOrNone: {
      if (e.as<BufferRegionNode>()) return true;
      const auto* i = e.as<IntImmNode>();
      return i != nullptr && i->value == 0;
    }
    case A::kRegionOrScalar:
      return e.as<BufferRegionNode>() != nullptr ||
             ((t.is_integer() || t.is_float()) && t.is_scalar());
  }
  return false;
}

std::string Describe(const PrimExpr& e) {
  if (e.as<BufferRegionNode>()) return "a region";
  if (e.as<StringImmNode>()) return "a string";
  return e.dtype().str();
}

DataType RegionDType(const PrimExpr& e) { return e.as<BufferRegionNode>()->buffer->dtype; }

// tile.mm's epilogue block: dtypes of the output, bias, scales and residual, the
// activation's spelling, and a constant accumulate.
void CheckMatmulEpilogue(std::string_view op, const Array<PrimExpr>& args, DataType acc) {
  DataType c = RegionDType(args[0]);
  if (c.is_bool() || c.is_vector() || c.bits() > 32) {
    TILECORE_THROW(TypeError)
        << "Call `" << op << "`: the epilogue output c must be an 8..32-bit int or a float, got "
        << c.str();
  }
  // With accumulate the sums start from the accumulator stored at c's address (M x N
  // accumulator values, rows of N): what the streamed column plan's earlier mms left there.
  const auto* accum = args[3].as<IntImmNode>();
  if (accum == nullptr) {
    TILECORE_THROW(TypeError) << "Call `" << op
                              << "`: accumulate must be a constant with an epilogue "
                              << "(the output replaces the accumulator)";
  }
  if (args[4].as<BufferRegionNode>() && RegionDType(args[4]) != acc) {
    TILECORE_THROW(TypeError) << "Call `" << op << "`: bias must be " << acc.str()
                              << " (the accumulator dtype), got " << RegionDType(args[4]).str();
  }
  if (args[5].as<BufferRegionNode>() && RegionDType(args[5]) != DataType::Float(32)) {
    TILECORE_THROW(TypeError) << "Call `" << op << "`: per-channel scale must be float32, got "
                              << RegionDType(args[5]).str();
  }
  if (args[7].as<BufferRegionNode>()) {
    DataType r = RegionDType(args[7]);
    if (r.is_bool() || r.bits() > 32) {
      TILECORE_THROW(TypeError) << "Call `" << op
                                << "`: residual must be an 8..32-bit int or a float, got "
                                << r.str();
    }
  }
  std::string_view act = args[8].as<StringImmNode>()->value.view();
  if (act != "none" && act != "relu") {
    TILECORE_THROW(ValueError) << "Call `" << op << "`: act must be \"none\" or \"relu\", got \""
                               << act << "\"";
  }
}

}  // namespace

const char* IntrinArgName(IntrinArg kind) {
  switch (kind) {
    case A::kInt:
      return "int";
    case A::kFloat:
      return "float";
    case A::kScalar:
      return "scalar";
    case A::kBool:
      return "bool";
    case A::kVector:
      return "vector";
    case A::kIntAny:
      return "integer";
    case A::kRegion:
      return "region";
    case A::kString:
      return "string";
    case A::kRegionOrNone:
      return "region or 0";
    case A::kRegionOrScalar:
      return "region or scalar";
  }
  return "?";
}

const IntrinsicInfo* LookupIntrinsic(std::string_view name) {
  auto it = Index().find(name);
  return it == Index().end() ? nullptr : it->second;
}

const std::vector<IntrinsicInfo>& ListIntrinsics() { return Table(); }

DataType CheckIntrinsicCall(std::string_view op, const Array<PrimExpr>& args, DataType requested) {
  const IntrinsicInfo* info = LookupIntrinsic(op);
  if (info == nullptr) {
    std::string near;
    std::string_view family = op.substr(0, op.find('.') + 1);
    for (const IntrinsicInfo& row : Table()) {
      std::string_view n(row.name);
      if (!family.empty() && n.substr(0, family.size()) == family)
        near += (near.empty() ? "" : ", ") + std::string(n);
    }
    TILECORE_THROW(ValueError) << "Call: unknown intrinsic `" << op << "`"
                               << (near.empty() ? std::string(" (see ir.ListIntrinsics)")
                                                : " (known in its family: " + near + ")");
  }
  bool count_ok = args.size() == info->args.size() ||
                  (info->required >= 0 && args.size() == size_t(info->required)) ||
                  (info->variadic && args.size() >= info->args.size());
  if (!count_ok) {
    TILECORE_THROW(TypeError) << "Call `" << op << "(" << info->arg_names << ")`: expected "
                              << (info->required >= 0 ? std::to_string(info->required) + " or "
                                                      : std::string())
                              << info->args.size() << " arguments, got " << args.size();
  }
  // the name of argument i in the table's list (for a message: made only then)
  auto arg_name = [&](size_t i) {
    std::string_view s(info->arg_names);
    for (size_t k = 0; !s.empty(); ++k) {
      const size_t c = s.find(',');
      std::string_view n = s.substr(0, c);
      while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
      if (k == i) return std::string(n);
      if (c == std::string_view::npos) break;
      s.remove_prefix(c + 1);
    }
    return std::string();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    IntrinArg kind = info->args[std::min(i, info->args.size() - 1)];
    if (!Matches(kind, args[i])) {
      TILECORE_THROW(TypeError) << "Call `" << op << "`: argument " << i << " (" << arg_name(i)
                                << ") must be " << IntrinArgName(kind) << ", got "
                                << Describe(args[i]);
    }
  }
  switch (info->rule) {
    case Rule::kNone:
      break;
    case Rule::kSameDType:
      for (size_t i = 1; i < args.size(); ++i) {
        if (args[i].dtype() != args[0].dtype()) {
          TILECORE_THROW(TypeError)
              << "Call `" << op << "`: argument dtypes differ: " << args[0].dtype().str() << " vs "
              << args[i].dtype().str();
        }
      }
      break;
    case Rule::kIntegerOnly:
      if (!args[0].dtype().is_integer()) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: needs integer operands, got "
                                  << args[0].dtype().str();
      }
      for (size_t i = 1; i < args.size(); ++i) {
        if (args[i].dtype() != args[0].dtype()) {
          TILECORE_THROW(TypeError)
              << "Call `" << op << "`: argument dtypes differ: " << args[0].dtype().str() << " vs "
              << args[i].dtype().str();
        }
      }
      break;
    case Rule::kFloatOnly: {
      DataType t = args[0].as<BufferRegionNode>() ? RegionDType(args[0]) : args[0].dtype();
      if (!t.is_float()) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: float only, got " << t.str();
      }
      [[fallthrough]];
    }
    case Rule::kSameRegionDType: {
      std::optional<DataType> first;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].as<BufferRegionNode>()) continue;
        DataType t = RegionDType(args[i]);
        if (!first) first = t;
        if (t != *first) {
          TILECORE_THROW(TypeError)
              << "Call `" << op << "`: operand dtypes differ: " << first->str() << " vs " << t.str()
              << " (argument " << i << ")";
        }
      }
      break;
    }
    case Rule::kLut: {
      DataType d = RegionDType(args[0]), a = RegionDType(args[1]), t = RegionDType(args[2]);
      if (a != DataType::Int(8) && a != DataType::UInt(8)) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: the index a must be uint8 or int8, got "
                                  << a.str();
      }
      if (t != d) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: the table's dtype " << t.str()
                                  << " must be d's, " << d.str();
      }
      break;
    }
    case Rule::kMatmul: {
      DataType c = RegionDType(args[0]), a = RegionDType(args[1]), b = RegionDType(args[2]);
      bool ok_in = a == b && (a == DataType::Int(8) || a == DataType::Float(16) ||
                              a == DataType::BFloat16() || a == DataType::Float(32));
      if (!ok_in) {
        TILECORE_THROW(TypeError) << "Call `" << op
                                  << "`: a and b must share one of int8, float16, bfloat16, "
                                  << "float32; got " << a.str() << " and " << b.str();
      }
      DataType acc = a.is_int() ? DataType::Int(32) : DataType::Float(32);
      if (args.size() > 4) {
        CheckMatmulEpilogue(op, args, acc);
        break;
      }
      if (c != acc) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: the accumulator c must be " << acc.str()
                                  << " for " << a.str() << " inputs, got " << c.str();
      }
      break;
    }
  }
  DataType result;
  switch (info->result) {
    case R::kVoid:
      result = DataType::Void();
      break;
    case R::kInt32:
      result = DataType::Int(32);
      break;
    case R::kArg0:
      result = args[0].dtype();
      break;
    case R::kArg0Elem:
      result = args[0].dtype().element_of();
      break;
    case R::kRequested:
      if (requested.is_void()) {
        TILECORE_THROW(TypeError) << "Call `" << op << "`: needs the result dtype";
      }
      result = requested;
      break;
  }
  if (!requested.is_void() && requested != result) {
    TILECORE_THROW(TypeError) << "Call `" << op << "`: result dtype is " << result.str() << ", not "
                              << requested.str();
  }
  return result;
}

bool CallHasEffect(const CallNode* call) {
  const IntrinsicInfo* info = LookupIntrinsic(call->op.view());
  return info == nullptr || info->has_effect;
}

TILECORE_REGISTER_GLOBAL("ir.ListIntrinsics").set_body_typed([]() {
  Array<Any> rows;
  for (const IntrinsicInfo& row : ListIntrinsics()) {
    Array<Any> kinds;
    for (IntrinArg a : row.args) kinds.push_back(Any(IntrinArgName(a)));
    const char* result = row.result == R::kVoid       ? "void"
                         : row.result == R::kInt32    ? "int32"
                         : row.result == R::kArg0     ? "dtype of argument 0"
                         : row.result == R::kArg0Elem ? "element dtype of argument 0"
                                                      : "the requested dtype";
    Map<String, Any> m;
    m.Set("name", Any(row.name));
    m.Set("args", kinds);
    m.Set("arg_names", Any(row.arg_names));
    m.Set("required", Any(int64_t(row.required >= 0 ? row.required : int(row.args.size()))));
    m.Set("variadic", Any(row.variadic));
    m.Set("result", Any(result));
    m.Set("has_effect", Any(row.has_effect));
    m.Set("unit", Any(row.unit));
    m.Set("doc", Any(row.doc));
    rows.push_back(m);
  }
  return rows;
});

}  // namespace ir
}  // namespace tilecore
