/*
 * include/tilecore/compiler/roofline.h — the least cycles an op can take on TC1: its
 * roofline bound, what `tilecore profile` and the benchmarks measure an op's cycles
 * against (docs/compiler.md, "Roofline").
 *
 * bound = max(compute, memory), with
 *   compute = MACs / the MAC peak of the engine that runs the op, all cores together:
 *             the matrix engine's native block per precision (arch/params.h: int8 2048,
 *             f16/bf16 1024, f32 256 MAC/cycle a core), or the vector engine's (a multiply
 *             and an add of the 4-byte accumulator per MAC, kVecBytesPerCycle / 8 MAC/cycle
 *             a core); an op without MACs makes one vector pass over its output: output
 *             bytes / kVecBytesPerCycle a core. A grouped Conv with fewer output channels a
 *             group than the block has rows (m) fills at most that many of them usefully: a
 *             row computes one output channel, from its own group's inputs alone, so every
 *             other group's share of the contraction multiplies zeros (the other layout,
 *             channels along the block's n columns, fills fewer). Its matrix peak is
 *             scaled by rows / m (a depthwise Conv: 1/16), and the vector engine's is taken
 *             when higher (a depthwise Conv in f32);
 *   memory  = the op's inputs and outputs, each moved once, over the bandwidth of the
 *             level they live in: DDR (64 B/cycle for the cluster) or, inside a layer
 *             group (intermediates, prefetched weights), L2 (256 B/cycle); the two
 *             levels move data at once (the larger).
 * A bound no schedule beats, not an estimate: the cost model (cost_model.h) prices
 * the commands a plan issues; the ratio of the measured cycles to this bound says how
 * far a plan is from the chip's limit.
 */
#ifndef TILECORE_COMPILER_ROOFLINE_H_
#define TILECORE_COMPILER_ROOFLINE_H_

#include <cstdint>
#include <string>

namespace tilecore {
namespace compiler {

struct RooflineBound {
  std::string engine;  // the engine whose peak bounds the compute: "mm" or "vec"
  double compute_cycles = 0;
  double memory_cycles = 0;
  double cycles() const { return compute_cycles > memory_cycles ? compute_cycles : memory_cycles; }
  const char* bound() const { return compute_cycles >= memory_cycles ? "compute" : "memory"; }
};

/*!
 * \brief The roofline of one op. `engine`: "mm" (the matrix engine) or "vec"; `precision`:
 * f32, f16, bf16 or int8 (the matrix peak); `output_bytes`: what one vector pass writes
 * (an op without MACs); `ddr_bytes` / `l2_bytes`: its inputs and outputs by level;
 * `group_rows`: for a grouped Conv on "mm", its output channels per group (0: not grouped).
 * ValueError for an unknown engine or precision, cores < 1 or negative group_rows.
 */
RooflineBound OpRoofline(const std::string& engine, uint64_t macs, const std::string& precision,
                         uint64_t output_bytes, uint64_t ddr_bytes, uint64_t l2_bytes, int cores,
                         int64_t group_rows = 0);

}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_COMPILER_ROOFLINE_H_
