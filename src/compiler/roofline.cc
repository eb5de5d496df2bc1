/*
 * src/compiler/roofline.cc — an op's roofline bound on TC1 (roofline.h).
 */
#include "tilecore/compiler/roofline.h"

#include "tilecore/arch/params.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/string.h"

namespace tilecore {
namespace compiler {

namespace tc1 = arch::tc1;
using ffi::Any;
using ffi::Map;
using ffi::String;

namespace {

const tc1::MmBlock& MatrixBlock(const std::string& precision) {
  if (precision == "int8") return tc1::kMmBlockI8;
  if (precision == "f16" || precision == "bf16") return tc1::kMmBlockF16;
  if (precision == "f32") return tc1::kMmBlockF32;
  TILECORE_THROW(ValueError) << "OpRoofline: precision `" << precision
                             << "` (expected f32, f16, bf16 or int8)";
}

// a MAC on the vector engine: a multiply and an add of a 4-byte accumulator element
constexpr double kVecMacsPerCycle = double(tc1::kVecBytesPerCycle) / 8;

}  // namespace

RooflineBound OpRoofline(const std::string& engine, uint64_t macs, const std::string& precision,
                         uint64_t output_bytes, uint64_t ddr_bytes, uint64_t l2_bytes, int cores,
                         int64_t group_rows) {
  if (cores < 1) TILECORE_THROW(ValueError) << "OpRoofline: cores must be at least 1";
  if (group_rows < 0) TILECORE_THROW(ValueError) << "OpRoofline: group_rows must not be negative";
  RooflineBound r;
  const double n = cores;
  if (engine == "mm") {
    const tc1::MmBlock& b = MatrixBlock(precision);
    double rate = double(b.m) * b.n * b.k;
    // a block's m rows are output channels; a row computes for one group only, so at most
    // group_rows of them are useful (the rest multiply another group's inputs by zero)
    if (group_rows > 0 && group_rows < b.m) rate = rate * double(group_rows) / b.m;
    r.engine = "mm";
    if (group_rows > 0 && kVecMacsPerCycle > rate) {
      rate = kVecMacsPerCycle;
      r.engine = "vec";
    }
    r.compute_cycles = double(macs) / (rate * n);
  } else if (engine == "vec") {
    // MACs on the vector engine; else one pass over the output
    r.engine = "vec";
    r.compute_cycles = macs > 0 ? double(macs) / (kVecMacsPerCycle * n)
                                : double(output_bytes) / (double(tc1::kVecBytesPerCycle) * n);
  } else {
    TILECORE_THROW(ValueError) << "OpRoofline: engine `" << engine << "` (expected mm or vec)";
  }
  const double ddr = double(ddr_bytes) / tc1::kDdrBytesPerCycle;
  const double l2 = double(l2_bytes) / tc1::kL2BytesPerCycle;
  r.memory_cycles = ddr > l2 ? ddr : l2;
  return r;
}

TILECORE_REGISTER_GLOBAL("compiler.OpRoofline")
    .set_body_typed([](String engine, int64_t macs, String precision, int64_t output_bytes,
                       int64_t ddr_bytes, int64_t l2_bytes, int64_t cores, int64_t group_rows) {
      for (int64_t v : {macs, output_bytes, ddr_bytes, l2_bytes})
        if (v < 0) TILECORE_THROW(ValueError) << "OpRoofline: a negative count";
      RooflineBound r = OpRoofline(std::string(engine), uint64_t(macs), std::string(precision),
                                   uint64_t(output_bytes), uint64_t(ddr_bytes), uint64_t(l2_bytes),
                                   static_cast<int>(cores), group_rows);
      Map<String, Any> out;
      out.Set("cycles", Any(r.cycles()));
      out.Set("compute_cycles", Any(r.compute_cycles));
      out.Set("memory_cycles", Any(r.memory_cycles));
      out.Set("bound", Any(String(r.bound())));
      out.Set("engine", Any(String(r.engine)));
      return out;
    });

}  // namespace compiler
}  // namespace tilecore
