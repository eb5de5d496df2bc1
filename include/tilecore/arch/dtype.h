// include/tilecore/arch/dtype.h — the element types TC1 understands.
//
// TC1 has no 64-bit types: anything wider runs on the host. The enum values are
// part of the instruction encoding (4-bit dtype fields) and of the in-memory
// descriptor formats, so they must never be renumbered.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tilecore::arch {

enum class DType : uint8_t {
  I8 = 0,
  U8 = 1,
  I16 = 2,
  U16 = 3,
  I32 = 4,
  U32 = 5,
  F16 = 6,
  BF16 = 7,
  F32 = 8,
  Bool = 9,
};
inline constexpr int kNumDTypes = 10;

/// Bit set of dtypes, bit i for DType(i). Used by the ISA table to say which
/// dtype suffixes an instruction accepts.
using DTypeMask = uint16_t;

constexpr DTypeMask dtype_bit(DType t) { return DTypeMask(1u << unsigned(t)); }

inline constexpr DTypeMask kIntTypes = 0x3F;     // i8 u8 i16 u16 i32 u32
inline constexpr DTypeMask kFloatTypes = 0x1C0;  // f16 bf16 f32
inline constexpr DTypeMask kNumTypes = kIntTypes | kFloatTypes;
inline constexpr DTypeMask kAllTypes = kNumTypes | dtype_bit(DType::Bool);
inline constexpr DTypeMask kNoDType = 0;
inline constexpr DTypeMask kMatrixTypes =
    dtype_bit(DType::I8) | dtype_bit(DType::F16) | dtype_bit(DType::BF16) | dtype_bit(DType::F32);

constexpr bool is_valid_dtype(unsigned v) { return v < unsigned(kNumDTypes); }

constexpr int dtype_size(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return 1;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I32:
    case DType::U32:
    case DType::F32:
      return 4;
  }
  return 1;
}

constexpr bool is_float(DType t) { return (kFloatTypes >> unsigned(t)) & 1; }
constexpr bool is_signed_int(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32;
}
constexpr bool is_int(DType t) { return (kIntTypes >> unsigned(t)) & 1; }

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace tilecore::arch
