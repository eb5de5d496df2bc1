// tests/fuzz/fuzz_module_file.h — shared by the module-file fuzz targets: wraps fuzzer
// bytes in a module file with a correct checksum, so the fuzzer explores what the
// loaders parse after the checksum instead of stopping at it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tilecore/ffi/error.h"
#include "tilecore/runtime/module.h"

namespace fuzz_module {

inline std::string U32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xFF));
  return s;
}
inline std::string U64(uint64_t v) { return U32(uint32_t(v)) + U32(uint32_t(v >> 32)); }

// A module file (format version 2) around `body` (the module count onwards).
inline std::string FileAround(std::string_view body) {
  return std::string("TCMODULE") + U32(2) + U64(tilecore::runtime::ModuleChecksum(body)) +
         std::string(body);
}

// One module of `kind` whose payload is `payload`, importing nothing.
inline std::string OneModule(std::string_view kind, std::string_view payload) {
  return U32(1) + U32(uint32_t(kind.size())) + std::string(kind) + U32(uint32_t(payload.size())) +
         std::string(payload) + U32(0);
}

// Loads; a ValueError/TypeError (a refused file) is the expected outcome for most inputs.
inline void Load(std::string_view file) {
  try {
    tilecore::runtime::Module m = tilecore::runtime::Module::LoadFromBytes(file);
    (void)m->imports.size();
  } catch (const tilecore::ffi::Error&) {
  }
}

}  // namespace fuzz_module
