/*
 * src/ffi/library.cc — loading extension libraries whose static initialisers
 * register global functions (ffi.LoadLibrary).
 */
#include <dlfcn.h>
#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tilecore/ffi/file.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {

namespace {

/*!
 * \brief Whether the ELF file at `path` defines (not just uses) `symbol` in its dynamic
 *  symbol table. Read from the file, so nothing of it runs; false for anything unreadable.
 */
bool DefinesDynamicSymbol(const std::string& path, const char* symbol) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::vector<char> d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto fits = [&](uint64_t off, uint64_t len) { return off <= d.size() && len <= d.size() - off; };
  if (!fits(0, sizeof(Elf64_Ehdr)) || std::memcmp(d.data(), ELFMAG, SELFMAG) != 0 ||
      d[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, d.data(), sizeof(eh));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr))) {
    return false;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, d.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sym = section(i);
    if (sym.sh_type != SHT_DYNSYM || sym.sh_link >= eh.e_shnum || !fits(sym.sh_offset, sym.sh_size))
      continue;
    Elf64_Shdr str = section(sym.sh_link);
    if (!fits(str.sh_offset, str.sh_size)) continue;
    for (uint64_t k = 0; k + sizeof(Elf64_Sym) <= sym.sh_size; k += sizeof(Elf64_Sym)) {
      Elf64_Sym s;
      std::memcpy(&s, d.data() + sym.sh_offset + k, sizeof(s));
      if (s.st_shndx == SHN_UNDEF || s.st_name >= str.sh_size) continue;
      const char* name = d.data() + str.sh_offset + s.st_name;
      if (strnlen(name, str.sh_size - s.st_name) == std::strlen(symbol) &&
          std::strcmp(name, symbol) == 0)
        return true;
    }
  }
  return false;
}

}  // namespace

TILECORE_REGISTER_GLOBAL("ffi.LoadLibrary").set_body_typed([](std::string path) {
  // Drop errors from earlier loads so each load reports only its own.
  TakePendingRegistrationErrors();
  // A path (not a name dlopen searches for) must be a regular file: reading a device or a
  // FIFO for its ELF header would never end.
  if (path.find('/') != std::string::npos) {
    CheckRegularFile(path, uint64_t(1) << 32, "a shared library");
  }
  // A library already in the process (libtilecore itself, or an extension loaded before) is
  // not opened again: its registrations are there.
  if (void* loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(loaded);
    return;
  }
  // Another copy of libtilecore would run its static initialisers against a second type
  // table and registry: refuse it before it runs (libtilecore defines the C ABI; an
  // extension only uses it).
  if (DefinesDynamicSymbol(path, "TCFFIObjectIncRef")) {
    TILECORE_THROW(ValueError)
        << "Cannot load library `" << path
        << "`: it is another copy of libtilecore (defines the tilecore C ABI); a process "
           "holds one libtilecore, and it is already loaded";
  }
  // RTLD_GLOBAL: an extension's symbols must be visible to libraries loaded after it.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    TILECORE_THROW(OSError) << "Cannot load library `" << path
                            << "`: " << (why ? why : "unknown error");
  }
  std::vector<std::string> errors = TakePendingRegistrationErrors();
  if (!errors.empty()) {
    std::string all;
    for (const std::string& e : errors) all += "\n  " + e;
    TILECORE_THROW(ValueError) << "Library `" << path
                               << "` registered functions that clash:" << all;
  }
});

}  // namespace ffi
}  // namespace tilecore
