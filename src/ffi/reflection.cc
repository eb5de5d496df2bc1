/*
 * src/ffi/reflection.cc — helpers behind ObjectDef, and printing of any value
 * through reflection (ffi.Repr).
 */
#include "tilecore/ffi/reflection.h"

#include <cmath>
#include <sstream>
#include <unordered_set>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/container/shape.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/stack_guard.h"

namespace tilecore {
namespace ffi {
namespace reflection {
namespace details {
void Check(int rc) {
  if (rc != 0) ::tilecore::ffi::details::ThrowRaisedError();
}
}  // namespace details
}  // namespace reflection

namespace {

class Printer {
 public:
  std::string Print(const AnyView& v) {
    Visit(*v.raw());
    return truncated_ ? os_.str() + "... (truncated)" : os_.str();
  }

 private:
  // A graph with shared subgraphs prints each path to them in full, so its text may grow
  // exponentially with its depth; the text is cut at this length.
  static constexpr std::streamoff kMaxChars = 1 << 20;

  void Visit(const TCFFIAny& v) {
    if (truncated_ || os_.tellp() > kMaxChars) {
      truncated_ = true;
      return;
    }
    ::tilecore::ffi::StackGuard guard("repr");
    std::string_view s;
    if (::tilecore::ffi::details::AnyGetStringView(&v, &s)) {
      os_ << '"';
      for (char c : s) {
        if (c == '"' || c == '\\') os_ << '\\';
        os_ << c;
      }
      os_ << '"';
      return;
    }
    switch (v.type_index) {
      case kTCFFINone:
        os_ << "None";
        return;
      case kTCFFIInt:
        os_ << v.v_int64;
        return;
      case kTCFFIBool:
        os_ << (v.v_int64 ? "True" : "False");
        return;
      case kTCFFIFloat: {
        std::ostringstream f;
        f.precision(17);
        f << v.v_float64;
        os_ << f.str();
        return;
      }
      case kTCFFIDataType:
        os_ << DLDataTypeToString(v.v_dtype);
        return;
      case kTCFFIDevice:
        os_ << DLDeviceToString(v.v_device);
        return;
      case kTCFFIOpaquePtr:
        os_ << "<opaque " << v.v_ptr << ">";
        return;
      default:
        break;
    }
    if (v.type_index < kTCFFIStaticObjectBegin) {
      os_ << "<" << ::tilecore::ffi::details::AnyTypeName(&v) << ">";
      return;
    }
    const Object* obj = ::tilecore::ffi::details::ObjectUnsafe::FromHandle(v.v_obj);
    if (!visiting_.insert(obj).second) {
      os_ << "<cycle>";
      return;
    }
    VisitObject(v, obj);
    visiting_.erase(obj);
  }

  void VisitObject(const TCFFIAny& v, const Object* obj) {
    switch (v.type_index) {
      case kTCFFIArray: {
        const auto* arr = static_cast<const ArrayObj*>(obj);
        os_ << "[";
        for (size_t i = 0; i < arr->data.size(); ++i) {
          if (i) os_ << ", ";
          Visit(*arr->data[i].raw());
        }
        os_ << "]";
        return;
      }
      case kTCFFIMap: {
        const auto* m = static_cast<const MapObj*>(obj);
        os_ << "{";
        bool first = true;
        for (const auto& [k, val] : m->entries) {
          if (!first) os_ << ", ";
          first = false;
          Visit(*k.raw());
          os_ << ": ";
          Visit(*val.raw());
        }
        os_ << "}";
        return;
      }
      case kTCFFIShape: {
        const auto* s = static_cast<const ShapeObj*>(obj);
        os_ << "Shape(";
        for (size_t i = 0; i < s->storage.size(); ++i) os_ << (i ? ", " : "") << s->storage[i];
        os_ << ")";
        return;
      }
      case kTCFFINDArray: {
        const auto* a = static_cast<const NDArrayObj*>(obj);
        os_ << "NDArray(shape=[";
        for (size_t i = 0; i < a->shape_storage.size(); ++i)
          os_ << (i ? ", " : "") << a->shape_storage[i];
        os_ << "], dtype=" << DLDataTypeToString(a->tensor.dtype)
            << ", device=" << DLDeviceToString(a->tensor.device) << ")";
        return;
      }
      case kTCFFIFunction:
        os_ << "<Function at " << obj << ">";
        return;
      case kTCFFIError: {
        const auto* e = static_cast<const ErrorObj*>(obj);
        os_ << e->kind_storage << "(\"" << e->message_storage << "\")";
        return;
      }
      default:
        break;
    }
    const TCFFITypeInfo* info = TCFFIGetTypeInfo(v.type_index);
    os_ << std::string_view(info->type_key.data, info->type_key.size) << "(";
    for (int32_t i = 0; i < info->num_fields; ++i) {
      const TCFFIFieldInfo& f = info->fields[i];
      if (i) os_ << ", ";
      os_ << std::string_view(f.name.data, f.name.size) << "=";
      TCFFIAny value;
      ::tilecore::ffi::details::SetNone(&value);
      if (f.getter(reinterpret_cast<char*>(v.v_obj) + f.offset, &value) != 0) {
        ::tilecore::ffi::details::ThrowRaisedError();
      }
      Any owned = Any::MoveFromRaw(&value);
      Visit(*owned.raw());
    }
    os_ << ")";
  }

  std::ostringstream os_;
  bool truncated_{false};
  std::unordered_set<const Object*> visiting_;
};

}  // namespace

/*! \brief Text form of any value, through reflection. */
std::string Repr(const AnyView& value) { return Printer().Print(value); }

TILECORE_REGISTER_GLOBAL("ffi.Repr").set_body([](PackedArgs args, Any* rv) {
  if (args.size() != 1)
    TILECORE_THROW(TypeError) << "ffi.Repr takes 1 argument, got " << args.size();
  *rv = Repr(args[0]);
});

}  // namespace ffi
}  // namespace tilecore
