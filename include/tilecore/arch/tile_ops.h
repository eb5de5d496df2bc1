// include/tilecore/arch/tile_ops.h — the table of vector-engine tile operations
// (tile_ops.def) as data: kTileOps, one TileOpInfo per row, and look-ups by name.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "tilecore/arch/isa.h"

namespace tilecore::arch {

/// Operands of a tile operation: Binary (d, a, b), Scalar (d, a, s), Unary (d, a),
/// Reduce (d, a over its innermost axis), Convert (tcvt), Requant (trequant).
enum class TileForm : uint8_t { Binary, Scalar, Unary, Reduce, Convert, Requant };
/// The element dtypes it takes.
enum class TileTypes : uint8_t { Numeric, Float, Any, Integer };

struct TileOpInfo {
  Opcode op;
  std::string_view mnemonic;
  std::string_view name;  // IR `tile.vec_<name>`, DSL `S.tile_<name>`
  TileForm form;
  TileTypes types;
  std::string_view scalar;   // scalar intrinsic EmitTileIntrinsics maps to it, or ""
  std::string_view c_float;  // C semantics on doubles x, y (c target)
  std::string_view c_int;    // C semantics on int64 x, y, or ""
  std::string_view c_init;   // Reduce: the fold's start, "float, int" (C, of dt)
  std::string_view summary;
};

// clang-format off
inline constexpr TileOpInfo kTileOpRows[] = {
#define TC1_TILE_OP(Id, mn, name, form, types, scalar, c_float, c_int, c_init, summary) \
  {Opcode::Id, mn, #name, TileForm::form, TileTypes::types, scalar, c_float, c_int, c_init, summary},
#include "tilecore/arch/tile_ops.def"
#undef TC1_TILE_OP
};
// clang-format on
inline constexpr std::size_t kNumTileOps = sizeof(kTileOpRows) / sizeof(kTileOpRows[0]);

/// The row named `name` ("add"), or nullptr.
constexpr const TileOpInfo* FindTileOp(std::string_view name) {
  for (const TileOpInfo& r : kTileOpRows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

/// The row of intrinsic `op` ("tile.vec_add"), or nullptr.
constexpr const TileOpInfo* FindTileIntrinsic(std::string_view op) {
  constexpr std::string_view kPrefix = "tile.vec_";
  if (op.substr(0, kPrefix.size()) != kPrefix) return nullptr;
  return FindTileOp(op.substr(kPrefix.size()));
}

/// The row of opcode `op`, or nullptr (not a tile operation).
constexpr const TileOpInfo* FindTileOpByOpcode(Opcode op) {
  for (const TileOpInfo& r : kTileOpRows) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

/// The row whose scalar intrinsic is `scalar` ("tir.exp"), or nullptr.
constexpr const TileOpInfo* FindTileOpForScalar(std::string_view scalar) {
  for (const TileOpInfo& r : kTileOpRows) {
    if (!r.scalar.empty() && r.scalar == scalar) return &r;
  }
  return nullptr;
}

}  // namespace tilecore::arch
