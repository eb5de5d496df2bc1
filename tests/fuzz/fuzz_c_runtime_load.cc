// tests/fuzz/fuzz_c_runtime_load.cc — libFuzzer target over the C API's load path
// (c_runtime_api.h): TCRExecutableLoadMemory on the input sealed as a `.tcx` payload (as
// version 2 and as version 3) and on the input as a whole file, then every query on what
// loaded. Host code is refused through the load option (a `c` module's library would reach the
// system's dynamic loader). Expected: a status of kTCROk, kTCRFormatError or kTCRRefused with a
// message; anything else (another status, a crash, a sanitizer report, a hang) is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "seal_executable.h"
#include "tilecore/runtime/c_runtime_api.h"

namespace {

void Load(const std::string& file) {
  TCRLoadOptions options;
  TCRLoadOptionsInit(&options);
  options.refuse_host_code = 1;
  TCRExecutable* exe = nullptr;
  TCRStatus st = TCRExecutableLoadMemory(file.data(), file.size(), &options, &exe);
  if (st != kTCROk) {
    if ((st != kTCRFormatError && st != kTCRRefused) || exe != nullptr || !*TCRGetLastError())
      std::abort();
    return;
  }
  int32_t n_in = 0, n_out = 0;
  if (TCRExecutableNumInputs(exe, &n_in) != kTCROk ||
      TCRExecutableNumOutputs(exe, &n_out) != kTCROk)
    std::abort();
  for (int32_t i = 0; i < n_in + n_out; ++i) {
    TCRTensorInfo info;
    bool input = i < n_in;
    int32_t k = input ? i : i - n_in, found = -1;
    if ((input ? TCRExecutableInputInfo(exe, k, &info) : TCRExecutableOutputInfo(exe, k, &info)) !=
        kTCROk)
      std::abort();
    if ((input ? TCRExecutableFindInput(exe, info.name, &found)
               : TCRExecutableFindOutput(exe, info.name, &found)) != kTCROk)
      std::abort();
  }
  size_t length = 0;
  if (TCRExecutableStatsJSON(exe, nullptr, 0, &length) != kTCRInvalidArgument) std::abort();
  TCRExecutableFree(exe);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  Load(tilecore::fuzz::SealExecutable(in));
  Load(tilecore::fuzz::SealExecutable(in, tilecore::runtime::kExecutableBucketsVersion));
  Load(in);
  return 0;
}
