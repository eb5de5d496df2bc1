// src/runtime/group_members.cc — ReadGroupMembers and SetMemberStats (group_members.h).
#if TILECORE_ENABLE_NPU
#include "group_members.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "bound_by.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/json.h"

namespace tilecore::runtime {
namespace {

using ffi::Any;
using JMap = ffi::Map<ffi::String, ffi::Any>;
using JArr = ffi::Array<ffi::Any>;
// (JSON objects as Parse makes them: short keys are small strings, not String objects)
using JsonObject = ffi::Map<ffi::Any, ffi::Any>;

std::optional<std::string> Str(const JsonObject& m, const char* key) {
  auto v = m.Get(key);
  if (!v) return std::nullopt;
  return v->as<std::string>();
}

std::optional<int64_t> Count(const JsonObject& m, const char* key) {
  auto v = m.Get(key);
  if (!v) return std::nullopt;
  auto n = v->as<int64_t>();
  return n && *n >= 0 ? n : std::nullopt;
}

/*! \brief The core a `pc` key names ("0".."15"), if it names one of `cores`. */
std::optional<int> CoreOf(const std::string& key, int cores) {
  if (key.empty() || key.size() > 2 ||
      !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int core = std::stoi(key);
  return core < cores ? std::optional<int>(core) : std::nullopt;
}

/*! \brief Member `index`'s `pc` ({core: [[begin, end], ...]}) as regions; nullopt if malformed. */
std::optional<std::vector<sim::PcRegion>> Code(const Any& pc, int index, int cores) {
  auto by_core = pc.as<JsonObject>();
  if (!by_core) return std::nullopt;
  std::vector<sim::PcRegion> out;
  for (const auto& [key, ranges] : by_core->items()) {
    auto name = key.as<std::string>();
    auto core = name ? CoreOf(*name, cores) : std::nullopt;
    auto list = ranges.as<JArr>();
    if (!core || !list) return std::nullopt;
    for (const Any& r : *list) {
      auto pair = r.as<JArr>();
      if (!pair || pair->size() != 2) return std::nullopt;
      auto begin = (*pair)[0].as<int64_t>(), end = (*pair)[1].as<int64_t>();
      if (!begin || !end || *begin < 0 || *begin >= *end || *end > int64_t(UINT32_MAX))
        return std::nullopt;
      out.push_back(sim::PcRegion{*core, uint32_t(*begin), uint32_t(*end), index});
    }
  }
  return out;
}

}  // namespace

std::optional<double> RooflineCycles(const Any& entry) {
  auto obj = entry.as<JsonObject>();
  auto v = obj ? obj->Get("cycles") : std::nullopt;
  if (!v) return std::nullopt;
  std::optional<double> d = v->as<double>();
  if (!d) {
    if (auto n = v->as<int64_t>()) d = double(*n);
  }
  return d && *d >= 0 ? d : std::nullopt;
}

std::vector<GroupMember> ReadGroupMembers(const ExecStep& step, int cores) {
  const Any& group = step.group_entry;  // (parsed when loaded: ParseDebugEntries)
  auto obj = group.as<JsonObject>();
  if (!obj) return {};
  auto list = obj->Get("members");
  auto members = list ? list->as<JArr>() : std::nullopt;
  if (!members || members->size() >= size_t(sim::Simulator::kMaxPcRegions)) return {};
  std::vector<GroupMember> out;
  for (const Any& a : *members) {
    auto m = a.as<JsonObject>();
    if (!m) return {};
    GroupMember g;
    auto node = Str(*m, "node"), op = Str(*m, "op"), bound = Str(*m, "bound_by");
    auto est = Count(*m, "est_cycles"), macs = Count(*m, "macs");
    auto pc = m->Get("pc");
    if (!node || !op || !bound || !est || !macs || !pc) return {};
    auto code = Code(*pc, int(out.size()), cores);
    if (!code) return {};
    g.node = *node, g.op = *op, g.bound_by = *bound, g.est_cycles = *est, g.macs = *macs;
    g.code = std::move(*code);
    if (auto roof = m->Get("roofline")) g.roofline_cycles = RooflineCycles(*roof);
    out.push_back(std::move(g));
  }
  return out;
}

JMap BusyByEngine(const std::array<uint64_t, sim::kNumAgents>& busy) {
  JMap m;
  for (int a = 0; a < sim::kNumAgents; ++a)
    m.Set(sim::agent_name(sim::Agent(a)), Any(int64_t(busy[size_t(a)])));
  return m;
}

void SetMemberStats(JMap& op, const std::vector<GroupMember>& members, const sim::Stats& stats) {
  JArr list;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  uint64_t sum = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const GroupMember& g = members[i];
    sim::RegionStats r = i < stats.regions.size() ? stats.regions[i] : sim::RegionStats{};
    sim::RegionStats::Span span = r.span();
    uint64_t cycles = r.cycles();
    if (!span.empty()) spans.emplace_back(span.first, span.last);
    sum += cycles;
    JMap m;
    m.Set("node", Any(ffi::String(g.node)));
    m.Set("op_type", Any(ffi::String(g.op)));
    m.Set("cycles", Any(int64_t(cycles)));
    m.Set("start", Any(int64_t(span.empty() ? 0 : span.first)));
    m.Set("end", Any(int64_t(span.empty() ? 0 : span.last)));
    m.Set("est_cycles", Any(g.est_cycles));
    // (estimate - measured) / measured: -0.75 is an estimate a quarter of what ran
    m.Set("est_error",
          Any(cycles ? (double(g.est_cycles) - double(cycles)) / double(cycles) : 0.0));
    m.Set("est_bound_by", Any(ffi::String(g.bound_by)));
    m.Set("macs", Any(g.macs));
    if (g.roofline_cycles) m.Set("roofline_cycles", Any(*g.roofline_cycles));
    std::array<uint64_t, sim::kNumAgents> busy{};  // summed over the cores
    JArr per_core;
    for (const auto& core : r.core_busy) {
      for (int a = 0; a < sim::kNumAgents; ++a) busy[size_t(a)] += core[size_t(a)];
      per_core.push_back(Any(BusyByEngine(core)));
    }
    m.Set("busy", Any(BusyByEngine(busy)));
    m.Set("core_busy", Any(per_core));
    m.Set("ddr_cycles", Any(int64_t(r.ddr_cycles)));
    m.Set("bound_by", Any(ffi::String(BoundBy(r.core_busy, r.ddr_cycles, cycles))));
    m.Set("instructions", Any(int64_t(r.instructions)));
    m.Set("commands", Any(int64_t(r.commands)));
    list.push_back(Any(m));
  }
  // The cycles some member ran in (the union of their spans) against their sum and the step's.
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0, reach = 0;
  for (const auto& [first, last] : spans) {
    uint64_t from = std::max(first, reach);
    if (last > from) covered += last - from;
    reach = std::max(reach, last);
  }
  op.Set("members", Any(list));
  op.Set("members_cycles", Any(int64_t(sum)));
  op.Set("members_overlap", Any(int64_t(sum - covered)));
  op.Set("outside_members", Any(int64_t(stats.cycles - covered)));
}

}  // namespace tilecore::runtime
#endif  // TILECORE_ENABLE_NPU
