/*
 * include/tilecore/ffi/structural.h — structural equality and hashing of any value
 * graph, driven by reflection.
 *
 * Two values are structurally equal when:
 *   - PODs and strings are equal by value (a small string equals a Str object with
 *     the same bytes; an int never equals a float or bool; NaN equals NaN and 0.0
 *     equals -0.0);
 *   - Array and Shape are equal element by element; Map has the same keys with
 *     equal values (keys that are PODs or strings are looked up; maps with object
 *     keys are compared entry by entry in insertion order);
 *   - NDArray has the same shape, dtype and bytes (wherever it lives);
 *   - kinds declared kTCFFISEqualTreeNode are the same kind with equal fields,
 *     skipping fields flagged kTCFFIFieldSEqualIgnore;
 *   - kinds declared kTCFFISEqualIdentity (and every kind without reflection) are
 *     the same object;
 *   - kinds declared kTCFFISEqualFreeVar are variables: equal if already mapped to
 *     each other. Two unmapped variables become mapped to each other (and their
 *     non-ignored fields must be equal) when they are met inside a field flagged
 *     kTCFFIFieldDefRegion (a binding site), or anywhere when `map_free_vars` is
 *     true; otherwise an unmapped variable equals only itself. The mapping is a
 *     bijection: a variable never maps to two different variables.
 *
 * StructuralHash agrees with StructuralEqual: equal values hash equal. Variables
 * hash by the order in which they are bound, so alpha-equivalent graphs hash alike;
 * identity kinds hash by address, so their hashes differ between runs.
 *
 * Assumes the graph is acyclic. Both walks keep their place on a heap stack, so depth
 * is bounded by memory, not the C stack; a shared subgraph is walked once (pairs proven
 * equal, and hashes that bind no variable, are remembered), so a DAG costs linear time.
 */
#ifndef TILECORE_FFI_STRUCTURAL_H_
#define TILECORE_FFI_STRUCTURAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "tilecore/ffi/any.h"

namespace tilecore {
namespace ffi {

/*! \brief Whether `lhs` and `rhs` are structurally equal (rules above). */
bool StructuralEqual(const AnyView& lhs, const AnyView& rhs, bool map_free_vars = false);

/*!
 * \brief The access paths of the first mismatch on each side, e.g.
 * (`root.body.value[1]`, `root.body.value[1]`), or nullopt if the values are equal.
 * A side that lacks the element has ` (missing)` appended to its path.
 */
std::optional<std::pair<std::string, std::string>> GetFirstMismatch(const AnyView& lhs,
                                                                    const AnyView& rhs,
                                                                    bool map_free_vars = false);

/*! \brief A hash consistent with StructuralEqual under the same `map_free_vars`. */
uint64_t StructuralHash(const AnyView& value, bool map_free_vars = false);

/*! \brief Function objects for hash containers keyed by structure (free vars mapped). */
struct StructuralHasher {
  size_t operator()(const Any& v) const { return static_cast<size_t>(StructuralHash(v, true)); }
};
struct StructuralEqualTo {
  bool operator()(const Any& a, const Any& b) const { return StructuralEqual(a, b, true); }
};

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_STRUCTURAL_H_
