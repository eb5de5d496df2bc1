/*
 * src/ir/type.cc — DataType text, spans and Type nodes, and their registration.
 */
#include "tilecore/ir/type.h"

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace ir {

std::string DataType::str() const {
  if (is_void()) return "void";
  if (code == kDLOpaqueHandle) return lanes() == 1 ? "handle" : "handlex" + std::to_string(lanes());
  return ffi::DLDataTypeToString(*this);
}

DataType DataType::Parse(std::string_view text) {
  if (text == "void") return Void();
  if (text == "handle") return Handle();
  return DataType(ffi::StringToDLDataType(text));
}

DataType DataTypeFromAny(const ffi::AnyView& v, const char* what) {
  auto t = v.try_cast<DataType>();
  if (!t.has_value()) {
    TILECORE_THROW(TypeError) << what << ": expected a dtype (e.g. \"int32\"), got `"
                              << v.GetTypeKey() << "`";
  }
  return *t;
}

Span::Span(String file, int64_t line, int64_t column) {
  auto n = ffi::make_object<SpanNode>();
  n->file = std::move(file);
  n->line = line;
  n->column = column;
  data_ = std::move(n);
}

std::string Span::str() const {
  if (!defined()) return "<unknown>";
  return std::string(get()->file.view()) + ":" + std::to_string(get()->line) + ":" +
         std::to_string(get()->column);
}

bool IsValidScope(std::string_view scope) {
  return scope == "global" || scope == "shared" || scope == "local";
}

PrimType::PrimType(DataType dtype, Span span) {
  auto n = ffi::make_object<PrimTypeNode>();
  n->dtype = dtype;
  n->span = std::move(span);
  data_ = std::move(n);
}

PointerType::PointerType(DataType element_dtype, String scope, Span span) {
  if (!IsValidScope(scope.view())) {
    TILECORE_THROW(ValueError) << "PointerType: unknown memory scope `" << scope.view()
                               << "` (expected global, shared or local)";
  }
  auto n = ffi::make_object<PointerTypeNode>();
  n->element_dtype = element_dtype;
  n->scope = std::move(scope);
  n->span = std::move(span);
  data_ = std::move(n);
}

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<SpanNode>()
      .def_ro("file", &SpanNode::file, "source file")
      .def_ro("line", &SpanNode::line, "1-based line, 0 if unknown")
      .def_ro("column", &SpanNode::column, "1-based column, 0 if unknown");
  refl::ObjectDef<PrimTypeNode>()
      .def_ro("dtype", &PrimTypeNode::dtype)
      .def_ro("span", &TypeNode::span, "source location",
              kTCFFIFieldSEqualIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<PointerTypeNode>()
      .def_ro("element_dtype", &PointerTypeNode::element_dtype)
      .def_ro("scope", &PointerTypeNode::scope, "global, shared or local")
      .def_ro("span", &TypeNode::span, "source location",
              kTCFFIFieldSEqualIgnore | kTCFFIFieldMayBeNone);
});

TILECORE_REGISTER_GLOBAL("ir.Span").set_body_typed([](String file, int64_t line, int64_t column) {
  return Span(std::move(file), line, column);
});
TILECORE_REGISTER_GLOBAL("ir.PrimType").set_body_typed([](ffi::AnyView dtype, Span span) {
  return PrimType(DataTypeFromAny(dtype, "PrimType"), span);
});
TILECORE_REGISTER_GLOBAL("ir.PointerType")
    .set_body_typed([](ffi::AnyView dtype, String scope, Span span) {
      return PointerType(DataTypeFromAny(dtype, "PointerType"), scope, span);
    });
TILECORE_REGISTER_GLOBAL("ir.DataTypeStr").set_body_typed([](ffi::AnyView dtype) {
  return DataTypeFromAny(dtype, "DataTypeStr").str();
});

}  // namespace ir
}  // namespace tilecore
