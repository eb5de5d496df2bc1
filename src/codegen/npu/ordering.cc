// src/codegen/npu/ordering.cc — engine ordering between the four tile queues and
// the front end.
//
// Vector- and matrix-engine commands are ordered like stores in the IR: per
// buffer (per slab of the outermost dimension when it is short, at most 8 slabs,
// and some access touches one slab) the code keeps, in two L1 words, the count of
// the last matrix and the last vector command that touched it (x31 / x30 count the
// commands issued). A DMA or a command on the other compute engine then waits in
// its own queue for exactly that command (`wait queue, engine, count`), and a
// front-end access to a tile operand waits for the compute engines (`wait sc`).
// DMAs are asynchronous as the IR says: tile.wait orders them.
//
// In straight-line code (no label between) the words' stores are held back until
// control flow or an access by a computed index (a later record of a word replaces
// its store; a wait reads the count from the counter register instead), and a wait
// a queue has already made is not repeated: the front end issues some 4
// instructions a command instead of 8.
#if TILECORE_ENABLE_NPU
#include "emitter.h"

namespace tilecore::codegen::npu {

using namespace ir;  // NOLINT

namespace {
constexpr int64_t kMaxSlabs = 8;  // slabs tracked separately; larger buffers use one counter pair
int Slot(arch::Engine e) { return e == arch::Engine::Matrix ? 0 : 1; }
int CountReg(int slot) { return slot == 0 ? kMmCount : kVecCount; }  // (commands issued)
}  // namespace

// Compute-engine bookkeeping of a tile operand's buffer.
void NpuEmitter::MakeTrack(const Buffer& b) {
  if (tracks_.count(b->data.get())) return;
  Track t;
  // (a buffer whose every access covers all its slabs waits and records once, not a
  // time per slab)
  if (b->shape.size() >= 2 && one_slab_.count(b->data.get())) {
    if (auto n = as_const_int(b->shape[0]); n && *n > 1 && *n <= kMaxSlabs) t.units = *n;
  }
  t.addr = b_.Words(2 * t.units);
  t.engines = engines_[b->data.get()];
  tracks_[b->data.get()] = t;
  track_shape0_[b->data.get()] = b->shape.size();
}

// The unit (slab of the outermost dimension) a region touches, or every unit.
NpuEmitter::Unit NpuEmitter::UnitOf(const PrimExpr& region) {
  const auto* r = region.as<BufferRegionNode>();
  Unit u;
  auto it = tracks_.find(r->buffer->data.get());
  if (it == tracks_.end()) {
    if (!tile_bufs_.count(r->buffer->data.get())) return u;
    MakeTrack(r->buffer);  // a parameter or shared buffer used by a compute command
    it = tracks_.find(r->buffer->data.get());
  }
  u.track = &it->second;
  if (u.track->units > 1 && r->buffer->shape.size() == track_shape0_[r->buffer->data.get()] &&
      is_const_int(r->extents[0], 1)) {
    u.index = r->begin[0];
  }
  return u;
}

// Makes `queue` wait for the last command of `engine` on each unit of `u`.
void NpuEmitter::WaitUnit(const Unit& u, O queue, arch::Engine engine) {
  int slot = Slot(engine);
  if (!u.track || !(u.track->engines & (1 << slot)))
    return;  // that engine never touches the buffer
  if (u.index.defined()) {
    if (auto c = as_const_int(u.index))
      return WaitWord(queue, engine, u.track->addr + *c * 8 + slot * 4);
    FlushRecords(u.track->addr, u.track->addr + u.track->units * 8);  // (a computed word)
    XR i = Reload(Eval(u.index));
    RI(Op::Slli, kScratch1, i.r, 3);
    Free(i);
    LdL1(Op::Lw, kScratch1, u.track->addr + slot * 4, kScratch1);
    WaitFor(queue, engine, kScratch1);
    return;
  }
  for (int64_t k = 0; k < u.track->units; ++k)
    WaitWord(queue, engine, u.track->addr + k * 8 + slot * 4);
}

// Makes `queue` wait for `engine` to reach the count in the bookkeeping word at `addr`,
// unless the queue waited so since the word was last written, on every path to here (no
// label placed since): a queue runs in order, so the first wait holds for the rest. (The
// taps of an item, a vector copy each into a buffer the previous item's mm read, each
// loaded and waited for the same count.)
void NpuEmitter::WaitWord(O queue, arch::Engine engine, int64_t addr) {
  const auto key = std::make_tuple(queue.reg, int(engine), addr);
  auto it = waited_.find(key);
  if (it != waited_.end() && it->second >= b_.last_bind()) return;
  waited_[key] = b_.size();
  if (auto h = held_.find(addr); h != held_.end()) {  // the count, from the counter register
    const auto [slot, issued] = h->second;
    if (QueueWaitedFor(queue, slot, issued)) return;
    E(Op::Wait, {queue, O::Engine(engine), O::Count(CountReg(slot), issued - issued_[slot])});
    return;
  }
  LdL1(Op::Lw, kScratch1, addr);
  WaitFor(queue, engine, kScratch1);
}

// Whether `queue` has waited, since the last label, for the first `issued` commands of the
// engine in `slot` (or more); if not, records that the wait about to be made does.
bool NpuEmitter::QueueWaitedFor(O queue, int slot, int64_t issued) {
  auto& upto = waited_upto_[{queue.reg, slot}];
  if (upto.second >= b_.last_bind() && upto.first >= issued) return true;
  upto = {issued, b_.size()};
  return false;
}

// Emits the counter increment of a command just issued on `engine`.
void NpuEmitter::CountIssued(arch::Engine engine) {
  const int slot = Slot(engine);
  RI(Op::Addi, CountReg(slot), CountReg(slot), 1);
  ++issued_[slot];
}

// Makes the held-back bookkeeping stores of the words in [lo, hi): the count each word
// recorded is the counter register less the commands issued since.
void NpuEmitter::FlushRecords(int64_t lo, int64_t hi) {
  for (auto it = held_.lower_bound(lo); it != held_.end() && it->first < hi;) {
    const auto [slot, issued] = it->second;
    const int cnt = CountReg(slot);
    if (issued == issued_[slot]) {
      StL1(Op::Sw, cnt, it->first);
    } else {
      RI(Op::Addi, kScratch3, cnt, issued - issued_[slot]);
      StL1(Op::Sw, kScratch3, it->first);
    }
    it = held_.erase(it);
  }
}

// Records the command just issued on `engine` as the last one on each unit of `u`.
void NpuEmitter::RecordUnit(const Unit& u, arch::Engine engine) {
  if (!u.track) return;
  int slot = Slot(engine);
  std::erase_if(waited_, [&](const auto& w) {  // (the waits for the words written here)
    const int64_t a = std::get<2>(w.first) - u.track->addr;
    return a >= 0 && a < u.track->units * 8 && a % 8 == slot * 4;
  });
  const int cnt = CountReg(slot);
  auto hold = [&](int64_t addr) { held_[addr] = {slot, issued_[slot]}; };
  if (u.index.defined()) {
    if (auto c = as_const_int(u.index)) {
      hold(u.track->addr + *c * 8 + slot * 4);
    } else {
      FlushRecords(u.track->addr, u.track->addr + u.track->units * 8);  // (a computed word)
      XR i = Reload(Eval(u.index));
      RI(Op::Slli, kScratch1, i.r, 3);
      Free(i);
      StL1(Op::Sw, cnt, u.track->addr + slot * 4, kScratch1);
    }
    return;
  }
  for (int64_t k = 0; k < u.track->units; ++k) hold(u.track->addr + k * 8 + slot * 4);
}

// A compute command on `engine` over `regions`: waits, issue, bookkeeping.
void NpuEmitter::Compute(arch::Engine engine, const std::vector<PrimExpr>& regions,
                         const std::function<void()>& issue) {
  arch::Engine other = engine == arch::Engine::Matrix ? arch::Engine::Vector : arch::Engine::Matrix;
  std::vector<Unit> units;
  for (const PrimExpr& r : regions) units.push_back(UnitOf(r));
  for (const Unit& u : units) WaitUnit(u, O::Queue(engine), other);
  issue();
  CountIssued(engine);
  for (const Unit& u : units) RecordUnit(u, engine);
  pending_compute_ = true;
}

// Waits the front end for the compute engines before touching a tile operand.
void NpuEmitter::SyncFrontEnd(const Buffer& b) {
  if (!pending_compute_ || !tile_bufs_.count(b->data.get())) return;
  WaitFor(O::FrontEnd(), arch::Engine::Matrix, kMmCount);
  WaitFor(O::FrontEnd(), arch::Engine::Vector, kVecCount);
  pending_compute_ = false;
}

// The planned allocations whose memory overlaps that of another a compute engine touches
// (in the same space) that may run before it: earlier in the code, or later inside a loop
// around both (the loop runs the later scope's commands before the earlier one again).
void NpuEmitter::CollectReuse() {
  struct Placed {
    Buffer buffer;
    std::string scope;
    int64_t begin, end;
    std::vector<const Object*> loops;  // the serial loops around it, outermost first
  };
  std::vector<Placed> placed;
  std::vector<const Object*> loops;
  std::function<void(const ObjectRef&)> walk = [&](const ObjectRef& o) {
    if (const auto* f = o.as<ForNode>()) {
      const bool serial = f->kind != ForKind::kCores;
      if (serial) loops.push_back(f);
      walk(f->body);
      if (serial) loops.pop_back();
      return;
    }
    if (const auto* a = o.as<AllocateNode>()) {
      const Object* data = a->buffer->data.get();
      auto at = plan_.find(data);
      auto bytes = plan_bytes_.find(data);
      if (at != plan_.end() && bytes != plan_bytes_.end() && bytes->second > 0)
        placed.push_back({a->buffer, std::string(a->buffer->scope.view()), at->second,
                          at->second + bytes->second, loops});
      walk(a->body);
      return;
    }
    if (const auto* q = o.as<SeqStmtNode>()) {
      for (const ir::Stmt& x : q->seq) walk(x);
      return;
    }
    if (const auto* i = o.as<IfThenElseNode>()) {
      walk(i->then_case);
      if (i->else_case.defined()) walk(i->else_case);
      return;
    }
    if (const auto* l = o.as<LetStmtNode>()) return walk(l->body);
    if (const auto* w = o.as<WhileNode>()) {
      loops.push_back(w);
      walk(w->body);
      loops.pop_back();
      return;
    }
  };
  walk(f_->body);
  auto share_loop = [](const Placed& x, const Placed& y) {
    for (const Object* l : x.loops)
      if (std::find(y.loops.begin(), y.loops.end(), l) != y.loops.end()) return true;
    return false;
  };
  for (size_t i = 0; i < placed.size(); ++i) {
    const Placed& b = placed[i];
    for (size_t j = 0; j < placed.size(); ++j) {
      const Placed& a = placed[j];
      if (j == i || a.scope != b.scope || a.end <= b.begin || b.end <= a.begin) continue;
      if (j > i && !share_loop(a, b)) continue;  // runs after b, never before it
      auto e = engines_.find(a.buffer->data.get());
      if (e != engines_.end() && e->second != 0) {
        reused_[b.buffer->data.get()] |= e->second;
      }
    }
  }
}

// Where allocation `b` begins, when its memory was a compute engine's operand before:
// every queue that may touch it (the DMAs, the compute engines that do, the front end when
// it loads or stores it) waits for every matrix and vector command issued so far (the
// operands' scopes ended before in program order; the engines may still run their
// commands). Markers in the queues: only the front end stalls, and only for a buffer it
// touches.
void NpuEmitter::OrderAfterReuse(const Buffer& b) {
  auto it = reused_.find(b->data.get());
  if (it == reused_.end()) return;
  const int old = it->second;
  const int mine = engines_.count(b->data.get()) ? engines_[b->data.get()] : 0;
  // (a wait for every command issued is left out where the queue made one since the last
  // label and the engine has issued none since: the allocations at an item's or a member's
  // start each asked for the same ones)
  auto wait_issued = [&](O queue, arch::Engine engine) {
    const int slot = Slot(engine);
    if (!QueueWaitedFor(queue, slot, issued_[slot])) WaitFor(queue, engine, CountReg(slot));
  };
  auto wait_all = [&](O queue, int engines) {
    if (engines & 1) wait_issued(queue, arch::Engine::Matrix);
    if (engines & 2) wait_issued(queue, arch::Engine::Vector);
  };
  wait_all(O::Queue(arch::Engine::DmaIn), old);
  wait_all(O::Queue(arch::Engine::DmaOut), old);
  if (mine & 1) wait_all(O::Queue(arch::Engine::Matrix), old & 2);
  if (mine & 2) wait_all(O::Queue(arch::Engine::Vector), old & 1);
  if (front_end_bufs_.count(b->data.get())) wait_all(O::FrontEnd(), old);
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
