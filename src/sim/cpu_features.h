// src/sim/cpu_features.h — the host CPU's vector extensions, asked once, for the simulator's
// kernels that have a wider entry beside the portable one (picked by a branch: an ifunc
// resolver runs before a sanitizer's runtime and crashed under ThreadSanitizer).
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TC1_SIM_X86 1

namespace tilecore::sim {

inline bool CpuHasAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

inline bool CpuHasAvx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

inline bool CpuHasAvx2Fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

}  // namespace tilecore::sim
#endif
