// src/sim/fault_text.h — how fault messages spell addresses, sizes and spaces, shared by
// the front end (issue.cc) and the machine (machine.cc) so every SimError reads alike.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "tilecore/arch/isa.h"

namespace tilecore::sim {

inline std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string size_text(uint64_t n) {
  if (n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n % (1 << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

inline std::string space_text(arch::Space s, int core) {
  std::string t(arch::space_name(s));
  if (s == arch::Space::L1) t += "[" + std::to_string(core) + "]";
  return t;
}

}  // namespace tilecore::sim
