// src/runtime/deflate.cc — deflate and a bounded inflate over zlib.
#include "deflate.h"

#include <zlib.h>

#include <climits>

#include "tilecore/ffi/error.h"

namespace tilecore::runtime {
namespace {
// Deflate's largest expansion is 1032:1 (a run of one byte); anything claiming more is forged.
constexpr uint64_t kMaxRatio = 1032;
constexpr uint64_t kMaxRaw = uint64_t{1} << 32;
}  // namespace

std::string DeflateBytes(std::string_view data) {
  uLongf bound = compressBound(uLong(data.size()));
  std::string out(bound, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &bound,
                     reinterpret_cast<const Bytef*>(data.data()), uLong(data.size()),
                     Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) TILECORE_THROW(InternalError) << "deflate failed (zlib status " << rc << ")";
  out.resize(bound);
  return out;
}

std::string InflateBytes(std::string_view deflated, uint64_t raw_size, const std::string& where) {
  if (raw_size > kMaxRaw || raw_size > kMaxRatio * deflated.size() + 64) {
    TILECORE_THROW(ValueError) << where << ": " << deflated.size()
                               << " deflated bytes cannot hold the " << raw_size
                               << " bytes announced";
  }
  std::string out(raw_size, '\0');
  z_stream z{};
  if (inflateInit(&z) != Z_OK) TILECORE_THROW(InternalError) << "inflateInit failed";
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflated.data()));
  z.avail_in = uInt(std::min<size_t>(deflated.size(), UINT_MAX));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(std::min<uint64_t>(raw_size, UINT_MAX));
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  bool whole_input = z.avail_in == 0;
  inflateEnd(&z);
  if (rc == Z_BUF_ERROR && produced == raw_size) {  // room for no more: the stream is longer
    TILECORE_THROW(ValueError) << where << ": the deflated bytes inflate to more than the "
                               << raw_size << " bytes announced";
  }
  if (rc != Z_STREAM_END || produced != raw_size || !whole_input) {
    TILECORE_THROW(ValueError) << where << ": the deflated bytes "
                               << (rc == Z_STREAM_END ? "inflate to " + std::to_string(produced) +
                                                            " bytes, not the " +
                                                            std::to_string(raw_size) + " announced"
                                                      : std::string("are malformed (zlib status ") +
                                                            std::to_string(rc) + ")");
  }
  return out;
}

}  // namespace tilecore::runtime
