/*
 * src/compiler/memory_plan.cc — PlanMemory (memory_plan.h): greedy-by-size offsets for
 * buffers with live ranges, and its FFI entry `compiler.PlanMemory`.
 */
#include "tilecore/compiler/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"

namespace tilecore {
namespace compiler {

namespace {

int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace

MemoryPlan PlanMemory(const std::vector<BufferLife>& buffers, int64_t alignment) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    TILECORE_THROW(ValueError) << "PlanMemory: alignment " << alignment
                               << " is not a positive power of two";
  }
  const size_t n = buffers.size();
  std::vector<int64_t> size(n);
  for (size_t i = 0; i < n; ++i) {
    const BufferLife& b = buffers[i];
    if (b.size < 0)
      TILECORE_THROW(ValueError) << "PlanMemory: buffer " << i << " has negative size " << b.size;
    if (b.first > b.last) {
      TILECORE_THROW(ValueError) << "PlanMemory: buffer " << i << " has live range [" << b.first
                                 << ", " << b.last << "] (first after last)";
    }
    if (b.size > (int64_t{1} << 48))
      TILECORE_THROW(ValueError) << "PlanMemory: buffer " << i << " of " << b.size
                                 << " bytes is too large";
    size[i] = AlignUp(b.size, alignment);
  }
  MemoryPlan plan;
  plan.offsets.assign(n, 0);
  // The lower bound: the most bytes alive at one step (events sorted by step).
  std::map<int64_t, int64_t> delta;
  for (size_t i = 0; i < n; ++i) {
    plan.total_size += size[i];
    delta[buffers[i].first] += size[i];
    delta[buffers[i].last + 1] -= size[i];
  }
  int64_t live = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    plan.lower_bound = std::max(plan.lower_bound, live);
  }
  // Largest first; ties by earlier start, then by index, so the plan is deterministic.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b]) return size[a] > size[b];
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>>
      busy;  // [offset, end) of placed buffers alive with this one
  for (size_t i : order) {
    if (size[i] == 0) continue;
    busy.clear();
    for (size_t j : placed) {
      if (buffers[j].first <= buffers[i].last && buffers[i].first <= buffers[j].last) {
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + size[j]);
      }
    }
    std::sort(busy.begin(), busy.end());
    // The lowest gap that fits (busy intervals may overlap each other: they need not be
    // alive at the same time as each other).
    int64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo >= at + size[i]) break;
      at = std::max(at, hi);
    }
    plan.offsets[i] = at;
    plan.arena_size = std::max(plan.arena_size, at + size[i]);
    placed.push_back(i);
  }
  return plan;
}

TILECORE_REGISTER_GLOBAL("compiler.PlanMemory")
    .set_body_typed([](ffi::Array<int64_t> sizes, ffi::Array<int64_t> first,
                       ffi::Array<int64_t> last, int64_t alignment) {
      if (sizes.size() != first.size() || sizes.size() != last.size()) {
        TILECORE_THROW(ValueError)
            << "compiler.PlanMemory: " << sizes.size() << " sizes, " << first.size()
            << " first uses and " << last.size() << " last uses (expected equal counts)";
      }
      std::vector<BufferLife> bufs(sizes.size());
      for (size_t i = 0; i < bufs.size(); ++i) bufs[i] = BufferLife{sizes[i], first[i], last[i]};
      MemoryPlan p = PlanMemory(bufs, alignment);
      // The offsets, then arena_size, total_size, lower_bound.
      ffi::Array<int64_t> out;
      for (int64_t o : p.offsets) out.push_back(o);
      out.push_back(p.arena_size);
      out.push_back(p.total_size);
      out.push_back(p.lower_bound);
      return out;
    });

}  // namespace compiler
}  // namespace tilecore
