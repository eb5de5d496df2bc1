// include/tilecore/arch/params.h — the fixed parameters of TC1.
//
// These are the numbers of docs/tc1.md ("Parameters"). Only the core count and
// memory sizes may vary (target options); everything else is the chip.
#pragma once

#include <cstdint>

namespace tilecore::arch::tc1 {

inline constexpr int kDefaultCores = 4;
inline constexpr int kMaxCores = 16;
inline constexpr uint64_t kClockHz = 1'000'000'000;

// Memories. DDR may be up to 4 GiB; the simulator allocates what it is told.
inline constexpr uint64_t kMaxDdrBytes = uint64_t(4) << 30;
inline constexpr uint64_t kDefaultDdrBytes = uint64_t(256) << 20;
inline constexpr uint64_t kL2Bytes = uint64_t(4) << 20;
inline constexpr uint64_t kL1Bytes = uint64_t(1) << 20;
inline constexpr int kL1Banks = 16;
inline constexpr uint64_t kL1BankBytes = kL1Bytes / kL1Banks;  // 64 KiB, contiguous per bank

// Bandwidths in bytes per cycle, latencies in cycles.
inline constexpr int kDdrBytesPerCycle = 64;  // shared by all cores
inline constexpr int kL2BytesPerCycle = 256;  // shared by all cores
inline constexpr int kL1BankBytesPerCycle = 64;
inline constexpr int kDdrLatency = 200;
inline constexpr int kL2Latency = 20;
inline constexpr int kL1Latency = 2;
inline constexpr int kDmaBytesPerCycle = 64;  // each DMA engine
inline constexpr int kVecBytesPerCycle = 256;
inline constexpr int kVecLatency = 8;     // pipeline fill per command
inline constexpr int kVecSlowFactor = 4;  // transcendental / divide rate divisor
inline constexpr int kMmLatency = 16;     // pipeline fill per command
inline constexpr int kMmEpilogueElemsPerCycle = 64;
inline constexpr int kBarrierLatency = 8;
inline constexpr int kBankConflictFactor = 2;

// Matrix engine native block (m x n x k MACs per cycle) per input dtype.
struct MmBlock {
  int m, n, k;
};
inline constexpr MmBlock kMmBlockI8 = {16, 32, 4};   // 2048 MAC/cycle
inline constexpr MmBlock kMmBlockF16 = {16, 32, 2};  // 1024 MAC/cycle (f16, bf16)
inline constexpr MmBlock kMmBlockF32 = {16, 16, 1};  //  256 MAC/cycle

// Limits that keep every command bounded (a fault, not a hang).
inline constexpr uint64_t kMaxTileElements = uint64_t(1) << 24;
inline constexpr uint32_t kMaxMmDim = 4096;

inline constexpr int kSimdBytes = 32;
inline constexpr int kNumXRegs = 32;
inline constexpr int kNumVRegs = 32;
inline constexpr int kNumPRegs = 8;

}  // namespace tilecore::arch::tc1
