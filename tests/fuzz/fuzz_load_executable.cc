// tests/fuzz/fuzz_load_executable.cc — libFuzzer target over the `.tcx` loader.
//
// Input: an executable's payload (the file without its 32-byte header). The target seals it
// with a correct header (size and checksum) as version 2 and as version 3 (buckets), so the
// fuzzer reaches the parser and the validator instead of stopping at the checksum, and also
// loads the input as a whole file. Expected outcomes: an Executable or a ValueError; an
// Executable must save to the same bytes it was read from, except a version 3 file, whose
// bytes are canonical only once saved (a module deflated by another zlib, a constant's bytes
// held twice or by no bucket): what it saves must load and save to the same bytes. Anything
// else (crash, other exception, sanitizer report, hang) is a bug. `c` modules are not loaded
// here: their payload holds a native library that only the checksum protects (a damaged one
// would reach the system's dynamic loader).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "seal_executable.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/runtime/executable.h"

using namespace tilecore;

namespace {
uint32_t Version(const std::string& file) {
  uint32_t v = 0;
  if (file.size() >= 12) std::memcpy(&v, file.data() + 8, 4);
  return v;
}

void Load(const std::string& file) {
  std::string saved;
  try {
    saved = runtime::Executable::LoadFromBytes(file).SaveToBytes();
  } catch (const ffi::Error& e) {
    if (e.kind() != "ValueError") std::abort();
    return;
  }
  if (saved == file) return;
  if (Version(file) != runtime::kExecutableBucketsVersion) std::abort();
  try {
    if (runtime::Executable::LoadFromBytes(saved).SaveToBytes() != saved) std::abort();
  } catch (const ffi::Error&) {
    std::abort();  // what was saved does not load
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
  Load(fuzz::SealExecutable(in, runtime::kExecutableBucketsVersion));
  Load(std::string(in));
  return 0;
}
