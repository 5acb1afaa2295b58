// plan-memory (plan_memory.h): greedy-by-size offsets in one activation arena.
#include "codegen/lower/plan_memory.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "ir/check.h"

namespace dnnc::codegen {

void plan_memory(Program& p) {
  CheckScope scope("plan-memory of " + p.module_name + "." + p.graph_name);
  const std::vector<BufferLife> life = buffer_lives(p);
  std::vector<int> arena;  // buffer ids placed in the arena
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    Buffer& b = p.buffers[i];
    b.offset = -1;
    if (!in_arena(b)) continue;
    DNNC_CHECK(life[i].first >= 0, "buffer %{} ({}) is in no step's reads or writes", i, b.name);
    arena.push_back(static_cast<int>(i));
  }
  ArenaPlan plan;
  plan.planned = true;
  int end = 0;
  for (int b : arena) {
    plan.naive_bytes += arena_align(p.buffers[static_cast<size_t>(b)].bytes());
    end = std::max(end, life[static_cast<size_t>(b)].last);
  }
  for (int t = 0; t <= end; ++t) {
    int64_t live = 0;
    for (int b : arena)
      if (life[static_cast<size_t>(b)].first <= t && t <= life[static_cast<size_t>(b)].last)
        live += arena_align(p.buffers[static_cast<size_t>(b)].bytes());
    plan.max_live_bytes = std::max(plan.max_live_bytes, live);
  }

  // Greedy placement in a given order: each buffer into the best-fitting gap among the placed
  // buffers live at the same time. Tried in four orders (XLA's heap simulator does the same),
  // the smallest arena kept: largest first, largest size x lifetime first, longest-lived first,
  // first-born first.
  auto bytes_of = [&](int b) { return p.buffers[static_cast<size_t>(b)].bytes(); };
  auto span = [&](int b) { return life[static_cast<size_t>(b)].last - life[static_cast<size_t>(b)].first + 1; };
  auto place = [&](const std::vector<int>& order, std::vector<int64_t>& offset) {
    int64_t top = 0;
    std::vector<int> placed;
    offset.assign(p.buffers.size(), -1);
    for (int i : order) {
      const BufferLife& li = life[static_cast<size_t>(i)];
      std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of placed buffers live at the same time
      for (int j : placed) {
        const BufferLife& lj = life[static_cast<size_t>(j)];
        if (lj.first <= li.last && li.first <= lj.last)
          busy.push_back({offset[static_cast<size_t>(j)], offset[static_cast<size_t>(j)] + arena_align(bytes_of(j))});
      }
      std::sort(busy.begin(), busy.end());
      const int64_t need = arena_align(bytes_of(i));
      int64_t best = -1, best_gap = 0, cursor = 0;
      for (const auto& [b, e] : busy) {
        if (b - cursor >= need && (best < 0 || b - cursor < best_gap)) {
          best = cursor;
          best_gap = b - cursor;
        }
        cursor = std::max(cursor, e);
      }
      offset[static_cast<size_t>(i)] = best >= 0 ? best : cursor;
      top = std::max(top, offset[static_cast<size_t>(i)] + need);
      placed.push_back(i);
    }
    return top;
  };
  using Key = std::function<std::pair<int64_t, int64_t>(int)>;  // larger first; ties: earlier-born first
  const std::vector<Key> keys = {
      [&](int b) { return std::pair<int64_t, int64_t>{bytes_of(b), 0}; },
      [&](int b) { return std::pair<int64_t, int64_t>{arena_align(bytes_of(b)) * span(b), bytes_of(b)}; },
      [&](int b) { return std::pair<int64_t, int64_t>{span(b), bytes_of(b)}; },
      [&](int b) { return std::pair<int64_t, int64_t>{-life[static_cast<size_t>(b)].first, bytes_of(b)}; },
  };
  std::vector<int64_t> best_offset;
  plan.bytes = -1;
  for (const Key& key : keys) {
    std::vector<int> order = arena;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
      return life[static_cast<size_t>(a)].first < life[static_cast<size_t>(b)].first;
    });
    std::vector<int64_t> offset;
    const int64_t top = place(order, offset);
    if (plan.bytes < 0 || top < plan.bytes) {
      plan.bytes = top;
      best_offset = std::move(offset);
    }
  }
  if (plan.bytes < 0) plan.bytes = 0;
  for (int b : arena) p.buffers[static_cast<size_t>(b)].offset = best_offset[static_cast<size_t>(b)];
  p.arena = plan;
}

}  // namespace dnnc::codegen
