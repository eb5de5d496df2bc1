// src/arch/dtype.cc — dtype names and parsing.
#include "tilecore/arch/dtype.h"

#include <array>

namespace tilecore::arch {

namespace {
constexpr std::array<std::string_view, kNumDTypes> kNames = {"i8",  "u8",  "i16",  "u16", "i32",
                                                             "u32", "f16", "bf16", "f32", "bool"};
}  // namespace

std::string_view dtype_name(DType t) {
  unsigned i = unsigned(t);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (unsigned i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return DType(i);
  return std::nullopt;
}

}  // namespace tilecore::arch
