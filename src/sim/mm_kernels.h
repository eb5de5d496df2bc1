// src/sim/mm_kernels.h — host kernels behind the matrix engine.
//
// Whole-tile kernels, not per-element interpretation: the functional GEMM
// throughput of the simulator is the throughput of these. The int8 kernel has
// an AVX-512 VNNI path and an AVX2 path chosen at run time and a portable path the
// compiler vectorises; both are exact (int32 accumulation wraps modulo 2^32). The f32 kernel
// has an AVX-512 path (8 x 32 register blocks) and an AVX2 path (4 x 16), no FMA, chosen at
// run time, bit-identical to its portable loop; a row's last columns take masked lanes.
#pragma once

#include <cstdint>

namespace tilecore::sim {

/// C[M x N] (row stride ldc) = (accumulate ? C : 0) + A[M x K] * B[K x N], int8 -> int32.
void gemm_i8(int m, int n, int k, const int8_t* a, int lda, const int8_t* b, int ldb, int32_t* c,
             int ldc, bool accumulate);

/// Same for f32 operands and accumulator: c[i][j] += a[i][k] * b[k][j] for k
/// ascending, each product and sum rounded to f32 (no fused multiply-add).
void gemm_f32(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
              int ldc, bool accumulate);

/// gemm_f32 on one path ("avx512", "avx2" or "portable": each must give the same bits);
/// false, nothing computed, when this host cannot run it.
bool gemm_f32_on(const char* path, int m, int n, int k, const float* a, int lda, const float* b,
                 int ldb, float* c, int ldc, bool accumulate);

/// gemm_i8 on one path ("avx512-vnni", "avx2" or "portable": each must give the same
/// sums); false, nothing computed, when this host cannot run it.
bool gemm_i8_on(const char* path, int m, int n, int k, const int8_t* a, int lda, const int8_t* b,
                int ldb, int32_t* c, int ldc, bool accumulate);

/// Which int8 path runs on this host ("avx512-vnni", "avx2" or "portable").
const char* gemm_i8_path();

}  // namespace tilecore::sim
