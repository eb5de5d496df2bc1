/*
 * src/compiler/strategy_quant.cc — QuantizeLinear and DequantizeLinear on the vector
 * engine, per tensor (a scalar or one-element scale) and per axis (a 1-D scale along
 * `axis`), so a QDQ model compiles whatever the matrix-engine folding makes of it.
 *
 *   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)   (int8, uint8)
 *   DequantizeLinear: y = (x - zero_point) * scale                             (f32)
 *
 * The order of the steps is the ONNX one (round, then add the zero point: rounding
 * x / scale + zero_point instead differs on ties). TC1's float-to-int conversion rounds
 * to nearest even and saturates; the rounded value goes back to f32 (exact) to add the
 * zero point (the vector engine's int32 add saturates where TIR's wraps, so the
 * emitter would leave it scalar), and the clamp to the output range is explicit before
 * the narrowing conversion. DequantizeLinear subtracts the zero point in f32 too: exact
 * for int8/uint8, and for int32 while |x| < 2^24 (an int32 bias has zero point 0).
 *
 * Without a zero point, an 8-bit quantised output is the quotient converted in one pass
 * (the conversion rounds half to even and saturates to the output's range). With
 * `tc_load_scale` / `tc_load_zero_point` (set by the driver, per tensor, int8 out) it is
 * an int8 matrix op's quantisation on load instead: x * f32(1 / scale) + zero point,
 * converted (matrix_precision.h); its scale and zero point inputs are not read, and its
 * tiles are software-pipelined (LowerQuantLoadPipelined) when four per core divide it.
 * With `tc_copy_input` too (the driver's, when other nodes read x: a transformer's
 * residual) it has a second output, x as it loaded it, which those nodes read instead: in
 * a layer group it is in L2, where they would have read the DDR again.
 *
 * Tiling as the element-wise strategy: the data walked flat in tiles of up to 16384
 * elements (per tensor: small enough that every core has one), round robin over the cores; the
 * scale and zero point (widened to int32) are loaded whole into L1 once per core and read at the
 * element's channel, (flat index / inner) mod C. Per tensor, every pass over a tile is one vector
 * command (the scale and zero point broadcast with stride 0). Per axis with rows (the `inner`
 * elements of one channel) of at least 16 elements, tiles hold whole rows and the passes that read
 * the scale or zero point are one vector command per row; with shorter rows they are scalar loops
 * (the channel index is not affine in the element).
 */
#include <algorithm>
#include <cmath>

#include "kernel_util.h"
#include "matrix_precision.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

constexpr int64_t kQTile = 16384;
constexpr int64_t kMaxChannels = 16384;

/*! \brief The axis the scale runs along, normalised (0 when per tensor). */
int64_t QuantAxis(const Map<String, Any>& attrs, int64_t rank) {
  int64_t axis = AttrInt(attrs, "axis", 1);
  return axis < 0 ? axis + rank : axis;
}

bool PerTensor(const TensorSpec& scale) { return scale->numel() == 1; }

std::string CheckQuant(const std::string& op, const Map<String, Any>& attrs,
                       const std::vector<TensorSpec>& in) {
  if (in.size() < 2 || in.size() > 3)
    return op + ": expects 2 or 3 inputs, got " + std::to_string(in.size());
  if (!in[0].defined() || !in[1].defined()) return op + ": the input and the scale are required";
  if (AttrInt(attrs, "block_size", 0) != 0)
    return op + ": blocked quantisation (block_size) is not supported";
  DataType xt = in[0]->dtype, st = in[1]->dtype;
  if (st != DataType::Float(32)) return op + ": scale of dtype " + st.str() + " (float32 only)";
  bool has_zp = in.size() == 3 && in[2].defined();
  if (op == "QuantizeLinear") {
    if (xt != DataType::Float(32)) return op + ": input of dtype " + xt.str() + " (float32 only)";
    if (has_zp && in[2]->dtype != DataType::Int(8) && in[2]->dtype != DataType::UInt(8))
      return op + ": zero point of dtype " + in[2]->dtype.str() + " (int8 or uint8 only)";
    if (AttrInt(attrs, "saturate", 1) != 1) return op + ": saturate=0 (only float8 outputs use it)";
    if (HasAttr(attrs, "tc_load_scale")) {  // the load form: per tensor, an int8 zero point
      double ls = AttrFloat(attrs, "tc_load_scale", 0);
      int64_t lz = AttrInt(attrs, "tc_load_zero_point", 0);
      if (!(ls > 0) || !std::isfinite(ls))
        return op + ": tc_load_scale must be positive and finite";
      if (lz < -128 || lz > 127) return op + ": tc_load_zero_point out of the int8 range";
      if (!PerTensor(in[1])) return op + ": tc_load_scale is per tensor";
    } else if (HasAttr(attrs, "tc_copy_input")) {
      return op + ": tc_copy_input is for the load form (tc_load_scale)";
    }
  } else {
    if (xt != DataType::Int(8) && xt != DataType::UInt(8) && xt != DataType::Int(32))
      return op + ": input of dtype " + xt.str() + " (int8, uint8 or int32 only)";
    if (has_zp && in[2]->dtype != xt) return op + ": zero point dtype differs from the input's";
  }
  int64_t rank = static_cast<int64_t>(in[0]->shape.size());
  if (!PerTensor(in[1])) {
    if (in[1]->shape.size() != 1) return op + ": scale must be a scalar or 1-D (per axis)";
    int64_t axis = QuantAxis(attrs, rank);
    if (axis < 0 || axis >= rank)
      return op + ": axis " + std::to_string(AttrInt(attrs, "axis", 1)) +
             " out of range for rank " + std::to_string(rank);
    if (Shape(in[0])[static_cast<size_t>(axis)] != in[1]->numel())
      return op + ": scale has " + std::to_string(in[1]->numel()) + " elements, the input's axis " +
             std::to_string(axis) + " has " +
             std::to_string(Shape(in[0])[static_cast<size_t>(axis)]);
    if (in[1]->numel() > kMaxChannels) return op + ": more than 16384 channels";
  }
  if (has_zp && in[2]->numel() != in[1]->numel())
    return op + ": zero point and scale differ in size";
  return "";
}

/*!
 * \brief The load form (tc_load_scale) over tiles of T elements, several per core,
 * software-pipelined in three stages over two slots: the load of tile i + 1, the
 * quantisation of tile i and the store of tile i - 1 overlap, so only the last tile's
 * passes and store follow the last load.
 */
PrimFunc LowerQuantLoadPipelined(const OpCall& call, int64_t N, int64_t T) {
  Params p = MakeParams(call);
  DataType xdt = call.inputs[0]->dtype, odt = call.outputs[0]->dtype;
  Buffer X = View(p.in[0], {N}, "X"), Y = View(p.out[0], {N}, "Y");
  // tc_copy_input: each tile as it was loaded is stored again to output 1 (events 4, 5)
  Buffer Xc = p.out.size() > 1 ? View(p.out[1], {N}, "Xc") : Buffer();
  const double inv = InverseScale(AttrFloat(call.attrs, "tc_load_scale", 1.0));
  const int64_t zp = AttrInt(call.attrs, "tc_load_zero_point", 0);
  int64_t rotation = 0;
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Xs[2] = {Local({T}, xdt, "Xl0"), Local({T}, xdt, "Xl1")};
    Buffer Ys[2] = {Local({T}, odt, "Yl0"), Local({T}, odt, "Yl1")};
    // with the copy, the passes work beside the slot (which its copy still reads)
    Buffer Ws[2] = {Local({T}, DataType::Float(32), "Wl0"), Local({T}, DataType::Float(32), "Wl1")};
    auto load = [&](PrimExpr t, int64_t s) {  // (after the passes that read the slot)
      Stmt l = Intrin("tile.dma_copy",
                      {Region(Xs[s], {I32(0)}, {T}), Region(X, {t * I32(T)}, {T}), I32(s)});
      // (and after the slot's copy has left)
      return Xc.defined() ? Seq({Intrin("tile.wait", {I32(4 + s)}), l}) : l;
    };
    auto compute = [&](PrimExpr t, int64_t s) {
      std::vector<Stmt> c{Intrin("tile.wait", {I32(s)})};
      if (Xc.defined()) {
        // a core's last tile's copy on the DMA-in engine, idle after the last load, beside
        // the int8 stores on the other
        Array<PrimExpr> args{Region(Xc, {t * I32(T)}, {T}), Region(Xs[s], {I32(0)}, {T}),
                             I32(4 + s)};
        c.push_back(IfThenElse(t >= I32(N / T - call.cores), Intrin("tile.dma_copy_in", args),
                               Intrin("tile.dma_copy", args)));
      }
      std::vector<Stmt> steps = QuantiseSteps(
          Ys[s], Xs[s], inv, zp,
          [&](const auto& f) {
            return Loop("i", T, [&](PrimExpr i) { return f(Array<PrimExpr>{i}); });
          },
          Xc.defined() ? Ws[s] : Buffer());
      // the last step writes Y's slot: once the slot's last store has left
      steps.insert(steps.end() - 1, Intrin("tile.wait", {I32(2 + s)}));
      c.insert(c.end(), steps.begin(), steps.end());
      return Seq(c);
    };
    auto post = [&](PrimExpr t, int64_t s) {
      return Intrin("tile.dma_copy",
                    {Region(Y, {t * I32(T)}, {T}), Region(Ys[s], {I32(0)}, {T}), I32(2 + s)});
    };
    Stmt r =
        Seq({ForEachItemThreeStage(core, call.cores, N / T, &rotation, "t", load, compute, post),
             Intrin("tile.wait", {I32(2)}), Intrin("tile.wait", {I32(3)}),
             Intrin("tile.wait", {I32(4)}), Intrin("tile.wait", {I32(5)})});
    for (int k = 0; k < 2; ++k) r = Allocate(Xs[k], Allocate(Ys[k], r));
    if (Xc.defined())
      for (int k = 0; k < 2; ++k) r = Allocate(Ws[k], r);
    return r;
  });
  return MakeFunc(call, p, body);
}

PrimFunc LowerQuant(const OpCall& call) {
  // tc_copy_input: output 1 is x again (f32, x's size); otherwise the op has one output
  const bool copy = HasAttr(call.attrs, "tc_copy_input");
  if (call.outputs.size() != (copy ? 2u : 1u) ||
      (copy && (call.outputs[1]->dtype != DataType::Float(32) ||
                call.outputs[1]->numel() != call.inputs[0]->numel())))
    TILECORE_THROW(ValueError) << call.op_type << ": expects one output"
                               << (copy ? ", and with tc_copy_input a float32 copy of x" : "")
                               << "; given " << call.outputs.size();
  if (call.op_type == "QuantizeLinear" && HasAttr(call.attrs, "tc_load_scale")) {
    // per tensor: four tiles per core when they divide the tensor into 64-byte multiples
    const int64_t N = Numel(Shape(call.inputs[0])), per = call.cores * 4;
    const int64_t T = N % per == 0 ? N / per : 0;
    if (T >= 1024 && T <= kQTile && T % 64 == 0) return LowerQuantLoadPipelined(call, N, T);
  }
  if (copy)
    TILECORE_THROW(ValueError) << call.op_type << ": tc_copy_input needs four tiles per core of "
                               << "64-byte multiples (the pipelined load form)";
  Params p = MakeParams(call);
  bool quantize = call.op_type == "QuantizeLinear";
  std::vector<int64_t> xshape = Shape(call.inputs[0]);
  int64_t N = Numel(xshape);
  int64_t C = call.inputs[1]->numel();
  int64_t inner = 1;
  if (C > 1) {
    int64_t axis = QuantAxis(call.attrs, static_cast<int64_t>(xshape.size()));
    for (size_t d = static_cast<size_t>(axis) + 1; d < xshape.size(); ++d) inner *= xshape[d];
  }
  bool has_zp = call.inputs.size() == 3 && call.inputs[2].defined();
  DataType xdt = call.inputs[0]->dtype, odt = call.outputs[0]->dtype, i32 = DataType::Int(32),
           f32 = DataType::Float(32);
  DataType zdt = has_zp ? call.inputs[2]->dtype : (quantize ? odt : xdt);
  Buffer X = View(p.in[0], {std::max<int64_t>(N, 1)}, "X");
  Buffer S = View(p.in[1], {C}, "S");
  Buffer Z = has_zp ? View(p.in[2], {C}, "Z") : Buffer();
  Buffer Y = View(p.out[0], {std::max<int64_t>(N, 1)}, "Y");
  int64_t lo = odt.is_uint() ? 0 : -(int64_t{1} << (odt.bits() - 1));
  int64_t hi =
      odt.is_uint() ? (int64_t{1} << odt.bits()) - 1 : (int64_t{1} << (odt.bits() - 1)) - 1;
  // per axis with rows of at least 16 elements: tiles of whole rows, each pass a loop over
  // rows around a loop over the row, the row's scale one operand of the vector command
  bool rows = C > 1 && inner >= 16 && inner <= kQTile;
  // per tensor: tiles small enough that every core has one (at least 1024 elements)
  int64_t share = (N + call.cores - 1) / call.cores;
  share = std::max<int64_t>((share + 63) / 64 * 64, 1024);
  int64_t T = rows ? inner * std::max<int64_t>(1, std::min(kQTile, N) / inner)
                   : std::min({kQTile, share, std::max<int64_t>(N, 1)});
  int64_t rotation = 0;
  // tc_load_scale (the driver's one quantisation for several int8 readers): per tensor,
  // with their steps and their scale and zero point as attributes
  const bool load_form = quantize && HasAttr(call.attrs, "tc_load_scale");
  const double load_inv = InverseScale(AttrFloat(call.attrs, "tc_load_scale", 1.0));
  const int64_t load_zp = AttrInt(call.attrs, "tc_load_zero_point", 0);
  Stmt body = OverCores(call.cores, [&](PrimExpr core) {
    Buffer Sw = Local({C}, f32, "Sw");
    Buffer Zw = has_zp ? Local({C}, zdt, "Zw") : Buffer();
    // the zero point in f32 once, so the tile passes stay vector commands
    Buffer Zi = has_zp ? Local({C}, f32, "Zi") : Buffer();
    // (the load form has its scale and zero point as attributes: nothing to load, and the
    // first tile's load is not behind two DDR latencies)
    std::vector<Stmt> pre;
    if (!load_form) pre.push_back(DmaWait(Region(Sw, {I32(0)}, {C}), Region(S, {I32(0)}, {C}), 0));
    if (has_zp && !load_form) {
      pre.push_back(DmaWait(Region(Zw, {I32(0)}, {C}), Region(Z, {I32(0)}, {C}), 0));
      pre.push_back(Loop("c", C, [&](PrimExpr c) {
        return BufferStore(Zi, cast(f32, BufferLoad(Zw, {c})), {c});
      }));
    }
    std::vector<Stmt> tiles;
    for (auto [count, size] :
         std::vector<std::pair<int64_t, int64_t>>{{N / T, T}, {N % T ? 1 : 0, N % T}}) {
      int64_t base = size == T ? 0 : (N / T) * T;
      tiles.push_back(ForEachItem(
          core, call.cores, count, &rotation, "t", [&, size = size, base = base](PrimExpr t) {
            PrimExpr start = I32(base) + t * I32(T);
            PrimExpr row;  // rows: the tile's row of the element being built
            auto channel = [&](PrimExpr i) -> PrimExpr {
              if (C == 1) return I32(0);
              if (rows) return floormod(I32(base / inner) + t * I32(T / inner) + row, I32(C));
              return floormod(floordiv(start + i, I32(inner)), I32(C));
            };
            auto zp = [&](PrimExpr i) -> PrimExpr { return BufferLoad(Zi, {channel(i)}); };
            Buffer Xl = Local({size}, xdt, "Xl"), Yl = Local({size}, odt, "Yl");
            std::vector<Stmt> s{
                DmaWait(Region(Xl, {I32(0)}, {size}), Region(X, {start}, {size}), 0)};
            // per_channel: the pass reads the scale or zero point at the element's channel
            auto pass = [&](const Buffer& dst, const std::function<PrimExpr(PrimExpr)>& v,
                            bool per_channel = false) {
              if (!rows || !per_channel) {
                s.push_back(
                    Loop("i", size, [&](PrimExpr i) { return BufferStore(dst, v(i), {i}); }));
                return;
              }
              s.push_back(Loop("j", size / inner, [&](PrimExpr j) {
                row = j;
                return Loop("e", inner, [&](PrimExpr e) {
                  PrimExpr i = j * I32(inner) + e;
                  return BufferStore(dst, v(i), {i});
                });
              }));
            };
            std::vector<Buffer> tmp;
            if (quantize && load_form) {
              // x * f32(1 / scale) (+ zero point), converted: what an int8 matrix op does on
              // load (matrix_precision.h), so its readers see the bits they would make
              // (in place on the loaded tile)
              for (Stmt& st : QuantiseSteps(Yl, Xl, load_inv, load_zp, [&](const auto& f) {
                     return Loop("i", size, [&](PrimExpr i) { return f(Array<PrimExpr>{i}); });
                   }))
                s.push_back(st);
            } else if (quantize) {
              Buffer Tf = Local({size}, f32, "Tf"), Ti = Local({size}, i32, "Ti");
              tmp = {Tf, Ti};
              pass(
                  Tf,
                  [&](PrimExpr i) { return BufferLoad(Xl, {i}) / BufferLoad(Sw, {channel(i)}); },
                  true);
              // the conversion to int8 / uint8 rounds to nearest even and saturates to the
              // output's range: without a zero point, one pass from the quotient
              const bool direct = !has_zp && odt.bits() == 8;
              if (!direct)
                pass(Ti, [&](PrimExpr i) {
                  return cast(i32, BufferLoad(Tf, {i}));
                });  // nearest even, saturating
              if (has_zp) {
                // the zero point is added to the rounded value in f32, exact for these integers
                pass(Tf, [&](PrimExpr i) { return cast(f32, BufferLoad(Ti, {i})); });
                pass(
                    Tf, [&](PrimExpr i) { return BufferLoad(Tf, {i}) + zp(i); }, true);
                pass(Tf, [&](PrimExpr i) {
                  return max(BufferLoad(Tf, {i}), F32(static_cast<double>(lo)));
                });
                pass(Tf, [&](PrimExpr i) {
                  return min(BufferLoad(Tf, {i}), F32(static_cast<double>(hi)));
                });
                pass(Yl, [&](PrimExpr i) { return cast(odt, BufferLoad(Tf, {i})); });
              } else if (direct) {
                pass(Yl, [&](PrimExpr i) { return cast(odt, BufferLoad(Tf, {i})); });
              } else {
                pass(Ti, [&](PrimExpr i) { return max(BufferLoad(Ti, {i}), I32(lo)); });
                pass(Ti, [&](PrimExpr i) { return min(BufferLoad(Ti, {i}), I32(hi)); });
                pass(Yl, [&](PrimExpr i) { return cast(odt, BufferLoad(Ti, {i})); });
              }
            } else {
              pass(Yl, [&](PrimExpr i) { return cast(f32, BufferLoad(Xl, {i})); });
              if (has_zp)
                pass(
                    Yl, [&](PrimExpr i) { return BufferLoad(Yl, {i}) - zp(i); }, true);
              pass(
                  Yl,
                  [&](PrimExpr i) { return BufferLoad(Yl, {i}) * BufferLoad(Sw, {channel(i)}); },
                  true);
            }
            s.push_back(DmaWait(Region(Y, {start}, {size}), Region(Yl, {I32(0)}, {size}), 1));
            Stmt r = Seq(s);
            for (const Buffer& b : tmp) r = Allocate(b, r);
            return Allocate(Xl, Allocate(Yl, r));
          }));
    }
    Stmt r = Seq({Seq(pre), Seq(tiles)});
    if (has_zp) r = Allocate(Zw, Allocate(Zi, r));
    return Allocate(Sw, r);
  });
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  for (const char* name : {"QuantizeLinear", "DequantizeLinear"})
    RegisterStrategy(name, Strategy{detail::CheckQuant, detail::LowerQuant,
                                    [](const OpCall&, int) { return std::string("onnx"); }, -1});
});

}  // namespace compiler
}  // namespace tilecore
