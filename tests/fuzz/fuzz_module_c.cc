// tests/fuzz/fuzz_module_c.cc — libFuzzer target over c module payloads.
//
// Input: the payload of one c module (C source, shared library, its checksum, function
// names and parameters), wrapped in a module file with a correct file checksum. The
// library is dlopen'ed only if its own checksum matches, which random bytes do not reach:
// the target exercises everything a c module file is checked for before native code
// could run. Expected outcomes: a tilecore error (or, rarely, a Module).
#include <cstdint>
#include <string_view>

#include "fuzz_module_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  fuzz_module::Load(fuzz_module::FileAround(fuzz_module::OneModule("c", payload)));
  return 0;
}
