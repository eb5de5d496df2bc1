// src/debug/engine.cc — stop conditions, resume/reverse and the write log (engine.h).
#include "tilecore/debug/engine.h"

#include <algorithm>
#include <stdexcept>

namespace tilecore::debug {

namespace {

constexpr size_t kMaxSnapshots = 64;

bool overlaps(uint64_t lo1, uint64_t hi1, uint64_t lo2, uint64_t hi2) {
  return lo1 < hi2 && lo2 < hi1;
}

}  // namespace

Engine::Engine(sim::Simulator* sim) : sim_(sim) {
  for (int k = 0; k < arch::kNumOpcodes; ++k)
    op_is_tile_[size_t(k)] = arch::unit_engine(arch::info(arch::Opcode(k)).unit).has_value();
  sim_->set_debug_hook(this);
  stops_changed();
}

Engine::~Engine() { sim_->set_debug_hook(nullptr); }

void Engine::begin() {
  snaps_.clear();
  log_.clear();
  pool_.clear();
  interval_ = 4096;
  fresh_ = true;
  skip_position_ = UINT64_MAX;
  if (recording_) take_snapshot();
}

void Engine::set_recording(bool on) {
  recording_ = on;
  stops_changed();
  snaps_.clear();
  log_.clear();
  pool_.clear();
  if (on) take_snapshot();
}

uint64_t Engine::history_start() const {
  return snaps_.empty() ? position() : snaps_.front().position;
}

// ---- stops ------------------------------------------------------------------------------------

int Engine::add_stop(Stop s) {
  if (s.id == 0) s.id = next_id_;
  next_id_ = std::max(next_id_, s.id + 1);
  stops_.push_back(s);
  stops_changed();
  return s.id;
}

void Engine::remove_stop(int id) {
  auto it = std::find_if(stops_.begin(), stops_.end(), [&](const Stop& s) { return s.id == id; });
  if (it == stops_.end()) throw std::invalid_argument("no breakpoint number " + std::to_string(id));
  stops_.erase(it);
  stops_changed();
}

Stop& Engine::stop_ref(int id) {
  for (Stop& s : stops_)
    if (s.id == id) return s;
  throw std::invalid_argument("no breakpoint number " + std::to_string(id));
}

void Engine::stops_changed() {
  op_stop_.fill(0);
  pc_stop_.assign(size_t(sim_->cores()), {});
  any_pc_stop_any_core_ = any_command_stop_ = any_watch_ = false;
  want_reads = false;
  want_writes = recording_;
  for (const Stop& s : stops_) {
    if (!s.enabled) continue;
    if (s.kind == StopKind::Watch) {
      want_reads = want_reads || (s.mode & kWatchRead);
      want_writes = want_writes || (s.mode & kWatchWrite);
    }
    switch (s.kind) {
      case StopKind::Mnemonic:
        op_stop_[size_t(s.op)] = 1;
        break;
      case StopKind::Pc:
        for (int c = 0; c < sim_->cores(); ++c) {
          if (s.core >= 0 && s.core != c) continue;
          auto& v = pc_stop_[size_t(c)];
          if (v.size() <= s.pc) v.resize(size_t(s.pc) + 1, 0);
          v[s.pc] = 1;
        }
        break;
      case StopKind::Command:
        any_command_stop_ = true;
        break;
      case StopKind::Watch:
        any_watch_ = true;
        break;
    }
  }
  update_wants();
}

void Engine::update_wants() {
  bool any = any_command_stop_ || std::find(op_stop_.begin(), op_stop_.end(), 1) != op_stop_.end();
  for (const auto& v : pc_stop_) any = any || !v.empty();
  want_instructions = replaying_ ? (collect_ && any) : (any || transient_);
}

bool Engine::match_instruction(int core, uint32_t pc, const arch::Inst* inst, std::vector<Hit>* out,
                               bool count) {
  const auto& pcs = pc_stop_[size_t(core)];
  bool pc_flag = pc < pcs.size() && pcs[pc];
  bool op_flag = inst && op_stop_[size_t(inst->op)];
  std::optional<arch::Engine> eng;
  if (inst && any_command_stop_) eng = arch::unit_engine(arch::info(inst->op).unit);
  if (!pc_flag && !op_flag && !eng) return false;
  bool fired = false;
  for (Stop& s : stops_) {
    if (!s.enabled || (s.core >= 0 && s.core != core)) continue;
    bool m = false;
    switch (s.kind) {
      case StopKind::Mnemonic:
        m = op_flag && inst->op == s.op;
        break;
      case StopKind::Pc:
        m = pc_flag && s.pc == pc;
        break;
      case StopKind::Command:
        m = eng && *eng == s.engine && sim_->issued(core, *eng) == s.command;
        break;
      case StopKind::Watch:
        break;
    }
    if (!m) continue;
    if (count) {
      ++s.hits;
      if (s.ignore) {
        --s.ignore;
        continue;
      }
    }
    Hit h;
    h.id = s.id;
    h.core = core;
    h.pc = pc;
    h.op = inst ? inst->op : arch::Opcode{};
    h.position = position();
    out->push_back(h);
    fired = true;
  }
  return fired;
}

bool Engine::before_instruction(int core, uint32_t pc, const arch::Inst* inst, uint64_t pos) {
  if (replaying_) {
    if (collect_) match_instruction(core, pc, inst, collect_, false);
    return false;
  }
  // Fast path: nothing can match this instruction.
  const auto& pcs = pc_stop_[size_t(core)];
  bool candidate = (pc < pcs.size() && pcs[pc]) ||
                   (inst && (op_stop_[size_t(inst->op)] ||
                             (any_command_stop_ && op_is_tile_[size_t(inst->op)])));
  if (!candidate && !transient_) return false;
  // Resuming steps over a breakpoint at the position it resumes from (not over transient stops).
  bool stop = candidate && pos != skip_position_ && match_instruction(core, pc, inst, &hits_, true);
  if (transient_) {
    const Transient& t = *transient_;
    bool hit =
        (inst && (t.unit_mask >> unsigned(arch::info(inst->op).unit) & 1)) ||
        (size_t(core) < t.pcs.size() && pc < t.pcs[size_t(core)].size() && t.pcs[size_t(core)][pc]);
    if (hit) {
      transient_hit_ = true;
      Hit h;
      h.core = core;
      h.pc = pc;
      h.op = inst ? inst->op : arch::Opcode{};
      h.position = pos;
      hits_.push_back(h);
      stop = true;
    }
  }
  return stop;
}

void Engine::on_access(const sim::MemAccess& a) {
  if (recording_ && a.write) {
    WriteRecord r;
    r.position = position();
    r.core = a.core;
    r.agent = a.agent;
    r.pc = a.pc;
    r.op = a.op;
    r.space = a.space;
    r.mem_core = a.mem_core;
    r.lo = a.lo;
    r.hi = a.hi;
    r.undo = pool_.size();
    if (a.data) {
      r.has_bytes = true;
      pool_.insert(pool_.end(), a.data, a.data + (a.hi - a.lo));
    }
    log_.push_back(r);
  }
  if (!any_watch_ || (replaying_ && !collect_)) return;
  for (Stop& s : stops_) {
    if (s.kind != StopKind::Watch || !s.enabled || s.space != a.space) continue;
    if (a.space == arch::Space::L1 && s.core >= 0 && s.core != a.mem_core) continue;
    if (!(s.mode & (a.write ? kWatchWrite : kWatchRead)) || !overlaps(s.lo, s.hi, a.lo, a.hi))
      continue;
    if (!replaying_) {
      ++s.hits;
      if (s.ignore) {
        --s.ignore;
        continue;
      }
    }
    Hit h;
    h.id = s.id;
    h.core = a.core;
    h.pc = a.pc;
    h.agent = a.agent;
    h.op = a.op;
    h.write = a.write;
    h.space = a.space;
    h.lo = std::max(s.lo, a.lo);
    h.hi = std::min(s.hi, a.hi);
    // A front-end access belongs to the instruction being executed; the state
    // just after it is that of the next position.
    h.position = position() + (a.agent == 0 ? 1 : 0);
    if (replaying_) {
      collect_->push_back(h);
    } else {
      hits_.push_back(h);
      stop = true;
    }
  }
}

// ---- running ----------------------------------------------------------------------------------

StopReport Engine::resume(uint64_t max_instructions, const Transient& t) {
  StopReport rep;
  skip_position_ = fresh_ ? UINT64_MAX : position();
  fresh_ = false;
  transient_ = (t.unit_mask || !t.pcs.empty()) ? &t : nullptr;
  update_wants();
  struct Reset {
    Engine* e;
    ~Reset() {
      e->transient_ = nullptr;
      e->stop = false;
      e->update_wants();
    }
  } reset{this};
  uint64_t left = max_instructions;
  while (left > 0 && !sim_->finished()) {
    uint64_t chunk = left;
    uint64_t next_snap = 0;
    if (recording_ && !snaps_.empty()) {
      next_snap = snaps_.back().position + interval_;
      if (next_snap > position()) chunk = std::min(chunk, next_snap - position());
    }
    hits_.clear();
    transient_hit_ = false;
    stop = false;
    uint64_t n = sim_->step(chunk);
    rep.executed += n;
    left -= std::min(left, n);
    if (stop) {
      rep.hits = hits_;
      bool watch = false;
      for (const Hit& h : hits_)
        if (h.id && stop_ref(h.id).kind == StopKind::Watch) watch = true;
      bool user = std::any_of(hits_.begin(), hits_.end(), [](const Hit& h) { return h.id != 0; });
      rep.reason = watch  ? StopReport::Watchpoint
                   : user ? StopReport::Breakpoint
                          : StopReport::Transient;
      return rep;
    }
    if (recording_ && n == chunk && position() == next_snap) {
      take_snapshot();
      trim_history();
    }
    if (n < chunk) break;
  }
  rep.reason = sim_->finished() ? StopReport::Finished : StopReport::Step;
  return rep;
}

void Engine::take_snapshot() {
  snaps_.push_back(Snapshot{position(), log_.size(), pool_.size(), sim_->save_state()});
  if (snaps_.size() > kMaxSnapshots) {
    // Keep the first and every other later one; the interval doubles.
    std::vector<Snapshot> kept;
    for (size_t k = 0; k < snaps_.size(); ++k)
      if (k == 0 || k % 2 == 0 || k + 1 == snaps_.size()) kept.push_back(snaps_[k]);
    snaps_ = std::move(kept);
    interval_ *= 2;
  }
}

void Engine::trim_history() {
  if (pool_.size() <= pool_limit_) return;
  // Too much undo data: the history restarts here.
  snaps_.clear();
  log_.clear();
  pool_.clear();
  take_snapshot();
}

void Engine::restore(const Snapshot& s) {
  // Undo the writes made after the snapshot, newest first.
  while (log_.size() > s.log_size) {
    const WriteRecord& r = log_.back();
    if (r.has_bytes)
      sim_->write(r.space, r.lo, std::span<const uint8_t>(pool_.data() + r.undo, r.hi - r.lo),
                  r.mem_core);
    log_.pop_back();
  }
  pool_.resize(s.pool_size);
  sim_->restore_state(s.state);
  while (!snaps_.empty() && snaps_.back().position > s.position) snaps_.pop_back();
}

void Engine::replay_to(uint64_t target, std::vector<Hit>* hits) {
  replaying_ = true;
  collect_ = hits;
  update_wants();
  struct Reset {
    Engine* e;
    ~Reset() {
      e->replaying_ = false;
      e->collect_ = nullptr;
      e->stop = false;
      e->update_wants();
    }
  } reset{this};
  while (position() < target && !sim_->finished()) {
    uint64_t next_snap = snaps_.back().position + interval_;
    uint64_t chunk = std::min(target, next_snap) - position();
    uint64_t n = sim_->step(chunk);
    if (n == chunk && position() == next_snap) take_snapshot();
    if (n < chunk) break;
  }
}

StopReport Engine::reverse_to(uint64_t target) {
  if (!recording_ || snaps_.empty())
    throw std::invalid_argument("reverse execution needs recording (record on)");
  StopReport rep;
  uint64_t start = history_start();
  if (target < start) target = start;
  size_t k = snaps_.size();
  while (k > 1 && snaps_[k - 1].position > target) --k;
  Snapshot s = snaps_[k - 1];
  restore(s);
  replay_to(target, nullptr);
  fresh_ = false;
  rep.reason = target == start ? StopReport::HistoryStart : StopReport::Step;
  return rep;
}

StopReport Engine::reverse_continue() {
  if (!recording_ || snaps_.empty())
    throw std::invalid_argument("reverse execution needs recording (record on)");
  uint64_t now = position();
  uint64_t end = now;
  while (true) {
    size_t k = snaps_.size();
    while (k > 1 && snaps_[k - 1].position >= end) --k;
    Snapshot s = snaps_[k - 1];
    restore(s);
    std::vector<Hit> found;
    replay_to(end, &found);
    std::vector<Hit> before;
    for (const Hit& h : found)
      if (h.position < now && h.position >= s.position) before.push_back(h);
    if (!before.empty()) {
      uint64_t last = before.back().position;
      for (const Hit& h : before) last = std::max(last, h.position);
      restore(s);
      replay_to(last, nullptr);
      StopReport rep;
      bool watch = false;
      for (const Hit& h : before) {
        if (h.position != last) continue;
        rep.hits.push_back(h);
        if (stop_ref(h.id).kind == StopKind::Watch) watch = true;
      }
      rep.reason = watch ? StopReport::Watchpoint : StopReport::Breakpoint;
      fresh_ = false;
      return rep;
    }
    if (k == 1) {
      restore(s);
      StopReport rep;
      rep.reason = StopReport::HistoryStart;
      fresh_ = false;
      return rep;
    }
    end = s.position;
  }
}

// ---- the write log ------------------------------------------------------------------------------

bool Engine::last_write(arch::Space space, int mem_core, uint64_t addr, WriteRecord* out) const {
  for (size_t k = log_.size(); k-- > 0;) {
    const WriteRecord& r = log_[k];
    if (r.space == space && (space != arch::Space::L1 || r.mem_core == mem_core) && r.lo <= addr &&
        addr < r.hi) {
      *out = r;
      return true;
    }
  }
  return false;
}

void Engine::host_write(arch::Space space, int mem_core, uint64_t addr, const uint8_t* data,
                        uint64_t n) {
  std::vector<uint8_t> old = sim_->read(space, addr, n, mem_core);  // also checks the range
  if (recording_) {
    WriteRecord r;
    r.position = position();
    r.agent = -1;
    r.space = space;
    r.mem_core = mem_core;
    r.lo = addr;
    r.hi = addr + n;
    r.undo = pool_.size();
    r.has_bytes = true;
    pool_.insert(pool_.end(), old.begin(), old.end());
    log_.push_back(r);
  }
  sim_->write(space, addr, std::span<const uint8_t>(data, n), mem_core);
}

}  // namespace tilecore::debug
