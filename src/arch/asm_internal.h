// src/arch/asm_internal.h — what the assembler's parts share (not installed).
//
// assembler.cc owns lines, labels, sections and instructions; the descriptor
// directives (asm_descriptors.cc) see the assembler only through AsmContext:
// expression evaluation and error reporting with the current line.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilecore::arch {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

inline bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}
inline bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

class AsmContext {
 public:
  virtual ~AsmContext() = default;
  /// Throws AsmError for the current line.
  [[noreturn]] virtual void error(const std::string& msg) const = 0;
  virtual int64_t eval(std::string_view expr) const = 0;
  virtual double eval_float(std::string_view expr) const = 0;
  /// Splits at top-level commas.
  virtual std::vector<std::string_view> split(std::string_view s) const = 0;
  /// False on the sizing pass, where undefined symbols read as 0.
  virtual bool is_final() const = 0;
};

std::vector<uint8_t> assemble_dmadesc(const AsmContext& as, std::string_view rest);
std::vector<uint8_t> assemble_vecdesc(const AsmContext& as, std::string_view rest);
std::vector<uint8_t> assemble_mmdesc(const AsmContext& as, std::string_view rest);

}  // namespace tilecore::arch
