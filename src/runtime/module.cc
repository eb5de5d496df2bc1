// src/runtime/module.cc — Module lookup, imports, the module file format, and `runtime.Module*`.
#include "tilecore/runtime/module.h"

#include <algorithm>
#include <cstring>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/file.h"

namespace tilecore::runtime {
namespace {
constexpr char kMagic[8] = {'T', 'C', 'M', 'O', 'D', 'U', 'L', 'E'};
// Version 2 added the checksum of everything after it, checked before any payload is
// handed to its loader (which may map it or dlopen it).
constexpr uint32_t kVersion = 2;
constexpr uint32_t kMaxModules = 1 << 16;
// Module files are read whole; a larger file is refused before it is read.
constexpr uint64_t kMaxFileBytes = uint64_t(1) << 31;

// True if `to` is `from` or reachable from it through imports (iterative, visits each once).
bool Reaches(const Module& from, const Module& to) {
  std::vector<Module> stack{from};
  std::vector<const ModuleObj*> seen;
  while (!stack.empty()) {
    Module m = stack.back();
    stack.pop_back();
    if (m.same_as(to)) return true;
    if (std::find(seen.begin(), seen.end(), m.get()) != seen.end()) continue;
    seen.push_back(m.get());
    for (const Module& i : m->imports) stack.push_back(i);
  }
  return false;
}
}  // namespace

uint64_t ModuleChecksum(std::string_view bytes) {
  // FNV-1a, 64 bits: detects any single-bit flip and truncation; not a defence against
  // deliberate tampering (a module file is trusted code).
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string ModuleNode::GetSource(const std::string& format) const { return ""; }

std::string ModuleNode::SaveToBytes() const {
  TILECORE_THROW(NotImplementedError) << "a `" << kind() << "` module cannot be saved";
}

ModuleObj::ModuleObj(std::unique_ptr<ModuleNode> n) : node(std::move(n)) {}
ModuleObj::~ModuleObj() = default;

Module::Module(std::unique_ptr<ModuleNode> node)
    : Module(ffi::make_object<ModuleObj>(std::move(node))) {}

std::optional<ffi::Function> Module::GetFunction(const std::string& name,
                                                 bool query_imports) const {
  if (auto f = node()->GetFunction(name, *this)) return f;
  if (!query_imports) return std::nullopt;
  // Depth-first over the import DAG, iteratively and visiting each module once, so a
  // long import chain cannot exhaust the C stack.
  std::vector<Module> stack(get()->imports.rbegin(), get()->imports.rend());
  std::vector<const ModuleObj*> seen{get()};
  while (!stack.empty()) {
    Module m = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), m.get()) != seen.end()) continue;
    seen.push_back(m.get());
    if (auto f = m.node()->GetFunction(name, m)) return f;
    for (auto it = m->imports.rbegin(); it != m->imports.rend(); ++it) stack.push_back(*it);
  }
  return std::nullopt;
}

void Module::Import(const Module& other) const {
  if (!other.defined()) TILECORE_THROW(TypeError) << "import_module: expected a Module, got None";
  if (other.same_as(*this)) TILECORE_THROW(ValueError) << "a module cannot import itself";
  for (const Module& i : get()->imports) {
    if (i.same_as(other)) return;  // already imported: importing again changes nothing
  }
  if (Reaches(other, *this)) {
    TILECORE_THROW(ValueError) << "import_module: the `" << other.node()->kind()
                               << "` module already imports this `" << node()->kind()
                               << "` module (directly or indirectly); imports cannot form a cycle";
  }
  mut()->imports.push_back(other);
}

// ---- bytes -------------------------------------------------------------------------------
void ByteWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(char((v >> (8 * i)) & 0xFF));
}
void ByteWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(char((v >> (8 * i)) & 0xFF));
}
void ByteWriter::str(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

void ByteReader::fail(const std::string& message) const {
  TILECORE_THROW(ValueError) << what_ << ", byte " << pos_ << ": " << message;
}
void ByteReader::need(size_t n) {
  if (data_.size() - pos_ < n) {
    fail("truncated (need " + std::to_string(n) + " bytes, " + std::to_string(data_.size() - pos_) +
         " left)");
  }
}
uint32_t ByteReader::u32() {
  need(4);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(data_[pos_ + i])) << (8 * i);
  pos_ += 4;
  return v;
}
uint64_t ByteReader::u64() {
  need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(data_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return v;
}
std::string ByteReader::str() {
  uint32_t n = u32();
  need(n);
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}
uint32_t ByteReader::count(uint64_t limit, uint64_t min_item_bytes) {
  uint32_t n = u32();
  if (n > limit) fail("count " + std::to_string(n) + " exceeds the limit " + std::to_string(limit));
  if (min_item_bytes > 0 && n > left() / min_item_bytes) {
    fail("count " + std::to_string(n) + " needs at least " +
         std::to_string(uint64_t(n) * min_item_bytes) + " bytes, only " + std::to_string(left()) +
         " left");
  }
  return n;
}

// ---- files ---------------------------------------------------------------------------------
namespace {
void Collect(const Module& m, std::vector<Module>* order) {
  for (const Module& o : *order) {
    if (o.same_as(m)) return;
  }
  order->push_back(m);
  for (const Module& i : m->imports) Collect(i, order);
}
}  // namespace

std::string Module::SaveToBytes() const {
  std::vector<Module> order;
  Collect(*this, &order);
  ByteWriter w;
  std::string head(kMagic, 8);
  w.u32(static_cast<uint32_t>(order.size()));
  for (const Module& m : order) {
    w.str(m.node()->kind());
    w.str(m.node()->SaveToBytes());
    w.u32(static_cast<uint32_t>(m->imports.size()));
    for (const Module& i : m->imports) {
      for (size_t k = 0; k < order.size(); ++k) {
        if (order[k].same_as(i)) w.u32(static_cast<uint32_t>(k));
      }
    }
  }
  ByteWriter h;
  h.u32(kVersion);
  h.u64(ModuleChecksum(w.data()));
  return head + h.data() + w.data();
}

Module Module::LoadFromBytes(std::string_view bytes, bool allow_host_code) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    TILECORE_THROW(ValueError) << "not a tilecore module file (the magic \"TCMODULE\" is missing)";
  }
  ByteReader r(bytes.substr(8), "module file");
  uint32_t version = r.u32();
  if (version != kVersion) {
    r.fail("unsupported version " + std::to_string(version) + " (this tilecore reads version " +
           std::to_string(kVersion) + ")");
  }
  uint64_t sum = r.u64();
  if (ModuleChecksum(bytes.substr(8 + r.pos())) != sum) {
    r.fail("checksum mismatch: the file is corrupted (nothing in it was loaded)");
  }
  uint32_t n = r.count(kMaxModules, 12);
  if (n == 0) r.fail("the file holds no module");
  std::vector<Module> mods;
  std::vector<std::vector<uint32_t>> imports(n);
  for (uint32_t k = 0; k < n; ++k) {
    std::string kind = r.str();
    std::string payload = r.str();
    if (!allow_host_code && kind != "npu") {
      TILECORE_THROW(PermissionError)
          << "module " << k << " is of kind `" << kind
          << "`, which holds host code (loading it would run a shared library), and the load "
             "options refuse host code";
    }
    auto loader = ffi::Function::GetGlobal("runtime.module.loadbinary_" + kind);
    if (!loader) {
      r.fail("no loader for module kind `" + kind +
             "` (is its library loaded, or was tilecore built without it?)");
    }
    // A loader registered by a user may return anything: name it.
    ffi::Any loaded = (*loader)(ffi::Bytes(payload));
    std::optional<Module> mod = loaded.try_cast<Module>();
    if (!mod || !mod->defined()) {
      r.fail("the loader runtime.module.loadbinary_" + kind + " returned `" + loaded.GetTypeKey() +
             "`, expected `runtime.Module`");
    }
    mods.push_back(*std::move(mod));
    uint32_t ni = r.count(n);
    for (uint32_t i = 0; i < ni; ++i) {
      uint32_t idx = r.u32();
      if (idx >= n || idx == k) r.fail("bad import index " + std::to_string(idx));
      if (std::find(imports[k].begin(), imports[k].end(), idx) != imports[k].end()) {
        r.fail("module " + std::to_string(k) + " imports module " + std::to_string(idx) + " twice");
      }
      imports[k].push_back(idx);
    }
  }
  if (!r.at_end()) r.fail("trailing bytes after the last module");
  // Imports must form a DAG: a cycle would make every lookup of a missing name loop.
  std::vector<int> state(n, 0);  // 0 new, 1 on the path, 2 done
  for (uint32_t root = 0; root < n; ++root) {
    if (state[root] != 0) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      if (next == imports[k].size()) {
        state[k] = 2;
        stack.pop_back();
        continue;
      }
      uint32_t i = imports[k][next++];
      if (state[i] == 1)
        r.fail("module imports form a cycle (through module " + std::to_string(i) + ")");
      if (state[i] == 0) {
        state[i] = 1;
        stack.push_back({i, 0});
      }
    }
  }
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t i : imports[k]) mods[k].mut()->imports.push_back(mods[i]);
  }
  return mods[0];
}

void Module::SaveToFile(const std::string& path) const {
  ffi::WriteFileAtomically(path, SaveToBytes());
}

Module Module::LoadFromFile(const std::string& path) {
  std::string data = ffi::ReadRegularFile(path, kMaxFileBytes, "a module file");
  try {
    return LoadFromBytes(data);
  } catch (const ffi::Error& e) {
    if (e.kind() != "ValueError") throw;
    TILECORE_THROW(ValueError) << path << ": " << e.message();
  }
}

// ---- registry ------------------------------------------------------------------------------
TILECORE_REGISTER_GLOBAL("runtime.ModuleGetFunction")
    .set_body_typed([](Module m, std::string name, bool query_imports) -> ffi::Any {
      if (auto f = m.GetFunction(name, query_imports)) return ffi::Any(*f);
      return ffi::Any();
    });
TILECORE_REGISTER_GLOBAL("runtime.ModuleListFunctions").set_body_typed([](Module m) {
  ffi::Array<ffi::String> out;
  for (const std::string& n : m.node()->ListFunctions()) out.push_back(ffi::String(n));
  return out;
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleGetSource").set_body_typed([](Module m, std::string fmt) {
  return ffi::String(m.node()->GetSource(fmt));
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleKind").set_body_typed([](Module m) {
  return ffi::String(m.node()->kind());
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleInfo").set_body_typed([](Module m) {
  return m.node()->Info();
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleImports").set_body_typed([](Module m) {
  ffi::Array<Module> out;
  for (const Module& i : m->imports) out.push_back(i);
  return out;
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleImport").set_body_typed([](Module m, Module other) {
  m.Import(other);
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleSaveToFile").set_body_typed([](Module m, std::string path) {
  m.SaveToFile(path);
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleLoadFromFile").set_body_typed([](std::string path) {
  return Module::LoadFromFile(path);
});
TILECORE_REGISTER_GLOBAL("runtime.ModuleSaveToBytes").set_body_typed([](Module m) {
  return ffi::Bytes(m.SaveToBytes());
});

}  // namespace tilecore::runtime
