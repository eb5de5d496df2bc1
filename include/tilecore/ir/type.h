/*
 * include/tilecore/ir/type.h — the types of the Kernel IR: DataType (a DLDataType
 * with helpers), source spans, and the Type nodes that annotate variables.
 *
 * Data types are DLPack's: a code (int, uint, float, bfloat, bool, handle), bits and
 * lanes. Lanes > 1 is a SIMD vector: TC1's registers are 256 bits wide, so
 * `int32x8`, `int8x32` and `float16x16` each fill one register. `handle` is an
 * address (a pointer variable or a buffer's data); `void` (handle with 0 bits) is
 * the type of a Call that is evaluated only for its effect.
 *
 * Memory scopes (PointerType, Buffer::scope, Allocate):
 *   "global"  TC1 DDR, visible to every core and the host
 *   "shared"  the cluster's L2 SRAM (4 MiB), visible to every core
 *   "local"   the core's own L1 SRAM (1 MiB in 16 banks of 64 KiB)
 */
#ifndef TILECORE_IR_TYPE_H_
#define TILECORE_IR_TYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/object.h"
#include "tilecore/ffi/string.h"

namespace tilecore {
namespace ir {

using ffi::Object;
using ffi::ObjectPtr;
using ffi::ObjectRef;
using ffi::String;

/*!
 * \brief A DLDataType with the helpers the IR needs. Same layout as DLDataType, so
 * fields of this type travel through the FFI as a dtype.
 */
struct DataType : public DLDataType {
  constexpr DataType() : DLDataType{kDLOpaqueHandle, 0, 0} {}  // void
  constexpr DataType(DLDataType t) : DLDataType(t) {}          // NOLINT(*)
  constexpr DataType(int code, int bits, int lanes = 1)
      : DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                   static_cast<uint16_t>(lanes)} {}

  static constexpr DataType Int(int bits, int lanes = 1) { return DataType(kDLInt, bits, lanes); }
  static constexpr DataType UInt(int bits, int lanes = 1) { return DataType(kDLUInt, bits, lanes); }
  static constexpr DataType Float(int bits, int lanes = 1) {
    return DataType(kDLFloat, bits, lanes);
  }
  static constexpr DataType BFloat16(int lanes = 1) { return DataType(kDLBfloat, 16, lanes); }
  static constexpr DataType Bool(int lanes = 1) { return DataType(kDLBool, 8, lanes); }
  static constexpr DataType Handle() { return DataType(kDLOpaqueHandle, 64, 1); }
  static constexpr DataType Void() { return DataType(kDLOpaqueHandle, 0, 0); }

  int lanes() const { return static_cast<int>(DLDataType::lanes); }
  int bits() const { return static_cast<int>(DLDataType::bits); }
  /*! \brief Bytes of one lane (bool is one byte). */
  int lane_bytes() const { return (bits() + 7) / 8; }
  bool is_scalar() const { return lanes() == 1; }
  bool is_vector() const { return lanes() > 1; }
  bool is_int() const { return code == kDLInt; }
  bool is_uint() const { return code == kDLUInt; }
  bool is_integer() const { return (code == kDLInt || code == kDLUInt); }
  bool is_float() const { return code == kDLFloat || code == kDLBfloat; }
  bool is_bool() const { return code == kDLBool; }
  /*! \brief float8_*, float6_*, float4_e2m1fn: storage types, not is_float() (no arithmetic). */
  bool is_narrow_float() const { return ffi::IsNarrowFloat(*this); }
  bool is_handle() const { return code == kDLOpaqueHandle && bits() != 0; }
  bool is_void() const { return code == kDLOpaqueHandle && bits() == 0; }
  /*! \brief Integers and bools: the kinds that index and count. */
  bool is_index_like() const { return is_integer(); }
  DataType with_lanes(int n) const { return DataType(code, bits(), n); }
  DataType element_of() const { return with_lanes(1); }

  bool operator==(const DataType& o) const {
    return code == o.code && bits() == o.bits() && lanes() == o.lanes();
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }

  /*! \brief "int32", "int32x8", "bool", "handle", "void". */
  std::string str() const;
  /*! \brief Inverse of str(); ValueError naming the text otherwise. */
  static DataType Parse(std::string_view text);
};

/*! \brief Width of one TC1 SIMD register in bits. */
constexpr int kSimdBits = 256;

/*! \brief Reads a dtype from an FFI value: a DataType, or a string ("int32x8", "handle"). */
DataType DataTypeFromAny(const ffi::AnyView& v, const char* what);

// ---------------------------------------------------------------------------
// Spans: where a node came from (DSL source, or a compiler stage)
// ---------------------------------------------------------------------------
class SpanNode : public Object {
 public:
  /*! \brief Source file (or a stage name such as "<onnx:conv1>"). */
  String file;
  /*! \brief 1-based line and column; 0 when unknown. */
  int64_t line{0};
  int64_t column{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Span", SpanNode, Object);
};

/*! \brief A source location; may be undefined (no location). */
class Span : public ObjectRef {
 public:
  Span(String file, int64_t line, int64_t column);
  /*! \brief None is "no location" wherever a Span is passed. */
  static constexpr bool _type_none_means_absent = true;
  /*! \brief "file:line:column", or "<unknown>". */
  std::string str() const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Span, ObjectRef, SpanNode);
};

/*! \brief " (at file:line:col)" for a defined span, "" otherwise: the tail of the
 * messages of the ir and transform layers. */
std::string At(const Span& span);

// ---------------------------------------------------------------------------
// Types of variables
// ---------------------------------------------------------------------------
class TypeNode : public Object {
 public:
  Span span;
  TILECORE_FFI_DECLARE_OBJECT_INFO("ir.Type", TypeNode, Object);
};
class Type : public ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Type, ObjectRef, TypeNode);
};

/*! \brief A scalar or vector value of `dtype`. */
class PrimTypeNode : public TypeNode {
 public:
  DataType dtype;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.PrimType", PrimTypeNode, TypeNode);
};
class PrimType : public Type {
 public:
  explicit PrimType(DataType dtype, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PrimType, Type, PrimTypeNode);
};

/*! \brief An address of elements of `element_dtype` in memory `scope`. */
class PointerTypeNode : public TypeNode {
 public:
  DataType element_dtype;
  String scope;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.PointerType", PointerTypeNode, TypeNode);
};
class PointerType : public Type {
 public:
  /*! \brief ValueError if `scope` is not global, shared or local. */
  PointerType(DataType element_dtype, String scope, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PointerType, Type, PointerTypeNode);
};

/*! \brief Whether `scope` is one of "global", "shared", "local". */
bool IsValidScope(std::string_view scope);

}  // namespace ir

namespace ffi {
/*! \brief ir::DataType travels as a dtype (strings are parsed, including "handle"). */
template <>
struct TypeTraits<ir::DataType> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const ir::DataType& v, TCFFIAny* out) {
    TypeTraits<DLDataType>::CopyToAnyView(v, out);
  }
  static void MoveToAny(ir::DataType v, TCFFIAny* out) { CopyToAnyView(v, out); }
  static bool CheckAnyStrict(const TCFFIAny* v) { return v->type_index == kTCFFIDataType; }
  static std::optional<ir::DataType> TryCastFromAnyView(const TCFFIAny* v) {
    if (v->type_index == kTCFFIDataType) return ir::DataType(v->v_dtype);
    std::string_view s;
    if (details::AnyGetStringView(v, &s)) return ir::DataType::Parse(s);
    return std::nullopt;
  }
  static std::string TypeStr() { return "DataType"; }
};
}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_IR_TYPE_H_
