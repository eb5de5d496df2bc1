// src/runtime/kernel.cc — kernel signatures: checking calls and (de)serialising them.
#include "tilecore/runtime/kernel.h"

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"

namespace tilecore::runtime {

std::string KernelSignature(const std::string& name, const std::vector<KernelParam>& params) {
  std::string s = name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& p = params[i];
    s += (i ? ", " : "") + p.name + ": " + (p.kind == "buffer" ? "buffer[" + p.dtype + "]" : p.dtype);
  }
  return s + ")";
}

void CheckKernelArgs(const std::string& name, const std::vector<KernelParam>& params, ffi::PackedArgs args) {
  if (args.size() != static_cast<int32_t>(params.size())) {
    TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "` takes " << params.size()
                              << " arguments but " << args.size() << " were given";
  }
  for (int32_t i = 0; i < args.size(); ++i) {
    const KernelParam& p = params[size_t(i)];
    if (p.kind == "buffer") {
      auto a = args[i].is_none() ? std::nullopt : args[i].try_cast<ffi::NDArray>();
      if (!a) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " ("
                                  << p.name << ") must be an array, got `"
                                  << ffi::details::AnyTypeName(args[i].raw()) << "`";
      }
      std::string dt = ffi::DLDataTypeToString(a->dtype());
      if (dt != p.dtype) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " ("
                                  << p.name << ") must have dtype " << p.dtype << ", got " << dt;
      }
      int64_t n = a->NumElements();
      if (p.elements >= 0 && n < p.elements) {
        TILECORE_THROW(ValueError) << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " ("
                                   << p.name << ") has " << n << " elements, the kernel needs " << p.elements;
      }
      if (p.written && a->get()->read_only) {
        TILECORE_THROW(ValueError) << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " ("
                                   << p.name << ") is read-only, and the kernel writes it";
      }
    } else {
      bool ok = p.kind == "int" ? args[i].try_cast<int64_t>().has_value() : args[i].try_cast<double>().has_value();
      if (!ok) {
        TILECORE_THROW(TypeError) << "kernel `" << KernelSignature(name, params) << "`: argument #" << i << " ("
                                  << p.name << ") must be " << (p.kind == "int" ? "an int" : "a float") << ", got `"
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
    if (p.kind != "buffer" && p.kind != "int" && p.kind != "float") r->fail("bad parameter kind `" + p.kind + "`");
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
      TILECORE_THROW(ValueError) << "kernel parameter `" << p.name << "`: kind must be buffer, int or float, got `"
                                 << p.kind << "`";
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace tilecore::runtime
