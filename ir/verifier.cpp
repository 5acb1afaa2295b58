// The IR verifier: types, attributes, SSA order, params and updates; the first violation throws.
#include "ir/verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "ir/fusion.h"
#include "ir/op_registry.h"

namespace dnnc::ir {
namespace {

std::string type_problem(const TensorType& t) {
  for (Dim d : t.shape)
    if (d < kBatch) return fmt::format("dimension {} is negative", d);
  if (t.layout == Layout::nhwc && t.rank() != 4)
    return fmt::format("layout nhwc needs rank 4, found rank {}", t.rank());
  if (t.layout == Layout::col_major && t.rank() != 2)
    return fmt::format("layout col_major needs rank 2, found rank {}", t.rank());
  return {};
}

class GraphVerifier {
 public:
  GraphVerifier(const Graph& g, const Module& m) : g_(g), m_(m) {}

  // Fusion groups: valid indices, each group's nodes contiguous and non-empty, its kind a
  // pattern fuse forms, every node of it with a role of that pattern, no role outside groups.
  void check_groups() {
    std::vector<bool> seen(g_.groups.size(), false);
    int32_t prev = -1;
    for (size_t i = 0; i < g_.groups.size(); ++i)
      if (!fusion::known_kind(g_.groups[i].kind))
        fail(fmt::format("fusion group {} has an unknown kind '{}'", i, g_.groups[i].kind));
    for (size_t n = 0; n < g_.nodes.size(); ++n) {
      int32_t grp = g_.nodes[n].group;
      if (grp < -1 || grp >= static_cast<int32_t>(g_.groups.size()))
        fail(fmt::format("node {} has fusion group {}, but the graph has {} groups", n, grp, g_.groups.size()));
      const std::string& role = g_.nodes[n].role;
      if (grp < 0 && !role.empty())
        fail(fmt::format("node {} ({}) has the fusion role '{}' but is in no group", n, g_.nodes[n].op, role));
      if (grp >= 0) {
        const std::vector<std::string> roles = fusion::roles_of(g_.groups[static_cast<size_t>(grp)].kind);
        if (std::find(roles.begin(), roles.end(), role) == roles.end())
          fail(fmt::format("node {} ({}) in fusion group {} ('{}') has the role '{}'; expected one of {}", n,
                           g_.nodes[n].op, grp, g_.groups[static_cast<size_t>(grp)].kind, role,
                           fmt::join(roles, ", ")));
      }
      if (grp >= 0 && role == fusion::kHead) {
        const std::string head = fusion::epilogue_head(g_.groups[static_cast<size_t>(grp)].kind);
        if (g_.nodes[n].op != head)
          fail(fmt::format("node {} ({}) is the head of fusion group {} ('{}'), whose head must be a {}", n,
                           g_.nodes[n].op, grp, g_.groups[static_cast<size_t>(grp)].kind, head));
      }
      if (grp >= 0 && grp != prev) {
        if (seen[static_cast<size_t>(grp)]) fail(fmt::format("fusion group {} is not contiguous (node {})", grp, n));
        seen[static_cast<size_t>(grp)] = true;
        const std::string first = fusion::first_role(g_.groups[static_cast<size_t>(grp)].kind);
        if (!first.empty() && role != first)
          fail(fmt::format("fusion group {} ('{}') starts with node {} ({}) of role '{}'; it must start with its {}",
                           grp, g_.groups[static_cast<size_t>(grp)].kind, n, g_.nodes[n].op, role, first));
      }
      prev = grp;
    }
    for (size_t i = 0; i < seen.size(); ++i)
      if (!seen[i]) fail(fmt::format("fusion group {} ('{}') has no nodes", i, g_.groups[i].kind));
  }

  void run() {
    check_values();
    for (ValueId id : g_.inputs) {
      check_id(id, "graph input");
      if (g_.value(id).kind != ValueKind::input) fail(fmt::format("graph input {} is not an input value", vname(id)));
      if (!defined_.insert(id).second) fail(fmt::format("graph input {} is listed twice", vname(id)));
    }
    for (size_t i = 0; i < g_.values.size(); ++i) {
      const Value& v = g_.values[i];
      if (v.kind == ValueKind::param) {
        defined_.insert(static_cast<ValueId>(i));
      } else if (v.kind == ValueKind::input && !defined_.count(static_cast<ValueId>(i))) {
        fail(fmt::format("input value {} is not in the graph's input list", vname(static_cast<ValueId>(i))));
      }
    }
    for (size_t n = 0; n < g_.nodes.size(); ++n) check_node(static_cast<int>(n));
    check_groups();
    for (size_t i = 0; i < g_.values.size(); ++i)
      if (!defined_.count(static_cast<ValueId>(i)))
        fail(fmt::format("value {} (kind node) is not defined by any node", vname(static_cast<ValueId>(i))));
    for (ValueId id : g_.outputs) {
      check_id(id, "graph output");
      if (!defined_.count(id)) fail(fmt::format("graph output {} is not defined", vname(id)));
    }
    std::set<std::string> updated;
    for (const auto& [name, id] : g_.updates) {
      check_id(id, fmt::format("update of @{}", name));
      const Param* p = m_.param(name);
      if (!p) fail(fmt::format("update of @{}: no such param in the module", name));
      if (!updated.insert(name).second) fail(fmt::format("update of @{}: the param is updated twice", name));
      if (g_.value(id).type != p->type)
        fail(fmt::format("update of @{}: expected type {}, found {} ({})", name, ts(p->type), ts(g_.value(id).type),
                         vname(id)));
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw VerifyError(fmt::format("verify: graph '{}': {}", g_.name, what));
  }
  [[noreturn]] void fail_node(int n, const std::string& what) const {
    throw VerifyError(fmt::format("verify: graph '{}', node {} ({}): {}", g_.name, n, node_text(n), what));
  }

  std::string ts(const TensorType& t) const { return to_string(t, m_.batch_symbol); }
  std::string vname(ValueId id) const {
    if (id < 0 || static_cast<size_t>(id) >= g_.values.size()) return fmt::format("<bad value id {}>", id);
    const Value& v = g_.value(id);
    return (v.kind == ValueKind::param ? "@" : "%") + v.name;
  }
  std::string typed(ValueId id) const {
    if (id < 0 || static_cast<size_t>(id) >= g_.values.size()) return vname(id);
    return vname(id) + ": " + ts(g_.value(id).type);
  }
  // "%a: f32[N,3] = relu(%x: f32[N,3])"
  std::string node_text(int n) const {
    const Node& node = g_.nodes[static_cast<size_t>(n)];
    std::string outs, ins;
    for (ValueId o : node.outputs) outs += (outs.empty() ? "" : ", ") + typed(o);
    for (ValueId i : node.inputs) ins += (ins.empty() ? "" : ", ") + typed(i);
    return fmt::format("{} = {}({})", outs, node.op, ins);
  }

  void check_id(ValueId id, const std::string& what) const {
    if (id < 0 || static_cast<size_t>(id) >= g_.values.size())
      fail(fmt::format("{} refers to value id {}, but the graph has {} values", what, id, g_.values.size()));
  }

  void check_values() {
    std::set<std::string> names;
    for (size_t i = 0; i < g_.values.size(); ++i) {
      const Value& v = g_.values[i];
      ValueId id = static_cast<ValueId>(i);
      std::string problem = type_problem(v.type);
      if (!problem.empty()) fail(fmt::format("value {} has a malformed type {}: {}", vname(id), ts(v.type), problem));
      std::string key = (v.kind == ValueKind::param ? "@" : "%") + v.name;
      if (v.name.empty()) fail(fmt::format("value id {} has an empty name", id));
      if (!names.insert(key).second) fail(fmt::format("value name {} is used twice", key));
      if (v.kind != ValueKind::param) continue;
      const Param* p = m_.param(v.name);
      if (!p) fail(fmt::format("value @{} reads a param the module does not have", v.name));
      if (p->type != v.type)
        fail(fmt::format("value @{} has type {} but the module param has {}; expected {}, found {}", v.name, ts(v.type),
                         ts(p->type), ts(p->type), ts(v.type)));
    }
  }

  void check_node(int n) {
    const Node& node = g_.nodes[static_cast<size_t>(n)];
    const OpDef* op = find_op(node.op);
    if (!op) fail_node(n, fmt::format("unknown op '{}'", node.op));
    for (ValueId i : node.inputs) {
      check_id(i, fmt::format("node {} operand", n));
      if (!defined_.count(i)) fail_node(n, fmt::format("operand {} is used before it is defined", vname(i)));
    }
    for (ValueId o : node.outputs) {
      check_id(o, fmt::format("node {} result", n));
      const Value& v = g_.value(o);
      if (v.kind != ValueKind::node)
        fail_node(n, fmt::format("result {} is a graph {}, which nodes may not define", vname(o),
                                 v.kind == ValueKind::input ? "input" : "param"));
      if (!defined_.insert(o).second) fail_node(n, fmt::format("result {} is defined twice", vname(o)));
    }
    Attrs complete;
    try {
      complete = complete_attrs(*op, node.attrs);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
    for (const auto& [key, value] : complete) {
      auto it = node.attrs.find(key);
      if (it == node.attrs.end())
        fail_node(n, fmt::format("attribute '{}' is missing (attrs must be complete); expected {}, found none", key,
                                 attr_to_string(value)));
      if (attr_kind(it->second) != attr_kind(value))
        fail_node(n, fmt::format("attribute '{}' has the wrong kind; expected {}, found {}", key,
                                 attr_kind_name(attr_kind(value)), attr_kind_name(attr_kind(it->second))));
    }
    std::vector<TensorType> in_types;
    for (ValueId i : node.inputs) in_types.push_back(g_.value(i).type);
    std::vector<TensorType> expected;
    try {
      expected = infer_types(*op, in_types, node.attrs);
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
    if (expected.size() != node.outputs.size())
      fail_node(n, fmt::format("wrong number of results; expected {}, found {}", expected.size(), node.outputs.size()));
    for (size_t k = 0; k < expected.size(); ++k)
      if (g_.value(node.outputs[k]).type != expected[k])
        fail_node(n, fmt::format("result {} ({}) has the wrong type; expected {}, found {}", k, vname(node.outputs[k]),
                                 ts(expected[k]), ts(g_.value(node.outputs[k]).type)));
  }

  const Graph& g_;
  const Module& m_;
  std::set<ValueId> defined_;
};

}  // namespace

void verify_graph(const Graph& g, const Module& m) { GraphVerifier(g, m).run(); }

void verify(const Module& m) {
  std::set<std::string> params;
  for (const Param& p : m.params) {
    if (p.name.empty()) throw VerifyError("verify: a param has an empty name");
    if (!params.insert(p.name).second) throw VerifyError(fmt::format("verify: param @{} is declared twice", p.name));
    std::string problem = type_problem(p.type);
    if (!problem.empty())
      throw VerifyError(fmt::format("verify: param @{} has a malformed type {}: {}", p.name,
                                    to_string(p.type, m.batch_symbol), problem));
    if (p.type.has_batch())
      throw VerifyError(fmt::format("verify: param @{} has the batch dim; expected a concrete shape, found {}", p.name,
                                    to_string(p.type, m.batch_symbol)));
  }
  std::set<std::string> graphs;
  for (const Graph& g : m.graphs) {
    if (!graphs.insert(g.name).second) throw VerifyError(fmt::format("verify: graph '{}' appears twice", g.name));
    verify_graph(g, m);
  }
}

}  // namespace dnnc::ir
