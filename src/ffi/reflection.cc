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
    todo_.push_back(Item::Value(*v.raw()));
    while (!todo_.empty()) {
      Item item = std::move(todo_.back());
      todo_.pop_back();
      switch (item.kind) {
        case Item::kText:
          os_ << item.text;
          break;
        case Item::kLeave:
          visiting_.erase(item.obj);
          break;
        case Item::kValue:
          Visit(*item.value.raw());
          break;
      }
    }
    return truncated_ ? os_.str() + "... (truncated)" : os_.str();
  }

 private:
  // A graph with shared subgraphs prints each path to them in full, so its text may grow
  // exponentially with its depth; the text is cut at this length.
  static constexpr std::streamoff kMaxChars = 1 << 20;

  /*!
   * \brief What is left to print, last first: a value, literal text, or the end of an
   * object's text (it leaves the path checked for cycles). A work list instead of
   * recursion, so a chain of any depth prints without using the C stack.
   */
  struct Item {
    enum Kind { kValue, kText, kLeave } kind;
    Any value{};
    std::string text{};
    const Object* obj{nullptr};
    static Item Value(const TCFFIAny& v) { return Item{kValue, Any(AnyView::FromRaw(v))}; }
    static Item Text(std::string t) { return Item{kText, Any(), std::move(t)}; }
    static Item Leave(const Object* o) { return Item{kLeave, Any(), std::string(), o}; }
  };

  void Visit(const TCFFIAny& v) {
    if (truncated_ || os_.tellp() > kMaxChars) {
      truncated_ = true;
      return;
    }
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
    todo_.push_back(Item::Leave(obj));  // runs after the items VisitObject pushes
    VisitObject(v, obj);
  }

  void VisitObject(const TCFFIAny& v, const Object* obj) {
    switch (v.type_index) {
      case kTCFFIArray: {
        const auto* arr = static_cast<const ArrayObj*>(obj);
        os_ << "[";
        todo_.push_back(Item::Text("]"));
        for (size_t i = arr->data.size(); i-- > 0;) {
          todo_.push_back(Item::Value(*arr->data[i].raw()));
          if (i) todo_.push_back(Item::Text(", "));
        }
        return;
      }
      case kTCFFIMap: {
        const auto* m = static_cast<const MapObj*>(obj);
        os_ << "{";
        todo_.push_back(Item::Text("}"));
        for (size_t i = m->entries.size(); i-- > 0;) {
          const auto& [k, val] = m->entries[i];
          todo_.push_back(Item::Value(*val.raw()));
          todo_.push_back(Item::Text(": "));
          todo_.push_back(Item::Value(*k.raw()));
          if (i) todo_.push_back(Item::Text(", "));
        }
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
    todo_.push_back(Item::Text(")"));
    for (int32_t i = info->num_fields; i-- > 0;) {
      const TCFFIFieldInfo& f = info->fields[i];
      TCFFIAny value;
      ::tilecore::ffi::details::SetNone(&value);
      if (f.getter(reinterpret_cast<char*>(v.v_obj) + f.offset, &value) != 0) {
        ::tilecore::ffi::details::ThrowRaisedError();
      }
      Any owned = Any::MoveFromRaw(&value);
      todo_.push_back(Item::Value(*owned.raw()));
      todo_.push_back(Item::Text((i ? ", " : "") + std::string(f.name.data, f.name.size) + "="));
    }
  }

  std::ostringstream os_;
  bool truncated_{false};
  std::unordered_set<const Object*> visiting_;
  std::vector<Item> todo_;
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
