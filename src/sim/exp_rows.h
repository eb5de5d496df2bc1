// src/sim/exp_rows.h — texp, tsigmoid and ttanh over f32 rows, as the vector engine defines
// them (std::exp in double, 1 / (1 + exp(-x)), std::tanh in double, rounded once to f32),
// several times faster.
//
// The specification's result is the f32 rounding of a double within a few units in the last
// place (of double) of the exact value. A double exp of our own, branch-free so the row loop
// vectorises, lands as close (tanh: (e - 1) / (e + 1) with e = exp(2|x|), within 2^-47 where
// |x| >= 1/16; the smaller |x|, where e - 1 cancels, take the formula); where every double within
// 2^-45 (relative) of our value rounds to the same f32, the specification's double is among them
// and that f32 is its result. Elsewhere (about one element in a million: the exact value next to a
// midpoint between two floats) and outside the range where both results are normal floats, the
// element is computed by the specification's own formula. So the rows are bit-identical to it, only
// faster.
#pragma once

#include <cstdint>

namespace tilecore::sim {

enum class ExpRow { Exp, Sigmoid, Tanh };

/// d[k] = exp(a[k]), sigmoid(a[k]) or tanh(a[k]) for k < n, f32 elements at byte addresses (any
/// alignment; d may be a itself).
void exp_row_f32(ExpRow kind, uint8_t* d, const uint8_t* a, int64_t n);

/// The specification's formula for one element (what the rows fall back to).
float exp_reference(ExpRow kind, float x);

}  // namespace tilecore::sim
