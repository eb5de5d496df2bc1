// src/runtime/npu_module.cc — running TC1 kernels on the npu device's simulator.
#if TILECORE_ENABLE_NPU
#include "tilecore/runtime/npu_module.h"
#include "tilecore/runtime/kernel.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "tilecore/arch/program_object.h"
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/runtime/npu_device.h"

namespace tilecore::runtime {
namespace {

/*! \brief The kernel source location of (core, pc) from the line table, or "". */
std::string KernelLocation(const NpuKernel& k, int core, int64_t pc) {
  const LineEntry* shared = nullptr;
  for (const LineEntry& e : k.lines) {
    if (e.pc != pc) continue;
    if (e.section == core) return e.location;
    if (e.section == 0) shared = &e;
  }
  return shared ? shared->location : "";
}

/*! \brief ValueError unless `config` (the simulator of `where`) can take a call of `k`: its
 * cores, and L1 for the argument block at its fixed address. `hint` follows the message. */
void CheckNpuFits(const NpuKernel& k, const sim::SimConfig& config, const std::string& where,
                  const std::string& hint) {
  if (config.cores < k.cores) {
    TILECORE_THROW(ValueError) << "kernel `" << k.name << "` needs " << k.cores << " cores but "
                               << where << " simulates " << config.cores << hint;
  }
  // The argument block sits at a fixed L1 address: a device configured with less L1 than
  // that cannot take the call (a usage error, not a fault inside the run).
  if (uint64_t l1 = uint64_t(config.l1_bytes); l1 < uint64_t(kNpuArgBlock) + 1024) {
    TILECORE_THROW(ValueError)
        << "kernel `" << k.name << "`: " << where << " has " << l1
        << " bytes of L1, but compiled kernels take their arguments at L1 address " << kNpuArgBlock
        << " (npu needs at least " << (uint64_t(kNpuArgBlock) + 1024)
        << " bytes of L1: reconfigure it with tilecore.runtime.npu_configure)";
  }
}

/*! \brief Loads a call of `k` into `s`, every array argument already in `s`'s DDR (an npu
 * array's data pointer is its DDR address): the program, the DDR arrays the call may touch
 * (set_ddr_arrays: an access past an argument faults), host calls and the argument block. */
void LoadCall(const NpuKernel& k, sim::Simulator& s, ffi::PackedArgs args) {
  std::vector<uint32_t> words(size_t(args.size()), 0);
  std::vector<sim::DdrArray> arrays;  // what the kernel may touch in DDR (S.ptr has no size)
  for (int32_t i = 0; i < args.size(); ++i) {
    const KernelParam& p = k.params[size_t(i)];
    if (p.kind == "buffer") {
      ffi::NDArray d = args[i].cast<ffi::NDArray>();
      uint64_t addr = reinterpret_cast<uint64_t>(d.tensor().data) + d.tensor().byte_offset;
      if (addr > 0xFFFFFFFFull)
        TILECORE_THROW(ValueError) << "argument " << p.name << ": DDR address beyond 4 GiB";
      words[size_t(i)] = static_cast<uint32_t>(addr);
      const DLDataType& t = d.dtype();
      // (an argument the kernel does not write stays as it was: stores into it fault)
      arrays.push_back(sim::DdrArray{addr, d.NumBytes(), p.name,
                                     std::max(1, int(t.bits) * int(t.lanes) / 8), p.written});
    } else if (p.kind == "int") {
      words[size_t(i)] = static_cast<uint32_t>(args[i].cast<int64_t>());
    } else {
      float f = static_cast<float>(args[i].cast<double>());
      std::memcpy(&words[size_t(i)], &f, 4);
    }
  }
  s.load(k.program);
  s.set_ddr_arrays(std::move(arrays));
  InstallHostCalls(s);
  std::span<const uint8_t> block(reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4);
  for (int c = 0; c < k.cores; ++c) s.write(arch::Space::L1, kNpuArgBlock, block, c);
}

class NpuModuleNode final : public ModuleNode {
 public:
  explicit NpuModuleNode(std::vector<NpuKernel> kernels) : kernels_(std::move(kernels)) {}

  std::string kind() const override { return "npu"; }

  std::vector<std::string> ListFunctions() const override {
    std::vector<std::string> out;
    for (const NpuKernel& k : kernels_) out.push_back(k.name);
    return out;
  }

  std::optional<ffi::Function> GetFunction(const std::string& name, const Module& self) override {
    for (size_t i = 0; i < kernels_.size(); ++i) {
      if (kernels_[i].name != name) continue;
      const NpuKernel* k = &kernels_[i];
      return ffi::Function::FromPacked(
          [self, k](ffi::PackedArgs args, ffi::Any* rv) { Launch(*k, args); });
    }
    return std::nullopt;
  }

  std::vector<KernelParam>* MutableParams(const std::string& function) override {
    for (NpuKernel& k : kernels_) {
      if (k.name == function) return &k.params;
    }
    return nullptr;
  }

  std::string GetSource(const std::string& format) const override {
    if (!format.empty() && format != "asm" && format != "s") {
      TILECORE_THROW(ValueError) << "an npu module has source in format `asm`, not `" << format
                                 << "`";
    }
    std::string s;
    for (const NpuKernel& k : kernels_) {
      s += "# ---- kernel " + KernelSignature(k.name, k.params) + " on " + std::to_string(k.cores) +
           " cores\n";
      s += k.assembly;
      if (!s.empty() && s.back() != '\n') s += '\n';
    }
    return s;
  }

  std::string SaveToBytes() const override {
    ByteWriter w;
    w.u32(static_cast<uint32_t>(kernels_.size()));
    for (const NpuKernel& k : kernels_) {
      w.str(k.name);
      w.str(k.assembly);
      std::vector<uint8_t> image = k.program.to_bytes();
      w.str(std::string_view(reinterpret_cast<const char*>(image.data()), image.size()));
      w.u32(static_cast<uint32_t>(k.cores));
      WriteParams(&w, k.params);
      w.u32(static_cast<uint32_t>(k.lines.size()));
      for (const LineEntry& e : k.lines) {
        w.u32(static_cast<uint32_t>(e.section));
        w.u32(static_cast<uint32_t>(e.pc));
        w.str(e.location);
      }
    }
    return w.data();
  }

  static Module Load(const ffi::Bytes& bytes) {
    ByteReader r(bytes.view(), "npu module");
    std::vector<NpuKernel> kernels(r.count(1 << 16));
    for (NpuKernel& k : kernels) {
      k.name = r.str();
      k.assembly = r.str();
      std::string image = r.str();
      try {
        k.program = arch::Program::from_bytes(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(image.data()), image.size()));
      } catch (const arch::ProgramFormatError& e) {
        r.fail(std::string("kernel `") + k.name + "`: " + e.what());
      }
      k.cores = static_cast<int>(r.u32());
      if (k.cores < 1 || k.cores > arch::tc1::kMaxCores) r.fail("bad core count");
      k.params = ReadParams(&r);
      k.lines.resize(r.count(1u << 24, 12));
      for (LineEntry& e : k.lines) {
        e.section = static_cast<int32_t>(r.u32());
        e.pc = static_cast<int32_t>(r.u32());
        e.location = r.str();
      }
    }
    if (!r.at_end()) r.fail("trailing bytes");
    return NpuModuleCreate(std::move(kernels));
  }

  ffi::Map<ffi::String, ffi::Any> Info() const override {
    ffi::Array<ffi::Any> funcs;
    for (const NpuKernel& k : kernels_) {
      ffi::Map<ffi::String, ffi::Any> m;
      m.Set("name", ffi::Any(ffi::String(k.name)));
      m.Set("params", ffi::Any(ParamsToArray(k.params)));
      m.Set("cores", ffi::Any(int64_t{k.cores}));
      int64_t words = 0;
      for (const auto& s : k.program.text) words += static_cast<int64_t>(s.words.size());
      m.Set("words", ffi::Any(words));
      m.Set("program", ffi::Any(arch::ProgramRef(k.program)));
      ffi::Array<ffi::Any> lines;
      for (const LineEntry& e : k.lines) {
        lines.push_back(
            ffi::Any(ffi::Array<ffi::Any>{ffi::Any(int64_t{e.section}), ffi::Any(int64_t{e.pc}),
                                          ffi::Any(ffi::String(e.location))}));
      }
      m.Set("line_table", ffi::Any(lines));
      ffi::Array<ffi::Any> members;
      for (const MemberRange& e : k.members) {
        members.push_back(
            ffi::Any(ffi::Array<ffi::Any>{ffi::Any(int64_t{e.section}), ffi::Any(int64_t{e.begin}),
                                          ffi::Any(int64_t{e.end}), ffi::Any(int64_t{e.member})}));
      }
      m.Set("member_table", ffi::Any(members));
      funcs.push_back(ffi::Any(m));
    }
    ffi::Map<ffi::String, ffi::Any> info;
    info.Set("functions", ffi::Any(funcs));
    return info;
  }

 private:
  static void Launch(const NpuKernel& k, ffi::PackedArgs args) {
    CheckKernelArgs(k.name, k.params, args, /*int64_words=*/true);
    // The device: that of the first npu array argument, else npu:0.
    int dev_id = 0;
    for (int32_t i = 0; i < args.size(); ++i) {
      if (auto a = args[i].try_cast<ffi::NDArray>(); a && a->device().device_type == ffi::kDLNPU) {
        dev_id = a->device().device_id;
        break;
      }
    }
    NpuDevice& dev = GetNpuDevice(dev_id);
    std::lock_guard<std::recursive_mutex> launch(dev.launch_mutex());
    sim::SimulatorRef sim = dev.simulator();
    CheckNpuFits(k, sim->sim.config(), "npu:" + std::to_string(dev_id),
                 " (reconfigure it: tilecore.runtime.npu_configure(" + std::to_string(dev_id) +
                     ", \"npu -cores=" + std::to_string(k.cores) + "\"))");
    // Arguments: device arrays in place, host arrays staged into DDR.
    std::vector<ffi::AnyView> call(args.data(), args.data() + args.size());
    std::vector<std::pair<ffi::NDArray, ffi::NDArray>> staged;  // (host, device) to copy back
    std::vector<ffi::NDArray> keep;  // staged device arrays live until the run is over
    keep.reserve(size_t(args.size()));
    for (int32_t i = 0; i < args.size(); ++i) {
      const KernelParam& p = k.params[size_t(i)];
      if (p.kind != "buffer") continue;
      ffi::NDArray a = args[i].cast<ffi::NDArray>();
      if (a.device().device_type != ffi::kDLNPU || a.device().device_id != dev_id) {
        ffi::NDArray d = ffi::NDArray::Empty(
            a.shape(), a.dtype(), DLDevice{static_cast<DLDeviceType>(ffi::kDLNPU), dev_id});
        a.CopyTo(d);
        keep.push_back(d);
        call[size_t(i)] = keep.back();
        if (p.written) staged.emplace_back(a, d);
      }
    }
    {
      std::lock_guard<std::mutex> lock(sim.mut()->mu);
      sim::TranslateSimError([&] {
        sim::Simulator& s = sim.mut()->sim;
        LoadCall(k, s, ffi::PackedArgs(call.data(), int32_t(call.size())));
        try {
          s.run();
        } catch (const sim::SimError& e) {
          // Name the kernel's own source line, not just the generated assembly's.
          std::string where = KernelLocation(k, e.core(), e.pc());
          if (where.empty()) throw;
          throw sim::SimError(e.kind(), e.core(), e.pc(), e.instruction(),
                              "kernel `" + k.name + "` at " + where + ": " + e.reason(), e.line());
        }
      });
    }
    for (auto& [host, device] : staged) device.CopyTo(host);
  }

 public:
  /// The kernel `function` (ValueError naming the module's kernels when it has none such).
  const NpuKernel& Kernel(const std::string& function) const {
    std::string names;
    for (const NpuKernel& k : kernels_) {
      if (k.name == function) return k;
      names += (names.empty() ? "" : ", ") + k.name;
    }
    TILECORE_THROW(ValueError) << "the npu module has no kernel `" << function << "` (it has "
                               << names << ")";
  }

 private:
  std::vector<NpuKernel> kernels_;
};

}  // namespace

// hcall servicing (docs/tc1.md, "Host calls"): reads the call block from the core's L1,
// copies each tensor's span of simulator memory to the host, calls the function through
// the registry, and writes the spans back. An error of the function is rethrown.
void InstallHostCalls(sim::Simulator& s) {
  sim::Simulator* sp = &s;
  s.set_host_call([sp](int core, uint32_t block) {
    auto word = [&](uint64_t addr) {
      uint32_t v;
      sp->read_into(arch::Space::L1, addr, std::span<uint8_t>(reinterpret_cast<uint8_t*>(&v), 4),
                    core);
      return v;
    };
    uint32_t name_addr = word(block), nargs = word(uint64_t(block) + 4);
    if (nargs > 16) TILECORE_THROW(ValueError) << "hcall: " << nargs << " arguments (at most 16)";
    std::string name;
    for (uint32_t i = 0; i < 256; ++i) {
      uint8_t ch = sp->read(arch::Space::L1, name_addr + i, 1, core)[0];
      if (ch == 0) break;
      name.push_back(char(ch));
    }
    std::vector<TCHostArg> args(nargs);
    std::vector<std::vector<uint8_t>> spans(nargs);
    std::vector<std::pair<arch::Space, uint64_t>> where(nargs);
    for (uint32_t i = 0; i < nargs; ++i) {
      std::vector<uint8_t> r = sp->read(arch::Space::L1, uint64_t(block) + 8 + 48 * i, 48, core);
      TCHostArg& a = args[i];
      a = TCHostArg{};
      a.kind = r[0];
      a.dtype = r[1];
      a.ndim = r[2];
      int32_t iv;
      float fv;
      uint32_t addr;
      std::memcpy(&iv, &r[4], 4);
      std::memcpy(&fv, &r[8], 4);
      std::memcpy(&addr, &r[12], 4);
      a.i = iv;
      a.f = fv;
      if (a.kind != 2) continue;
      if (r[3] > 2)
        TILECORE_THROW(ValueError)
            << "hcall `" << name << "`: argument " << i << " has space " << int(r[3]);
      if (a.dtype < 0 || a.dtype > 9 || a.ndim < 1 || a.ndim > 4) {
        TILECORE_THROW(ValueError) << "hcall `" << name << "`: argument " << i << " has dtype "
                                   << a.dtype << ", rank " << a.ndim;
      }
      static const int kSize[10] = {1, 1, 2, 2, 4, 4, 2, 2, 4, 1};
      int64_t last = 0;  // the element span, from the first element
      for (int k = 0; k < a.ndim; ++k) {
        uint32_t ext;
        int32_t st;
        std::memcpy(&ext, &r[16 + 4 * k], 4);
        std::memcpy(&st, &r[32 + 4 * k], 4);
        if (st < 0)
          TILECORE_THROW(ValueError)
              << "hcall `" << name << "`: argument " << i << " has a negative stride";
        a.shape[k] = ext;
        a.strides[k] = st;
        if (ext > 0) last += int64_t(ext - 1) * st;
      }
      where[i] = {arch::Space(r[3]), addr};
      spans[i] =
          sp->read(arch::Space(r[3]), addr, uint64_t(last + 1) * uint64_t(kSize[a.dtype]), core);
      a.data = spans[i].data();
    }
    std::vector<std::vector<uint8_t>> before = spans;
    std::exception_ptr err;
    if (HostCallPacked(name.c_str(), int32_t(nargs), args.data(), &err) != 0)
      std::rethrow_exception(err);
    // What the host function changed goes back; into an argument the kernel only reads, not.
    for (uint32_t i = 0; i < nargs; ++i) {
      if (args[i].kind != 2 || spans[i] == before[i]) continue;
      if (where[i].first == arch::Space::DDR && !sp->ddr_writable(where[i].second, spans[i].size()))
        TILECORE_THROW(ValueError)
            << "hcall `" << name << "`: argument " << i << " changed ddr [" << where[i].second
            << ", +" << spans[i].size() << " bytes), an argument the kernel only reads";
      sp->write(where[i].first, where[i].second, spans[i], core);
    }
  });
}

void LoadNpuCall(const Module& module, const std::string& function, sim::Simulator& s,
                 ffi::PackedArgs args) {
  auto* node = dynamic_cast<const NpuModuleNode*>(module.node());
  if (node == nullptr)
    TILECORE_THROW(TypeError) << "kernel `" << function << "`: not a function of an npu module";
  const NpuKernel& k = node->Kernel(function);
  CheckKernelArgs(k.name, k.params, args, /*int64_words=*/true);
  CheckNpuFits(k, s.config(), "the simulator", "");
  LoadCall(k, s, args);
}

Module NpuModuleCreate(std::vector<NpuKernel> kernels) {
  for (const NpuKernel& k : kernels) CheckNpuParamCount(k.name, k.params.size());
  return Module(std::make_unique<NpuModuleNode>(std::move(kernels)));
}

TILECORE_REGISTER_GLOBAL("runtime.InstallHostCalls").set_body_typed([](sim::SimulatorRef s) {
  InstallHostCalls(s.mut()->sim);
});
TILECORE_REGISTER_GLOBAL("runtime.module.loadbinary_npu").set_body_typed([](ffi::Bytes b) {
  return NpuModuleNode::Load(b);
});

// runtime.NpuModuleCreate(kernels): each kernel a Map {name, program (arch.Program),
// assembly, params, cores, line_table [[section, pc, location], ...]}.
TILECORE_REGISTER_GLOBAL("runtime.NpuModuleCreate").set_body_typed([](ffi::Array<ffi::Any> descs) {
  std::vector<NpuKernel> kernels;
  for (const ffi::Any& a : descs) {
    auto m = a.cast<ffi::Map<ffi::String, ffi::Any>>();
    NpuKernel k;
    k.name = m["name"].cast<std::string>();
    k.program = m["program"].cast<arch::ProgramRef>()->program;
    k.assembly = m.count("assembly") ? m["assembly"].cast<std::string>() : std::string();
    k.params = ParamsFromArray(m["params"].cast<ffi::Array<ffi::Any>>());
    k.cores = m.count("cores") ? static_cast<int>(m["cores"].cast<int64_t>()) : 1;
    if (m.count("line_table")) {
      for (const ffi::Any& e : m["line_table"].cast<ffi::Array<ffi::Any>>()) {
        auto t = e.cast<ffi::Array<ffi::Any>>();
        k.lines.push_back(LineEntry{static_cast<int32_t>(t[0].cast<int64_t>()),
                                    static_cast<int32_t>(t[1].cast<int64_t>()),
                                    t[2].cast<std::string>()});
      }
    }
    kernels.push_back(std::move(k));
  }
  return NpuModuleCreate(std::move(kernels));
});

}  // namespace tilecore::runtime
#endif  // TILECORE_ENABLE_NPU
