// Graphviz (dot) rendering of an IR graph.
#include "ir/dot.h"

#include <fmt/format.h>

#include <set>

namespace dnnc::ir {
namespace {

// The body of a dot double-quoted string: `"` and `\` escaped, newlines as \n.
std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

bool valid(const Graph& g, ValueId id) { return id >= 0 && static_cast<size_t>(id) < g.values.size(); }

}  // namespace

std::string to_dot(const Graph& g, const Module& m) {
  const std::string& bs = m.batch_symbol;
  std::string out = fmt::format("digraph \"{}\" {{\n", esc(g.name));
  out += "  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  // Where each value comes from: "v<id>" for inputs/params, "n<k>" for node results.
  std::vector<std::string> source(g.values.size());
  std::set<ValueId> drawn;
  auto draw_leaf = [&](ValueId id) {
    if (!valid(g, id) || drawn.count(id)) return;
    const Value& v = g.value(id);
    if (v.kind == ValueKind::node) return;
    drawn.insert(id);
    source[static_cast<size_t>(id)] = fmt::format("v{}", id);
    bool param = v.kind == ValueKind::param;
    out += fmt::format("  v{} [shape={}, style=filled, fillcolor=\"{}\", label=\"{}{}\\n{}\"];\n", id,
                       param ? "cylinder" : "parallelogram", param ? "#fff2cc" : "#dae8fc", param ? "@" : "%",
                       esc(v.name), esc(to_string(v.type, bs)));
  };
  for (ValueId id : g.inputs) draw_leaf(id);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == ValueKind::param) draw_leaf(static_cast<ValueId>(i));
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    std::string label = esc(n.op);
    for (ValueId o : n.outputs) {
      if (!valid(g, o)) continue;
      label += fmt::format("\\n%{} : {}", esc(g.value(o).name), esc(to_string(g.value(o).type, bs)));
      source[static_cast<size_t>(o)] = fmt::format("n{}", k);
    }
    out += fmt::format("  n{} [shape=box, style=rounded, label=\"{}\"];\n", k, label);
  }
  int bad = 0;
  auto from = [&](ValueId id) -> std::string {
    if (valid(g, id) && !source[static_cast<size_t>(id)].empty()) return source[static_cast<size_t>(id)];
    std::string name = fmt::format("bad{}", bad++);
    out += fmt::format("  {} [shape=octagon, color=red, label=\"bad value {}\"];\n", name, id);
    return name;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (ValueId i : g.nodes[k].inputs) out += fmt::format("  {} -> n{};\n", from(i), k);
  out += "  ret [shape=doubleoctagon, label=\"return\"];\n";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    out += fmt::format("  {} -> ret [label=\"{}\"];\n", from(g.outputs[i]), i);
  for (const auto& [param, id] : g.updates) {
    std::string target;
    for (size_t i = 0; i < g.values.size(); ++i)
      if (g.values[i].kind == ValueKind::param && g.values[i].name == param) target = fmt::format("v{}", i);
    if (target.empty()) {
      target = fmt::format("u{}", bad++);
      out += fmt::format("  {} [shape=cylinder, style=dashed, label=\"@{}\"];\n", target, esc(param));
    }
    out += fmt::format("  {} -> {} [style=dashed, label=\"update\"];\n", from(id), target);
  }
  return out + "}\n";
}

}  // namespace dnnc::ir
