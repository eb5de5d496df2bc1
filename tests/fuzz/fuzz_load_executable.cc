// tests/fuzz/fuzz_load_executable.cc — libFuzzer target over the `.tcx` loader.
//
// Input: an executable's payload (the file without its 32-byte header). The target seals it
// with a correct header (size and checksum), so the fuzzer reaches the parser and the
// validator instead of stopping at the checksum, and also loads the input as a whole file.
// Expected outcomes: an Executable or a ValueError; an Executable must save to the same
// bytes it was read from. Anything else (crash, other exception, sanitizer report, hang) is
// a bug. `c` modules are not loaded here: their payload holds a native library that only the
// checksum protects (a damaged one would reach the system's dynamic loader).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "seal_executable.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/runtime/executable.h"

using namespace tilecore;

namespace {
void Load(const std::string& file) {
  try {
    runtime::Executable e = runtime::Executable::LoadFromBytes(file);
    if (e.SaveToBytes() != file) std::abort();
  } catch (const ffi::Error& e) {
    if (e.kind() != "ValueError") std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ffi::Function::SetGlobal(
      "runtime.module.loadbinary_c", ffi::Function::FromPacked([](ffi::PackedArgs, ffi::Any*) {
        TILECORE_THROW(ValueError) << "c modules are not loaded by this fuzzer";
      }),
      /*allow_override=*/true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Load(fuzz::SealExecutable(in));
  Load(std::string(in));
  return 0;
}
