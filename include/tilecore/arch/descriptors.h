// include/tilecore/arch/descriptors.h — in-memory descriptors of tile commands.
//
// A tile command's 64-bit word holds only registers; its shape, strides and
// options come from a descriptor in the issuing core's local L1 at
// x[rdesc] + imm, read (and snapshotted) when the front end issues the command.
// Rationale: descriptors stay constant across loop iterations while base
// addresses change, so they live in memory and addresses live in registers.
//
// All fields are little-endian; dims are listed outermost first, the innermost
// dimension is dims[rank - 1]; strides count elements, not bytes. Layouts are
// documented field by field in docs/tc1.md ("Descriptors").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tilecore/arch/dtype.h"

namespace tilecore::arch {

/// DMA descriptor: 72 bytes.
struct DmaDesc {
  static constexpr size_t kBytes = 72;
  DType src_dtype = DType::I8;                // byte 0
  DType dst_dtype = DType::I8;                // byte 1
  uint8_t rank = 1;                           // byte 2, 1..4
  uint8_t flags = 0;                          // byte 3, bit 0: fill (no source read)
  uint32_t fill_bits = 0;                     // bytes 4..7, fill/pad value as dst-dtype bit pattern
  std::array<uint32_t, 4> shape{1, 1, 1, 1};  // bytes 8..23, destination shape
  std::array<int32_t, 4> src_stride{0, 0, 0, 0};  // bytes 24..39
  std::array<int32_t, 4> dst_stride{0, 0, 0, 0};  // bytes 40..55
  std::array<uint16_t, 4> pad_lo{0, 0, 0, 0};     // bytes 56..63
  std::array<uint16_t, 4> pad_hi{0, 0, 0, 0};     // bytes 64..71
  static constexpr uint8_t kFill = 1;

  bool fill() const { return flags & kFill; }
  std::array<uint8_t, kBytes> to_bytes() const;
  /// Parses and validates; on error returns nullopt and the reason in `why`.
  static std::optional<DmaDesc> parse(std::span<const uint8_t> b, std::string* why);
};

/// Vector-engine descriptor: 80 bytes.
struct VecDesc {
  static constexpr size_t kBytes = 80;
  uint8_t rank = 1;                             // byte 0, 1..4 (bytes 1..3 reserved, zero)
  std::array<uint32_t, 4> shape{1, 1, 1, 1};    // bytes 4..19
  std::array<int32_t, 4> d_stride{0, 0, 0, 0};  // bytes 20..35 (innermost ignored by reductions)
  std::array<int32_t, 4> a_stride{0, 0, 0, 0};  // bytes 36..51
  std::array<int32_t, 4> b_stride{0, 0, 0, 0};  // bytes 52..67 (stride 0 = broadcast)
  float scalar = 0.0f;                          // bytes 68..71, the `s` of t*s ops
  float scale = 1.0f;                           // bytes 72..75, trequant
  int32_t zero_point = 0;                       // bytes 76..79, trequant

  std::array<uint8_t, kBytes> to_bytes() const;
  static std::optional<VecDesc> parse(std::span<const uint8_t> b, std::string* why);
};

enum class Activation : uint8_t { None = 0, Relu = 1 };

/// Matrix-engine descriptor: 52 bytes, extended to 64 when the per-channel scale
/// or the residual flag is set (bytes 52..63 exist and are read only then).
/// Rationale: descriptors without the extension keep their size, so existing
/// programs and their data layouts stay valid.
struct MmDesc {
  static constexpr size_t kBytes = 52, kExtendedBytes = 64;
  uint32_t m = 0, n = 0, k = 0;        // bytes 0..11
  uint32_t lda = 0, ldb = 0, ldc = 0;  // bytes 12..23, row strides in elements (ldc: accumulator)
  DType out_dtype = DType::I32;        // byte 24 (epilogue output)
  Activation act = Activation::None;   // byte 25
  uint8_t flags = 0;            // byte 26: bit 0 epilogue, 1 bias, 2 per-channel scale, 3 residual
  DType res_dtype = DType::I8;  // byte 27, residual element type (0 = i8 when no residual)
  uint32_t bias_addr = 0;       // bytes 28..31, L1 address of N accumulator-dtype values
  float scale = 1.0f;           // bytes 32..35 (ignored with a per-channel scale)
  float clamp_lo = -3.4028235e38f;  // bytes 36..39
  float clamp_hi = 3.4028235e38f;   // bytes 40..43
  int32_t zero_point = 0;           // bytes 44..47
  uint32_t ldo = 0;                 // bytes 48..51, output row stride in output elements
  uint32_t scale_addr = 0;          // bytes 52..55, L1 address of N f32 scales (flag bit 2)
  uint32_t res_addr = 0;            // bytes 56..59, L1 address of the M x N residual (flag bit 3)
  uint32_t ldr = 0;                 // bytes 60..63, residual row stride in residual elements
  static constexpr uint8_t kEpilogue = 1, kBias = 2, kChannelScale = 4, kResidual = 8;

  bool epilogue() const { return flags & kEpilogue; }
  bool bias() const { return flags & kBias; }
  bool channel_scale() const { return flags & kChannelScale; }
  bool residual() const { return flags & kResidual; }
  bool extended() const { return flags & (kChannelScale | kResidual); }
  /// kBytes or kExtendedBytes of flags byte `flags`.
  static size_t size_for_flags(uint8_t flags) {
    return flags & (kChannelScale | kResidual) ? kExtendedBytes : kBytes;
  }
  /// 52 bytes, or 64 when extended().
  std::vector<uint8_t> to_bytes() const;
  static std::optional<MmDesc> parse(std::span<const uint8_t> b, std::string* why);
};

}  // namespace tilecore::arch
