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

inline std::string SealExecutable(std::string_view payload,
                                  uint32_t version = runtime::kExecutableVersion) {
  runtime::ByteWriter h;
  h.u32(version);
  h.u32(runtime::kExecutableWordChecksum);  // (as tilecore writes it)
  h.u64(payload.size());
  h.u64(runtime::ExecutableChecksum(payload));
  return std::string(runtime::kExecutableMagic, 8) + h.data() + std::string(payload);
}

}  // namespace tilecore::fuzz
