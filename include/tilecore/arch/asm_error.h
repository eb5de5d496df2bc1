// include/tilecore/arch/asm_error.h — errors of the assembler and of program images.
#pragma once

#include <stdexcept>
#include <string>

namespace tilecore::arch {

/// A mistake in assembly source. what() reads "line N: message (in `source`)".
class AsmError : public std::runtime_error {
 public:
  AsmError(int line, std::string message, std::string source_line)
      : std::runtime_error(render(line, message, source_line)),
        line_(line),
        message_(std::move(message)),
        source_line_(std::move(source_line)) {}
  int line() const { return line_; }
  const std::string& message() const { return message_; }
  const std::string& source_line() const { return source_line_; }

 private:
  static std::string render(int line, const std::string& m, const std::string& src) {
    std::string s = "line " + std::to_string(line) + ": " + m;
    if (!src.empty()) s += " (in `" + src + "`)";
    return s;
  }
  int line_;
  std::string message_, source_line_;
};

/// A malformed binary program image (Program::from_bytes); names the byte offset.
class ProgramFormatError : public std::runtime_error {
 public:
  ProgramFormatError(size_t offset, const std::string& message)
      : std::runtime_error("program image, byte " + std::to_string(offset) + ": " + message),
        offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

}  // namespace tilecore::arch
