// src/sim/issue.cc — the front end's side of tile commands and synchronisation.
//
// issue() validates a tile command when the front end executes it — descriptor
// in local L1, operand footprints within bounds and aligned, element limits —
// prices it with arch/cost.h and appends a snapshot to its engine's queue.
// wait / barrier / fence implement the front end's synchronisation, and
// check_waiters() wakes agents whose condition an engine has just met.
#include <algorithm>
#include <cstdio>

#include "fault_text.h"
#include "machine.h"
#include "tilecore/arch/tile_ops.h"

namespace tilecore::sim {

using arch::Engine;

namespace {

/// Element extent [lo, hi] of a strided tensor; false when it has no elements.
bool extent(const std::array<uint32_t, 4>& shape, const std::array<int32_t, 4>& stride, int rank,
            int64_t& lo, int64_t& hi) {
  lo = hi = 0;
  for (int i = 0; i < rank; ++i) {
    if (shape[size_t(i)] == 0) return false;
    int64_t span = int64_t(shape[size_t(i)] - 1) * stride[size_t(i)];
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  return true;
}

uint64_t elements_of(const std::array<uint32_t, 4>& shape, int rank) {
  uint64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[size_t(i)];
  return n;
}

}  // namespace

Outcome Machine::issue(Core& c, const Inst& i) {
  const arch::InstrInfo& row = arch::info(i.op);
  Engine e = *arch::unit_engine(row.unit);
  EngineState& es = c.eng[size_t(e)];
  AgentSlot& sc = slot(c.id, Agent::Scalar);
  if (int(es.queue.size()) >= cfg.queue_depth) {
    sc.why = BlockReason::QueueFull;
    sc.on_engine = e;
    return {Outcome::Block};
  }
  auto bad = [&](const std::string& why) { fault(SimError::Kind::BadDescriptor, c, c.pc, why); };
  auto mem_fault = [&](const std::string& why) {
    fault(SimError::Kind::MemoryFault, c, c.pc, why);
  };

  Command& cmd = es.queue.stage();
  cmd.inst = i;
  cmd.pc = c.pc;
  cmd.issue_time = now(c);

  // Descriptor: local L1, 4-byte aligned, snapshotted now.
  uint8_t desc_reg = row.format == arch::Format::Dma ? i.c : i.d;
  uint64_t daddr = uint32_t(c.x[desc_reg] + uint32_t(i.imm));
  size_t dbytes = row.format == arch::Format::Dma  ? arch::DmaDesc::kBytes
                  : row.unit == arch::Unit::Matrix ? arch::MmDesc::kBytes
                                                   : arch::VecDesc::kBytes;
  // A matrix descriptor is extended to 64 bytes by flag bits in its byte 26.
  if (row.unit == arch::Unit::Matrix && row.format != arch::Format::Dma &&
      mem.in_bounds(Space::L1, daddr, 27))
    dbytes = arch::MmDesc::size_for_flags(mem.base(Space::L1, c.id)[daddr + 26]);
  if (!mem.in_bounds(Space::L1, daddr, dbytes))
    mem_fault("descriptor at l1[" + std::to_string(c.id) + "]:" + hex(daddr) + " (" +
              std::to_string(dbytes) + " bytes) is outside local L1");
  if (daddr % 4) mem_fault("descriptor address " + hex(daddr) + " is not 4-byte aligned");
  std::span<const uint8_t> db(mem.base(Space::L1, c.id) + daddr, dbytes);
  std::string why;

  // (`shape`, `stride`: the operand's elements, for the hazard check's byte-exact overlap)
  auto add_range = [&](Space s, uint64_t base, int64_t lo, int64_t hi, int es_bytes, bool write,
                       const char* what, int rank = 0, std::array<uint32_t, 4> shape = {},
                       std::array<int32_t, 4> stride = {}) {
    int64_t blo = int64_t(base) + lo * es_bytes, bhi = int64_t(base) + (hi + 1) * es_bytes;
    if (blo < 0 || !mem.in_bounds(s, uint64_t(blo), uint64_t(bhi - blo)))
      mem_fault(std::string(what) + " tensor spans " + space_text(s, c.id) + " [" +
                (blo < 0 ? "-" + hex(uint64_t(-blo)) : hex(uint64_t(blo))) + ", " +
                hex(uint64_t(bhi)) + "), outside the " + size_text(mem.size(s)) + " memory");
    if (s == Space::DDR && ddr_limited() &&
        !in_ddr_arrays(uint64_t(blo), uint64_t(bhi - blo), write))
      mem_fault(std::string(what) + " tensor spans " +
                (write ? unwritable_ddr(blo, bhi) : outside_ddr_arrays(blo, bhi)));
    if (base % uint64_t(es_bytes))
      mem_fault(std::string(what) + " address " + hex(base) + " is not aligned to its " +
                std::to_string(es_bytes) + "-byte elements");
    if (cmd.nranges < int(cmd.ranges.size())) {
      cmd.ranges[size_t(cmd.nranges++)] = Range{s, c.id, uint64_t(blo), uint64_t(bhi), write};
      if (hazard_mode())
        cmd.patterns.push_back(AccessPattern{rank > 0, rank, es_bytes, base, shape, stride});
    }
  };
  auto rows = [](uint32_t m, uint32_t n) { return std::array<uint32_t, 4>{m, n, 1, 1}; };
  auto row_stride = [](uint32_t ld) { return std::array<int32_t, 4>{int32_t(ld), 1, 0, 0}; };

  if (row.format == arch::Format::Dma) {
    auto d = arch::DmaDesc::parse(db, &why);
    if (!d) bad(why);
    cmd.dst_space = Space(i.d & 3);
    cmd.src_space = Space(i.d >> 2 & 3);
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    uint64_t n = elements_of(d->shape, d->rank);
    if (n > cfg.max_command_elements)
      bad("DMA of " + std::to_string(n) + " elements exceeds the limit of " +
          std::to_string(cfg.max_command_elements));
    int64_t lo, hi;
    if (extent(d->shape, d->dst_stride, d->rank, lo, hi))
      add_range(cmd.dst_space, cmd.addr[0], lo, hi, arch::dtype_size(d->dst_dtype), true,
                "DMA destination", d->rank, d->shape, d->dst_stride);
    if (!d->fill()) {
      std::array<uint32_t, 4> src_shape = d->shape;
      for (int k = 0; k < d->rank; ++k)
        src_shape[size_t(k)] -= d->pad_lo[size_t(k)] + d->pad_hi[size_t(k)];
      if (extent(src_shape, d->src_stride, d->rank, lo, hi))
        add_range(cmd.src_space, cmd.addr[1], lo, hi, arch::dtype_size(d->src_dtype), false,
                  "DMA source", d->rank, src_shape, d->src_stride);
    }
    arch::cost::DmaCost k = arch::cost::dma(*d, cmd.dst_space, cmd.src_space);
    cmd.cycles = k.beats;
    cmd.latency = k.latency;
    cmd.occ_ddr = k.occupancy(Space::DDR, cmd.dst_space, cmd.src_space, d->fill());
    cmd.occ_l2 = k.occupancy(Space::L2, cmd.dst_space, cmd.src_space, d->fill());
    cmd.bytes_read = k.bytes_read;
    cmd.bytes_written = k.bytes_written;
    cmd.work = k.elements;
    cmd.desc = *d;
  } else if (row.unit == arch::Unit::Matrix) {
    auto d = arch::MmDesc::parse(db, &why);
    if (!d) bad(why);
    DType in = i.dtype();
    DType acc = in == DType::I8 ? DType::I32 : DType::F32;
    int ies = arch::dtype_size(in);
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    cmd.addr[2] = c.x[i.c];
    add_range(Space::L1, cmd.addr[1], 0, int64_t(d->m - 1) * d->lda + d->k - 1, ies, false,
              "matrix A", 2, rows(d->m, d->k), row_stride(d->lda));
    add_range(Space::L1, cmd.addr[2], 0, int64_t(d->k - 1) * d->ldb + d->n - 1, ies, false,
              "matrix B", 2, rows(d->k, d->n), row_stride(d->ldb));
    bool acc_flag = i.op == Opcode::Mma;
    if (d->epilogue()) {
      if (acc_flag)
        add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldc + d->n - 1, 4, false,
                  "matrix C", 2, rows(d->m, d->n), row_stride(d->ldc));
      add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldo + d->n - 1,
                arch::dtype_size(d->out_dtype), true, "matrix output", 2, rows(d->m, d->n),
                row_stride(d->ldo));
      if (d->bias()) add_range(Space::L1, d->bias_addr, 0, d->n - 1, 4, false, "matrix bias");
      if (d->channel_scale())
        add_range(Space::L1, d->scale_addr, 0, d->n - 1, 4, false, "matrix scale");
      if (d->residual())
        add_range(Space::L1, d->res_addr, 0, int64_t(d->m - 1) * d->ldr + d->n - 1,
                  arch::dtype_size(d->res_dtype), false, "matrix residual", 2, rows(d->m, d->n),
                  row_stride(d->ldr));
    } else {
      add_range(Space::L1, cmd.addr[0], 0, int64_t(d->m - 1) * d->ldc + d->n - 1,
                arch::dtype_size(acc), true, "matrix C", 2, rows(d->m, d->n), row_stride(d->ldc));
    }
    bool conflict = arch::cost::l1_bank(cmd.addr[1]) == arch::cost::l1_bank(cmd.addr[2]);
    arch::cost::MmCost k = arch::cost::matrix(in, *d, conflict);
    cmd.cycles = k.cycles;
    cmd.macs = k.macs;
    cmd.work = k.macs + uint64_t(d->m) * d->n;
    cmd.issued_macs = k.issued_macs;
    auto b = arch::cost::mm_block(in);
    cmd.peak_macs_per_cycle = uint64_t(b.m * b.n * b.k);
    cmd.bytes_read = (uint64_t(d->m) * d->k + uint64_t(d->k) * d->n) * uint64_t(ies);
    cmd.bytes_written = uint64_t(d->m) * d->n * 4;
    if (d->channel_scale()) cmd.bytes_read += uint64_t(d->n) * 4;
    if (d->residual())
      cmd.bytes_read += uint64_t(d->m) * d->n * uint64_t(arch::dtype_size(d->res_dtype));
    cmd.desc = *d;
  } else {
    auto d = arch::VecDesc::parse(db, &why);
    if (!d) bad(why);
    DType dt = i.dtype();
    DType at = (row.format == arch::Format::TileCvt) ? i.src_dtype()
                                                     : (i.op == Opcode::Tlut ? DType::U8 : dt);
    const arch::TileOpInfo* top = arch::FindTileOpByOpcode(i.op);
    bool reduce = top != nullptr && top->form == arch::TileForm::Reduce;
    cmd.addr[0] = c.x[i.a];
    cmd.addr[1] = c.x[i.b];
    cmd.addr[2] = row.format == arch::Format::Tile3 ? c.x[i.c] : 0;
    uint64_t n = elements_of(d->shape, d->rank);
    if (n > cfg.max_command_elements)
      bad("vector command of " + std::to_string(n) + " elements exceeds the limit of " +
          std::to_string(cfg.max_command_elements));
    int64_t lo, hi;
    std::array<int32_t, 4> dstr = d->d_stride;
    if (reduce) dstr[size_t(d->rank - 1)] = 0;
    if (extent(d->shape, d->a_stride, d->rank, lo, hi))
      add_range(Space::L1, cmd.addr[1], lo, hi, arch::dtype_size(at), false, "vector source a",
                d->rank, d->shape, d->a_stride);
    if (row.format == arch::Format::Tile3) {
      if (i.op == Opcode::Tlut)
        add_range(Space::L1, cmd.addr[2], 0, 255, arch::dtype_size(dt), false, "lookup table");
      else if (extent(d->shape, d->b_stride, d->rank, lo, hi))
        add_range(Space::L1, cmd.addr[2], lo, hi, arch::dtype_size(dt), false, "vector source b",
                  d->rank, d->shape, d->b_stride);
    }
    if (extent(d->shape, dstr, d->rank, lo, hi))
      add_range(Space::L1, cmd.addr[0], lo, hi, arch::dtype_size(dt), true, "vector destination",
                d->rank, d->shape, dstr);
    bool conflict = row.format == arch::Format::Tile3 && i.op != Opcode::Tlut &&
                    arch::cost::l1_bank(cmd.addr[1]) == arch::cost::l1_bank(cmd.addr[2]);
    cmd.cycles = arch::cost::vector(i.op, dt, at, n, conflict);
    cmd.work = n;
    cmd.bytes_read =
        n * uint64_t(arch::dtype_size(at)) * (row.format == arch::Format::Tile3 ? 2 : 1);
    cmd.bytes_written = n * uint64_t(arch::dtype_size(dt));
    cmd.desc = *d;
  }
  if (hazard_mode()) {
    hz_tick(c.id * kNumAgents);
    cmd.vc = hz_snapshot(c.id * kNumAgents);
  }
  es.queue.push();
  AgentSlot& eng = slot(c.id, Agent(int(e) + 1));
  if (eng.state == AgentState::Blocked && eng.why == BlockReason::EmptyQueue)
    wake(c.id * kNumAgents + int(e) + 1, now(c));
  return {};
}

// ---- synchronisation --------------------------------------------------------------------------

Outcome Machine::wait_instruction(Core& c, const Inst& i) {
  Engine on = Engine(i.b);
  uint32_t count = c.x[i.c] + uint32_t(i.imm);
  if (i.a == 0) {  // the front end itself waits
    const EngineState& es = c.eng[size_t(on)];
    if (es.done >= count) {
      uint64_t dep = count == 0 ? 0 : es.done_time[count - 1];
      int64_t stall = dep > now(c) ? int64_t(dep - now(c)) : 0;
      if (hazard_mode() && count > 0) hz_join(c.id * kNumAgents, es.done_vc[count - 1]);
      return {Outcome::Next, 0, 1 + stall, stall};
    }
    AgentSlot& s = slot(c.id, Agent::Scalar);
    s.why = BlockReason::Counter;
    s.on_engine = on;
    s.on_count = count;
    return {Outcome::Block};
  }
  Engine q = Engine(i.a - 1);
  EngineState& es = c.eng[size_t(q)];
  if (int(es.queue.size()) >= cfg.queue_depth) {
    AgentSlot& s = slot(c.id, Agent::Scalar);
    s.why = BlockReason::QueueFull;
    s.on_engine = q;
    return {Outcome::Block};
  }
  Command& cmd = es.queue.stage();
  cmd.inst = i;
  cmd.pc = c.pc;
  cmd.issue_time = now(c);
  cmd.marker = true;
  cmd.wait_engine = on;
  cmd.wait_count = count;
  if (hazard_mode()) {
    hz_tick(c.id * kNumAgents);
    cmd.vc = hz_snapshot(c.id * kNumAgents);
  }
  es.queue.push();
  AgentSlot& eng = slot(c.id, Agent(int(q) + 1));
  if (eng.state == AgentState::Blocked && eng.why == BlockReason::EmptyQueue)
    wake(c.id * kNumAgents + int(q) + 1, now(c));
  return {};
}

Outcome Machine::barrier(Core& c) {
  if (c.barrier_released) {
    c.barrier_released = false;
    return {};
  }
  at_barrier_[size_t(c.id)] = true;
  barrier_arrival_[size_t(c.id)] = now(c);
  uint64_t release = 0;
  for (const auto& o : cores) {
    if (!o.active) continue;
    if (!at_barrier_[size_t(o.id)]) {
      AgentSlot& s = slot(c.id, Agent::Scalar);
      s.why = BlockReason::Barrier;
      return {Outcome::Block};
    }
    release = std::max(release, barrier_arrival_[size_t(o.id)]);
  }
  if (timed()) release += arch::tc1::kBarrierLatency;
  std::vector<int> members;
  for (const auto& o : cores)
    if (o.active) members.push_back(o.id);
  if (hazard_mode()) hz_barrier(members);
  for (int id : members) {
    at_barrier_[size_t(id)] = false;
    if (id == c.id) continue;
    cores[size_t(id)].barrier_released = true;
    wake(id * kNumAgents, release);
  }
  int64_t stall = int64_t(release - now(c));
  return {Outcome::Next, 0, 1 + stall, stall};
}

void Machine::host_call(Core& c, uint32_t block) {
  if (!host_call_fn) {
    fault(SimError::Kind::IllegalInstruction, c, c.pc,
          "hcall: no host services calls on this simulator (kernels with host calls run through "
          "the npu module, "
          "or install a handler with Simulator::set_host_call)");
  }
  host_call_fn(c.id, block);
}

Outcome Machine::fence(Core& c) {
  uint64_t last = 0;
  for (int e = 0; e < arch::kNumEngines; ++e) {
    if (!c.eng[size_t(e)].queue.empty()) {
      AgentSlot& s = slot(c.id, Agent::Scalar);
      s.why = BlockReason::Fence;
      return {Outcome::Block};
    }
    last = std::max(last, slot(c.id, Agent(e + 1)).t);
    if (hazard_mode() && c.eng[size_t(e)].done > 0)
      hz_join(c.id * kNumAgents, c.eng[size_t(e)].done_vc.back());
  }
  int64_t stall = last > now(c) ? int64_t(last - now(c)) : 0;
  return {Outcome::Next, 0, 1 + stall, stall};
}

void Machine::check_waiters(Core& c) {
  for (int a = 0; a < kNumAgents; ++a) {
    AgentSlot& s = slot(c.id, Agent(a));
    if (s.state != AgentState::Blocked) continue;
    int id = c.id * kNumAgents + a;
    switch (s.why) {
      case BlockReason::Counter: {
        const EngineState& es = c.eng[size_t(s.on_engine)];
        if (es.done >= s.on_count) wake(id, s.on_count ? es.done_time[s.on_count - 1] : 0);
        break;
      }
      case BlockReason::QueueFull:
        if (int(c.eng[size_t(s.on_engine)].queue.size()) < cfg.queue_depth)
          wake(id, c.eng[size_t(s.on_engine)].last_pop);
        break;
      case BlockReason::Fence: {
        bool empty = true;
        uint64_t last = 0;
        for (int e = 0; e < arch::kNumEngines; ++e) {
          empty &= c.eng[size_t(e)].queue.empty();
          last = std::max(last, slot(c.id, Agent(e + 1)).t);
        }
        if (empty) wake(id, last);
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace tilecore::sim
