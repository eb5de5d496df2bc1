/*
 * src/ffi/library.cc — loading extension libraries whose static initialisers
 * register global functions (ffi.LoadLibrary).
 */
#include <dlfcn.h>

#include <string>

#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {

TILECORE_REGISTER_GLOBAL("ffi.LoadLibrary").set_body_typed([](std::string path) {
  // Drop errors from earlier loads so each load reports only its own.
  TakePendingRegistrationErrors();
  // RTLD_GLOBAL: an extension's symbols must be visible to libraries loaded after it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    TILECORE_THROW(OSError) << "Cannot load library `" << path << "`: " << (why ? why : "unknown error");
  }
  std::vector<std::string> errors = TakePendingRegistrationErrors();
  if (!errors.empty()) {
    std::string all;
    for (const std::string& e : errors) all += "\n  " + e;
    TILECORE_THROW(ValueError) << "Library `" << path << "` registered functions that clash:" << all;
  }
});

}  // namespace ffi
}  // namespace tilecore
