// Pass `schedule`: a launch order that lowers peak live memory. List scheduling over kernels
// (fusion groups stay whole): among the ready kernels, run the one that frees the most bytes
// net of what it allocates, earliest first on ties. The new order is kept only if its peak
// (max live bytes at the planning batch) is lower than the current order's.
#include <algorithm>
#include <map>
#include <set>

#include "passes/graph_analysis.h"
#include "passes/liveness.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

bool schedule_graph(ir::Graph& g, int64_t batch) {
  size_t n = g.nodes.size();
  if (n < 3) return false;
  // Units: a fusion group, or a single node.
  std::vector<int> unit_of(n);
  std::vector<std::vector<int>> units;
  std::map<int, int> group_unit;
  for (size_t i = 0; i < n; ++i) {
    int grp = g.nodes[i].group;
    if (grp >= 0 && group_unit.count(grp)) {
      unit_of[i] = group_unit[grp];
      units[static_cast<size_t>(unit_of[i])].push_back(static_cast<int>(i));
      continue;
    }
    unit_of[i] = static_cast<int>(units.size());
    if (grp >= 0) group_unit[grp] = unit_of[i];
    units.push_back({static_cast<int>(i)});
  }
  auto users = value_users(g);
  auto esc = escapes(g);
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId o : g.nodes[i].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(i);

  std::vector<std::set<int>> preds(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    for (int i : units[u])
      for (ir::ValueId in : g.nodes[static_cast<size_t>(i)].inputs) {
        int p = producer[static_cast<size_t>(in)];
        if (p >= 0 && unit_of[static_cast<size_t>(p)] != static_cast<int>(u)) preds[u].insert(unit_of[static_cast<size_t>(p)]);
      }
  // Remaining readers per value, to know when a unit frees an operand.
  std::vector<int> remaining(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) remaining[v] = static_cast<int>(users[v].size());

  std::vector<bool> done(units.size(), false);
  std::vector<int> order;
  for (size_t step = 0; step < units.size(); ++step) {
    int best = -1;
    int64_t best_delta = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      if (done[u]) continue;
      bool ready = true;
      for (int p : preds[u]) ready &= done[static_cast<size_t>(p)];
      if (!ready) continue;
      int64_t delta = 0;
      std::map<ir::ValueId, int> reads;
      for (int i : units[u]) {
        const ir::Node& nd = g.nodes[static_cast<size_t>(i)];
        for (ir::ValueId o : nd.outputs)
          if (!is_view(nd)) delta += value_bytes(g, o, batch);
        for (ir::ValueId in : nd.inputs) ++reads[in];
      }
      for (const auto& [v, k] : reads)
        if (producer[static_cast<size_t>(v)] >= 0 && !esc[static_cast<size_t>(v)] && remaining[static_cast<size_t>(v)] == k)
          delta -= value_bytes(g, v, batch);
      if (best < 0 || delta < best_delta) {
        best = static_cast<int>(u);
        best_delta = delta;
      }
    }
    done[static_cast<size_t>(best)] = true;
    for (int i : units[static_cast<size_t>(best)]) {
      order.push_back(i);
      for (ir::ValueId in : g.nodes[static_cast<size_t>(i)].inputs) --remaining[static_cast<size_t>(in)];
    }
  }
  bool same = true;
  for (size_t i = 0; i < n; ++i) same &= order[i] == static_cast<int>(i);
  if (same) return false;
  ir::Graph candidate = g;
  candidate.nodes.clear();
  for (int i : order) candidate.nodes.push_back(g.nodes[static_cast<size_t>(i)]);
  if (max_live_bytes(compute_liveness(candidate, batch)) >= max_live_bytes(compute_liveness(g, batch))) return false;
  g.nodes = std::move(candidate.nodes);
  return true;
}

}  // namespace

bool schedule(ir::Module& m) {
  bool changed = false;
  int64_t batch = plan_batch(m);
  for (auto& g : m.graphs) changed |= schedule_graph(g, batch);
  return changed;
}

}  // namespace dnnc::passes
