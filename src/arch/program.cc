// src/arch/program.cc — Program lookup and the binary image format.
#include "tilecore/arch/program.h"

#include <cstring>

namespace tilecore::arch {

namespace {

constexpr uint32_t kMagic = 0x50314354;  // "TC1P"
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(uint64_t n, const char* what) {
    if (n > b_.size() - pos_)
      throw ProgramFormatError(pos_, std::string("truncated ") + what + " (need " +
                                         std::to_string(n) + " bytes, " +
                                         std::to_string(b_.size() - pos_) + " left)");
  }
  const uint8_t* take(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

}  // namespace

const TextSection* Program::text_for_core(int core) const {
  for (const auto& t : text)
    if (core >= 0 && core < 32 && (t.core_mask >> core & 1)) return &t;
  return nullptr;
}

std::vector<uint8_t> Program::to_bytes() const {
  std::vector<uint8_t> out;
  put(out, kMagic);
  put(out, kVersion);
  put(out, uint32_t(text.size()));
  put(out, uint32_t(data.size()));
  for (const auto& t : text) {
    put(out, t.core_mask);
    put(out, uint32_t(t.words.size()));
    for (uint64_t w : t.words) put(out, w);
  }
  for (const auto& d : data) {
    put(out, d.core_mask);
    put(out, uint8_t(d.space));
    put(out, uint8_t(0));
    put(out, uint16_t(0));
    put(out, d.addr);
    put(out, uint32_t(d.bytes.size()));
    out.insert(out.end(), d.bytes.begin(), d.bytes.end());
  }
  return out;
}

Program Program::from_bytes(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  if (r.get<uint32_t>("header") != kMagic)
    throw ProgramFormatError(0, "not a TC1 program (bad magic)");
  uint32_t version = r.get<uint32_t>("header");
  if (version != kVersion)
    throw ProgramFormatError(4, "unsupported version " + std::to_string(version));
  uint32_t n_text = r.get<uint32_t>("header"), n_data = r.get<uint32_t>("header");
  Program p;
  uint32_t seen = 0;
  for (uint32_t i = 0; i < n_text; ++i) {
    size_t at = r.pos();
    TextSection t;
    t.core_mask = r.get<uint32_t>("text section");
    if (t.core_mask & ~kAllCoresMask)
      throw ProgramFormatError(at, "core mask names a core above 15");
    if (t.core_mask & seen) throw ProgramFormatError(at, "two text sections for the same core");
    seen |= t.core_mask;
    uint32_t n = r.get<uint32_t>("text section");
    r.need(uint64_t(n) * 8, "text words");
    t.words.resize(n);
    const uint8_t* src = r.take(uint64_t(n) * 8, "text words");
    if (n) std::memcpy(t.words.data(), src, size_t(n) * 8);
    p.text.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < n_data; ++i) {
    size_t at = r.pos();
    DataSegment d;
    d.core_mask = r.get<uint32_t>("data segment");
    uint8_t space = r.get<uint8_t>("data segment");
    r.get<uint8_t>("data segment");
    r.get<uint16_t>("data segment");
    if (space >= kNumSpaces)
      throw ProgramFormatError(at, "bad space code " + std::to_string(space));
    d.space = Space(space);
    if (d.core_mask & ~kAllCoresMask)
      throw ProgramFormatError(at, "core mask names a core above 15");
    d.addr = r.get<uint64_t>("data segment");
    uint32_t n = r.get<uint32_t>("data segment");
    const uint8_t* src = r.take(n, "data bytes");
    d.bytes.assign(src, src + n);
    p.data.push_back(std::move(d));
  }
  if (r.left() != 0) throw ProgramFormatError(r.pos(), "trailing bytes after the last segment");
  return p;
}

}  // namespace tilecore::arch
