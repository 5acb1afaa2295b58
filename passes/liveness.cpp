// Buffer lifetimes over the kernel schedule.
#include "passes/liveness.h"

#include <algorithm>

#include "passes/graph_analysis.h"

namespace dnnc::passes {

int64_t plan_batch(const ir::Module& m) { return m.train.batch > 0 ? m.train.batch : 1; }

Liveness compute_liveness(const ir::Graph& g, int64_t batch) {
  Liveness l;
  auto steps = kernel_steps(g);
  l.num_steps = static_cast<int>(steps.size());
  std::vector<int> step_of(g.nodes.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int n : steps[s]) step_of[static_cast<size_t>(n)] = static_cast<int>(s);
  // Views take the step of the first kernel after them (their users run no earlier).
  int next = l.num_steps;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (step_of[i] >= 0) next = step_of[i];
    else step_of[i] = next;
  }

  auto users = value_users(g);
  auto esc = escapes(g);
  l.storage.assign(g.values.size(), ir::kNoValue);
  std::vector<int> buffer_of(g.values.size(), -1);
  // Optimizer updates write the param's own storage when nothing reads the param later.
  std::vector<ir::ValueId> in_place(g.values.size(), ir::kNoValue);
  for (const auto& [name, v] : g.updates) {
    int p = g.producer(v);
    if (p < 0) continue;
    const ir::Node& n = g.nodes[static_cast<size_t>(p)];
    if (n.op != "sgd_update" && n.op != "adam_update" && n.op != "add_scalar") continue;
    ir::ValueId param = g.find_value(name);
    if (param == ir::kNoValue || g.value(param).kind != ir::ValueKind::param) continue;
    bool read_later = false;
    for (int u : users[static_cast<size_t>(param)]) read_later |= step_of[static_cast<size_t>(u)] > step_of[static_cast<size_t>(p)];
    if (!read_later) in_place[static_cast<size_t>(v)] = param;
  }

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    for (ir::ValueId o : n.outputs) {
      size_t ov = static_cast<size_t>(o);
      if (is_view(n)) {
        l.storage[ov] = l.storage[static_cast<size_t>(n.inputs[0])];
        continue;
      }
      if (in_place[ov] != ir::kNoValue) {
        l.storage[ov] = in_place[ov];
        continue;
      }
      bool internal = n.group >= 0 && !esc[ov];
      for (int u : users[ov]) internal &= g.nodes[static_cast<size_t>(u)].group == n.group && !is_view(g.nodes[static_cast<size_t>(u)]);
      if (internal) continue;  // lives in registers inside the fused kernel
      l.storage[ov] = o;
      buffer_of[ov] = static_cast<int>(l.buffers.size());
      l.buffers.push_back({o, step_of[i], step_of[i], value_bytes(g, o, batch)});
    }
  }
  // Extend each buffer to its last use, through views.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId in : g.nodes[i].inputs) {
      ir::ValueId s = l.storage[static_cast<size_t>(in)];
      if (s == ir::kNoValue || buffer_of[static_cast<size_t>(s)] < 0) continue;
      Lifetime& b = l.buffers[static_cast<size_t>(buffer_of[static_cast<size_t>(s)])];
      b.last = std::max(b.last, step_of[i]);
    }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!esc[v]) continue;
    ir::ValueId s = l.storage[v];
    if (s == ir::kNoValue || buffer_of[static_cast<size_t>(s)] < 0) continue;
    l.buffers[static_cast<size_t>(buffer_of[static_cast<size_t>(s)])].last = std::max(0, l.num_steps - 1) + 1;
  }
  return l;
}

int64_t max_live_bytes(const Liveness& l) {
  std::vector<int64_t> at(static_cast<size_t>(l.num_steps) + 2, 0);
  for (const auto& b : l.buffers)
    for (int s = b.first; s <= b.last; ++s) at[static_cast<size_t>(s)] += b.bytes;
  return at.empty() ? 0 : *std::max_element(at.begin(), at.end());
}

}  // namespace dnnc::passes
