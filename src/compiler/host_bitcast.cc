/*
 * src/compiler/host_bitcast.cc — the host kernel of BitCast: the bytes of the input read
 * as the dtype `to` of the same width (int32 <-> float32, uint16 <-> int16, ...).
 *
 * Each element goes through `tir.reinterpret`, which the c target emits as a union pun of
 * the stored bits.
 */
#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

// ONNX TensorProto element types and their widths in bits (0: not a plain number).
int OnnxBits(int64_t to) {
  switch (to) {
    case 2:  // uint8
    case 3:  // int8
      return 8;
    case 4:   // uint16
    case 5:   // int16
    case 10:  // float16
    case 16:  // bfloat16
      return 16;
    case 1:   // float
    case 6:   // int32
    case 12:  // uint32
      return 32;
    case 7:   // int64
    case 11:  // double
    case 13:  // uint64
      return 64;
    default:
      return 0;
  }
}

std::string CheckBitCast(const std::string& op, const Map<String, Any>& attrs,
                         const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  if (in[0]->dtype.is_bool()) return "BitCast: of bool (no host kernel takes it yet)";
  int64_t to = AttrInt(attrs, "to", 0);
  int bits = OnnxBits(to);
  if (bits == 0) return "BitCast: to the ONNX type " + std::to_string(to) + " (not a number type)";
  if (bits != in[0]->dtype.bits())
    return "BitCast: between widths (" + in[0]->dtype.str() + " to " + std::to_string(bits) +
           " bits) changes the shape; only the same width runs on the host";
  return "";
}

PrimFunc LowerBitCast(const OpCall& call) {
  NeedOutputs(call, 1);
  int bits = call.inputs[0]->dtype.bits();
  if (call.outputs[0]->dtype.bits() != bits)
    TILECORE_THROW(ValueError) << "LowerHostOp(BitCast): " << call.inputs[0]->dtype.str() << " to "
                               << call.outputs[0]->dtype.str() << " (widths differ)";
  Params p = MakeParams(call);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  Stmt body = Loop("i", call.outputs[0]->numel(), [&](PrimExpr i) {
    return BufferStore(Y, Call(Y->dtype, "tir.reinterpret", {BufferLoad(X, {i})}), {i});
  });
  return MakeFunc(call, p, Seq({body}));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("BitCast", HostKernel{host::CheckBitCast, host::LowerBitCast, 1});
});

}  // namespace compiler
}  // namespace tilecore
