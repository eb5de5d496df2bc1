// src/runtime/kernel.cc — kernel signatures: checking calls and (de)serialising them.
#include "tilecore/runtime/kernel.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"

namespace tilecore::runtime {

std::string KernelSignature(const std::string& name, const std::vector<KernelParam>& params) {
  std::string s = name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& p = params[i];
    s += (i ? ", " : "") + p.name + ": " +
         (p.kind == "buffer" ? "buffer[" + p.dtype + "]" : p.dtype);
  }
  return s + ")";
}

void CheckKernelArgs(const std::string& name, const std::vector<KernelParam>& params,
                     ffi::PackedArgs args, bool int64_words) {
  if (args.size() != static_cast<int32_t>(params.size())) {
    TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "` takes "
                              << params.size() << " arguments but " << args.size() << " were given";
  }
  for (int32_t i = 0; i < args.size(); ++i) {
    const KernelParam& p = params[size_t(i)];
    if (p.kind == "buffer") {
      auto a = args[i].is_none() ? std::nullopt : args[i].try_cast<ffi::NDArray>();
      if (!a) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #"
                                  << i << " (" << p.name << ") must be an array, got `"
                                  << ffi::details::AnyTypeName(args[i].raw()) << "`";
      }
      std::string dt = ffi::DLDataTypeToString(a->dtype());
      // an npu kernel reads an int64 array as int32 words, two per element
      bool words = int64_words && p.dtype == "int32" && dt == "int64";
      if (dt != p.dtype && !words) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #"
                                  << i << " (" << p.name << ") must have dtype " << p.dtype
                                  << ", got " << dt;
      }
      int64_t n = a->NumElements() * (words ? 2 : 1);
      if (p.elements >= 0 && n < p.elements) {
        TILECORE_THROW(ValueError)
            << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " (" << p.name
            << ") has " << n << " elements, the kernel needs " << p.elements;
      }
      if (p.written && a->get()->read_only) {
        TILECORE_THROW(ValueError)
            << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " (" << p.name
            << ") is read-only, and the kernel writes it";
      }
    } else {
      bool ok = p.kind == "int" ? args[i].try_cast<int64_t>().has_value()
                                : args[i].try_cast<double>().has_value();
      if (!ok) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #"
                                  << i << " (" << p.name << ") must be "
                                  << (p.kind == "int" ? "an int" : "a float") << ", got `"
                                  << ffi::details::AnyTypeName(args[i].raw()) << "`";
      }
    }
  }
}

void WriteParams(ByteWriter* w, const std::vector<KernelParam>& params) {
  w->u32(static_cast<uint32_t>(params.size()));
  for (const KernelParam& p : params) {
    w->str(p.name);
    w->str(p.kind);
    w->str(p.dtype);
    w->u32(p.written ? 1 : 0);
    w->u64(static_cast<uint64_t>(p.elements));
  }
}

std::vector<KernelParam> ReadParams(ByteReader* r) {
  std::vector<KernelParam> out(r->count(4096, 24));
  for (KernelParam& p : out) {
    p.name = r->str();
    p.kind = r->str();
    if (p.kind != "buffer" && p.kind != "int" && p.kind != "float")
      r->fail("bad parameter kind `" + p.kind + "`");
    p.dtype = r->str();
    p.written = r->u32() != 0;
    p.elements = r->i64();
    if (p.elements < -1) r->fail("bad element count of parameter `" + p.name + "`");
  }
  return out;
}

ffi::Array<ffi::Any> ParamsToArray(const std::vector<KernelParam>& params) {
  ffi::Array<ffi::Any> out;
  for (const KernelParam& p : params) {
    ffi::Map<ffi::String, ffi::Any> m;
    m.Set("name", ffi::Any(ffi::String(p.name)));
    m.Set("kind", ffi::Any(ffi::String(p.kind)));
    m.Set("dtype", ffi::Any(ffi::String(p.dtype)));
    m.Set("written", ffi::Any(p.written));
    m.Set("elements", ffi::Any(p.elements));
    out.push_back(ffi::Any(m));
  }
  return out;
}

std::vector<KernelParam> ParamsFromArray(const ffi::Array<ffi::Any>& arr) {
  std::vector<KernelParam> out;
  for (const ffi::Any& a : arr) {
    auto m = a.cast<ffi::Map<ffi::String, ffi::Any>>();
    KernelParam p;
    p.name = m["name"].cast<std::string>();
    p.kind = m["kind"].cast<std::string>();
    p.dtype = m["dtype"].cast<std::string>();
    p.written = m.count("written") ? m["written"].cast<bool>() : true;
    p.elements = m.count("elements") ? m["elements"].cast<int64_t>() : -1;
    if (p.kind != "buffer" && p.kind != "int" && p.kind != "float") {
      TILECORE_THROW(ValueError) << "kernel parameter `" << p.name
                                 << "`: kind must be buffer, int or float, got `" << p.kind << "`";
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace tilecore::runtime

namespace tilecore::runtime {
namespace {

DLDataType HostArgDType(int32_t code) {
  switch (code) {
    case 0:
      return DLDataType{kDLInt, 8, 1};
    case 1:
      return DLDataType{kDLUInt, 8, 1};
    case 2:
      return DLDataType{kDLInt, 16, 1};
    case 3:
      return DLDataType{kDLUInt, 16, 1};
    case 4:
      return DLDataType{kDLInt, 32, 1};
    case 5:
      return DLDataType{kDLUInt, 32, 1};
    case 6:
      return DLDataType{kDLFloat, 16, 1};
    case 7:
      return DLDataType{kDLBfloat, 16, 1};
    case 8:
      return DLDataType{kDLFloat, 32, 1};
    case 9:
      return DLDataType{kDLBool, 8, 1};
    default:
      TILECORE_THROW(ValueError) << "dtype code " << code << " is not a TC1 dtype (0..9)";
  }
}

// A borrowed view: the DLManagedTensor owns only its shape and strides arrays.
struct HostView {
  DLManagedTensor mt{};
  int64_t shape[4]{};
  int64_t strides[4]{};
};

ffi::NDArray ViewOf(const TCHostArg& a, int32_t index) {
  if (a.ndim < 1 || a.ndim > 4) {
    TILECORE_THROW(ValueError) << "argument " << index << ": tensor rank " << a.ndim
                               << " is not in 1..4";
  }
  auto v = std::make_unique<HostView>();
  for (int k = 0; k < a.ndim; ++k) {
    v->shape[k] = a.shape[k];
    v->strides[k] = a.strides[k];
  }
  v->mt.dl_tensor.data = a.data;
  v->mt.dl_tensor.device = DLDevice{kDLCPU, 0};
  v->mt.dl_tensor.ndim = a.ndim;
  v->mt.dl_tensor.dtype = HostArgDType(a.dtype);
  v->mt.dl_tensor.shape = v->shape;
  v->mt.dl_tensor.strides = v->strides;
  v->mt.dl_tensor.byte_offset = 0;
  v->mt.manager_ctx = v.get();
  v->mt.deleter = [](DLManagedTensor* self) {
    std::unique_ptr<HostView>(static_cast<HostView*>(self->manager_ctx));
  };
  DLManagedTensor* mt = &v.release()->mt;
  return ffi::NDArray::FromDLPack(mt);
}

}  // namespace

namespace {

// S.printf from compiled code: "tilecore.printf:" + the format (~XX escapes a byte),
// formatted with the int and float arguments like C's printf, one line on stdout.
constexpr std::string_view kPrintfPrefix = "tilecore.printf:";
// A check in compiled code that failed: "tilecore.fail:" + a message formatted as printf's
// format is; the call fails with a ValueError of that message (a host kernel that finds a
// value it was not compiled for: compiler/host_util.h, Fail).
constexpr std::string_view kFailPrefix = "tilecore.fail:";

std::string KernelFormat(std::string_view coded, int32_t n, const TCHostArg* args) {
  std::string fmt;
  for (size_t i = 0; i < coded.size(); ++i) {
    if (coded[i] == '~' && i + 2 < coded.size()) {
      fmt += char(std::stoi(std::string(coded.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      fmt += coded[i];
    }
  }
  std::string out;
  int32_t next = 0;
  char buf[512];
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::strchr("-+ #0123456789.", fmt[j])) ++j;
    if (j >= fmt.size()) break;
    char conv = fmt[j];
    std::string flags = fmt.substr(i + 1, j - i - 1);
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= n) {
      out += "<missing>";
      continue;
    }
    const TCHostArg& a = args[next++];
    bool is_float = a.kind == 1;
    if (std::strchr("eEfFgG", conv)) {
      std::snprintf(buf, sizeof buf, ("%" + flags + conv).c_str(), is_float ? a.f : double(a.i));
    } else if (std::strchr("diouxXc", conv)) {
      int64_t v = is_float ? int64_t(a.f) : a.i;
      if (conv == 'c') {
        std::snprintf(buf, sizeof buf, ("%" + flags + "c").c_str(), int(v));
      } else {
        std::snprintf(buf, sizeof buf,
                      ("%" + flags + "ll" + (conv == 'i' || conv == 'u' ? 'd' : conv)).c_str(),
                      static_cast<long long>(v));
      }
    } else {  // %s: the value as Python's str would show it
      if (is_float)
        std::snprintf(buf, sizeof buf, "%g", a.f);
      else
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(a.i));
    }
    out += buf;
  }
  return out;
}

void KernelPrintf(std::string_view coded, int32_t n, const TCHostArg* args) {
  std::string out = KernelFormat(coded, n, args) + '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int32_t HostCallPacked(const char* name, int32_t n, const TCHostArg* args,
                       std::exception_ptr* error) noexcept {
  try {
    std::string_view sv(name);
    if (sv.substr(0, kPrintfPrefix.size()) == kPrintfPrefix) {
      KernelPrintf(sv.substr(kPrintfPrefix.size()), n, args);
      return 0;
    }
    if (sv.substr(0, kFailPrefix.size()) == kFailPrefix)
      TILECORE_THROW(ValueError) << KernelFormat(sv.substr(kFailPrefix.size()), n, args);
    auto f = ffi::Function::GetGlobal(name);
    if (!f) {
      TILECORE_THROW(ValueError) << "call_packed: no global function `" << name
                                 << "` is registered (register it with tilecore.register_func)";
    }
    std::vector<ffi::Any> values;
    values.reserve(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
      const TCHostArg& a = args[i];
      switch (a.kind) {
        case 0:
          values.emplace_back(a.i);
          break;
        case 1:
          values.emplace_back(a.f);
          break;
        case 2:
          values.emplace_back(ViewOf(a, i));
          break;
        default:
          TILECORE_THROW(ValueError) << "call_packed `" << name << "`: argument " << i
                                     << " has kind " << a.kind << " (0 int, 1 float, 2 tensor)";
      }
    }
    std::vector<ffi::AnyView> views(values.begin(), values.end());
    f->CallPacked(ffi::PackedArgs(views.data(), int32_t(views.size())));
    return 0;
  } catch (...) {
    if (error) *error = std::current_exception();
    return -1;
  }
}

}  // namespace tilecore::runtime
