// src/ffi/file.cc — whole-file reads of regular files only, and atomic writes.
#include "tilecore/ffi/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "tilecore/ffi/error.h"

namespace tilecore {
namespace ffi {
namespace {

std::string Why() { return std::strerror(errno); }

/*! \brief Writes all of `bytes` to `fd`; false (errno set) on failure. */
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

}  // namespace

uint64_t CheckRegularFile(const std::string& path, uint64_t max_bytes, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    TILECORE_THROW(OSError) << "cannot open " << what << " `" << path << "`: " << Why();
  if (!S_ISREG(st.st_mode)) {
    TILECORE_THROW(ValueError) << path << ": not a regular file (" << what
                               << " is read from a regular file)";
  }
  if (uint64_t(st.st_size) > max_bytes) {
    TILECORE_THROW(ValueError) << path << ": " << st.st_size << " bytes is larger than " << what
                               << " can be (" << max_bytes << " bytes)";
  }
  return uint64_t(st.st_size);
}

std::string ReadRegularFile(const std::string& path, uint64_t max_bytes, std::string_view what) {
  uint64_t size = CheckRegularFile(path, max_bytes, what);
  // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) TILECORE_THROW(OSError) << "cannot open " << what << " `" << path << "`: " << Why();
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TILECORE_THROW(ValueError) << path << ": not a regular file (" << what
                               << " is read from a regular file)";
  }
  // Read at most the size seen by the check: a file that grows meanwhile is not followed.
  std::string data(size_t(size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = Why();
      ::close(fd);
      TILECORE_THROW(OSError) << "reading " << what << " `" << path << "` failed: " << why;
    }
    if (n == 0) break;
    got += size_t(n);
  }
  ::close(fd);
  data.resize(got);
  return data;
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or FIFO is written in place; renaming over it would replace the node.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) TILECORE_THROW(OSError) << "cannot open `" << path << "` for writing: " << Why();
    bool ok = WriteAll(fd, bytes);
    std::string why = ok ? "" : Why();
    if (::close(fd) != 0 && ok) ok = false, why = Why();
    if (!ok) TILECORE_THROW(OSError) << "writing `" << path << "` failed: " << why;
    return;
  }
  // Through a symlink the file it names is replaced, not the link.
  std::string target = path;
  if (exists) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  }
  std::string tmp = target + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) TILECORE_THROW(OSError) << "cannot open `" << path << "` for writing: " << Why();
  // mkstemp creates 0600; a new file gets the usual mode (0666 less the umask), an
  // existing one keeps its own.
  mode_t mode = exists ? (st.st_mode & 07777) : 0;
  if (!exists) {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  bool ok = WriteAll(fd, bytes);
  std::string why = ok ? "" : Why();
  if (::close(fd) != 0 && ok) ok = false, why = Why();
  if (ok && ::rename(tmp.c_str(), target.c_str()) != 0) ok = false, why = Why();
  if (!ok) {
    ::unlink(tmp.c_str());
    TILECORE_THROW(OSError) << "writing `" << path << "` failed: " << why;
  }
}

}  // namespace ffi
}  // namespace tilecore
