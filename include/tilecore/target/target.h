// include/tilecore/target/target.h — targets: what to compile for, and who compiles it.
//
// A target kind ("npu", "c", or one added out of tree) declares its typed options
// and its device type; `Target::Parse("npu -model=tc1 -cores=4")` checks a target
// string against them (an unknown option or a bad value is a ValueError naming it
// and listing the valid ones) and fills in the defaults.
//
// Kinds live in the global registry as `target.kind.<name>`; the code generator of a
// kind is the global function `codegen.build_<name>(IRModule, Target) -> Module`.
// An out-of-tree device registers both (RegisterTargetKind and
// TILECORE_REGISTER_GLOBAL("codegen.build_<name>")) and is then built exactly like
// the built-in ones (docs/adding-a-device.md).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/string.h"

namespace tilecore::target {

/// One option of a target kind.
struct TargetOption {
  std::string name;  // without the dash: "cores"
  std::string type;  // "int", "bool", "str" or "size" ("256MiB" -> bytes)
  std::string doc;
  ffi::Any default_value;                    // None: absent unless given
  int64_t min = INT64_MIN, max = INT64_MAX;  // "int" and "size"
  std::vector<std::string> choices{};        // "str": empty = any string
};

struct TargetKindInfo {
  std::string name;
  int32_t device_type = 1;  // DLPack device type the kind runs on
  std::string doc;
  std::vector<TargetOption> options;
};

class TargetKindObj : public ffi::Object {
 public:
  explicit TargetKindObj(TargetKindInfo i) : info(std::move(i)) {}
  TargetKindInfo info;
  /// Passes a plugin added to the kind (AddTargetPass), run in order after the
  /// default kernel pipeline and before the kind's code generator.
  std::vector<ffi::Any> passes;
  std::mutex passes_mu;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("target.TargetKind", TargetKindObj, ffi::Object);
};
class TargetKind : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(TargetKind, ffi::ObjectRef, TargetKindObj);
  /// The kind registered as `target.kind.<name>`; ValueError listing the known kinds.
  static TargetKind Get(const std::string& name);
  static std::vector<std::string> ListNames();
};

/// Registers a kind (ValueError if the name is taken, unless allow_override).
void RegisterTargetKind(TargetKindInfo info, bool allow_override = false);

class TargetObj : public ffi::Object {
 public:
  ffi::String kind;
  /// Every option of the kind: given values, else defaults (options without a default
  /// and not given are absent).
  ffi::Map<ffi::String, ffi::Any> options;
  int32_t device_type = 1;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("target.Target", TargetObj, ffi::Object);
};

class Target : public ffi::ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Target, ffi::ObjectRef, TargetObj);
  /// Parses "kind -opt=value -flag ..."; ValueError naming the bad part.
  static Target Parse(const std::string& spec);
  /// The canonical string: kind, then every option set, in declaration order.
  std::string str() const;
  int64_t GetInt(const std::string& option) const;
  std::string GetStr(const std::string& option) const;
  bool GetBool(const std::string& option) const;
};

/// Builds `ir_module` (an ir.IRModule or ir.PrimFunc, passed as Any) for `target` by
/// calling `codegen.build_<kind>`; ValueError when no codegen is registered for it.
ffi::Any Build(const ffi::Any& ir_module, const Target& target);

/// Appends `pass` (a transform.Pass) to the pass list of target kind `kind`: the
/// kind's code generator runs it after the default kernel pipeline (seed: TVM's
/// per-target lowering hooks). ValueError for an unknown kind.
void AddTargetPass(const std::string& kind, const ffi::Any& pass);
/// The passes added to `kind`, in order (empty for a kind without any).
std::vector<ffi::Any> TargetPasses(const std::string& kind);
/// Removes every pass added to `kind`.
void ClearTargetPasses(const std::string& kind);

/// Applies the post-processing hook of generated source for `kind`: when the global
/// function `codegen.postproc_<kind>` is registered (seed: `tvm_callback_<kind>_postproc`),
/// returns its result on `code` (it must return a string), else `code` unchanged.
std::string PostprocSource(const std::string& kind, const std::string& code);

}  // namespace tilecore::target
