/*
 * include/tilecore/ffi/c_api.h — the stable C ABI of tilecore's FFI.
 *
 * Everything that crosses a language or library boundary in tilecore crosses here:
 * the Python bridge, separately built extension libraries, generated code calling
 * back into the runtime. The ABI is deliberately small:
 *
 *   - TCFFIAny: a 16-byte tagged value (type index + 8-byte payload).
 *   - TCFFIObject: a 24-byte header in front of every heap object (refcount,
 *     type index, deleter). Type indices of object kinds are allocated at run time
 *     from their type key.
 *   - Functions: `int safe_call(self, args, num_args, result)`; arguments are
 *     borrowed, the result is owned by the caller, 0 means success, and on failure
 *     the error object waits in thread-local storage (TCFFIErrorMoveFromRaised).
 *     No C++ exception ever crosses this ABI.
 *
 * Every function returns int (0 = OK, -1 = error raised, -2 = a Python-side
 * signal is pending, see TCFFIErrorSetRaised) and takes its output pointer last.
 */
#ifndef TILECORE_FFI_C_API_H_
#define TILECORE_FFI_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "tilecore/ffi/dlpack.h"

#if defined(_WIN32)
#define TILECORE_FFI_DLL __declspec(dllexport)
#else
#define TILECORE_FFI_DLL __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Type indices
 * ------------------------------------------------------------------------- */
// [TypeIndex.begin]
/*!
 * \brief Type index of a value held in TCFFIAny.
 *
 * Indices below kTCFFIStaticObjectBegin are POD values stored inline in the Any's
 * payload. Indices from kTCFFIStaticObjectBegin on are heap objects whose payload
 * is a TCFFIObject*. Object kinds listed here have fixed indices; every other
 * object kind gets an index >= kTCFFIDynObjectBegin from TCFFITypeGetOrAllocIndex.
 *
 * Rationale: a fixed index for the hot kinds lets the Python bridge and the C++
 * layer switch on them without a lookup; run-time allocation for the rest lets
 * extensions add object kinds without a central table.
 */
typedef enum {
  kTCFFINone = 0,         /*!< None / nullptr; payload is zero. */
  kTCFFIInt = 1,          /*!< int64_t in v_int64. */
  kTCFFIBool = 2,         /*!< bool in v_int64 (0 or 1). */
  kTCFFIFloat = 3,        /*!< double in v_float64. */
  kTCFFIOpaquePtr = 4,    /*!< void* in v_ptr, never owned. */
  kTCFFIDataType = 5,     /*!< DLDataType in v_dtype. */
  kTCFFIDevice = 6,       /*!< DLDevice in v_device. */
  kTCFFIDLTensorPtr = 7,  /*!< DLTensor* in v_ptr; borrowed, AnyView only. */
  kTCFFIRawStr = 8,       /*!< NUL-terminated const char* in v_c_str; borrowed, AnyView only. */
  kTCFFIByteArrayPtr = 9, /*!< TCFFIByteArray* in v_ptr; borrowed, AnyView only. */
  kTCFFISmallStr = 10,    /*!< string of small_len <= 7 bytes inline in v_bytes, NUL-terminated. */
  kTCFFISmallBytes = 11,  /*!< bytes of small_len <= 7 inline in v_bytes. */
  kTCFFIStaticObjectBegin = 64,
  kTCFFIObject = 64,         /*!< root of the object hierarchy. */
  kTCFFIStr = 65,            /*!< immutable UTF-8 string (TCFFIStrCell). */
  kTCFFIBytes = 66,          /*!< immutable byte string (TCFFIStrCell). */
  kTCFFIError = 67,          /*!< error object (TCFFIErrorCell). */
  kTCFFIFunction = 68,       /*!< callable (TCFFIFunctionCell). */
  kTCFFIShape = 69,          /*!< immutable int64 tuple (TCFFIShapeCell). */
  kTCFFINDArray = 70,        /*!< n-d array with owner (DLTensor follows the header). */
  kTCFFIArray = 71,          /*!< immutable sequence of Any. */
  kTCFFIMap = 72,            /*!< immutable hash map Any -> Any. */
  kTCFFIModule = 73,         /*!< runtime module (reserved for the runtime layer). */
  kTCFFIOpaquePyObject = 74, /*!< a foreign (Python) object kept alive by the FFI. */
  kTCFFIStaticObjectEnd,
  kTCFFIDynObjectBegin = 128
} TCFFITypeIndex;
// [TypeIndex.end]

/* ---------------------------------------------------------------------------
 * Object header
 * ------------------------------------------------------------------------- */
// [TCFFIObject.begin]
/*!
 * \brief The header in front of every tilecore heap object. 24 bytes, 8-aligned.
 *
 * An object's payload (its "cell") starts right after the header, at offset 24.
 */
typedef struct TCFFIObject {
  /*! \brief Strong reference count; atomic, starts at 1 for a new object. */
  uint64_t ref_count;
  /*! \brief Type index of the most derived kind (a TCFFITypeIndex or a dynamic index). */
  int32_t type_index;
  /*! \brief Reserved, must be zero. Keeps the header a multiple of 8 bytes. */
  uint32_t reserved;
  /*!
   * \brief Destroys the object and frees its memory; called once, when ref_count
   * drops to zero. Set by the allocator that created the object.
   */
  void (*deleter)(struct TCFFIObject* self);
} TCFFIObject;
// [TCFFIObject.end]

/*! \brief Handle to an object; NULL is None. */
typedef TCFFIObject* TCFFIObjectHandle;

/* ---------------------------------------------------------------------------
 * Any
 * ------------------------------------------------------------------------- */
// [TCFFIAny.begin]
/*!
 * \brief A 16-byte tagged value.
 *
 * The same layout serves two roles that C++ keeps apart by name:
 *   - AnyView (borrowed): the holder does not own the payload. Arguments of a
 *     call are AnyViews; kTCFFIRawStr / kTCFFIDLTensorPtr / kTCFFIByteArrayPtr may
 *     only appear here.
 *   - Any (owning): for object payloads, the holder owns one reference. Results
 *     of a call are Anys and the caller must release them (TCFFIAnyRelease).
 */
typedef struct TCFFIAny {
  /*! \brief TCFFITypeIndex or dynamic object type index. */
  int32_t type_index;
  union {
    /*! \brief Length of kTCFFISmallStr / kTCFFISmallBytes payloads (0..7). */
    uint32_t small_len;
    /*! \brief Zero for every other type; keeps bitwise comparison of PODs valid. */
    uint32_t zero_padding;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    TCFFIObject* v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
  };
} TCFFIAny;
// [TCFFIAny.end]

/*! \brief A borrowed byte range; not NUL-terminated unless said so. */
typedef struct {
  const char* data;
  size_t size;
} TCFFIByteArray;

/* ---------------------------------------------------------------------------
 * Object cells of the static kinds
 * ------------------------------------------------------------------------- */
// [TCFFICells.begin]
/*! \brief Cell of kTCFFIStr and kTCFFIBytes: data is NUL-terminated and owned by the object. */
typedef struct {
  TCFFIByteArray bytes;
} TCFFIStrCell;

/*! \brief Cell of kTCFFIShape: `size` int64 dimensions owned by the object. */
typedef struct {
  const int64_t* data;
  size_t size;
} TCFFIShapeCell;

/*!
 * \brief The calling convention of every Function.
 * \param self   for TCFFIFunctionCell::safe_call, the Function object itself; for the
 *               callback given to TCFFIFunctionCreate, the state given there.
 * \param args   num_args borrowed arguments (AnyView); may be NULL when num_args == 0.
 * \param result owned result; initialised to None by the caller.
 * \return 0 on success; -1 with an error set by TCFFIErrorSetRaised.
 */
typedef int (*TCFFISafeCallType)(void* self, const TCFFIAny* args, int32_t num_args,
                                 TCFFIAny* result);

/*! \brief Flag bits of TCFFIFunctionCell::flags. */
typedef enum {
  /*! \brief The Python bridge releases the GIL around the call. */
  kTCFFIFunctionReleaseGIL = 1,
} TCFFIFunctionFlag;

/*!
 * \brief Cell of kTCFFIFunction.
 *
 * Rationale: the bridge reads safe_call straight from the cell, so a call from
 * Python costs one indirect call and no lookup.
 */
typedef struct {
  TCFFISafeCallType safe_call;
  /*! \brief TCFFIFunctionFlag bits. */
  int64_t flags;
} TCFFIFunctionCell;

/*!
 * \brief Cell of kTCFFIError.
 *
 * All byte arrays are owned by the error object and stay valid while it lives.
 */
typedef struct {
  /*! \brief Error kind: "ValueError", "TypeError", "IndexError", "KeyError", ... */
  TCFFIByteArray kind;
  /*! \brief Human-readable message naming what and where. */
  TCFFIByteArray message;
  /*! \brief Backtrace, innermost frame last; may be empty. */
  TCFFIByteArray backtrace;
  /*!
   * \brief Optional foreign cause carried across C++ frames (e.g. the Python
   * exception raised in a callback, as a kTCFFIOpaquePyObject); owned; may be NULL.
   */
  TCFFIObjectHandle cause;
} TCFFIErrorCell;

/*! \brief Cell of kTCFFIOpaquePyObject: a foreign handle and how to release it. */
typedef struct {
  void* handle;
  /*! \brief Releases handle; must be safe to call from any thread. */
  void (*release)(void* handle);
} TCFFIOpaqueObjectCell;
// [TCFFICells.end]

/* ---------------------------------------------------------------------------
 * Objects and types
 * ------------------------------------------------------------------------- */
/*! \brief Adds one strong reference. Never fails; returns 0. */
TILECORE_FFI_DLL int TCFFIObjectIncRef(TCFFIObjectHandle obj);
/*! \brief Drops one strong reference, deleting the object at zero. Never fails; returns 0. */
TILECORE_FFI_DLL int TCFFIObjectDecRef(TCFFIObjectHandle obj);

/*! \brief Releases what an owning Any holds and sets it to None. */
TILECORE_FFI_DLL int TCFFIAnyRelease(TCFFIAny* any);

/*!
 * \brief Turns a borrowed view into an owning Any: raw strings become Str (or a
 * small string), objects gain a reference, PODs are copied. DLTensor* views are
 * rejected (TypeError), since they have no owner to keep.
 */
TILECORE_FFI_DLL int TCFFIAnyViewToOwnedAny(const TCFFIAny* view, TCFFIAny* out);

// [TCFFIFieldInfo.begin]
/*! \brief Reads the field at `field` (inside an object) into an owning Any. */
typedef int (*TCFFIFieldGetter)(void* field, TCFFIAny* result);
/*! \brief Writes `value` (borrowed) to the field at `field`; TypeError on a mismatch. */
typedef int (*TCFFIFieldSetter)(void* field, const TCFFIAny* value);

/*! \brief Flag bits of TCFFIFieldInfo::flags. */
typedef enum {
  /*! \brief The field may be set after construction (by JSON load it always is). */
  kTCFFIFieldWritable = 1,
  /*! \brief Structural equality maps free variables that appear in this field
   * (a binding site, e.g. a loop variable) instead of comparing them by identity. */
  kTCFFIFieldDefRegion = 2,
  /*! \brief Structural equality and hashing ignore this field (e.g. source spans). */
  kTCFFIFieldSEqualIgnore = 4,
  /*! \brief An object-typed field that may hold None (JSON load refuses None for
   * object-typed fields without this flag). */
  kTCFFIFieldMayBeNone = 8,
} TCFFIFieldFlag;

/*! \brief Reflection record of one field of an object kind. */
typedef struct {
  TCFFIByteArray name;
  TCFFIByteArray doc;
  /*! \brief TCFFIFieldFlag bits. */
  int64_t flags;
  /*! \brief Byte offset of the field from the start of the object (header included). */
  int64_t offset;
  TCFFIFieldGetter getter;
  TCFFIFieldSetter setter;
} TCFFIFieldInfo;
// [TCFFIFieldInfo.end]

/*! \brief How structural equality treats objects of a kind. */
typedef enum {
  /*! \brief Compared by identity only (default for kinds without reflection). */
  kTCFFISEqualIdentity = 0,
  /*! \brief Compared field by field. */
  kTCFFISEqualTreeNode = 1,
  /*! \brief A variable: equal if mapped to each other at a binding site (or
   * when free-variable mapping is asked for), by identity otherwise. */
  kTCFFISEqualFreeVar = 2,
} TCFFISEqualKind;

/*! \brief Creates a default-constructed object of the kind (used by JSON load). */
typedef int (*TCFFIObjectCreator)(TCFFIObjectHandle* out);

// [TCFFITypeInfo.begin]
/*! \brief Everything the runtime knows about one object kind. Lives forever. */
typedef struct {
  int32_t type_index;
  /*! \brief Depth in the hierarchy; Object has depth 0. */
  int32_t type_depth;
  TCFFIByteArray type_key;
  /*! \brief type_depth entries: the indices of the ancestors, Object first.
   * Rationale: `x isinstance T` is `x.depth > T.depth && ancestors[T.depth] == T`, O(1). */
  const int32_t* type_ancestors;
  int32_t num_fields;
  const TCFFIFieldInfo* fields;
  /*! \brief NULL if the kind cannot be default-constructed. */
  TCFFIObjectCreator creator;
  /*! \brief TCFFISEqualKind. */
  int32_t structural_eq_kind;
} TCFFITypeInfo;
// [TCFFITypeInfo.end]

/*!
 * \brief Returns the index of `type_key`, allocating one on first use.
 * \param static_type_index the fixed index for a static kind, or -1 to allocate.
 * \param parent_type_index index of the parent kind (kTCFFIObject for roots).
 * Registering a known key again with a different parent is a ValueError.
 */
TILECORE_FFI_DLL int TCFFITypeGetOrAllocIndex(const TCFFIByteArray* type_key,
                                              int32_t static_type_index, int32_t parent_type_index,
                                              int32_t* out);
/*! \brief Index of a registered key; KeyError if unknown. */
TILECORE_FFI_DLL int TCFFITypeKeyToIndex(const TCFFIByteArray* type_key, int32_t* out);
/*! \brief Type info of an index, or NULL if none is registered there. Never raises. */
TILECORE_FFI_DLL const TCFFITypeInfo* TCFFIGetTypeInfo(int32_t type_index);
/*! \brief Adds a field to a kind's reflection record (once per name). */
TILECORE_FFI_DLL int TCFFITypeRegisterField(int32_t type_index, const TCFFIFieldInfo* info);
/*! \brief Sets a kind's creator and structural-equality kind. */
TILECORE_FFI_DLL int TCFFITypeRegisterMetadata(int32_t type_index, TCFFIObjectCreator creator,
                                               int32_t structural_eq_kind);

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------- */
/*!
 * \brief Creates an error object. `cause` may be NULL; when not, the error takes a
 * new reference to it.
 */
TILECORE_FFI_DLL int TCFFIErrorCreate(const TCFFIByteArray* kind, const TCFFIByteArray* message,
                                      const TCFFIByteArray* backtrace, TCFFIObjectHandle cause,
                                      TCFFIObjectHandle* out);
/*! \brief Stores `error` (a new reference is taken) as this thread's raised error. */
TILECORE_FFI_DLL void TCFFIErrorSetRaised(TCFFIObjectHandle error);
/*! \brief Shorthand: creates an error with a C++ backtrace and raises it. */
TILECORE_FFI_DLL void TCFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
/*!
 * \brief Moves this thread's raised error into *out (owned), leaving none raised.
 * *out is NULL if no error is raised.
 */
TILECORE_FFI_DLL void TCFFIErrorMoveFromRaised(TCFFIObjectHandle* out);

/* ---------------------------------------------------------------------------
 * Functions and the global registry
 * ------------------------------------------------------------------------- */
/*!
 * \brief Wraps a C callback as a Function object.
 * \param self      opaque state passed back as the first argument of safe_call.
 * \param safe_call the body.
 * \param deleter   frees `self` when the Function dies; may be NULL.
 */
TILECORE_FFI_DLL int TCFFIFunctionCreate(void* self, TCFFISafeCallType safe_call,
                                         void (*deleter)(void* self), TCFFIObjectHandle* out);
/*! \brief Calls a Function. `result` must be initialised to None by the caller. */
TILECORE_FFI_DLL int TCFFIFunctionCall(TCFFIObjectHandle func, const TCFFIAny* args,
                                       int32_t num_args, TCFFIAny* result);
/*!
 * \brief Registers `func` under `name`. A taken name is a ValueError unless
 * `allow_override` is non-zero.
 */
TILECORE_FFI_DLL int TCFFIFunctionSetGlobal(const TCFFIByteArray* name, TCFFIObjectHandle func,
                                            int allow_override);
/*! \brief Looks a name up; *out is a new reference, or NULL if the name is not registered. */
TILECORE_FFI_DLL int TCFFIFunctionGetGlobal(const TCFFIByteArray* name, TCFFIObjectHandle* out);
/*! \brief Removes a name; *out_removed says whether it was there. */
TILECORE_FFI_DLL int TCFFIFunctionRemoveGlobal(const TCFFIByteArray* name, int32_t* out_removed);

/* ---------------------------------------------------------------------------
 * Strings
 * ------------------------------------------------------------------------- */
/*! \brief An owning Any holding a copy of `str` (small string when it fits). */
TILECORE_FFI_DLL int TCFFIStringFromByteArray(const TCFFIByteArray* str, TCFFIAny* out);
/*! \brief An owning Any holding a copy of `bytes` (small bytes when they fit). */
TILECORE_FFI_DLL int TCFFIBytesFromByteArray(const TCFFIByteArray* bytes, TCFFIAny* out);

/* ---------------------------------------------------------------------------
 * NDArray and devices
 * ------------------------------------------------------------------------- */
// [TCFFIDeviceAllocator.begin]
/*!
 * \brief Memory services of one device kind. The ffi layer registers kDLCPU; the
 * runtime layer registers the others (the TC1 simulator as the npu device).
 */
typedef struct {
  /*! \brief Allocates nbytes aligned to `alignment`; sets *out. */
  int (*alloc)(DLDevice device, size_t nbytes, size_t alignment, void** out);
  /*! \brief Frees what alloc returned. Must not fail. */
  void (*free)(DLDevice device, void* ptr);
  /*!
   * \brief Copies between two tensors of the same shape and dtype, one of which
   * is on this device and the other on this device or the CPU.
   */
  int (*copy)(const DLTensor* from, const DLTensor* to);
} TCFFIDeviceAllocator;
// [TCFFIDeviceAllocator.end]

/*! \brief Registers the memory services of a device kind (replacing earlier ones). */
TILECORE_FFI_DLL int TCFFIDeviceAllocatorRegister(int32_t device_type,
                                                  const TCFFIDeviceAllocator* allocator);

/*! \brief The DLTensor of an NDArray object (it follows the header). */
static inline DLTensor* TCFFINDArrayGetDLTensorPtr(TCFFIObjectHandle obj) {
  return (DLTensor*)((char*)obj + sizeof(TCFFIObject));
}
/*! \brief Allocates a compact NDArray on a device. */
TILECORE_FFI_DLL int TCFFINDArrayEmpty(const int64_t* shape, int32_t ndim, DLDataType dtype,
                                       DLDevice device, TCFFIObjectHandle* out);
/*! \brief Copies data between NDArrays (same shape and dtype, any devices). */
TILECORE_FFI_DLL int TCFFINDArrayCopyFromTo(const DLTensor* from, const DLTensor* to);
/*! \brief Copies between two NDArray objects; refuses a read-only destination. */
TILECORE_FFI_DLL int TCFFINDArrayCopyFromToArrays(TCFFIObjectHandle from, TCFFIObjectHandle to);
/*! \brief Takes ownership of a pre-1.0 managed tensor (zero copy). */
TILECORE_FFI_DLL int TCFFINDArrayFromDLPack(DLManagedTensor* from, TCFFIObjectHandle* out);
/*! \brief Takes ownership of a 1.x managed tensor (zero copy). */
TILECORE_FFI_DLL int TCFFINDArrayFromDLPackVersioned(DLManagedTensorVersioned* from,
                                                     TCFFIObjectHandle* out);
/*! \brief Exports a view that keeps the NDArray alive until its deleter runs. */
TILECORE_FFI_DLL int TCFFINDArrayToDLPack(TCFFIObjectHandle array, DLManagedTensor** out);
/*! \brief Exports a 1.x view that keeps the NDArray alive until its deleter runs. */
TILECORE_FFI_DLL int TCFFINDArrayToDLPackVersioned(TCFFIObjectHandle array,
                                                   DLManagedTensorVersioned** out);

/* ---------------------------------------------------------------------------
 * Extensions
 * ------------------------------------------------------------------------- */
/*! \brief Version of this ABI; an extension built against another major is refused. */
#define TILECORE_FFI_ABI_VERSION_MAJOR 0
#define TILECORE_FFI_ABI_VERSION_MINOR 1
TILECORE_FFI_DLL int TCFFIGetABIVersion(int32_t* major, int32_t* minor);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // TILECORE_FFI_C_API_H_
