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

double MatrixMacsPerCycle(const std::string& precision) {
  auto per = [](const tc1::MmBlock& b) { return double(b.m) * b.n * b.k; };
  if (precision == "int8") return per(tc1::kMmBlockI8);
  if (precision == "f16" || precision == "bf16") return per(tc1::kMmBlockF16);
  if (precision == "f32") return per(tc1::kMmBlockF32);
  TILECORE_THROW(ValueError) << "OpRoofline: precision `" << precision
                             << "` (expected f32, f16, bf16 or int8)";
}

}  // namespace

RooflineBound OpRoofline(const std::string& engine, uint64_t macs, const std::string& precision,
                         uint64_t output_bytes, uint64_t ddr_bytes, uint64_t l2_bytes, int cores) {
  if (cores < 1) TILECORE_THROW(ValueError) << "OpRoofline: cores must be at least 1";
  RooflineBound r;
  const double n = cores;
  if (engine == "mm") {
    r.compute_cycles = double(macs) / (MatrixMacsPerCycle(precision) * n);
  } else if (engine == "vec") {
    // a MAC is a multiply and an add of a 4-byte accumulator element; else one pass
    r.compute_cycles = macs > 0 ? double(macs) * 8 / (double(tc1::kVecBytesPerCycle) * n)
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
                       int64_t ddr_bytes, int64_t l2_bytes, int64_t cores) {
      for (int64_t v : {macs, output_bytes, ddr_bytes, l2_bytes})
        if (v < 0) TILECORE_THROW(ValueError) << "OpRoofline: a negative count";
      RooflineBound r = OpRoofline(std::string(engine), uint64_t(macs), std::string(precision),
                                   uint64_t(output_bytes), uint64_t(ddr_bytes), uint64_t(l2_bytes),
                                   static_cast<int>(cores));
      Map<String, Any> out;
      out.Set("cycles", Any(r.cycles()));
      out.Set("compute_cycles", Any(r.compute_cycles));
      out.Set("memory_cycles", Any(r.memory_cycles));
      out.Set("bound", Any(String(r.bound())));
      return out;
    });

}  // namespace compiler
}  // namespace tilecore
