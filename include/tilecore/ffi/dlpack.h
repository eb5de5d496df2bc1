/*
 * include/tilecore/ffi/dlpack.h — the DLPack ABI (version 1.1) as tilecore uses it.
 *
 * DLPack is a C ABI, not a library: the structs below are the interface that numpy,
 * PyTorch and every other DLPack producer/consumer agree on, declared from the
 * published specification (https://dmlc.github.io/dlpack/latest/c_api.html).
 *
 * Rationale: Debian's libdlpack-dev is 0.6 and lacks DLManagedTensorVersioned, which
 * `__dlpack__(max_version=(1, 0))` requires; taking the header from a wheel would make
 * the C++ build depend on a Python package. The guard macro is the upstream one, so a
 * translation unit that also includes upstream <dlpack/dlpack.h> sees one definition.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief The DLPack version a DLManagedTensorVersioned was produced with. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/*!
 * \brief Device kinds; values fixed by the specification.
 *
 * Rationale: in C++ the enum gets a fixed underlying type (int32_t, the size the
 * ABI already has), so that device kinds added out of tree beyond the listed values
 * (e.g. 32) are valid values rather than undefined behaviour.
 */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

/*! \brief A device: kind and ordinal. 8 bytes. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/*! \brief Type codes of DLDataType::code. */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  /*! \brief The narrow float formats of DLPack 1.1 (storage types; ml_dtypes' names). */
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  kDLFloat4_e2m1fn = 17U,
} DLDataTypeCode;

/*! \brief Element type: code, bits per lane, lanes. 4 bytes. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/*! \brief A strided view of memory; `strides == NULL` means compact row-major. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

/*! \brief Pre-1.0 managed tensor (capsule name "dltensor"). */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/*! \brief Flag bits of DLManagedTensorVersioned::flags. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

/*! \brief 1.x managed tensor (capsule name "dltensor_versioned"). */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // DLPACK_DLPACK_H_
