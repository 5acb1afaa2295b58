// Checks a memory plan against lifetimes recomputed from the schedule.
#include "passes/memory_check.h"

#include <fmt/format.h>

#include <map>

#include "passes/liveness.h"

namespace dnnc::passes {

std::string check_memory_plan(const ir::Graph& g) {
  if (!g.memory) return "graph has no memory plan";
  const ir::MemoryPlan& p = *g.memory;
  Liveness l = compute_liveness(g, p.batch);
  std::map<ir::ValueId, const ir::BufferSlot*> slot;
  for (const auto& s : p.slots) slot[s.value] = &s;
  // Each storage root's lifetime, widened by everything that aliases it in the plan.
  std::map<ir::ValueId, std::pair<int, int>> span;
  std::map<ir::ValueId, ir::ValueId> root;
  for (const auto& b : l.buffers) {
    auto it = slot.find(b.value);
    if (it == slot.end()) return fmt::format("%{} is materialised but has no slot", g.value(b.value).name);
    ir::ValueId r = it->second->alias_of == ir::kNoValue ? b.value : it->second->alias_of;
    if (it->second->alias_of != ir::kNoValue && it->second->offset != slot.at(r)->offset)
      return fmt::format("%{} aliases %{} but has another offset", g.value(b.value).name, g.value(r).name);
    if (it->second->size != b.bytes)
      return fmt::format("%{} needs {} bytes, its slot has {}", g.value(b.value).name, b.bytes, it->second->size);
    if (it->second->offset < 0 || it->second->offset + b.bytes > p.arena_bytes)
      return fmt::format("%{} lies outside the arena", g.value(b.value).name);
    root[b.value] = r;
    auto [s, fresh] = span.emplace(r, std::make_pair(b.first, b.last));
    if (!fresh) s->second = {std::min(s->second.first, b.first), std::max(s->second.second, b.last)};
  }
  for (auto a = span.begin(); a != span.end(); ++a)
    for (auto b = std::next(a); b != span.end(); ++b) {
      bool live_together = a->second.first <= b->second.second && b->second.first <= a->second.second;
      const ir::BufferSlot& sa = *slot.at(a->first);
      const ir::BufferSlot& sb = *slot.at(b->first);
      bool overlap = sa.offset < sb.offset + sb.size && sb.offset < sa.offset + sa.size;
      if (live_together && overlap)
        return fmt::format("%{} [{}, {}) and %{} [{}, {}) are live at the same time and overlap",
                           g.value(a->first).name, sa.offset, sa.offset + sa.size, g.value(b->first).name, sb.offset,
                           sb.offset + sb.size);
    }
  return {};
}

}  // namespace dnnc::passes
