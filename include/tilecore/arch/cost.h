// include/tilecore/arch/cost.h — the cost formulas of TC1.
//
// The simulator's timing model charges exactly these numbers, and the compiler's
// cost model calls the same functions, so the two cannot drift apart. Each
// formula is stated in docs/tc1.md beside its instruction ("Cost").
#pragma once

#include <cstdint>

#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/isa.h"
#include "tilecore/arch/params.h"

namespace tilecore::arch::cost {

/// Front-end cycles of a scalar/SIMD instruction (branches: +1 when taken;
/// loads and stores: the latency of the space they touch).
int64_t front_end(CostClass c, Space space = Space::L1, bool taken = false);

/// Local-SRAM bank of an L1 address: banks are contiguous 64 KiB regions.
constexpr int l1_bank(uint64_t addr) { return int((addr / tc1::kL1BankBytes) % tc1::kL1Banks); }

/// Latency of the memory level a transfer touches.
int64_t level_latency(Space s);

struct DmaCost {
  int64_t beats = 0;        // 64-byte beats on the engine (one cycle each)
  int64_t latency = 0;      // added once per command: the farther level's latency
  uint64_t bytes_read = 0;  // from the source space (padding and fill read nothing)
  uint64_t bytes_written = 0;
  uint64_t elements = 0;
  /// Cycles the shared level is occupied: DDR 64 B/cycle, L2 256 B/cycle
  /// (a level that is both source and destination is charged twice).
  int64_t occupancy(Space level, Space dst, Space src, bool fill) const;
};
/// beats = rows * ceil(row_bytes / 64) when both innermost strides are 1 (or the
/// source is a fill), else rows * n (one beat per element: strided gathers and
/// transposes); row_bytes = n * max(src, dst element size); rows = elements / n.
DmaCost dma(const DmaDesc& d, Space dst, Space src);

struct MmCost {
  int64_t cycles = 0;
  uint64_t macs = 0;         // M * N * K
  uint64_t issued_macs = 0;  // including padding to the native block
};
/// cycles = kMmLatency + ceil(M/bm) * ceil(N/bn) * ceil(K/bk) * conflict
///        + (epilogue ? ceil(M*N / 64) : 0)
///        + (per-channel scale ? ceil(4N / 64) : 0) + (residual ? ceil(M*N*size(res) / 64) : 0);
/// conflict = 2 when A and B start in the same L1 bank, else 1.
MmCost matrix(DType in, const MmDesc& d, bool bank_conflict);
tc1::MmBlock mm_block(DType in);

/// cycles = kVecLatency + ceil(elements / (256 / max element size)) * slow * conflict
/// slow = 4 for divide and transcendental ops; conflict = 2 when the two source
/// tensors start in the same L1 bank.
int64_t vector(Opcode op, DType dt, DType src_dt, uint64_t elements, bool bank_conflict);

}  // namespace tilecore::arch::cost
