// src/runtime/sha256.h — SHA-256 (FIPS 180-4), for the load option that names the executable
// a deployer expects by its hash (docs/deploy.md, "Security"). The same digest as
// `sha256sum FILE` and Python's hashlib.sha256.
#pragma once

#include <string>
#include <string_view>

namespace tilecore::runtime {

/// The SHA-256 of `data` as 64 lowercase hexadecimal digits.
std::string Sha256Hex(std::string_view data);

/// ValueError unless `hex` is 64 hexadecimal digits (either case), naming `what`.
void CheckSha256Digits(const std::string& hex, const char* what);

}  // namespace tilecore::runtime
