// Uses, kernel steps and value sizes.
#include "passes/graph_analysis.h"

#include "ir/check.h"

namespace dnnc::passes {

std::vector<std::vector<int>> value_users(const ir::Graph& g) {
  std::vector<std::vector<int>> users(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId in : g.nodes[i].inputs) users[static_cast<size_t>(in)].push_back(static_cast<int>(i));
  return users;
}

std::vector<bool> escapes(const ir::Graph& g) {
  std::vector<bool> out(g.values.size(), false);
  for (ir::ValueId v : g.outputs) out[static_cast<size_t>(v)] = true;
  for (const auto& [name, v] : g.updates) out[static_cast<size_t>(v)] = true;
  return out;
}

bool is_view(const ir::Node& n) { return (n.op == "flatten" || n.op == "reshape") && n.group < 0; }

std::vector<std::vector<int>> kernel_steps(const ir::Graph& g) {
  std::vector<std::vector<int>> steps;
  int32_t current = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (is_view(n)) continue;
    if (n.group >= 0 && n.group == current) {
      steps.back().push_back(static_cast<int>(i));
      continue;
    }
    steps.push_back({static_cast<int>(i)});
    current = n.group;
  }
  return steps;
}

int kernel_count(const ir::Graph& g) { return static_cast<int>(kernel_steps(g).size()); }

int64_t value_bytes(const ir::Graph& g, ir::ValueId v, int64_t batch) {
  const ir::TensorType& t = g.value(v).type;
  auto n = t.numel(batch);
  DNNC_CHECK(n, "value size overflows: shapes are checked by the frontend");
  return *n * (t.dtype == ir::DType::i64 ? 8 : 4);
}

void compact_values(ir::Graph& g) {
  std::vector<bool> keep(g.values.size(), false);
  for (ir::ValueId v : g.inputs) keep[static_cast<size_t>(v)] = true;
  for (const auto& n : g.nodes) {
    for (ir::ValueId v : n.inputs) keep[static_cast<size_t>(v)] = true;
    for (ir::ValueId v : n.outputs) keep[static_cast<size_t>(v)] = true;
  }
  for (ir::ValueId v : g.outputs) keep[static_cast<size_t>(v)] = true;
  for (const auto& [name, v] : g.updates) keep[static_cast<size_t>(v)] = true;
  std::vector<ir::ValueId> remap(g.values.size(), ir::kNoValue);
  std::vector<ir::Value> values;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (keep[i]) {
      remap[i] = static_cast<ir::ValueId>(values.size());
      values.push_back(std::move(g.values[i]));
    }
  g.values = std::move(values);
  auto fix = [&](ir::ValueId& v) { v = remap[static_cast<size_t>(v)]; };
  for (auto& v : g.inputs) fix(v);
  for (auto& n : g.nodes) {
    for (auto& v : n.inputs) fix(v);
    for (auto& v : n.outputs) fix(v);
  }
  for (auto& v : g.outputs) fix(v);
  for (auto& [name, v] : g.updates) fix(v);
}

}  // namespace dnnc::passes
