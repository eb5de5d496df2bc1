// src/sim/simulator.cc — the public Simulator, a thin layer over Machine.
#include "tilecore/sim/simulator.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "machine.h"

namespace tilecore::sim {

namespace {

[[noreturn]] void usage(const std::string& msg) {
  throw SimError(SimError::Kind::Usage, -1, 0, "", msg);
}

void check_config(const SimConfig& c) {
  if (c.cores < 1 || c.cores > arch::tc1::kMaxCores)
    usage("cores must be 1..16, got " + std::to_string(c.cores));
  if (c.ddr_bytes == 0 || c.ddr_bytes > arch::tc1::kMaxDdrBytes)
    usage("ddr_bytes must be 1 .. 4 GiB");
  if (c.l2_bytes == 0 || c.l2_bytes > (uint64_t(1) << 32)) usage("l2_bytes must be 1 .. 4 GiB");
  if (c.l1_bytes == 0 || c.l1_bytes > (uint64_t(1) << 32)) usage("l1_bytes must be 1 .. 4 GiB");
  if (c.queue_depth < 1) usage("queue_depth must be at least 1");
}

}  // namespace

Simulator::Simulator(SimConfig config) {
  check_config(config);
  m_ = std::make_unique<Machine>(config);
}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

const SimConfig& Simulator::config() const { return m_->cfg; }

void Simulator::load(const arch::Program& program) {
  m_->note_ddr_change();
  m_->load(program);
}
uint64_t Simulator::ddr_epoch() const { return m_->ddr_epoch; }
void Simulator::own_ddr(bool on) {
  m_->ddr_owner = on ? std::this_thread::get_id() : std::thread::id();
}
uint64_t Simulator::foreign_ddr_changes() const { return m_->foreign_ddr_changes; }
bool Simulator::ddr_writable(uint64_t addr, uint64_t n) {
  return !m_->ddr_limited() || n == 0 || m_->in_ddr_arrays(addr, n, true);
}
void Simulator::set_ddr_arrays(std::vector<DdrArray> arrays) {
  m_->set_ddr_arrays(std::move(arrays));
}

static void check_range(const Machine& m, arch::Space s, uint64_t addr, uint64_t n, int core) {
  if (core < 0 || core >= m.cfg.cores)
    usage("core " + std::to_string(core) + " does not exist (cores 0.." +
          std::to_string(m.cfg.cores - 1) + ")");
  if (unsigned(s) >= unsigned(arch::kNumSpaces)) usage("bad memory space");
  if (!m.mem.in_bounds(s, addr, n)) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "host access %s [0x%llx, +%llu bytes) is outside the %llu-byte memory",
                  std::string(arch::space_name(s)).c_str(), (unsigned long long)addr,
                  (unsigned long long)n, (unsigned long long)m.mem.size(s));
    usage(buf);
  }
}

void Simulator::write(arch::Space space, uint64_t addr, std::span<const uint8_t> bytes, int core) {
  check_range(*m_, space, addr, bytes.size(), core);
  if (space == arch::Space::DDR) m_->note_ddr_change();
  if (!bytes.empty()) std::memcpy(m_->mem.base(space, core) + addr, bytes.data(), bytes.size());
}

std::vector<uint8_t> Simulator::read(arch::Space space, uint64_t addr, uint64_t nbytes,
                                     int core) const {
  check_range(*m_, space, addr, nbytes, core);
  const uint8_t* p = m_->mem.base(space, core) + addr;
  return std::vector<uint8_t>(p, p + nbytes);
}

void Simulator::read_into(arch::Space space, uint64_t addr, std::span<uint8_t> out,
                          int core) const {
  check_range(*m_, space, addr, out.size(), core);
  if (!out.empty()) std::memcpy(out.data(), m_->mem.base(space, core) + addr, out.size());
}

void Simulator::set_pc_regions(std::vector<PcRegion> regions) {
  m_->set_pc_regions(std::move(regions));
}

void Simulator::run(uint64_t max_instructions) {
  m_->note_ddr_change();
  m_->run(max_instructions, true, nullptr);
}

uint64_t Simulator::step(uint64_t n) {
  uint64_t done = 0;
  if (m_->finished()) return 0;
  m_->note_ddr_change();
  m_->run(n, false, &done);
  return done;
}

bool Simulator::finished() const { return m_->finished(); }
Stats Simulator::stats() const { return m_->stats(); }
const std::vector<Hazard>& Simulator::hazards() const { return m_->hazards; }
std::string Simulator::trace_json() const { return m_->trace_json(); }
std::vector<TraceEvent> Simulator::trace_events() const { return m_->trace_events(); }

void Simulator::write_trace(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  if (!f) usage("cannot open trace file '" + path + "' for writing");
  f << m_->trace_json();
  f.close();  // a full disk shows only when the buffer is flushed
  if (f.fail()) usage("writing trace file '" + path + "' failed");
}

int Simulator::cores() const { return m_->cfg.cores; }

static const Core& core_at(const Machine& m, int core) {
  if (core < 0 || core >= m.cfg.cores) usage("core " + std::to_string(core) + " does not exist");
  return m.cores[size_t(core)];
}

uint32_t Simulator::xreg(int core, int r) const {
  if (r < 0 || r >= 32) usage("x register index must be 0..31");
  return core_at(*m_, core).x[size_t(r)];
}
void Simulator::set_host_call(std::function<void(int core, uint32_t block)> fn) {
  m_->host_call_fn = std::move(fn);
}

void Simulator::set_xreg(int core, int r, uint32_t value) {
  if (r < 0 || r >= 32) usage("x register index must be 0..31");
  core_at(*m_, core);
  if (r != 0) m_->cores[size_t(core)].x[size_t(r)] = value;
}
std::array<uint8_t, 32> Simulator::vreg(int core, int r) const {
  if (r < 0 || r >= 32) usage("v register index must be 0..31");
  return core_at(*m_, core).v[size_t(r)];
}
uint32_t Simulator::preg(int core, int r) const {
  if (r < 0 || r >= 8) usage("p register index must be 0..7");
  return r == 0 ? 0xFFFFFFFFu : core_at(*m_, core).p[size_t(r)];
}
int64_t Simulator::pc(int core) const { return core_at(*m_, core).pc; }
std::string Simulator::instruction_at(int core, int64_t pc) const {
  const Core& c = core_at(*m_, core);
  return pc < 0 ? std::string() : m_->inst_text(c, uint32_t(std::min<int64_t>(pc, UINT32_MAX)));
}
int Simulator::source_line(int core, int64_t pc) const {
  const Core& c = core_at(*m_, core);
  return pc >= 0 && uint64_t(pc) < c.lines.size() ? c.lines[size_t(pc)] : 0;
}
bool Simulator::halted(int core) const { return core_at(*m_, core).halted; }
uint64_t Simulator::cycle() const { return m_->stats().cycles; }

}  // namespace tilecore::sim
