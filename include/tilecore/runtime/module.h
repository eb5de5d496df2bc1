// include/tilecore/runtime/module.h — Module: compiled code with named functions.
//
// A Module is what codegen produces and what the runtime runs: `npu` modules hold
// TC1 programs (run on the simulator), `c` modules hold C source and the shared
// library compiled from it. Every module can
//   - GetFunction(name): a Function (PackedFunc) taking NDArrays (or numpy arrays,
//     which cross as host NDArrays) and scalars;
//   - GetSource(fmt): assembly for npu, C for c;
//   - be saved to a file and loaded back (SaveToFile / LoadFromFile), with the
//     modules it imports.
//
// File format (little-endian), checked field by field on load:
//   "TCMODULE" u32 version=1 u32 n_modules
//   n_modules x { str kind, bytes payload, u32 n_imports, u32 import_index[n_imports] }
//   str = u32 length + bytes. Module 0 is the root. Module kind K is loaded by the
//   global function `runtime.module.loadbinary_<K>(bytes) -> Module`, so a kind added
//   out of tree saves and loads the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/string.h"

namespace tilecore::runtime {

class Module;

/// What a kind of module does. A plain polymorphic class (not an Object: FFI
/// objects keep their header at offset 0 and so have no virtual functions); the
/// FFI object ModuleObj owns one.
struct KernelParam;

class ModuleNode {
 public:
  virtual ~ModuleNode() = default;
  /// "npu", "c", ...: the loader `runtime.module.loadbinary_<kind>` reads SaveToBytes().
  virtual std::string kind() const = 0;
  /// The function `name` of this module (not its imports), or nullopt. `self` is the
  /// module holding this node, for the Function to keep alive.
  virtual std::optional<ffi::Function> GetFunction(const std::string& name, const Module& self) = 0;
  virtual std::vector<std::string> ListFunctions() const = 0;
  /// Source in `format` ("" = the module's own: "asm" for npu, "c" for c).
  virtual std::string GetSource(const std::string& format) const;
  /// The payload written to files; NotImplementedError for kinds that cannot be saved.
  virtual std::string SaveToBytes() const;
  /// Extra facts (function signatures, line tables, ...), for Python and debuggers.
  virtual ffi::Map<ffi::String, ffi::Any> Info() const { return {}; }
  /// The parameter list of kernel `function` (nullptr if the module has none by that
  /// name), so a builder can record what it knows about the buffers (their sizes).
  virtual std::vector<KernelParam>* MutableParams(const std::string& function) { return nullptr; }
};

class ModuleObj : public ffi::Object {
 public:
  // Out of line: `imports` holds the still incomplete Module here (clang rejects it inline).
  explicit ModuleObj(std::unique_ptr<ModuleNode> n);
  ~ModuleObj();
  std::unique_ptr<ModuleNode> node;
  std::vector<Module> imports;

  TILECORE_FFI_DECLARE_STATIC_OBJECT_INFO("runtime.Module", ModuleObj, ffi::Object, kTCFFIModule);
};

class Module : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Module, ffi::ObjectRef, ModuleObj);
  explicit Module(std::unique_ptr<ModuleNode> node);
  ModuleObj* mut() const { return const_cast<ModuleObj*>(get()); }
  ModuleNode* node() const { return get()->node.get(); }

  /// Looks `name` up here, then (query_imports) in the imports, depth first.
  std::optional<ffi::Function> GetFunction(const std::string& name,
                                           bool query_imports = true) const;
  void Import(const Module& other) const;
  void SaveToFile(const std::string& path) const;
  static Module LoadFromFile(const std::string& path);
  std::string SaveToBytes() const;
  /// `allow_host_code` false: a module of any kind but `npu` (whose programs the simulator
  /// interprets) is refused, kind "PermissionError", before its loader runs: a `c` module's
  /// loader dlopens the shared library it holds.
  static Module LoadFromBytes(std::string_view bytes, bool allow_host_code = true);
};

/// Little-endian writer/reader for module payloads. The reader never reads past the
/// end: a short or malformed payload throws ValueError naming `what` and the offset.
class ByteWriter {
 public:
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(std::string_view s);
  const std::string& data() const { return out_; }

 private:
  std::string out_;
};

/// The checksum a module file carries over its contents (FNV-1a, 64 bits).
uint64_t ModuleChecksum(std::string_view bytes);

class ByteReader {
 public:
  ByteReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str();
  /// A count read as u32 that must not exceed `limit`, nor the bytes left divided by
  /// `min_item_bytes` (the least each counted item takes): checked before anything is
  /// allocated for the items.
  uint32_t count(uint64_t limit, uint64_t min_item_bytes = 4);
  bool at_end() const { return pos_ == data_.size(); }
  size_t pos() const { return pos_; }
  size_t left() const { return data_.size() - pos_; }
  [[noreturn]] void fail(const std::string& message) const;

 private:
  void need(size_t n);
  std::string_view data_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace tilecore::runtime
