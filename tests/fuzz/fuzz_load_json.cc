// tests/fuzz/fuzz_load_json.cc — libFuzzer target over the JSON IR loader (LoadJSON).
//
// Input: JSON text, as a user's saved IR file. Expected outcomes: a value, or a tilecore
// error naming the node and field. A value must save, load again and be
// structurally equal to what was loaded (its free variables mapped); anything else (a
// crash, a sanitizer report, a huge allocation, a hang, a failed round trip) is a bug.
// The IR layer's kinds and load checks are linked in, so mutations reach them.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/serialization.h"
#include "tilecore/ffi/structural.h"

using namespace tilecore;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ffi::Any loaded;
  try {
    loaded = ffi::LoadJSON(text);
  } catch (const ffi::Error&) {
    return 0;
  }
  std::string saved = ffi::SaveJSON(loaded);
  ffi::Any again = ffi::LoadJSON(saved);
  if (!ffi::StructuralEqual(loaded, again, /*map_free_vars=*/true)) std::abort();
  return 0;
}
