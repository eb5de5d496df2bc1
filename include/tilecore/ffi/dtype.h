/*
 * include/tilecore/ffi/dtype.h — DLDataType and DLDevice as values: parsing,
 * printing and comparison.
 *
 * Data types are spelled as numpy does ("int8", "float32", "bool") plus "bfloat16",
 * the narrow floats of DLPack 1.1 as ml_dtypes spells them ("float8_e4m3fn",
 * "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", ...: storage types, converted
 * to and from wider floats only) and an optional lane count ("int32x8" is a 256-bit
 * SIMD vector of int32).
 * Devices are spelled "cpu:0", "npu:1".
 */
#ifndef TILECORE_FFI_DTYPE_H_
#define TILECORE_FFI_DTYPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tilecore/ffi/c_api.h"

namespace tilecore {
namespace ffi {

/*! \brief DLPack device type of TC1, the npu. */
constexpr int32_t kDLNPU = kDLExtDev;

/*! \brief Parses "int8", "float16", "bfloat16", "bool", "int32x8", ...; ValueError otherwise. */
DLDataType StringToDLDataType(std::string_view str);
/*! \brief The narrow floats of DLPack 1.1 (kDLFloat8_e3m4 .. kDLFloat4_e2m1fn). */
inline bool IsNarrowFloat(DLDataType dtype) {
  return dtype.code >= kDLFloat8_e3m4 && dtype.code <= kDLFloat4_e2m1fn;
}
/*! \brief The inverse of StringToDLDataType. */
std::string DLDataTypeToString(DLDataType dtype);
/*! \brief Bytes of one element (all lanes), rounding sub-byte types up. */
inline size_t DataTypeBytes(DLDataType dtype) {
  return (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
}
inline bool operator==(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/*! \brief "cpu", "npu", "cuda", ... for a DLDeviceType. */
std::string DeviceTypeToName(int32_t device_type);
/*! \brief Inverse of DeviceTypeToName; ValueError naming the known kinds otherwise. */
int32_t DeviceNameToType(std::string_view name);
/*!
 * \brief Names a device kind added out of tree, so that "<name>:<id>" parses and prints.
 * ValueError if the name or the type is taken by a different kind.
 */
void RegisterDeviceName(int32_t device_type, std::string name);
/*! \brief "cpu:0". */
std::string DLDeviceToString(DLDevice device);
inline bool operator==(const DLDevice& a, const DLDevice& b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_FFI_DTYPE_H_
