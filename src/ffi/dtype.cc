/*
 * src/ffi/dtype.cc — parsing and printing of data types and devices.
 */
#include "tilecore/ffi/dtype.h"

#include <charconv>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace ffi {
namespace {

struct DeviceName {
  int32_t type;
  const char* name;
};
constexpr DeviceName kDeviceNames[] = {
    {kDLCPU, "cpu"},       {kDLCUDA, "cuda"},   {kDLCUDAHost, "cuda_host"}, {kDLOpenCL, "opencl"},
    {kDLVulkan, "vulkan"}, {kDLMetal, "metal"}, {kDLROCM, "rocm"},          {kDLNPU, "npu"},
};

/*! \brief Names of device kinds added at run time (out-of-tree devices). */
class ExtraDeviceNames {
 public:
  static ExtraDeviceNames* Global() {
    static ExtraDeviceNames* names = new ExtraDeviceNames();  // lives for the process
    return names;
  }
  void Register(int32_t type, std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& d : kDeviceNames) {
      if (d.type == type || name == d.name) {
        TILECORE_THROW(ValueError)
            << "Device `" << name << "` (type " << type << ") clashes with the built-in `" << d.name
            << "` (type " << d.type << ")";
      }
    }
    for (const auto& [t, n] : names_) {
      if ((t == type) != (n == name)) {
        TILECORE_THROW(ValueError) << "Device `" << name << "` (type " << type << ") clashes with `"
                                   << n << "` (type " << t << ")";
      }
    }
    names_.emplace_back(type, std::move(name));
  }
  std::optional<std::string> NameOf(int32_t type) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [t, n] : names_)
      if (t == type) return n;
    return std::nullopt;
  }
  std::optional<int32_t> TypeOf(std::string_view name) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [t, n] : names_)
      if (n == name) return t;
    return std::nullopt;
  }
  std::string Known() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string known;
    for (const auto& [t, n] : names_) known += ", " + n;
    return known;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int32_t, std::string>> names_;
};

/*! \brief The narrow float formats of DLPack 1.1, spelled as ml_dtypes (and numpy with it) does. */
struct NarrowFloatName {
  uint8_t code;
  uint8_t bits;
  const char* name;
};
constexpr NarrowFloatName kNarrowFloatNames[] = {
    {kDLFloat8_e3m4, 8, "float8_e3m4"},
    {kDLFloat8_e4m3, 8, "float8_e4m3"},
    {kDLFloat8_e4m3b11fnuz, 8, "float8_e4m3b11fnuz"},
    {kDLFloat8_e4m3fn, 8, "float8_e4m3fn"},
    {kDLFloat8_e4m3fnuz, 8, "float8_e4m3fnuz"},
    {kDLFloat8_e5m2, 8, "float8_e5m2"},
    {kDLFloat8_e5m2fnuz, 8, "float8_e5m2fnuz"},
    {kDLFloat8_e8m0fnu, 8, "float8_e8m0fnu"},
    {kDLFloat6_e2m3fn, 6, "float6_e2m3fn"},
    {kDLFloat6_e3m2fn, 6, "float6_e3m2fn"},
    {kDLFloat4_e2m1fn, 4, "float4_e2m1fn"},
};

bool ParseUInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out > 0;
}

}  // namespace

DLDataType StringToDLDataType(std::string_view str) {
  DLDataType t{kDLInt, 0, 1};
  std::string_view s = str;
  size_t x = s.find('x');
  if (x != std::string_view::npos) {
    int lanes = 0;
    if (!ParseUInt(s.substr(x + 1), &lanes) || lanes > 65535) {
      TILECORE_THROW(ValueError) << "Invalid data type `" << str << "`: bad lane count";
    }
    t.lanes = static_cast<uint16_t>(lanes);
    s = s.substr(0, x);
  }
  auto take = [&](std::string_view prefix, uint8_t code) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    t.code = code;
    s = s.substr(prefix.size());
    return true;
  };
  if (s == "bool") {
    t.code = kDLBool;
    t.bits = 8;
    return t;
  }
  for (const auto& f : kNarrowFloatNames) {
    if (s == f.name) {
      t.code = f.code;
      t.bits = f.bits;
      return t;
    }
  }
  if (!(take("uint", kDLUInt) || take("int", kDLInt) || take("float", kDLFloat) ||
        take("bfloat", kDLBfloat))) {
    TILECORE_THROW(ValueError) << "Invalid data type `" << str
                               << "`: expected int<N>, uint<N>, float<N>, bfloat16, bool or a "
                                  "narrow float (float8_e4m3fn, float8_e5m2, float4_e2m1fn, ...), "
                                  "optionally followed by x<lanes>";
  }
  int bits = 0;
  if (!ParseUInt(s, &bits) || bits > 255) {
    TILECORE_THROW(ValueError) << "Invalid data type `" << str
                               << "`: bad bit width (the narrow floats are spelled "
                                  "float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, "
                                  "float8_e8m0fnu, float4_e2m1fn, ...)";
  }
  t.bits = static_cast<uint8_t>(bits);
  if (t.code == kDLBfloat && bits != 16) {
    TILECORE_THROW(ValueError) << "Invalid data type `" << str << "`: bfloat must be 16 bits";
  }
  return t;
}

std::string DLDataTypeToString(DLDataType dtype) {
  std::string s;
  for (const auto& f : kNarrowFloatNames) {
    if (dtype.code == f.code && dtype.bits == f.bits) {
      s = f.name;
      if (dtype.lanes != 1) s += "x" + std::to_string(dtype.lanes);
      return s;
    }
  }
  switch (dtype.code) {
    case kDLInt:
      s = "int";
      break;
    case kDLUInt:
      s = "uint";
      break;
    case kDLFloat:
      s = "float";
      break;
    case kDLBfloat:
      s = "bfloat";
      break;
    case kDLBool:
      s = "bool";
      break;
    case kDLOpaqueHandle:
      s = "handle";
      break;
    case kDLComplex:
      s = "complex";
      break;
    default:
      s = "custom";
      s += std::to_string(dtype.code);
      s += "_";
      break;
  }
  if (dtype.code != kDLBool) s += std::to_string(dtype.bits);
  if (dtype.lanes != 1) s += "x" + std::to_string(dtype.lanes);
  return s;
}

std::string DeviceTypeToName(int32_t device_type) {
  for (const auto& d : kDeviceNames) {
    if (d.type == device_type) return d.name;
  }
  if (auto name = ExtraDeviceNames::Global()->NameOf(device_type)) return *name;
  return "device" + std::to_string(device_type);
}

int32_t DeviceNameToType(std::string_view name) {
  for (const auto& d : kDeviceNames) {
    if (name == d.name) return d.type;
  }
  if (auto type = ExtraDeviceNames::Global()->TypeOf(name)) return *type;
  std::string known;
  for (const auto& d : kDeviceNames) known += std::string(known.empty() ? "" : ", ") + d.name;
  TILECORE_THROW(ValueError) << "Unknown device `" << name << "`; known devices: " << known
                             << ExtraDeviceNames::Global()->Known();
}

void RegisterDeviceName(int32_t device_type, std::string name) {
  if (name.empty() || device_type < 0) {
    TILECORE_THROW(ValueError) << "RegisterDeviceName: need a name and a non-negative device type";
  }
  ExtraDeviceNames::Global()->Register(device_type, std::move(name));
}

std::string DLDeviceToString(DLDevice device) {
  return DeviceTypeToName(device.device_type) + ":" + std::to_string(device.device_id);
}

TILECORE_REGISTER_GLOBAL("ffi.DataTypeFromString").set_body_typed([](std::string s) {
  return StringToDLDataType(s);
});
TILECORE_REGISTER_GLOBAL("ffi.DataTypeToString").set_body_typed([](DLDataType t) {
  return DLDataTypeToString(t);
});
TILECORE_REGISTER_GLOBAL("ffi.DeviceNameToType").set_body_typed([](std::string s) {
  return DeviceNameToType(s);
});
TILECORE_REGISTER_GLOBAL("ffi.RegisterDeviceName").set_body_typed([](int32_t t, std::string name) {
  RegisterDeviceName(t, std::move(name));
});
TILECORE_REGISTER_GLOBAL("ffi.DeviceTypeToName").set_body_typed([](int32_t t) {
  return DeviceTypeToName(t);
});

}  // namespace ffi
}  // namespace tilecore
