// src/runtime/executable_run.cc — the executor: runs a `.tcx` on the npu device and the CPU,
// with per-step statistics from the simulator and a Chrome/Perfetto trace; and the registry.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/json.h"
#include "tilecore/runtime/executable.h"
#if TILECORE_ENABLE_NPU
#include "bound_by.h"
#include "group_members.h"
#include "tilecore/runtime/npu_device.h"
#include "tilecore/sim/stats.h"
#endif

namespace tilecore::runtime {
namespace {

using ffi::Any;
using JMap = ffi::Map<ffi::String, ffi::Any>;
using JArr = ffi::Array<ffi::Any>;

[[maybe_unused]] double Seconds(std::chrono::steady_clock::time_point a,
                                std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/*! \brief A view of bytes [offset, offset + size) of `arena` with the buffer's shape and dtype. */
[[maybe_unused]] ffi::NDArray View(const ffi::NDArray& arena, const ExecBuffer& b) {
  struct Ctx {
    ffi::NDArray arena;
    std::vector<int64_t> shape;
  };
  auto* ctx = new Ctx{arena, b.shape};  // freed by the deleter below
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = arena.tensor().data;
  m->dl_tensor.byte_offset = arena.tensor().byte_offset + b.offset;
  m->dl_tensor.device = arena.device();
  m->dl_tensor.ndim = int32_t(ctx->shape.size());
  m->dl_tensor.shape = ctx->shape.data();
  m->dl_tensor.strides = nullptr;
  m->dl_tensor.dtype = ffi::StringToDLDataType(b.dtype);
  m->manager_ctx = ctx;
  m->deleter = [](DLManagedTensor* self) {
    delete static_cast<Ctx*>(self->manager_ctx);
    delete self;
  };
  return ffi::NDArray::FromDLPack(m);
}

[[maybe_unused]] std::string JsonEscape(const std::string& s) {
  return ffi::json::Stringify(ffi::String(s));
}

/*! \brief Copies the first `rows` along axis `axis` of `from` into the same rows of `to` (host
 * arrays of one dtype and rank whose shapes differ only along `axis`): padding an input to a
 * bucket's batch, cropping an output to the run's. */
[[maybe_unused]] void CopyRows(const ffi::NDArray& from, ffi::NDArray& to, size_t axis,
                               int64_t rows) {
  const auto& fs = from.shape();
  const auto& ts = to.shape();
  uint64_t outer = 1, inner = ffi::DataTypeBytes(from.dtype());
  for (size_t d = 0; d < axis; ++d) outer *= uint64_t(fs[d]);
  for (size_t d = axis + 1; d < fs.size(); ++d) inner *= uint64_t(fs[d]);
  const char* src = from.data<const char>();
  char* dst = to.data<char>();
  for (uint64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * uint64_t(ts[axis]) * inner, src + o * uint64_t(fs[axis]) * inner,
                uint64_t(rows) * inner);
  }
}

}  // namespace

namespace {

/*! \brief One step of a run as it went: what its statistics and trace are built from. */
struct StepRecord {
  const ExecStep* step = nullptr;
  double seconds = 0;  // the call's wall time
#if TILECORE_ENABLE_NPU
  sim::Stats stats;                       // an npu step's figures from the simulator
  std::vector<sim::TraceEvent> commands;  // and its tile commands, when the simulator traces
  std::shared_ptr<const std::vector<GroupMember>> members;  // a layer group's
#endif
};

/*! \brief A finished run: its steps and the figures of the whole. */
struct RunRecord {
  std::vector<StepRecord> steps;
  int cores = 0;
  uint64_t peak = 0;  // MACs a cycle a core at the executable's precision
  std::string precision;
  uint64_t cycles = 0, macs = 0, npu_macs = 0;
  double wall_seconds = 0, call_seconds = 0, npu_seconds = 0, host_seconds = 0;
  size_t buckets = 1, bucket = 0;
  int64_t padded_from = -1;
  std::string bucket_inputs;
  bool constants_in_place = false;  // found where the last run left them: not written again
};

#if TILECORE_ENABLE_NPU
/*! \brief A layer group step's members and their code as pc regions, read once. */
struct GroupCode {
  std::vector<GroupMember> members;
  std::vector<sim::PcRegion> regions;
};
#endif

}  // namespace

struct RunState {
  std::mutex mu;
  // this executable's name on a device (NpuDevice::ResidentConstants::owner): never reused
  const uint64_t id = [] {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
  }();
  std::map<size_t, bool> constants_stay;  // bucket -> ConstantsStayPut
  std::shared_ptr<const RunRecord> last;
  std::optional<std::string> stats, trace;  // built from `last` when first asked for
#if TILECORE_ENABLE_NPU
  // (bucket, step, cores) -> its members (null: no layer group); the cores are the device's
  std::map<std::tuple<size_t, size_t, int>, std::shared_ptr<const GroupCode>> groups;
#endif
};

namespace {

std::string BuildStats(const RunRecord& r);
std::string BuildTrace(const RunRecord& r);

}  // namespace

RunState& ExecutableObj::run_state() const {
  std::lock_guard<std::mutex> lock(run_state_mu_);
  if (!run_state_) run_state_ = std::make_shared<RunState>();
  return *run_state_;
}

std::string ExecutableObj::last_stats() const {
  RunState& rs = run_state();
  std::lock_guard<std::mutex> lock(rs.mu);
  if (!rs.last) return "";
  if (!rs.stats) rs.stats = BuildStats(*rs.last);
  return *rs.stats;
}

std::string ExecutableObj::last_trace() const {
  RunState& rs = run_state();
  std::lock_guard<std::mutex> lock(rs.mu);
  if (!rs.last) return "";
  if (!rs.trace) rs.trace = BuildTrace(*rs.last);
  return *rs.trace;
}

std::map<std::string, ffi::NDArray> Executable::Run(
    const std::map<std::string, ffi::NDArray>& inputs, int device_id, const ffi::Function* progress,
    const ffi::Function* observe, RunSummary* summary) const {
#if !TILECORE_ENABLE_NPU
  (void)inputs, (void)device_id, (void)progress, (void)observe, (void)summary;
  TILECORE_THROW(RuntimeError)
      << "tilecore was built without the npu device; an executable cannot run";
#else
  auto t_start = std::chrono::steady_clock::now();
  const ExecutableObj& exe = *get();
  // ---- the signature: the names (every bucket's), then the bucket the shapes take
  for (const auto& [name, arr] : inputs) {
    const ExecutableSpec& s = exe.spec;
    bool known = false;
    for (const ExecIO& io : s.inputs) known = known || io.name == name;
    if (!known) {
      TILECORE_THROW(ValueError) << "unknown input `" << name << "`; the executable expects "
                                 << DescribeSignature(s, true);
    }
  }
  for (const ExecIO& io : exe.spec.inputs) {
    if (!inputs.count(io.name)) {
      TILECORE_THROW(ValueError) << "missing input `" << io.name << "`; the executable expects "
                                 << DescribeSignature(exe.spec, true);
    }
  }
  BucketChoice choice;
  std::map<std::string, ffi::NDArray> padded;
  DLDevice cpu{kDLCPU, 0};
  if (exe.num_buckets() > 1) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& [name, arr] : inputs) shapes[name] = arr.shape();
    choice = ChooseBucket(exe, shapes);
    // A smaller batch runs in the bucket padded with zeros; its outputs are cropped below.
    if (choice.padded_from >= 0) {
      for (const ExecIO& io : exe.bucket(choice.bucket).inputs) {
        const ExecBuffer& b = exe.bucket(choice.bucket).buffers[io.buffer];
        ffi::NDArray given = inputs.at(io.name).CopyTo(cpu);
        if (ffi::DLDataTypeToString(given.dtype()) != b.dtype) continue;  // refused below
        ffi::NDArray full = ffi::NDArray::Empty(b.shape, given.dtype(), cpu);
        std::memset(full.data<char>(), 0, full.NumBytes());
        CopyRows(given, full, size_t(exe.policy.batch_axes.at(io.name)), choice.padded_from);
        padded.emplace(io.name, full);
      }
    }
  }
  const ExecutableSpec& s = exe.bucket(choice.bucket);
  const std::map<std::string, ffi::NDArray>& in = choice.padded_from >= 0 ? padded : inputs;
  for (const ExecIO& io : s.inputs) {
    auto it = in.find(io.name);
    const ExecBuffer& b = s.buffers[io.buffer];
    if (it == in.end()) {
      TILECORE_THROW(ValueError) << "input `" << io.name << "` is "
                                 << ffi::DLDataTypeToString(inputs.at(io.name).dtype())
                                 << "; the executable expects " << DescribeSignature(s, true);
    }
    std::string dt = ffi::DLDataTypeToString(it->second.dtype());
    if (dt != b.dtype || it->second.shape() != b.shape) {
      std::string got = dt + "[";
      auto sh = it->second.shape();
      for (size_t i = 0; i < sh.size(); ++i) got += (i ? ", " : "") + std::to_string(sh[i]);
      TILECORE_THROW(ValueError) << "input `" << io.name << "` is " << got
                                 << "]; the executable expects " << DescribeSignature(s, true);
    }
  }
  // ---- memory: one arena on the device, views per buffer
  NpuDevice& dev = GetNpuDevice(device_id);
  if (uint64_t ddr = dev.capacity(); s.arena_size > ddr - std::min(ddr, kNpuHeapBase)) {
    TILECORE_THROW(ValueError) << "the executable's arena of " << s.arena_size
                               << " bytes does not fit the DDR of npu:" << device_id << " (" << ddr
                               << " bytes, from " << kNpuHeapBase
                               << " up); configure the device with a larger one, e.g. "
                                  "runtime.npu_configure("
                               << device_id << ", \"npu -ddr=" << ((s.arena_size >> 30) + 1)
                               << "GiB\") (TC1 addresses up to 4 GiB)";
  }
  std::lock_guard<std::recursive_mutex> launch(dev.launch_mutex());
  DLDevice npu{static_cast<DLDeviceType>(ffi::kDLNPU), device_id};
  DLDataType u8 = ffi::StringToDLDataType("uint8");
  ffi::NDArray arena = ffi::NDArray::Empty({int64_t(std::max<uint64_t>(s.arena_size, 1))}, u8, npu);
  const uint64_t arena_addr =
      reinterpret_cast<uint64_t>(arena.tensor().data) + arena.tensor().byte_offset;
  RunState& state = exe.run_state();
  // Constants in place: the last run on this device was this executable's (this bucket), its
  // arena was here, no step may write a constant (the kernels' written flags, and the
  // simulator faults a store into an argument its kernel does not write), and nothing has
  // changed DDR since (the simulator's ddr_epoch). Then they are not written again.
  bool in_place = false;
  uint64_t foreign0 = 0;
  {
    bool stay;
    {
      std::lock_guard<std::mutex> lock(state.mu);
      auto it = state.constants_stay.find(choice.bucket);
      if (it == state.constants_stay.end())
        it = state.constants_stay.emplace(choice.bucket, ConstantsStayPut(s)).first;
      stay = it->second;
    }
    NpuDevice::ResidentConstants& rc = dev.resident_constants();
    sim::SimulatorRef sr = dev.simulator();
    std::lock_guard<std::mutex> lock(sr.mut()->mu);
    in_place = stay && rc.owner == state.id && rc.bucket == choice.bucket &&
               rc.arena == arena_addr && rc.epoch == sr->sim.ddr_epoch();
    rc = NpuDevice::ResidentConstants{};  // (until this run has finished)
    sr.mut()->sim.own_ddr(true);          // (another thread's change while this runs is noticed)
    foreign0 = sr->sim.foreign_ddr_changes();
  }
  struct Release {  // the ownership, however the run ends
    sim::SimulatorRef s;
    ~Release() {
      std::lock_guard<std::mutex> lock(s.mut()->mu);
      s.mut()->sim.own_ddr(false);
    }
  } release{dev.simulator()};
  // A callback that changes DDR (an observer writing into an array) may change a constant.
  bool callbacks_changed_ddr = false;
  auto epoch_now = [&] {
    std::lock_guard<std::mutex> lock(dev.simulator().mut()->mu);
    return dev.simulator()->sim.ddr_epoch();
  };
  std::vector<ffi::NDArray> views;
  views.reserve(s.buffers.size());
  for (const ExecBuffer& b : s.buffers) views.push_back(View(arena, b));
  sim::SimulatorRef simref = dev.simulator();
  {
    // Device memory is reused between runs: an arena starts as zeros, never as the bytes
    // an earlier run (or another model) left there. (Not the bytes written whole just
    // below, the constants' and the inputs': a weight-heavy model's arena is mostly those.)
    std::vector<std::pair<uint64_t, uint64_t>> written;
    for (const ExecConstant& c : s.constants)
      if (c.data().size() == views[c.buffer].NumBytes())
        written.emplace_back(s.buffers[c.buffer].offset, c.data().size());
    for (const ExecIO& io : s.inputs)
      written.emplace_back(s.buffers[io.buffer].offset, views[io.buffer].NumBytes());
    std::sort(written.begin(), written.end());
    std::lock_guard<std::mutex> lock(simref.mut()->mu);
    uint64_t base = reinterpret_cast<uint64_t>(arena.tensor().data) + arena.tensor().byte_offset;
    static const std::vector<uint8_t> zeros(size_t(1) << 20, 0);
    auto zero = [&](uint64_t from, uint64_t to) {
      for (uint64_t done = from; done < to; done += zeros.size()) {
        size_t n = size_t(std::min<uint64_t>(zeros.size(), to - done));
        simref.mut()->sim.write(arch::Space::DDR, base + done,
                                std::span<const uint8_t>(zeros.data(), n));
      }
    };
    sim::TranslateSimError([&] {
      uint64_t at = 0;  // the bytes below are zeroed or written below
      for (const auto& [offset, size] : written) {
        if (offset > at) zero(at, std::min<uint64_t>(offset, s.arena_size));
        at = std::max(at, offset + size);
      }
      if (at < s.arena_size) zero(at, s.arena_size);
    });
  }
  for (const ExecConstant& c : s.constants) {
    if (in_place) break;
    const ffi::NDArray& v = views[c.buffer];
    if (c.data().size() == v.NumBytes()) {
      // Straight from the executable into DDR: no host staging copy of every weight per run.
      std::lock_guard<std::mutex> lock(simref.mut()->mu);
      uint64_t addr = reinterpret_cast<uint64_t>(v.tensor().data) + v.tensor().byte_offset;
      sim::TranslateSimError([&] {
        simref.mut()->sim.write(
            arch::Space::DDR, addr,
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(c.data().data()),
                                     c.data().size()));
      });
      continue;
    }
    ffi::NDArray h = ffi::NDArray::Empty(s.buffers[c.buffer].shape, v.dtype(), cpu);
    if (!c.data().empty()) std::memcpy(h.data<char>(), c.data().data(), c.data().size());
    h.CopyTo(views[c.buffer]);
  }
  for (const ExecIO& io : s.inputs) in.at(io.name).CopyTo(views[io.buffer]);
  auto record = std::make_shared<RunRecord>();
  RunRecord& r = *record;
  r.cores = simref->sim.config().cores;
  r.peak = PeakMacsPerCycle(s.precision);
  r.precision = s.precision;
  r.buckets = exe.num_buckets(), r.bucket = choice.bucket, r.padded_from = choice.padded_from;
  if (r.buckets > 1) r.bucket_inputs = DescribeSignature(s, true);
  r.constants_in_place = in_place;
  r.steps.reserve(s.steps.size());
  // ---- the steps
  for (size_t t = 0; t < s.steps.size(); ++t) {
    const ExecStep& st = s.steps[t];
    std::optional<ffi::Function> f = s.modules[st.module].GetFunction(st.function);
    if (!f)
      TILECORE_THROW(InternalError)
          << "step " << t << ": function `" << st.function << "` vanished";
    if (progress) {
      uint64_t e = epoch_now();
      (*progress)(int64_t(t), int64_t(s.steps.size()), ffi::String(st.node));
      callbacks_changed_ddr |= epoch_now() != e;
    }
    std::vector<ffi::AnyView> args;
    for (uint32_t a : st.args) args.emplace_back(views[a]);
    // A layer group's members are measured by their code (pc regions) during its call.
    std::shared_ptr<const GroupCode> group;
    if (st.kind == ExecStep::kNpu) {
      std::lock_guard<std::mutex> lock(state.mu);
      auto [it, fresh] = state.groups.try_emplace({choice.bucket, t, r.cores});
      if (fresh) {
        auto code = std::make_shared<GroupCode>();
        code->members = ReadGroupMembers(st, r.cores);
        for (const GroupMember& g : code->members)
          code->regions.insert(code->regions.end(), g.code.begin(), g.code.end());
        if (!code->members.empty()) it->second = std::move(code);
      }
      group = it->second;
    }
    struct Regions {
      sim::SimulatorRef s;
      bool set;
      ~Regions() {
        if (!set) return;
        std::lock_guard<std::mutex> lock(s.mut()->mu);
        s.mut()->sim.set_pc_regions({});
      }
    } measured{simref, group != nullptr};
    if (measured.set) {
      std::lock_guard<std::mutex> lock(simref.mut()->mu);
      simref.mut()->sim.set_pc_regions(group->regions);
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      f->CallPacked(ffi::PackedArgs(args.data(), int32_t(args.size())));
    } catch (const ffi::Error& e) {
      if (e.kind() == "SimError") throw;  // keeps core, pc and instruction for Python
      throw ffi::Error(std::string(e.kind()),
                       "step " + std::to_string(t) + " `" + st.node + "` (" + st.op_type +
                           "): " + std::string(e.message()),
                       std::string(e.backtrace()));
    }
    auto t1 = std::chrono::steady_clock::now();
    StepRecord step;
    step.step = &st, step.seconds = Seconds(t0, t1);
    r.call_seconds += step.seconds;
    if (observe) {
      ffi::Array<ffi::NDArray> seen;
      for (uint32_t a : st.args) seen.push_back(views[a]);
      uint64_t e = epoch_now();
      (*observe)(int64_t(t), seen);
      callbacks_changed_ddr |= epoch_now() != e;
    }
    r.macs += st.macs;
    if (st.kind == ExecStep::kNpu) {
      {
        std::lock_guard<std::mutex> lock(simref.mut()->mu);
        step.stats = simref->sim.stats();
        if (simref->sim.config().trace) step.commands = simref->sim.trace_events();
      }
      if (group)
        step.members = std::shared_ptr<const std::vector<GroupMember>>(group, &group->members);
      r.npu_seconds += step.seconds;
      r.npu_macs += st.macs;
      r.cycles += step.stats.cycles;
    } else {
      r.host_seconds += step.seconds;
    }
    r.steps.push_back(std::move(step));
  }
  // ---- outputs
  std::map<std::string, ffi::NDArray> out;
  for (const ExecIO& io : s.outputs) {
    ffi::NDArray o = views[io.buffer].CopyTo(cpu);
    if (choice.padded_from >= 0) {
      // The rows of the padding are dropped: the output has the run's batch.
      size_t axis = size_t(exe.policy.batch_axes.at(io.name));
      std::vector<int64_t> shape = o.shape();
      shape[axis] = choice.padded_from;
      ffi::NDArray cropped = ffi::NDArray::Empty(shape, o.dtype(), cpu);
      CopyRows(o, cropped, axis, choice.padded_from);
      o = cropped;
    }
    out.emplace(io.name, o);
  }
  views.clear();
  {
    std::lock_guard<std::mutex> lock(simref.mut()->mu);
    if (!callbacks_changed_ddr && simref->sim.foreign_ddr_changes() == foreign0)
      dev.resident_constants() = NpuDevice::ResidentConstants{state.id, choice.bucket, arena_addr,
                                                              simref->sim.ddr_epoch()};
  }
  r.wall_seconds = Seconds(t_start, std::chrono::steady_clock::now());
  if (summary) {
    double denom = double(r.peak) * double(r.cycles) * double(r.cores);
    summary->cycles = r.cycles;
    summary->macs = r.macs;
    summary->mac_utilisation = denom > 0 ? double(r.npu_macs) / denom : 0.0;
    summary->wall_seconds = r.wall_seconds;
    summary->steps = int64_t(s.steps.size());
  }
  {
    std::lock_guard<std::mutex> lock(state.mu);
    state.last = std::move(record);
    state.stats.reset(), state.trace.reset();
  }
  return out;
#endif
}

// ---- a run's statistics and trace, built from its record when first asked for ---------------
namespace {

std::string BuildStats(const RunRecord& r) {
  JArr ops;
  double roofline_cycles = 0;  // the npu steps' roofline bounds summed (compiler/roofline.h)
  uint64_t ddr_r = 0, ddr_w = 0, l2_r = 0, l2_w = 0, l1_r = 0, l1_w = 0;
  for (const StepRecord& rec : r.steps) {
    const ExecStep& st = *rec.step;
    JMap op;
    op.Set("name", Any(ffi::String(st.source_node.empty() ? st.node : st.source_node)));
    op.Set("node", Any(ffi::String(st.node)));
    op.Set("op_type", Any(ffi::String(st.op_type)));
    op.Set("where", Any(ffi::String(st.kind == ExecStep::kNpu ? "npu" : "host")));
    op.Set("macs", Any(int64_t(st.macs)));
    op.Set("wall_seconds", Any(rec.seconds));
#if TILECORE_ENABLE_NPU
    if (st.kind == ExecStep::kNpu) {
      const sim::Stats& ss = rec.stats;
      uint64_t sim_macs = 0;
      JArr engines;
      std::vector<std::array<uint64_t, sim::kNumAgents>> busy;
      uint64_t ddr_cycles = 0;
      for (const sim::CoreStats& core : ss.cores) {
        sim_macs += core.macs;
        ddr_cycles += core.ddr_cycles;
        std::array<uint64_t, sim::kNumAgents>& b = busy.emplace_back();
        for (int a = 0; a < sim::kNumAgents; ++a) b[size_t(a)] = core.agents[size_t(a)].busy;
        engines.push_back(Any(BusyByEngine(b)));
      }
      const std::string bound = BoundBy(busy, ddr_cycles, ss.cycles);
      ddr_r += ss.ddr_read, ddr_w += ss.ddr_written, l2_r += ss.l2_read, l2_w += ss.l2_written;
      l1_r += ss.l1_read, l1_w += ss.l1_written;
      double denom = double(r.peak) * double(ss.cycles) * double(r.cores);
      op.Set("cycles", Any(int64_t(ss.cycles)));
      op.Set("sim_macs", Any(int64_t(sim_macs)));
      op.Set("mac_utilisation", Any(denom > 0 ? double(st.macs) / denom : 0.0));
      op.Set("instructions", Any(int64_t(ss.instructions)));
      op.Set("commands", Any(int64_t(ss.commands)));
      JMap bytes;
      bytes.Set("ddr_read", Any(int64_t(ss.ddr_read)));
      bytes.Set("ddr_written", Any(int64_t(ss.ddr_written)));
      bytes.Set("l2_read", Any(int64_t(ss.l2_read)));
      bytes.Set("l2_written", Any(int64_t(ss.l2_written)));
      bytes.Set("l1_read", Any(int64_t(ss.l1_read)));
      bytes.Set("l1_written", Any(int64_t(ss.l1_written)));
      op.Set("bytes", Any(bytes));
      op.Set("engine_busy", Any(engines));
      op.Set("ddr_cycles", Any(int64_t(ddr_cycles)));
      op.Set("bound_by", Any(ffi::String(bound)));
      if (std::optional<double> c = RooflineCycles(st.roofline_entry)) {
        op.Set("roofline_cycles", Any(*c));
        roofline_cycles += *c;
      }
      if (rec.members) SetMemberStats(op, *rec.members, ss);
      ops.push_back(Any(op));
      continue;
    }
#endif
    op.Set("cycles", Any(int64_t(0)));
    op.Set("sim_macs", Any(int64_t(0)));
    op.Set("mac_utilisation", Any(0.0));
    op.Set("bound_by", Any(ffi::String("host")));
    ops.push_back(Any(op));
  }
  JMap st;
  st.Set("cycles", Any(int64_t(r.cycles)));
  st.Set("macs", Any(int64_t(r.macs)));
  st.Set("npu_macs", Any(int64_t(r.npu_macs)));
  st.Set("roofline_cycles", Any(roofline_cycles));
  double denom = double(r.peak) * double(r.cycles) * double(r.cores);
  st.Set("mac_utilisation", Any(denom > 0 ? double(r.npu_macs) / denom : 0.0));
  st.Set("precision", Any(ffi::String(r.precision)));
  st.Set("peak_macs_per_cycle", Any(int64_t(r.peak * uint64_t(r.cores))));
  st.Set("cores", Any(int64_t(r.cores)));
  st.Set("steps", Any(int64_t(r.steps.size())));
  JMap bytes;
  bytes.Set("ddr_read", Any(int64_t(ddr_r)));
  bytes.Set("ddr_written", Any(int64_t(ddr_w)));
  bytes.Set("l2_read", Any(int64_t(l2_r)));
  bytes.Set("l2_written", Any(int64_t(l2_w)));
  bytes.Set("l1_read", Any(int64_t(l1_r)));
  bytes.Set("l1_written", Any(int64_t(l1_w)));
  st.Set("bytes", Any(bytes));
  st.Set("wall_seconds", Any(r.wall_seconds));
  st.Set("npu_call_seconds", Any(r.npu_seconds));
  st.Set("host_call_seconds", Any(r.host_seconds));
  st.Set("executor_overhead_seconds", Any(r.wall_seconds - r.call_seconds));
  st.Set("constants_in_place", Any(r.constants_in_place));
  st.Set("ops", Any(ops));
  if (r.buckets > 1) {
    JMap b;
    b.Set("index", Any(int64_t(r.bucket)));
    b.Set("buckets", Any(int64_t(r.buckets)));
    b.Set("inputs", Any(ffi::String(r.bucket_inputs)));
    if (r.padded_from >= 0) b.Set("padded_from", Any(r.padded_from));
    st.Set("bucket", Any(b));
  }
  return ffi::json::Stringify(st, 1);
}

std::string BuildTrace(const RunRecord& r) {
  std::string trace = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  char buf[512];
#if TILECORE_ENABLE_NPU
  for (int c = 0; c < r.cores; ++c) {
    std::snprintf(buf, sizeof buf,
                  "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": "
                  "\"core %d\"}},\n",
                  c, c);
    trace += buf;
    for (int a = 0; a < sim::kNumAgents; ++a) {
      std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                    "\"args\": {\"name\": \"%s\"}},\n",
                    c, a, sim::agent_name(sim::Agent(a)));
      trace += buf;
    }
  }
#endif
  const int host_pid = 1000;
  std::snprintf(
      buf, sizeof buf,
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"host\"}},\n"
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": "
      "\"cpu\"}}",
      host_pid, host_pid);
  trace += buf;
  uint64_t timeline_ns = 0;
  for (size_t t = 0; t < r.steps.size(); ++t) {
    const StepRecord& rec = r.steps[t];
    const ExecStep& st = *rec.step;
#if TILECORE_ENABLE_NPU
    if (st.kind == ExecStep::kNpu) {
      const sim::Stats& ss = rec.stats;
      for (size_t c = 0; c < ss.cores.size(); ++c) {
        for (int a = 0; a < sim::kNumAgents; ++a) {
          const sim::EngineStats& e = ss.cores[c].agents[size_t(a)];
          if (e.busy == 0) continue;
          std::snprintf(
              buf, sizeof buf,
              ",\n{\"ph\": \"X\", \"name\": %s, \"pid\": %zu, \"tid\": %d, \"ts\": %.3f, "
              "\"dur\": %.3f, "
              "\"args\": {\"op_type\": %s, \"busy_cycles\": %llu, \"stalled_cycles\": %llu}}",
              JsonEscape(st.node).c_str(), c, a, double(timeline_ns) / 1000.0,
              double(ss.cycles) / 1000.0, JsonEscape(st.op_type).c_str(),
              (unsigned long long)e.busy, (unsigned long long)(e.stalled_dep + e.stalled_bw));
          trace += buf;
        }
      }
      // its tile commands (and the front end's stalls), inside the step's slices
      for (const sim::TraceEvent& e : rec.commands) sim::AppendTraceEvent(&trace, e, timeline_ns);
      if (rec.members) {
        // each member's stretch on each core, as async slices (members may overlap)
        const std::vector<GroupMember>& members = *rec.members;
        for (size_t m = 0; m < members.size() && m < ss.regions.size(); ++m) {
          for (size_t c = 0; c < ss.regions[m].cores.size(); ++c) {
            const sim::RegionStats::Span& span = ss.regions[m].cores[c];
            if (span.empty()) continue;
            for (const char* ph : {"b", "e"}) {
              std::snprintf(buf, sizeof buf,
                            ",\n{\"ph\": \"%s\", \"cat\": \"member\", \"id\": \"%zu.%zu.%zu\", "
                            "\"pid\": %zu, \"tid\": 0, \"ts\": %.3f, \"args\": {\"member\": %zu, ",
                            ph, t, m, c, c,
                            double(timeline_ns + (*ph == 'b' ? span.first : span.last)) / 1000.0,
                            m);
              trace += buf;
              trace += "\"group\": " + JsonEscape(st.node) +
                       "}, \"name\": " + JsonEscape(members[m].node) + "}";
            }
          }
        }
      }
      timeline_ns += ss.cycles;
      continue;
    }
#endif
    uint64_t ns = uint64_t(rec.seconds * 1e9);
    std::snprintf(
        buf, sizeof buf,
        ",\n{\"ph\": \"X\", \"name\": %s, \"pid\": %d, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, "
        "\"args\": {\"op_type\": %s, \"host\": true}}",
        JsonEscape(st.node).c_str(), host_pid, double(timeline_ns) / 1000.0, double(ns) / 1000.0,
        JsonEscape(st.op_type).c_str());
    trace += buf;
    timeline_ns += ns;
  }
  trace += "\n]}\n";
  return trace;
}

}  // namespace

// ---- the builder's description: JSON (docs/executable.md, "Building") -----------------------
namespace {

template <typename T>
T Get(const JMap& m, const char* key, const std::string& where) {
  if (!m.count(key)) TILECORE_THROW(ValueError) << where << ": missing `" << key << "`";
  try {
    return m[key].cast<T>();
  } catch (const ffi::Error& e) {
    TILECORE_THROW(ValueError) << where << ": `" << key << "`: " << e.message();
  }
  return T();  // unreachable: the builder throws
}

uint32_t Index(const JMap& m, const char* key, const std::string& where) {
  int64_t v = Get<int64_t>(m, key, where);
  if (v < 0 || v > int64_t(UINT32_MAX))
    TILECORE_THROW(ValueError) << where << ": `" << key << "` = " << v;
  return uint32_t(v);
}

ExecutableSpec SpecFromJson(ffi::Array<Module> modules, const std::string& text,
                            ffi::Array<ffi::NDArray> constants) {
  JMap d = ffi::json::Parse(text).cast<JMap>();
  ExecutableSpec s;
  for (const Module& m : modules) s.modules.push_back(m);
  if (d.count("precision")) s.precision = d["precision"].cast<std::string>();
  int64_t arena = Get<int64_t>(d, "arena_size", "executable");
  if (arena < 0) TILECORE_THROW(ValueError) << "executable: arena_size " << arena;
  s.arena_size = uint64_t(arena);
  JArr bufs = Get<JArr>(d, "buffers", "executable");
  for (size_t i = 0; i < bufs.size(); ++i) {
    std::string w = "buffer " + std::to_string(i);
    JMap b = bufs[i].cast<JMap>();
    ExecBuffer e;
    e.name = Get<std::string>(b, "name", w);
    int64_t off = Get<int64_t>(b, "offset", w);
    if (off < 0) TILECORE_THROW(ValueError) << w << ": offset " << off;
    e.offset = uint64_t(off);
    e.dtype = Get<std::string>(b, "dtype", w);
    for (const Any& x : Get<JArr>(b, "shape", w)) e.shape.push_back(x.cast<int64_t>());
    // size: as given, else computed (validation compares the two when given)
    if (b.count("size")) {
      e.size = uint64_t(b["size"].cast<int64_t>());
    } else {
      DLDataType t = ffi::StringToDLDataType(e.dtype);
      uint64_t n = ffi::DataTypeBytes(t);
      for (int64_t dd : e.shape) n *= uint64_t(std::max<int64_t>(dd, 0));
      e.size = n;
    }
    s.buffers.push_back(std::move(e));
  }
  if (d.count("constants")) {
    JArr cs = d["constants"].cast<JArr>();
    if (cs.size() != constants.size()) {
      TILECORE_THROW(ValueError) << "executable: " << cs.size() << " constant records but "
                                 << constants.size() << " arrays";
    }
    for (size_t i = 0; i < cs.size(); ++i) {
      ExecConstant c;
      c.buffer = Index(cs[i].cast<JMap>(), "buffer", "constant " + std::to_string(i));
      // (a compact host array's bytes are taken as they are: a model's weights are copied once)
      ffi::NDArray a = constants[i];
      if (a.device().device_type != kDLCPU || !a.IsContiguous()) a = a.CopyTo(DLDevice{kDLCPU, 0});
      c.set(std::string(a.data<char>(), a.NumBytes()));
      s.constants.push_back(std::move(c));
    }
  }
  for (const char* key : {"inputs", "outputs"}) {
    JArr l = Get<JArr>(d, key, "executable");
    for (size_t i = 0; i < l.size(); ++i) {
      std::string w = std::string(key) + " " + std::to_string(i);
      JMap m = l[i].cast<JMap>();
      ExecIO io{Get<std::string>(m, "name", w), Index(m, "buffer", w)};
      (std::string(key) == "inputs" ? s.inputs : s.outputs).push_back(io);
    }
  }
  JArr steps = Get<JArr>(d, "steps", "executable");
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string w = "step " + std::to_string(i);
    JMap m = steps[i].cast<JMap>();
    ExecStep st;
    std::string kind = Get<std::string>(m, "kind", w);
    if (kind != "npu" && kind != "host")
      TILECORE_THROW(ValueError) << w << ": kind `" << kind << "` (npu or host)";
    st.kind = kind == "npu" ? ExecStep::kNpu : ExecStep::kHost;
    st.module = Index(m, "module", w);
    st.function = Get<std::string>(m, "function", w);
    for (const Any& a : Get<JArr>(m, "args", w)) {
      int64_t v = a.cast<int64_t>();
      if (v < 0 || v > int64_t(UINT32_MAX))
        TILECORE_THROW(ValueError) << w << ": argument buffer " << v;
      st.args.push_back(uint32_t(v));
    }
    st.node = Get<std::string>(m, "node", w);
    st.op_type = m.count("op_type") ? m["op_type"].cast<std::string>() : std::string();
    st.macs = m.count("macs") ? uint64_t(std::max<int64_t>(0, m["macs"].cast<int64_t>())) : 0;
    st.source_node = m.count("source_node") ? m["source_node"].cast<std::string>() : std::string();
    if (m.count("debug")) {
      for (const auto& [k, v] : m["debug"].cast<JMap>().items())
        st.debug[std::string(k)] = v.cast<std::string>();
    }
    ParseDebugEntries(&st);
    s.steps.push_back(std::move(st));
  }
  return s;
}

/*! \brief The plan and steps as JSON (the builder's description, constants as buffer indices). */
std::string SpecToJson(const ExecutableSpec& s) {
  JMap d;
  d.Set("version", Any(int64_t(s.format_version)));
  d.Set("precision", Any(ffi::String(s.precision)));
  d.Set("arena_size", Any(int64_t(s.arena_size)));
  JArr mods;
  for (const Module& m : s.modules) mods.push_back(Any(ffi::String(m.node()->kind())));
  d.Set("modules", Any(mods));
  JArr bufs;
  for (const ExecBuffer& b : s.buffers) {
    JMap m;
    m.Set("name", Any(ffi::String(b.name)));
    m.Set("offset", Any(int64_t(b.offset)));
    m.Set("size", Any(int64_t(b.size)));
    m.Set("dtype", Any(ffi::String(b.dtype)));
    JArr shape;
    for (int64_t x : b.shape) shape.push_back(Any(x));
    m.Set("shape", Any(shape));
    bufs.push_back(Any(m));
  }
  d.Set("buffers", Any(bufs));
  JArr cs;
  for (const ExecConstant& c : s.constants) {
    JMap m;
    m.Set("buffer", Any(int64_t(c.buffer)));
    cs.push_back(Any(m));
  }
  d.Set("constants", Any(cs));
  for (int k = 0; k < 2; ++k) {
    JArr l;
    for (const ExecIO& io : k == 0 ? s.inputs : s.outputs) {
      JMap m;
      m.Set("name", Any(ffi::String(io.name)));
      m.Set("buffer", Any(int64_t(io.buffer)));
      l.push_back(Any(m));
    }
    d.Set(k == 0 ? "inputs" : "outputs", Any(l));
  }
  JArr steps;
  for (const ExecStep& st : s.steps) {
    JMap m;
    m.Set("kind", Any(ffi::String(st.kind == ExecStep::kNpu ? "npu" : "host")));
    m.Set("module", Any(int64_t(st.module)));
    m.Set("function", Any(ffi::String(st.function)));
    JArr args;
    for (uint32_t a : st.args) args.push_back(Any(int64_t(a)));
    m.Set("args", Any(args));
    m.Set("node", Any(ffi::String(st.node)));
    m.Set("op_type", Any(ffi::String(st.op_type)));
    m.Set("macs", Any(int64_t(st.macs)));
    m.Set("source_node", Any(ffi::String(st.source_node)));
    JMap dbg;
    for (const auto& [k, v] : st.debug) dbg.Set(k, Any(ffi::String(v)));
    m.Set("debug", Any(dbg));
    steps.push_back(Any(m));
  }
  d.Set("steps", Any(steps));
  return ffi::json::Stringify(d, 1);
}

}  // namespace

TILECORE_REGISTER_GLOBAL("runtime.ExecutableCreate")
    .set_body_typed([](ffi::Array<Module> modules, std::string desc,
                       ffi::Array<ffi::NDArray> constants) {
      return Executable::Build(SpecFromJson(modules, desc, constants));
    });
TILECORE_REGISTER_GLOBAL("runtime.ExecutableSaveToFile")
    .set_body_typed([](Executable e, std::string path) { e.SaveToFile(path); });
namespace {
ExecutableLoadOptions LoadOptions(bool allow_host_code, ffi::Any expected_sha256) {
  ExecutableLoadOptions o;
  o.allow_host_code = allow_host_code;
  if (!expected_sha256.is_none()) o.expected_sha256 = expected_sha256.cast<std::string>();
  return o;
}
}  // namespace

// runtime.ExecutableLoadFromFile(path, allow_host_code, expected_sha256 or None)
TILECORE_REGISTER_GLOBAL("runtime.ExecutableLoadFromFile")
    .set_body_typed([](std::string path, bool allow_host_code, ffi::Any sha) {
      return Executable::LoadFromFile(path, LoadOptions(allow_host_code, sha));
    });
TILECORE_REGISTER_GLOBAL("runtime.ExecutableSaveToBytes").set_body_typed([](Executable e) {
  return ffi::Bytes(e.SaveToBytes());
});
// runtime.ExecutableLoadFromBytes(data, allow_host_code, expected_sha256 or None): the file's
// bytes as a host uint8 NDArray.
TILECORE_REGISTER_GLOBAL("runtime.ExecutableLoadFromBytes")
    .set_body_typed([](ffi::NDArray a, bool allow_host_code, ffi::Any sha) {
      if (a.device().device_type != kDLCPU || a.dtype().bits != 8 || a.dtype().lanes != 1 ||
          !a.IsContiguous()) {
        TILECORE_THROW(TypeError)
            << "runtime.ExecutableLoadFromBytes: expected a contiguous host uint8 array";
      }
      return Executable::LoadFromBytes(std::string_view(a.data<const char>(), a.NumBytes()),
                                       LoadOptions(allow_host_code, sha));
    });
TILECORE_REGISTER_GLOBAL("runtime.ExecutableDescribe").set_body_typed([](Executable e) {
  return ffi::String(SpecToJson(e->spec));
});
// runtime.ExecutableBuckets(executables, {value name: batch axis}): one executable whose buckets
// are those executables' programs (docs/executable.md, "Buckets").
TILECORE_REGISTER_GLOBAL("runtime.ExecutableBuckets")
    .set_body_typed([](ffi::Array<Executable> parts, ffi::Map<ffi::String, int64_t> batch_axes) {
      std::vector<ExecutableSpec> specs;
      for (const Executable& e : parts) {
        for (size_t k = 0; k < e->num_buckets(); ++k) specs.push_back(e->bucket(k));
      }
      BucketPolicy policy;
      for (const auto& [name, axis] : batch_axes.items())
        policy.batch_axes[std::string(name)] = axis;
      return Executable::BuildBuckets(std::move(specs), std::move(policy));
    });
// runtime.ExecutableBucketInfo(exe) -> JSON {"buckets": [{"inputs": {name: [shape]}, "outputs":
// ...}, ...], "batch_axes": {name: axis}}
TILECORE_REGISTER_GLOBAL("runtime.ExecutableBucketInfo").set_body_typed([](Executable e) {
  JArr buckets;
  for (size_t k = 0; k < e->num_buckets(); ++k) {
    const ExecutableSpec& s = e->bucket(k);
    JMap b;
    for (int io = 0; io < 2; ++io) {
      JMap shapes;
      for (const ExecIO& x : io == 0 ? s.inputs : s.outputs) {
        JArr shape;
        for (int64_t d : s.buffers[x.buffer].shape) shape.push_back(Any(d));
        shapes.Set(x.name, Any(shape));
      }
      b.Set(io == 0 ? "inputs" : "outputs", Any(shapes));
    }
    b.Set("arena_size", Any(int64_t(s.arena_size)));
    b.Set("steps", Any(int64_t(s.steps.size())));
    buckets.push_back(Any(b));
  }
  JMap axes;
  for (const auto& [name, axis] : e->policy.batch_axes) axes.Set(name, Any(axis));
  JMap d;
  d.Set("buckets", Any(buckets));
  d.Set("batch_axes", Any(axes));
  return ffi::String(ffi::json::Stringify(d));
});
// runtime.ExecutableBucket(exe, i): bucket i as a plain executable (shares modules and constants).
TILECORE_REGISTER_GLOBAL("runtime.ExecutableBucket").set_body_typed([](Executable e, int64_t i) {
  if (i < 0) TILECORE_THROW(IndexError) << "bucket " << i;
  return e.Bucket(size_t(i));
});
TILECORE_REGISTER_GLOBAL("runtime.ExecutableModules").set_body_typed([](Executable e) {
  ffi::Array<Module> out;
  for (const Module& m : e->spec.modules) out.push_back(m);
  return out;
});
// runtime.ExecutableRun(exe, names, arrays, device_id, progress or None, observe or None) ->
// [output names..., output arrays...]
TILECORE_REGISTER_GLOBAL("runtime.ExecutableRun")
    .set_body_typed([](Executable e, ffi::Array<ffi::String> names, ffi::Array<ffi::NDArray> arrays,
                       int64_t dev, ffi::Any progress, ffi::Any observe) {
      if (names.size() != arrays.size())
        TILECORE_THROW(ValueError) << "names and arrays differ in length";
      std::map<std::string, ffi::NDArray> in;
      for (size_t i = 0; i < names.size(); ++i) in.emplace(std::string(names[i]), arrays[i]);
      std::optional<ffi::Function> cb, seen;
      if (!progress.is_none()) cb = progress.cast<ffi::Function>();
      if (!observe.is_none()) seen = observe.cast<ffi::Function>();
#if TILECORE_ENABLE_NPU
      int device_id = NpuDeviceId(dev);
#else
      int device_id = 0;
#endif
      std::map<std::string, ffi::NDArray> out =
          e.Run(in, device_id, cb ? &*cb : nullptr, seen ? &*seen : nullptr);
      JArr res;
      for (const ExecIO& io : e->spec.outputs) res.push_back(Any(ffi::String(io.name)));
      for (const ExecIO& io : e->spec.outputs) res.push_back(Any(out.at(io.name)));
      return res;
    });
#if TILECORE_ENABLE_NPU
// runtime.ExecutableWriteConstants(exe, simulator, base): copies every constant into the
// simulator's DDR at base + its buffer's offset (a debugger laying out the arena itself).
TILECORE_REGISTER_GLOBAL("runtime.ExecutableWriteConstants")
    .set_body_typed([](Executable e, sim::SimulatorRef s, int64_t base) {
      if (base < 0)
        TILECORE_THROW(ValueError) << "runtime.ExecutableWriteConstants: negative base " << base;
      std::lock_guard<std::mutex> lock(s.mut()->mu);
      sim::TranslateSimError([&] {
        for (const ExecConstant& c : e->spec.constants) {
          const ExecBuffer& b = e->spec.buffers[c.buffer];
          s.mut()->sim.write(
              arch::Space::DDR, uint64_t(base) + b.offset,
              std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(c.data().data()),
                                       c.data().size()));
        }
      });
    });
#endif
TILECORE_REGISTER_GLOBAL("runtime.ExecutableStatsJSON").set_body_typed([](Executable e) {
  return ffi::String(e->last_stats());
});
TILECORE_REGISTER_GLOBAL("runtime.ExecutableTraceJSON").set_body_typed([](Executable e) {
  return ffi::String(e->last_trace());
});

}  // namespace tilecore::runtime
