/*
 * include/tilecore/ffi/json.h — a small, strict JSON reader and writer whose
 * values are Any.
 *
 * The mapping between JSON and Any:
 *
 *   JSON      | Any
 *   ----------+---------------------------------------------------------------
 *   object    | Map<String, Any>, members in document order
 *   array     | Array<Any>
 *   string    | str (small string or String); must be valid UTF-8
 *   integer   | int (int64); a literal outside the int64 range is an error
 *   number    | float (double) when it has a fraction or an exponent
 *   true/false| bool
 *   null      | None
 *
 * Parsing follows RFC 8259 strictly: no comments, no trailing commas, no NaN or
 * Infinity literals, no duplicate member names, no lone surrogates. Errors are
 * ValueErrors that name line:column (both 1-based, column in bytes) and what was
 * expected there. Nesting deeper than `max_depth` is an error, so hostile input
 * cannot exhaust the stack.
 *
 * Rationale: values are Any (not a separate JSON DOM) so that JSON read here can be
 * handed straight to registered functions and Python.
 */
#ifndef TILECORE_FFI_JSON_H_
#define TILECORE_FFI_JSON_H_

#include <string>
#include <string_view>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {
namespace json {

/*! \brief Default nesting limit of Parse and Stringify. */
constexpr int kDefaultMaxDepth = 512;

/*! \brief Parses one JSON document; ValueError naming line:column otherwise. */
Any Parse(std::string_view text, int max_depth = kDefaultMaxDepth);

/*!
 * \brief Writes a value as JSON. `indent` < 0 writes one line; otherwise members
 * and elements go one per line, indented by `indent` spaces per level.
 *
 * Accepts None, bool, int, float (finite only: JSON has no NaN/Infinity), strings
 * (valid UTF-8), Array and Map with string keys, nested at most `max_depth` deep.
 * Anything else is a TypeError (ValueError for a non-finite float or bad UTF-8)
 * naming the path to it, e.g. `value["ops"][2]`.
 */
std::string Stringify(const AnyView& value, int indent = -1, int max_depth = kDefaultMaxDepth);

}  // namespace json
}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_JSON_H_
