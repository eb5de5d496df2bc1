// tests/cpp/sim/programs.h — hand-written TC1 programs shared by tests and benchmarks.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tc1_programs {

/// Reads benchmarks/<name> of the source tree (TILECORE_SOURCE_DIR, set by the build).
inline std::string benchmark_source(const std::string& name) {
  auto path = std::filesystem::path(TILECORE_SOURCE_DIR) / "benchmarks" / name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream body;
  body << in.rdbuf();
  return body.str();
}

/// The tiled int8 GEMM of benchmarks/sim_gemm_i8.s with its parameters
/// prepended (see the file for the algorithm and synchronisation).
inline std::string gemm_i8(int M, int N, int K, int TM, int TN, int cores, unsigned a_ddr = 0,
                           unsigned b_ddr = 0x1000000, unsigned c_ddr = 0x2000000) {
  return ".equ M, " + std::to_string(M) + "\n.equ N, " + std::to_string(N) + "\n.equ K, " +
         std::to_string(K) + "\n.equ TM, " + std::to_string(TM) + "\n.equ TN, " +
         std::to_string(TN) + "\n.equ NC, " + std::to_string(cores) + "\n.equ A_DDR, " +
         std::to_string(a_ddr) + "\n.equ B_DDR, " + std::to_string(b_ddr) + "\n.equ C_DDR, " +
         std::to_string(c_ddr) + "\n" + benchmark_source("sim_gemm_i8.s");
}

/// benchmarks/sim_command_mix.s: `iters` iterations of four chained tile commands per core.
inline std::string command_mix(int iters) {
  return ".equ ITERS, " + std::to_string(iters) + "\n" + benchmark_source("sim_command_mix.s");
}

}  // namespace tc1_programs
