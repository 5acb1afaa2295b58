// Pass `plan-memory`: one static arena for every materialised intermediate of each graph.
// Lifetimes come from the kernel schedule; an ungrouped elementwise node (or the end of an
// elementwise group) may write over an operand that dies there; offsets are assigned greedily
// by size, each buffer into the best-fitting gap among the buffers live at the same time
// (TFLite's arena planner / XLA's heap simulator). Params and optimizer state are not in the
// arena; optimizer updates write their param in place.
#include <fmt/format.h>

#include <algorithm>

#include "ir/check.h"
#include "ir/op_registry.h"
#include "passes/graph_analysis.h"
#include "passes/liveness.h"
#include "passes/memory_check.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

bool may_write_in_place(const ir::Graph& g, const ir::Node& n) {
  const ir::OpDef* d = ir::find_op(n.op);
  if (!d || d->fusion != ir::FusionClass::elementwise || n.outputs.size() != 1 || n.inputs.empty()) return false;
  if (n.group >= 0 && g.groups[static_cast<size_t>(n.group)].kind != "elementwise") return false;
  return g.value(n.inputs[0]).type.shape == g.value(n.outputs[0]).type.shape;
}

ir::MemoryPlan plan_graph(const ir::Graph& g, int64_t batch) {
  Liveness l = compute_liveness(g, batch);
  ir::MemoryPlan plan;
  plan.batch = batch;
  // Naive: every node result in a buffer of its own, as an unplanned interpreter allocates.
  for (const ir::Node& n : g.nodes)
    if (!is_view(n))
      for (ir::ValueId o : n.outputs) plan.naive_bytes += align_up(value_bytes(g, o, batch));

  // In-place: merge a pointwise result into its first operand's buffer when that dies here.
  std::vector<int> index(g.values.size(), -1);
  for (size_t i = 0; i < l.buffers.size(); ++i) index[static_cast<size_t>(l.buffers[i].value)] = static_cast<int>(i);
  std::vector<ir::ValueId> alias(g.values.size(), ir::kNoValue);
  std::vector<bool> merged(l.buffers.size(), false);
  auto esc = escapes(g);
  for (const ir::Node& n : g.nodes) {
    if (!may_write_in_place(g, n)) continue;
    int out = index[static_cast<size_t>(n.outputs[0])];
    ir::ValueId src = l.storage[static_cast<size_t>(n.inputs[0])];
    if (out < 0 || src == ir::kNoValue || index[static_cast<size_t>(src)] < 0) continue;
    int in = index[static_cast<size_t>(src)];
    while (merged[static_cast<size_t>(in)])
      in = index[static_cast<size_t>(alias[static_cast<size_t>(l.buffers[static_cast<size_t>(in)].value)])];
    Lifetime& a = l.buffers[static_cast<size_t>(in)];
    Lifetime& b = l.buffers[static_cast<size_t>(out)];
    if (a.last != b.first || a.bytes != b.bytes || esc[static_cast<size_t>(src)]) continue;
    // Reading the operand elsewhere at this same step would see overwritten data.
    int readers_here = 0;
    for (const ir::Node& m : g.nodes)
      for (ir::ValueId v : m.inputs) readers_here += l.storage[static_cast<size_t>(v)] == a.value;
    if (readers_here != 1) continue;
    a.last = b.last;
    merged[static_cast<size_t>(out)] = true;
    alias[static_cast<size_t>(b.value)] = a.value;
  }

  std::vector<Lifetime> live;
  for (size_t i = 0; i < l.buffers.size(); ++i)
    if (!merged[i]) live.push_back(l.buffers[i]);
  Liveness merged_l = l;
  merged_l.buffers = live;
  plan.lower_bound_bytes = max_live_bytes(merged_l);

  // Greedy by size, best-fit gap among the already placed buffers that overlap in time.
  std::vector<size_t> order(live.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return live[a].bytes > live[b].bytes; });
  std::vector<int64_t> offset(live.size(), -1);
  for (size_t i : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of overlapping placed buffers
    for (size_t j = 0; j < live.size(); ++j)
      if (offset[j] >= 0 && live[j].first <= live[i].last && live[i].first <= live[j].last)
        busy.push_back({offset[j], offset[j] + align_up(live[j].bytes)});
    std::sort(busy.begin(), busy.end());
    int64_t need = align_up(live[i].bytes), best = -1, best_gap = 0, cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b - cursor >= need && (best < 0 || b - cursor < best_gap)) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    offset[i] = best >= 0 ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, offset[i] + need);
  }
  std::vector<int64_t> offset_of(g.values.size(), -1);
  for (size_t i = 0; i < live.size(); ++i) {
    offset_of[static_cast<size_t>(live[i].value)] = offset[i];
    plan.slots.push_back({live[i].value, offset[i], live[i].bytes, ir::kNoValue});
  }
  // Aliases: in-place results and views share their root's slot; updates written into params.
  for (size_t v = 0; v < g.values.size(); ++v) {
    ir::ValueId root = alias[v] != ir::kNoValue ? alias[v] : l.storage[v];
    while (root != ir::kNoValue && alias[static_cast<size_t>(root)] != ir::kNoValue)
      root = alias[static_cast<size_t>(root)];
    if (root == ir::kNoValue || root == static_cast<ir::ValueId>(v)) continue;
    if (g.value(static_cast<ir::ValueId>(v)).kind != ir::ValueKind::node) continue;
    int64_t off = g.value(root).kind == ir::ValueKind::param ? -1 : offset_of[static_cast<size_t>(root)];
    if (off < 0 && g.value(root).kind != ir::ValueKind::param) continue;  // a view of an input
    plan.slots.push_back({static_cast<ir::ValueId>(v), off, value_bytes(g, static_cast<ir::ValueId>(v), batch), root});
  }
  std::sort(plan.slots.begin(), plan.slots.end(),
            [](const ir::BufferSlot& a, const ir::BufferSlot& b) { return a.value < b.value; });
  return plan;
}

}  // namespace

bool plan_memory(ir::Module& m) {
  bool changed = false;
  int64_t batch = plan_batch(m);
  for (auto& g : m.graphs) {
    if (g.memory && g.memory->batch == batch) continue;
    g.memory = plan_graph(g, batch);
    std::string why = check_memory_plan(g);
    DNNC_CHECK(why.empty(), "plan-memory produced overlapping live buffers");
    (void)why;
    changed = true;
  }
  return changed;
}

}  // namespace dnnc::passes
