// tests/fuzz/fuzz_module_npu.cc — libFuzzer target over npu module files.
//
// Input: the first byte picks what the rest is: even, the body of a module file (module
// count onwards: kinds, payloads, imports); odd, the payload of one npu module (kernels,
// program images, parameters, line tables). Both are wrapped with a correct checksum.
// Expected outcomes: a Module or a tilecore error; anything else (a crash, a sanitizer
// report, a huge allocation, a hang) is a bug.
#include <cstdint>
#include <string_view>

#include "fuzz_module_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzz_module::Load(fuzz_module::FileAround(rest));
  } else {
    fuzz_module::Load(fuzz_module::FileAround(fuzz_module::OneModule("npu", rest)));
  }
  // The file as given, checksum and all (the header checks).
  fuzz_module::Load(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
