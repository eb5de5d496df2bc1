// include/tilecore/arch/program.h — a TC1 program: code per core and initial data.
//
// A program has text sections (instruction words run by the cores named in the
// section's core mask; each core runs at most one section, from its first word)
// and data segments (bytes the loader writes before the run). A data segment in
// l1 is written to the L1 of every core in its mask; ddr and l2 segments are
// global and carry mask 0.
//
// Binary image (little-endian), what to_bytes() writes and from_bytes() checks:
//   "TC1P" u32 version=1 u32 n_text u32 n_data
//   n_text x { u32 core_mask, u32 n_words, u64 words[n_words] }
//   n_data x { u32 core_mask, u8 space, u8 0, u8 0, u8 0, u64 addr, u32 n_bytes, bytes }
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tilecore/arch/asm_error.h"
#include "tilecore/arch/isa.h"

namespace tilecore::arch {

inline constexpr uint32_t kAllCoresMask = 0xFFFF;

struct TextSection {
  uint32_t core_mask = 0;
  std::vector<uint64_t> words;
  /// Source line of each word (1-based), when assembled from text; empty otherwise.
  std::vector<int> lines;
  bool operator==(const TextSection& o) const {
    return core_mask == o.core_mask && words == o.words;
  }
};

struct DataSegment {
  uint32_t core_mask = 0;
  Space space = Space::DDR;
  uint64_t addr = 0;
  std::vector<uint8_t> bytes;
  bool operator==(const DataSegment&) const = default;
};

class Program {
 public:
  std::vector<TextSection> text;
  std::vector<DataSegment> data;

  /// The section core `core` runs, or nullptr.
  const TextSection* text_for_core(int core) const;

  std::vector<uint8_t> to_bytes() const;
  /// Throws ProgramFormatError on a malformed image (never reads out of bounds).
  static Program from_bytes(std::span<const uint8_t> bytes);

  bool operator==(const Program& o) const { return text == o.text && data == o.data; }
};

}  // namespace tilecore::arch
