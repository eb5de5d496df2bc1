/*
 * src/compiler/lookup_table.h — the lookup-table form of a unary op between int8 tensors
 * (int8 edges, docs/precision.md): its 256-entry table and how a kernel holds it in L1.
 * The element-wise strategy runs the op alone through it; a Conv, MatMul or Gemm applies it
 * in its epilogue (`tc_lut`: strategy_conv.cc, strategy_matmul.cc). Defined in
 * strategy_elementwise.cc.
 */
#ifndef TILECORE_SRC_COMPILER_LOOKUP_TABLE_H_
#define TILECORE_SRC_COMPILER_LOOKUP_TABLE_H_

#include <string>
#include <vector>

#include "kernel_util.h"

namespace tilecore {
namespace compiler {
namespace detail {

/*! \brief Whether `op` (Gelu, Sigmoid, ...) has a lookup-table form. */
bool HasLookupTable(const std::string& op);

/*!
 * \brief table[i] = saturate(round_even(f(x_scale (int8(i) - x_zp)) / y_scale) + y_zp) for
 * call.op_type with call.attrs (tc_x_scale, tc_x_zero_point, tc_y_scale, tc_y_zero_point
 * and the op's own), f computed in double.
 */
std::vector<int8_t> LookupTable(const OpCall& call);

/*! \brief The fused lookup-table op of `tc_lut` (a Conv, MatMul or Gemm applies it to its
 * int8 result before storing it): its type and its own attributes, those under "tc_lut.". */
OpCall LutCall(const Map<String, Any>& attrs);

/*! \brief The table of the `tc_lut` op in `attrs` (LookupTable of LutCall); empty without one. */
std::vector<int8_t> FusedLookupTable(const Map<String, Any>& attrs);

/*! \brief "" when `tc_lut` is absent or names a table op of an int8 output (tc_y_scale) with
 * positive finite tc_lut.tc_x_scale and tc_lut.tc_y_scale, else the reason. */
std::string CheckLut(const std::string& op, const Map<String, Any>& attrs);

/*! \brief A table in L1: 64 int32 words the front end stores `table` into. */
Stmt FillLookupTable(const Buffer& words, const std::vector<int8_t>& table);

/*! \brief `fill` (FillLookupTable's stores) put into `items`, a cores loop's statements in
 * order, after the DMAs they start with: the front end stores the table while those loads
 * wait on their latency, and the loads stay first, where a layer group's handoff finds them. */
void PlaceAfterFirstLoads(std::vector<Stmt>* items, const Stmt& fill);

/*! \brief The 256 int8 entries of `words` (the table operand of tile.vec_lut). */
BufferRegion LookupTableRegion(const Buffer& words);

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_LOOKUP_TABLE_H_
