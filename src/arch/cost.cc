// src/arch/cost.cc — TC1 cost formulas (see cost.h; documented in docs/tc1.md).
#include "tilecore/arch/cost.h"

#include <algorithm>

namespace tilecore::arch::cost {

namespace {
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int64_t level_latency(Space s) {
  switch (s) {
    case Space::DDR:
      return tc1::kDdrLatency;
    case Space::L2:
      return tc1::kL2Latency;
    case Space::L1:
      return tc1::kL1Latency;
  }
  return tc1::kL1Latency;
}

int64_t front_end(CostClass c, Space space, bool taken) {
  switch (c) {
    case CostClass::ScalarMem:
    case CostClass::SimdMem:
      return space == Space::L1 ? 1 : level_latency(space);
    case CostClass::Branch:
      return taken ? 2 : 1;
    default:
      return 1;
  }
}

int64_t DmaCost::occupancy(Space level, Space dst, Space src, bool fill) const {
  int touches = int(dst == level) + int(!fill && src == level);
  if (touches == 0 || level == Space::L1) return 0;
  int64_t per = level == Space::DDR
                    ? beats * tc1::kDmaBytesPerCycle / tc1::kDdrBytesPerCycle
                    : ceil_div(beats * tc1::kDmaBytesPerCycle, tc1::kL2BytesPerCycle);
  return per * touches;
}

DmaCost dma(const DmaDesc& d, Space dst, Space src) {
  DmaCost c;
  uint64_t n = d.shape[size_t(d.rank - 1)];
  uint64_t total = 1, valid = 1;
  for (int i = 0; i < d.rank; ++i) {
    total *= d.shape[size_t(i)];
    valid *= d.shape[size_t(i)] - d.pad_lo[size_t(i)] - d.pad_hi[size_t(i)];
  }
  c.elements = total;
  if (total == 0) return c;
  uint64_t rows = total / n;
  int ses = dtype_size(d.src_dtype), des = dtype_size(d.dst_dtype);
  bool contiguous =
      (d.fill() || d.src_stride[size_t(d.rank - 1)] == 1) && d.dst_stride[size_t(d.rank - 1)] == 1;
  int64_t row_bytes = int64_t(n) * std::max(d.fill() ? 1 : ses, des);
  c.beats =
      contiguous ? int64_t(rows) * ceil_div(row_bytes, tc1::kDmaBytesPerCycle) : int64_t(total);
  c.latency = std::max(level_latency(dst), d.fill() ? 0 : level_latency(src));
  c.bytes_read = d.fill() ? 0 : valid * uint64_t(ses);
  c.bytes_written = total * uint64_t(des);
  return c;
}

tc1::MmBlock mm_block(DType in) {
  switch (in) {
    case DType::I8:
      return tc1::kMmBlockI8;
    case DType::F16:
    case DType::BF16:
      return tc1::kMmBlockF16;
    default:
      return tc1::kMmBlockF32;
  }
}

MmCost matrix(DType in, const MmDesc& d, bool bank_conflict) {
  tc1::MmBlock b = mm_block(in);
  MmCost c;
  int64_t blocks = ceil_div(d.m, b.m) * ceil_div(d.n, b.n) * ceil_div(d.k, b.k);
  c.cycles = tc1::kMmLatency + blocks * (bank_conflict ? tc1::kBankConflictFactor : 1);
  if (d.epilogue()) c.cycles += ceil_div(int64_t(d.m) * d.n, tc1::kMmEpilogueElemsPerCycle);
  // Per-channel scales and the residual stream from L1 at one bank's width.
  if (d.epilogue() && d.channel_scale())
    c.cycles += ceil_div(int64_t(d.n) * 4, tc1::kL1BankBytesPerCycle);
  if (d.epilogue() && d.residual())
    c.cycles += ceil_div(int64_t(d.m) * d.n * dtype_size(d.res_dtype), tc1::kL1BankBytesPerCycle);
  c.macs = uint64_t(d.m) * d.n * d.k;
  c.issued_macs = uint64_t(blocks) * uint64_t(b.m * b.n * b.k);
  return c;
}

int64_t vector(Opcode op, DType dt, DType src_dt, uint64_t elements, bool bank_conflict) {
  int es = dtype_size(dt);
  if (op == Opcode::Tcvt || op == Opcode::Trequant || op == Opcode::Tquant)
    es = std::max(es, dtype_size(src_dt));
  if (op == Opcode::Tlut) es = std::max(es, 1);
  int64_t per_cycle = tc1::kVecBytesPerCycle / es;
  int slow = info(op).cost == CostClass::VectorSlow ? tc1::kVecSlowFactor : 1;
  return tc1::kVecLatency + ceil_div(int64_t(elements), per_cycle) * slow *
                                (bank_conflict ? tc1::kBankConflictFactor : 1);
}

}  // namespace tilecore::arch::cost
