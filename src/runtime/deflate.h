// src/runtime/deflate.h — zlib's deflate for the modules of an executable with buckets
// (docs/executable.md, format version 3): TC1 programs and their line tables are repetitive,
// and the buckets of one model add their programs to one shared copy of the weights.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tilecore::runtime {

/// `data` deflated (zlib format, default level).
std::string DeflateBytes(std::string_view data);

/// The `raw_size` bytes that `deflated` inflates to. A ValueError starting with `where` when
/// the stream is malformed or inflates to another size, and before anything is allocated
/// when `raw_size` is more than deflate can produce from so few bytes (a bomb).
std::string InflateBytes(std::string_view deflated, uint64_t raw_size, const std::string& where);

}  // namespace tilecore::runtime
