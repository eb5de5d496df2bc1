// src/runtime/c_module.cc — `c` modules: kernels compiled to a host shared library.
//
// The library's bytes are kept in the module (so a saved module runs without a C
// compiler); on creation they are written to a private temporary file, loaded
// with dlopen, and the file is removed.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/runtime/device_api.h"
#include "tilecore/runtime/kernel.h"

namespace tilecore::runtime {
namespace {

using KernelFn = int32_t (*)(void**);

// The bytes of a bytes/bytearray argument (borrowed or owned).
std::string BytesArg(const ffi::AnyView& v) {
  const TCFFIAny* raw = v.raw();
  switch (raw->type_index) {
    case kTCFFIByteArrayPtr: {
      const auto* b = static_cast<const TCFFIByteArray*>(raw->v_ptr);
      return std::string(b->data, b->size);
    }
    case kTCFFISmallBytes:
      return std::string(raw->v_bytes, raw->small_len);
    case kTCFFIBytes:
      return std::string(v.cast<ffi::Bytes>().view());
    default:
      TILECORE_THROW(TypeError) << "expected bytes, got `" << ffi::details::AnyTypeName(raw) << "`";
  }
}

class CModuleNode final : public ModuleNode {
 public:
  CModuleNode(std::string source, std::string lib, std::vector<std::string> names,
              std::vector<std::vector<KernelParam>> params)
      : source_(std::move(source)),
        lib_(std::move(lib)),
        names_(std::move(names)),
        params_(std::move(params)) {
    if (names_.size() != params_.size())
      TILECORE_THROW(ValueError) << "c module: one parameter list per function";
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/tilecore_cmod_XXXXXX";
    std::vector<char> buf(path.begin(), path.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd < 0) TILECORE_THROW(OSError) << "c module: cannot create a temporary file in " << path;
    size_t off = 0;
    while (off < lib_.size()) {
      ssize_t n = ::write(fd, lib_.data() + off, lib_.size() - off);
      if (n <= 0) {
        ::close(fd);
        ::unlink(buf.data());
        TILECORE_THROW(OSError) << "c module: writing the shared library failed";
      }
      off += size_t(n);
    }
    ::close(fd);
    handle_ = dlopen(buf.data(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(buf.data());
    if (handle_ == nullptr) {
      const char* err = dlerror();
      TILECORE_THROW(OSError) << "c module: cannot load its shared library: " << (err ? err : "?");
    }
    // Calls from the kernels to global functions (tir.call_packed) come back here.
    if (void* set = dlsym(handle_, "tc__set_host_call")) {
      reinterpret_cast<void (*)(HostCallFn, void*)>(set)(&CModuleNode::HostCall, this);
    }
    // Out-of-bounds accesses through parameters of symbolic size (codegen_c's tc_oob).
    oob_ = static_cast<int64_t*>(dlsym(handle_, "tc__oob"));
    oob_what_ = static_cast<const char**>(dlsym(handle_, "tc__oob_what"));
    for (const std::string& n : names_) {
      void* sym = dlsym(handle_, ("tc_" + n).c_str());
      if (sym == nullptr)
        TILECORE_THROW(ValueError) << "c module: the library has no symbol `tc_" << n << "`";
      fns_.push_back(reinterpret_cast<KernelFn>(sym));
    }
  }
  ~CModuleNode() override {
    if (handle_) dlclose(handle_);
  }

  std::string kind() const override { return "c"; }
  std::vector<std::string> ListFunctions() const override { return names_; }

  std::optional<ffi::Function> GetFunction(const std::string& name, const Module& self) override {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] != name) continue;
      KernelFn fn = fns_[i];
      const std::vector<KernelParam>* params = &params_[i];
      std::string kname = names_[i];
      CModuleNode* node = this;
      ffi::Function f = ffi::Function::FromPacked(
          [self, fn, params, kname, node](ffi::PackedArgs args, ffi::Any*) {
            node->Call(kname, fn, *params, args);
          });
      // The kernel runs with the GIL released: its cores may be threads, and a core's call
      // to a Python function (tir.call_packed) takes the GIL from its own thread.
      const_cast<ffi::FunctionObj*>(f.get())->cell.flags |= kTCFFIFunctionReleaseGIL;
      return f;
    }
    return std::nullopt;
  }

  std::vector<KernelParam>* MutableParams(const std::string& function) override {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == function) return &params_[i];
    }
    return nullptr;
  }

  std::string GetSource(const std::string& format) const override {
    if (!format.empty() && format != "c") {
      TILECORE_THROW(ValueError) << "a c module has source in format `c`, not `" << format << "`";
    }
    return source_;
  }

  std::string SaveToBytes() const override {
    ByteWriter w;
    w.str(source_);
    w.str(lib_);
    w.u64(ModuleChecksum(lib_));
    w.u32(static_cast<uint32_t>(names_.size()));
    for (size_t i = 0; i < names_.size(); ++i) {
      w.str(names_[i]);
      WriteParams(&w, params_[i]);
    }
    return w.data();
  }

  static Module Load(const ffi::Bytes& bytes) {
    ByteReader r(bytes.view(), "c module");
    std::string source = r.str();
    std::string lib = r.str();
    // The library is dlopen'ed (its code runs): a corrupted one is refused first.
    if (r.u64() != ModuleChecksum(lib))
      r.fail("checksum mismatch: the shared library is corrupted");
    uint32_t n = r.count(1 << 16);
    std::vector<std::string> names;
    std::vector<std::vector<KernelParam>> params;
    for (uint32_t i = 0; i < n; ++i) {
      names.push_back(r.str());
      params.push_back(ReadParams(&r));
    }
    if (!r.at_end()) r.fail("trailing bytes");
    return CModuleCreate(std::move(source), std::move(lib), std::move(names), std::move(params));
  }

  ffi::Map<ffi::String, ffi::Any> Info() const override {
    ffi::Array<ffi::Any> funcs;
    for (size_t i = 0; i < names_.size(); ++i) {
      ffi::Map<ffi::String, ffi::Any> m;
      m.Set("name", ffi::Any(ffi::String(names_[i])));
      m.Set("params", ffi::Any(ParamsToArray(params_[i])));
      funcs.push_back(ffi::Any(m));
    }
    ffi::Map<ffi::String, ffi::Any> info;
    info.Set("functions", ffi::Any(funcs));
    return info;
  }

 private:
  using HostCallFn = int32_t (*)(void*, const char*, int32_t, const TCHostArg*);
  // The first error of a host call during the current kernel call; the kernel then
  // returns non-zero and Call rethrows it.
  static int32_t HostCall(void* ctx, const char* name, int32_t n, const TCHostArg* args) {
    auto* self = static_cast<CModuleNode*>(ctx);
    std::exception_ptr err;
    int32_t rc = HostCallPacked(name, n, args, &err);
    if (rc != 0) {
      std::lock_guard<std::mutex> lock(self->host_mu_);
      if (!self->host_error_) self->host_error_ = err;
    }
    return rc;
  }

  void Call(const std::string& name, KernelFn fn, const std::vector<KernelParam>& params,
            ffi::PackedArgs args) {
    CheckKernelArgs(name, params, args);
    // args[n_params] points to each parameter's element count (0 for a scalar): the code
    // checks accesses to buffers of symbolic size against it.
    std::vector<void*> ptrs(params.size() + 1, nullptr);
    std::vector<int64_t> extents(params.size(), 0);
    std::vector<int64_t> ints(params.size(), 0);
    std::vector<double> floats(params.size(), 0.0);
    std::vector<std::pair<ffi::NDArray, ffi::NDArray>> staged;  // (original, host copy)
    std::vector<ffi::NDArray> keep;  // host copies live until the call returns
    for (size_t i = 0; i < params.size(); ++i) {
      const KernelParam& p = params[i];
      if (p.kind == "buffer") {
        ffi::NDArray a = args[int32_t(i)].cast<ffi::NDArray>();
        ffi::NDArray h = a;
        if (a.device().device_type != kDLCPU || !ffi::DLTensorIsContiguous(a.tensor())) {
          h = CopyToHost(a.tensor());
          keep.push_back(h);
          if (p.written) staged.emplace_back(a, h);
        }
        ptrs[i] = static_cast<char*>(h.tensor().data) + h.tensor().byte_offset;
        extents[i] = h.NumElements();
      } else if (p.kind == "int") {
        ints[i] = args[int32_t(i)].cast<int64_t>();
        ptrs[i] = &ints[i];
      } else {
        floats[i] = args[int32_t(i)].cast<double>();
        ptrs[i] = &floats[i];
      }
    }
    {
      std::lock_guard<std::mutex> lock(host_mu_);
      host_error_ = nullptr;
    }
    ptrs[params.size()] = extents.data();
    if (oob_ != nullptr) __atomic_store_n(&oob_[0], 0, __ATOMIC_SEQ_CST);
    int32_t rc = fn(ptrs.data());
    if (rc != 0 && oob_ != nullptr && __atomic_load_n(&oob_[0], __ATOMIC_SEQ_CST) != 0) {
      TILECORE_THROW(IndexError) << "kernel `" << name
                                 << "`: " << (oob_what_ && *oob_what_ ? *oob_what_ : "an access")
                                 << ": element " << oob_[1]
                                 << " is outside the array passed to the call, which has "
                                 << oob_[2] << " elements";
    }
    if (rc != 0) {
      std::exception_ptr err;
      {
        std::lock_guard<std::mutex> lock(host_mu_);
        std::swap(err, host_error_);
      }
      if (err) std::rethrow_exception(err);
    }
    if (rc == 2) {
      TILECORE_THROW(RuntimeError)
          << "kernel `" << name
          << "` could not start a thread for each of its cores (pthread_create failed)";
    }
    if (rc != 0)
      TILECORE_THROW(RuntimeError) << "kernel `" << name << "` returned error code " << rc;
    for (auto& [orig, host] : staged) host.CopyTo(orig);
  }

  std::string source_, lib_;
  std::vector<std::string> names_;
  std::vector<std::vector<KernelParam>> params_;
  void* handle_ = nullptr;
  std::vector<KernelFn> fns_;
  int64_t* oob_ = nullptr;           // the library's tc__oob: set, index, length
  const char** oob_what_ = nullptr;  // the library's tc__oob_what
  std::mutex host_mu_;
  std::exception_ptr host_error_;
};

}  // namespace

Module CModuleCreate(std::string source, std::string shared_library, std::vector<std::string> names,
                     std::vector<std::vector<KernelParam>> params) {
  return Module(std::make_unique<CModuleNode>(std::move(source), std::move(shared_library),
                                              std::move(names), std::move(params)));
}

TILECORE_REGISTER_GLOBAL("runtime.module.loadbinary_c").set_body_typed([](ffi::Bytes b) {
  return CModuleNode::Load(b);
});

// runtime.CModuleCreate(source, library bytes, [{name, params}, ...])
TILECORE_REGISTER_GLOBAL("runtime.CModuleCreate").set_body([](ffi::PackedArgs args, ffi::Any* rv) {
  if (args.size() != 3)
    TILECORE_THROW(TypeError)
        << "runtime.CModuleCreate(source, library, functions) takes 3 arguments";
  std::string source = args[0].cast<std::string>();
  std::string lib = BytesArg(args[1]);
  auto funcs = args[2].cast<ffi::Array<ffi::Any>>();
  std::vector<std::string> names;
  std::vector<std::vector<KernelParam>> params;
  for (const ffi::Any& a : funcs) {
    auto m = a.cast<ffi::Map<ffi::String, ffi::Any>>();
    names.push_back(m["name"].cast<std::string>());
    params.push_back(ParamsFromArray(m["params"].cast<ffi::Array<ffi::Any>>()));
  }
  *rv = ffi::Any(
      CModuleCreate(std::move(source), std::move(lib), std::move(names), std::move(params)));
});

}  // namespace tilecore::runtime
