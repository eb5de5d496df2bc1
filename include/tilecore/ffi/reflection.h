/*
 * include/tilecore/ffi/reflection.h — declaring an object kind's fields once.
 *
 * Fields declared here give every kind, for free: attribute access from Python,
 * printing (ffi.Repr), JSON save/load of object graphs, and structural equality
 * and hashing.
 *
 *   TILECORE_FFI_STATIC_INIT_BLOCK({
 *     namespace refl = tilecore::ffi::reflection;
 *     refl::ObjectDef<ForNode>()
 *         .def_ro("loop_var", &ForNode::loop_var, "the loop variable", kTCFFIFieldDefRegion)
 *         .def_ro("extent", &ForNode::extent)
 *         .def_ro("body", &ForNode::body);
 *   });
 *
 * **IMPORTANT**: fields must be declared at static-initialisation time (before
 * other threads read type infos); the table is not re-published afterwards.
 */
#ifndef TILECORE_FFI_REFLECTION_H_
#define TILECORE_FFI_REFLECTION_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace reflection {

namespace details {
template <typename FieldT>
int GetField(void* field, TCFFIAny* out) {
  try {
    Any(*static_cast<const FieldT*>(field)).MoveToRaw(out);
    return 0;
  } catch (...) {
    return ::tilecore::ffi::details::SetRaisedFromCurrentException();
  }
}

template <typename FieldT, bool kMayBeNone>
int SetField(void* field, const TCFFIAny* value) {
  try {
    if constexpr (std::is_base_of_v<ObjectRef, FieldT> && !kMayBeNone) {
      if (value->type_index == kTCFFINone) {
        TILECORE_THROW(TypeError) << "must not be None (expected `" << TypeTraits<FieldT>::TypeStr()
                                  << "`)";
      }
    }
    if constexpr (std::is_base_of_v<ObjectRef, FieldT> && kMayBeNone) {
      // None converts to no object; a field that may be None holds a null handle.
      if (value->type_index == kTCFFINone) {
        *static_cast<FieldT*>(field) = FieldT(ObjectPtr<Object>(nullptr));
        return 0;
      }
    }
    std::optional<FieldT> v = TypeTraits<FieldT>::TryCastFromAnyView(value);
    if (!v.has_value()) {
      TILECORE_THROW(TypeError) << "expected `" << TypeTraits<FieldT>::TypeStr() << "` but got `"
                                << ::tilecore::ffi::details::AnyTypeName(value) << "`";
    }
    *static_cast<FieldT*>(field) = *std::move(v);
    return 0;
  } catch (...) {
    return ::tilecore::ffi::details::SetRaisedFromCurrentException();
  }
}

template <typename T>
int CreateDefault(TCFFIObjectHandle* out) {
  try {
    *out = ::tilecore::ffi::details::ObjectUnsafe::MoveToHandle(make_object<T>());
    return 0;
  } catch (...) {
    return ::tilecore::ffi::details::SetRaisedFromCurrentException();
  }
}

template <typename Class, typename FieldT>
int64_t FieldOffset(FieldT Class::*member) {
  // The member's address within an object image; the object is never constructed.
  alignas(Class) static char image[sizeof(Class)];
  const Class* obj = reinterpret_cast<const Class*>(image);
  return reinterpret_cast<const char*>(&(obj->*member)) - image;
}

void Check(int rc);
}  // namespace details

/*! \brief Declares the reflected fields and metadata of kind T. */
template <typename T>
class ObjectDef {
 public:
  explicit ObjectDef(TCFFISEqualKind eq_kind = kTCFFISEqualTreeNode) {
    TCFFIObjectCreator creator = nullptr;
    if constexpr (std::is_default_constructible_v<T>) creator = details::CreateDefault<T>;
    details::Check(TCFFITypeRegisterMetadata(T::RuntimeTypeIndex(), creator, eq_kind));
  }

  /*! \brief A read-only field (set only by JSON load). */
  template <typename Class, typename FieldT>
  ObjectDef& def_ro(const char* name, FieldT Class::*member, const char* doc = "",
                    int64_t flags = 0) {
    return Add(name, member, doc, flags);
  }
  /*! \brief A field that Python may also set. */
  template <typename Class, typename FieldT>
  ObjectDef& def_rw(const char* name, FieldT Class::*member, const char* doc = "",
                    int64_t flags = 0) {
    return Add(name, member, doc, flags | kTCFFIFieldWritable);
  }

 private:
  template <typename Class, typename FieldT>
  ObjectDef& Add(const char* name, FieldT Class::*member, const char* doc, int64_t flags) {
    static_assert(std::is_base_of_v<Class, T>, "the field must belong to the kind or a base");
    TCFFIFieldInfo info{};
    info.name = TCFFIByteArray{name, std::strlen(name)};
    info.doc = TCFFIByteArray{doc, std::strlen(doc)};
    info.flags = flags;
    info.offset = details::FieldOffset<T, FieldT>(static_cast<FieldT T::*>(member));
    info.getter = details::GetField<FieldT>;
    info.setter = (flags & kTCFFIFieldMayBeNone) ? details::SetField<FieldT, true>
                                                 : details::SetField<FieldT, false>;
    details::Check(TCFFITypeRegisterField(T::RuntimeTypeIndex(), &info));
    return *this;
  }
};

}  // namespace reflection

/*! \brief Runs `body` once at static-initialisation time. */
#define TILECORE_FFI_STATIC_INIT_BLOCK(body)                                         \
  [[maybe_unused]] static const int TILECORE_FFI_STR_CONCAT(__tilecore_static_init_, \
                                                            __COUNTER__) = [] { body return 0; }()

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_REFLECTION_H_
