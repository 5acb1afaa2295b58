// Pass `simplify`: dead-code elimination and common-subexpression elimination.
#include <map>
#include <set>
#include <tuple>

#include "passes/graph_analysis.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

// Removes nodes none of whose results reach an output or an update.
bool dce(ir::Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (ir::ValueId v : g.outputs) live[static_cast<size_t>(v)] = true;
  for (const auto& [name, v] : g.updates) live[static_cast<size_t>(v)] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    for (ir::ValueId o : g.nodes[i].outputs) keep[i] = keep[i] || live[static_cast<size_t>(o)];
    if (keep[i])
      for (ir::ValueId in : g.nodes[i].inputs) live[static_cast<size_t>(in)] = true;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(g.nodes[i]));
  bool changed = kept.size() != g.nodes.size();
  g.nodes = std::move(kept);
  return changed;
}

// Replaces a node identical to an earlier one (same op, inputs and attrs) by the earlier one's results.
bool cse(ir::Graph& g) {
  std::map<std::tuple<std::string, std::vector<ir::ValueId>, std::string>, size_t> seen;
  std::vector<ir::ValueId> replace(g.values.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ir::ValueId>(v);
  bool changed = false;
  std::vector<ir::Node> kept;
  for (auto& n : g.nodes) {
    for (ir::ValueId& in : n.inputs) in = replace[static_cast<size_t>(in)];
    std::string attrs;
    for (const auto& [k, v] : n.attrs) attrs += k + "=" + ir::attr_to_string(v) + ";";
    auto key = std::make_tuple(n.op, n.inputs, attrs);
    auto it = seen.find(key);
    if (it != seen.end() && n.op != "dropout") {
      const ir::Node& first = kept[it->second];
      for (size_t k = 0; k < n.outputs.size(); ++k) replace[static_cast<size_t>(n.outputs[k])] = first.outputs[k];
      changed = true;
      continue;
    }
    seen.emplace(key, kept.size());
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  for (ir::ValueId& v : g.outputs) v = replace[static_cast<size_t>(v)];
  for (auto& [name, v] : g.updates) v = replace[static_cast<size_t>(v)];
  return changed;
}

}  // namespace

bool simplify(ir::Module& m) {
  bool changed = false;
  for (auto& g : m.graphs) {
    if (!g.groups.empty()) continue;  // fused kernels are final: simplify runs before fuse
    bool c = cse(g);
    c |= dce(g);
    if (c) compact_values(g);
    changed |= c;
  }
  return changed;
}

}  // namespace dnnc::passes
