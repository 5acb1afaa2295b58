// Prints a Module or Graph in the IR text form documented in docs/ir.md.
#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>

namespace dnnc::ir {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string quoted(const std::string& s) { return attr_to_string(AttrValue{s}); }

// Module and graph names: a bare identifier when possible, else a quoted string.
std::string print_ident(const std::string& s) {
  bool bare = !s.empty() && !(s[0] >= '0' && s[0] <= '9') && s[0] != '.';
  for (char c : s) bare = bare && is_name_char(c);
  return bare ? s : quoted(s);
}

std::string print_loc(SourceLoc loc) { return loc.known() ? fmt::format(" loc({}:{})", loc.line, loc.col) : ""; }

std::string print_attrs(const Attrs& attrs) {
  std::string out = "{";
  for (const auto& [key, value] : attrs) {
    if (out.size() > 1) out += ", ";
    out += print_ident(key) + "=" + attr_to_string(value);
  }
  return out + "}";
}

std::string operand_name(const Graph& g, ValueId id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return fmt::format("%<bad:{}>", id);
  const Value& v = g.value(id);
  return print_value_name(v.name, v.kind == ValueKind::param ? '@' : '%');
}

std::string print_init(const InitSpec& init) {
  bool has_bound = init.kind == "uniform" || init.bound != 0.0 || std::signbit(init.bound);
  return "init=" + print_ident(init.kind) + (has_bound ? "(" + attr_to_string(init.bound) + ")" : "");
}

void print_graph(std::string& out, const Graph& g, const Module& m, const std::string& indent) {
  const std::string& bs = m.batch_symbol;
  out += indent + "graph " + print_ident(g.name) + "(";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ValueId id = g.inputs[i];
    out += (i ? ", " : "") + operand_name(g, id);
    if (id >= 0 && static_cast<size_t>(id) < g.values.size()) out += ": " + to_string(g.value(id).type, bs);
  }
  out += ") {\n";
  int32_t open_group = -1;
  for (const Node& n : g.nodes) {
    if (n.group != open_group) {
      if (open_group >= 0) out += indent + "  }\n";
      open_group = n.group;
      if (open_group >= 0) {
        bool ok = static_cast<size_t>(open_group) < g.groups.size();
        out += indent + "  fused " + quoted(ok ? g.groups[static_cast<size_t>(open_group)].kind : "?") + " {\n";
      }
    }
    out += indent + (open_group >= 0 ? "    " : "  ");
    if (!n.role.empty()) out += print_ident(n.role) + ": ";
    for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + operand_name(g, n.outputs[i]);
    if (!n.outputs.empty()) out += " = ";
    out += print_ident(n.op) + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) out += (i ? ", " : "") + operand_name(g, n.inputs[i]);
    out += ")";
    if (!n.attrs.empty()) out += " " + print_attrs(n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId id = n.outputs[i];
      bool ok = id >= 0 && static_cast<size_t>(id) < g.values.size();
      out += (i ? ", " : " : ") + (ok ? to_string(g.value(id).type, bs) : std::string("?"));
    }
    out += print_loc(n.loc) + "\n";
  }
  if (open_group >= 0) out += indent + "  }\n";
  out += indent + "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += (i ? ", " : " ") + operand_name(g, g.outputs[i]);
  out += "\n";
  for (const auto& [param, id] : g.updates)
    out += indent + "  update " + print_value_name(param, '@') + " = " + operand_name(g, id) + "\n";
  out += indent + "}\n";
}

}  // namespace

std::string print_value_name(const std::string& name, char sigil) {
  bool bare = !name.empty();
  for (char c : name) bare = bare && is_name_char(c);
  return std::string(1, sigil) + (bare ? name : quoted(name));
}

std::string print(const Graph& g, const Module& m) {
  std::string out;
  print_graph(out, g, m, "");
  return out;
}

std::string print(const Module& m) {
  const std::string& bs = m.batch_symbol;
  std::string out = "module " + print_ident(m.name) + " {\n";
  if (!m.source_file.empty()) out += "  source " + quoted(m.source_file) + "\n";
  out += "  batch " + print_ident(bs) + "\n";
  for (const Param& p : m.params)
    out += fmt::format("  param {} : {} {} {}{}\n", print_value_name(p.name, '@'), to_string(p.type, bs),
                       param_role_name(p.role), print_init(p.init), print_loc(p.loc));
  const TrainConfig& t = m.train;
  if (t.present) {
    std::string augment;  // printed only where set, so older IR text reads the same
    if (t.data.crop_padding) augment += fmt::format(", crop_padding={}", t.data.crop_padding);
    if (t.data.flip_p) augment += fmt::format(", flip_p={}", attr_to_string(t.data.flip_p));
    std::string clip = t.clip_grad_norm ? fmt::format(", clip_grad_norm={}", attr_to_string(t.clip_grad_norm)) : "";
    std::string schedule;  // likewise
    if (!t.schedule.kind.empty())
      schedule = fmt::format(" schedule {} {}", quoted(t.schedule.kind), print_attrs(t.schedule.attrs));
    out += fmt::format("  train {{data={}, mean={}, std={}{}, batch={}, epochs={}, seed={}{}}} optimizer {} {}{}{}\n",
                       quoted(t.data.dataset), attr_to_string(t.data.mean), attr_to_string(t.data.std), augment,
                       t.batch, t.epochs, t.seed, clip, quoted(t.optimizer.kind), print_attrs(t.optimizer.attrs), schedule,
                       print_loc(t.loc));
  }
  for (const Graph& g : m.graphs) print_graph(out, g, m, "  ");
  return out + "}\n";
}

}  // namespace dnnc::ir
