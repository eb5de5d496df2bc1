/*
 * include/tilecore/ffi/serialization.h — SaveJSON / LoadJSON: any value, including
 * whole graphs of reflected objects, to JSON text and back.
 *
 * The text is a graph: every distinct value is one node, and nodes refer to each
 * other by index, so an object reachable along two paths is written once and comes
 * back shared (the same pointer):
 *
 *   {"root": 3, "nodes": [
 *     {"type":"int","data":7},
 *     {"type":"str","data":"x"},
 *     {"type":"ffi.Array","data":[0,0]},
 *     {"type":"testing.TestObject","data":{"value":0,"name":1,"payload":2}}
 *   ], "tilecore_version": "0.1.0"}
 *
 * Node types and their data:
 *   None (no data) | bool, int: the JSON literal | float: a number, or "nan", "inf", "-inf"
 *   str: a string | bytes: base64 | DataType: "float32" (or [code, bits, lanes])
 *   Device: [device_type, device_id] | ffi.Shape: [dims...]
 *   ffi.Array: [refs...] | ffi.Map: [key_ref, value_ref, ...]
 *   ffi.NDArray: {"shape": [...], "dtype": "...", "data": base64 of the compact bytes,
 *                 little-endian as in memory; CPU arrays only}
 *   any reflected kind with a creator: {"<field>": ref, ...}, every reflected field.
 * Equal literals (ints, strings, ...) share one node; nodes come after the nodes
 * they refer to, and the root is last.
 *
 * Depth is bounded by memory only: neither side recurses on the C stack.
 *
 * SaveJSON raises TypeError naming the path (`root.payload[2]`) of a value that
 * cannot be saved: functions, errors, opaque pointers, kinds without a creator,
 * arrays not on the CPU. A reference cycle is a ValueError.
 *
 * LoadJSON never trusts its input: malformed JSON, a missing root or nodes, an
 * unknown type key, a reference out of range, a reference cycle, unknown or missing
 * fields, or a kind without a creator is a ValueError naming the node index, its
 * type and the field; a field value of the wrong type is a TypeError (the field's
 * setter names the expected type).
 */
#ifndef TILECORE_FFI_SERIALIZATION_H_
#define TILECORE_FFI_SERIALIZATION_H_

#include <string>
#include <string_view>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

/*! \brief Writes `value` and everything it reaches as a JSON graph. */
std::string SaveJSON(const AnyView& value);

/*! \brief Reads a graph written by SaveJSON; objects shared there are shared here. */
Any LoadJSON(std::string_view json);

/*!
 * \brief Registers the check LoadJSON runs on each loaded object of kind `type_index`,
 * after its fields are set: it throws (TypeError, ValueError) to refuse the object, and
 * LoadJSON reports the node. A kind registers its constructor's checks here, so a file
 * cannot hold an object its constructor would refuse.
 */
void RegisterLoadCheck(int32_t type_index, void (*check)(const Object* obj));

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_SERIALIZATION_H_
