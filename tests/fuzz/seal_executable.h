// tests/fuzz/seal_executable.h — wraps fuzz input as a `.tcx` payload with a correct header
// (size and checksum), so that a target reaches the parser and the validator instead of
// stopping at the checksum. `version` chooses the payload's layout: 2 (one program) or 3
// (buckets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tilecore/runtime/executable.h"
#include "tilecore/runtime/module.h"

namespace tilecore::fuzz {

inline uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h;
}

inline std::string SealExecutable(std::string_view payload,
                                  uint32_t version = runtime::kExecutableVersion) {
  runtime::ByteWriter h;
  h.u32(version);
  h.u32(0);
  h.u64(payload.size());
  h.u64(Fnv1a(payload));
  return std::string(runtime::kExecutableMagic, 8) + h.data() + std::string(payload);
}

}  // namespace tilecore::fuzz
