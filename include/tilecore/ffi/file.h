/*
 * include/tilecore/ffi/file.h — reading and writing whole files that come from, or go to,
 * a user: every file tilecore parses is a regular file read to a known size (a device or a
 * FIFO would stream without end or block), and every file it writes replaces the old one
 * only once complete.
 */
#ifndef TILECORE_FFI_FILE_H_
#define TILECORE_FFI_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tilecore {
namespace ffi {

/*!
 * \brief Checks that `path` names a regular file (following symlinks) of at most
 *  `max_bytes` bytes and returns its size. `what` names the file's kind in messages
 *  ("an executable"). OSError when it cannot be read; ValueError naming the path for
 *  a device, FIFO, socket or folder, or a file that is too large.
 */
uint64_t CheckRegularFile(const std::string& path, uint64_t max_bytes, std::string_view what);

/*! \brief The bytes of the regular file `path` (CheckRegularFile, then one read). */
std::string ReadRegularFile(const std::string& path, uint64_t max_bytes, std::string_view what);

/*!
 * \brief Writes `bytes` to `path`: to a temporary file beside it, then renamed over it, so
 *  an interrupted or failed write leaves the old file whole. A path that exists and is not
 *  a regular file (/dev/null, a FIFO) is written in place. OSError naming the path on any
 *  failure (a full disk included).
 */
void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_FILE_H_
