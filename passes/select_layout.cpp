// Pass `select-layout`: folds transposes into GEMM transpose flags (a transpose of a transpose
// composes or cancels), then picks each 4-d activation region's layout (NCHW or NHWC) with the
// target's cost model (passes/target.h) and inserts the layout conversions at the region's edges.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

#include "ir/check.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/graph_analysis.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

using ir::ValueId;

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

ir::Layout transpose_layout(const ir::Node& n) { return *ir::parse_layout(ir::attr_string(n.attrs, "layout")); }

// A plain 2-d transpose: perm [1,0] of a row-major matrix into a row-major result, which a GEMM
// can read through its transpose flag instead.
bool is_plain_matrix_transpose(const ir::Graph& g, const ir::Node& n) {
  return n.op == "transpose" && ir::attr_ints(n.attrs, "perm") == std::vector<int64_t>{1, 0} &&
         transpose_layout(n) == ir::Layout::row_major && g.value(n.inputs[0]).type.layout == ir::Layout::row_major;
}

ir::Node make_node(std::string op, std::vector<ValueId> inputs, ir::Attrs attrs, std::vector<ValueId> outputs,
                   ir::SourceLoc loc) {
  ir::Node n;
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = ir::complete_attrs(*ir::find_op(n.op), attrs);
  n.outputs = std::move(outputs);
  n.loc = loc;
  return n;
}

ValueId new_value(ir::Graph& g, const std::string& base, ir::TensorType type) {
  std::string name = g.fresh_name(base);
  g.values.push_back(ir::Value{name, std::move(type), ir::ValueKind::node});
  return static_cast<ValueId>(g.values.size() - 1);
}

// ---- transpose folding -------------------------------------------------------------------------

class TransposeFolder {
 public:
  TransposeFolder(ir::Graph& g, const Target& t, GraphLayoutReport& r) : g_(g), t_(t), r_(r) {}

  bool run() {
    std::vector<ir::Node> out;
    std::vector<ValueId> repl(g_.values.size());
    std::iota(repl.begin(), repl.end(), 0);
    std::map<ValueId, size_t> def;  // value -> index in `out` of its defining node
    bool changed = false;
    for (ir::Node n : g_.nodes) {
      for (ValueId& v : n.inputs) v = repl[static_cast<size_t>(v)];
      auto producer = [&](ValueId v) -> const ir::Node* {
        auto it = def.find(v);
        return it == def.end() ? nullptr : &out[it->second];
      };
      if (n.op == "transpose") {
        const ir::Node* inner = producer(n.inputs[0]);
        if (inner && inner->op == "transpose") {  // t2(t1(x)) = one transpose by the composed perm
          const auto &p1 = ir::attr_ints(inner->attrs, "perm"), &p2 = ir::attr_ints(n.attrs, "perm");
          std::vector<int64_t> q(p2.size());
          for (size_t i = 0; i < p2.size(); ++i) q[i] = p1[static_cast<size_t>(p2[i])];
          ValueId x = inner->inputs[0];
          ++r_.cancelled;
          changed = true;
          if (is_identity(q) && transpose_layout(n) == g_.value(x).type.layout) {
            repl[static_cast<size_t>(n.outputs[0])] = x;  // the pair cancels: no node at all
            continue;
          }
          n.inputs[0] = x;
          n.attrs["perm"] = q;
        }
      } else if (t_.gemm_transpose_flags && n.op == "matmul") {
        for (int k = 0; k < 2; ++k) {
          const ir::Node* p = producer(n.inputs[static_cast<size_t>(k)]);
          if (!p || !is_plain_matrix_transpose(g_, *p)) continue;
          const char* flag = k == 0 ? "transpose_a" : "transpose_b";
          n.inputs[static_cast<size_t>(k)] = p->inputs[0];
          n.attrs[flag] = !ir::attr_bool(n.attrs, flag);
          ++r_.folded_into_gemm;
          changed = true;
        }
      } else if (t_.gemm_transpose_flags && n.op == "linear" && g_.value(n.inputs[0]).type.rank() == 2) {
        // linear(x, transpose(V)) = x @ V: a matmul without flags (+ the bias as an epilogue add).
        const ir::Node* p = producer(n.inputs[1]);
        if (p && is_plain_matrix_transpose(g_, *p)) {
          ValueId x = n.inputs[0], v = p->inputs[0], y = n.outputs[0];
          ++r_.folded_into_gemm;
          changed = true;
          ir::Attrs flags{{"transpose_a", false}, {"transpose_b", false}};
          if (n.inputs.size() < 3) {
            out.push_back(make_node("matmul", {x, v}, flags, {y}, n.loc));
            def[y] = out.size() - 1;
            continue;
          }
          ValueId mm = new_value(g_, g_.value(y).name + ".mm", g_.value(y).type);
          repl.push_back(mm);
          out.push_back(make_node("matmul", {x, v}, flags, {mm}, n.loc));
          def[mm] = out.size() - 1;
          n = make_node("add", {mm, n.inputs[2]}, {}, {y}, n.loc);
        }
      }
      out.push_back(std::move(n));
      for (ValueId o : out.back().outputs) def[o] = out.size() - 1;
    }
    if (!changed) return false;
    g_.nodes = std::move(out);
    for (ValueId& v : g_.outputs) v = repl[static_cast<size_t>(v)];
    for (auto& [name, v] : g_.updates) v = repl[static_cast<size_t>(v)];
    remove_dead_transposes();
    compact_values(g_);
    return true;
  }

 private:
  // Transposes nobody reads any more (their readers now use the GEMM flag or the composed perm).
  void remove_dead_transposes() {
    for (bool again = true; again;) {
      again = false;
      std::vector<std::vector<int>> users = value_users(g_);
      std::vector<bool> esc = escapes(g_);
      std::vector<ir::Node> kept;
      for (ir::Node& n : g_.nodes) {
        ValueId y = n.outputs.empty() ? ir::kNoValue : n.outputs[0];
        if (n.op == "transpose" && users[static_cast<size_t>(y)].empty() && !esc[static_cast<size_t>(y)]) {
          again = true;
          continue;
        }
        kept.push_back(std::move(n));
      }
      g_.nodes = std::move(kept);
    }
  }

  ir::Graph& g_;
  const Target& t_;
  GraphLayoutReport& r_;
};

// ---- activation layout regions -----------------------------------------------------------------

// The operand and result positions of a node whose layout follows its 4-d activation layout (the
// ones that must all share one layout); std::nullopt for nodes that only take row-major 4-d
// tensors (they sit at a region's edge).
struct Follow {
  std::vector<size_t> operands, results;
};

bool is_activation(const ir::TensorType& t) { return t.dtype == ir::DType::f32 && t.rank() == 4; }

std::optional<Follow> follow_of(const ir::Graph& g, const ir::Node& n) {
  static const std::map<std::string, Follow> fixed = {
      {"conv2d", {{0}, {0}}},
      {"maxpool2d", {{0}, {0}}},
      {"avgpool2d", {{0}, {0}}},
      {"batchnorm2d", {{0}, {0}}},
      {"conv2d_backward_input", {{0}, {0}}},
      {"conv2d_backward_weight", {{0, 1}, {}}},
      {"maxpool2d_backward", {{0, 1}, {0}}},
      {"avgpool2d_backward", {{0, 1}, {0}}},
      {"batchnorm2d_backward", {{0, 1}, {0}}},
  };
  if (auto it = fixed.find(n.op); it != fixed.end()) return it->second;
  const ir::OpDef* d = ir::find_op(n.op);
  bool pointwise = d && (d->fusion == ir::FusionClass::elementwise || d->fusion == ir::FusionClass::broadcast);
  if (!pointwise || n.op == "fill" || n.outputs.empty()) return std::nullopt;
  const ir::TensorType& y = g.value(n.outputs[0]).type;
  if (!is_activation(y)) return std::nullopt;
  Follow f;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::TensorType& t = g.value(n.inputs[i]).type;
    if (is_activation(t) && t.shape == y.shape) f.operands.push_back(i);  // broadcast operands stay row-major
  }
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (g.value(n.outputs[i]).type.shape == y.shape) f.results.push_back(i);
  return f;
}

class LayoutSelector {
 public:
  LayoutSelector(const ir::Module& m, ir::Graph& g, const Target& t, GraphLayoutReport& r, LayoutChoice choice)
      : m_(m), g_(g), t_(t), r_(r), choice_(choice), parent_(g.values.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    batch_ = m.train.batch > 0 ? m.train.batch : 1;
  }

  bool run() {
    build_regions();
    std::map<ValueId, ir::Layout> chosen;  // region root -> layout
    for (auto& [root, reg] : regions_) {
      ++r_.regions;
      double row_major = cost(reg, ir::Layout::row_major);
      ir::Layout best = ir::Layout::row_major;
      double best_cost = row_major;
      for (ir::Layout l : t_.activation_layouts) {
        if (l == ir::Layout::row_major || choice_ == LayoutChoice::nchw) continue;
        double c = cost(reg, l);
        bool forced = choice_ == LayoutChoice::nhwc && l == ir::Layout::nhwc && std::isfinite(c);
        if (forced || c < best_cost) best = l, best_cost = c;  // ties keep row-major: no conversions
      }
      r_.row_major_cost_us += row_major;
      r_.cost_us += best_cost;
      if (best != ir::Layout::row_major) {
        ++r_.nhwc_regions;
        chosen[root] = best;
      }
    }
    if (chosen.empty()) return false;
    rewrite(chosen);
    return true;
  }

 private:
  struct Region {
    std::vector<int> nodes;     // nodes with a follow position in the region
    std::set<ValueId> values;   // 4-d values at follow positions
    std::set<ValueId> sources;  // values made row-major (inputs, params, edge nodes) read at follow positions
    std::set<ValueId> sinks;    // values made in the region read row-major (edge nodes, outputs, updates)
  };

  ValueId find(ValueId v) {
    while (parent_[static_cast<size_t>(v)] != v)
      v = parent_[static_cast<size_t>(v)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(v)])];
    return v;
  }
  void unite(ValueId a, ValueId b) { parent_[static_cast<size_t>(find(a))] = find(b); }

  void build_regions() {
    follow_.resize(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const ir::Node& n = g_.nodes[i];
      follow_[i] = follow_of(g_, n);
      if (!follow_[i]) continue;
      std::vector<ValueId> vs;
      for (size_t k : follow_[i]->operands) vs.push_back(n.inputs[k]);
      for (size_t k : follow_[i]->results) vs.push_back(n.outputs[k]);
      for (ValueId v : vs) in_region_.insert(v);
      for (size_t k = 1; k < vs.size(); ++k) unite(vs[0], vs[k]);
    }
    // Values defined at a follow position are "made in the layout"; all others are row-major.
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (follow_[i])
        for (size_t k : follow_[i]->results) made_in_layout_.insert(g_.nodes[i].outputs[k]);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const ir::Node& n = g_.nodes[i];
      std::set<size_t> follow_ops;
      if (follow_[i]) {
        follow_ops.insert(follow_[i]->operands.begin(), follow_[i]->operands.end());
        Region& reg = regions_[find(first_follow(i))];
        reg.nodes.push_back(static_cast<int>(i));
      }
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        ValueId v = n.inputs[k];
        if (!in_region_.count(v)) continue;
        Region& reg = regions_[find(v)];
        reg.values.insert(v);
        bool made = made_in_layout_.count(v) > 0;
        if (follow_ops.count(k) && !made) reg.sources.insert(v);
        if (!follow_ops.count(k) && made) reg.sinks.insert(v);
      }
    }
    auto escape = [&](ValueId v) {
      if (in_region_.count(v) && made_in_layout_.count(v)) regions_[find(v)].sinks.insert(v);
    };
    for (ValueId v : g_.outputs) escape(v);
    for (const auto& [name, v] : g_.updates) escape(v);
  }

  ValueId first_follow(size_t i) const {
    const ir::Node& n = g_.nodes[i];
    if (!follow_[i]->operands.empty()) return n.inputs[follow_[i]->operands[0]];
    return n.outputs[follow_[i]->results[0]];
  }

  int64_t bytes(ValueId v) const { return value_bytes(g_, v, batch_); }

  // Modelled microseconds of the region's nodes with its activations in `layout`, plus the
  // conversions at its edges. Infinite where the target has no kernels for the layout.
  double cost(const Region& reg, ir::Layout layout) const {
    if (!supports_activation_layout(t_, layout)) return std::numeric_limits<double>::infinity();
    double us = 0;  // the region's nodes
    for (int i : reg.nodes) {
      const ir::Node& n = g_.nodes[static_cast<size_t>(i)];
      int64_t moved = 0;
      for (ValueId v : n.inputs) moved += bytes(v);
      for (ValueId v : n.outputs) moved += bytes(v);
      us += transfer_us(t_, moved);
      const auto shape = [&](ValueId v) { return g_.value(v).type.shape; };
      if (layout != ir::Layout::row_major && n.op.rfind("conv2d", 0) == 0 &&
          ir::attr_int(ir::complete_attrs(*ir::find_op(n.op), n.attrs), "groups") != 1)
        return std::numeric_limits<double>::infinity();  // grouped convolutions are lowered NCHW only
      if (n.op == "conv2d")
        us += conv_layout_penalty_us(t_, layout, shape(n.inputs[0])[1], shape(n.outputs[0])[1],
                                     bytes(n.inputs[0]) + bytes(n.outputs[0]));
      else if (n.op == "conv2d_backward_input")
        us += conv_layout_penalty_us(t_, layout, shape(n.outputs[0])[1], shape(n.inputs[0])[1],
                                     bytes(n.inputs[0]) + bytes(n.outputs[0]));
      else if (n.op == "conv2d_backward_weight")
        us += conv_layout_penalty_us(t_, layout, shape(n.inputs[1])[1], shape(n.inputs[0])[1],
                                     bytes(n.inputs[0]) + bytes(n.inputs[1]));
    }
    if (layout == ir::Layout::nhwc) us *= t_.nhwc_kernel_factor;  // as measured on the target's kernels
    if (layout != ir::Layout::row_major) {
      for (ValueId v : reg.sources) us += conversion_us(t_, bytes(v));
      for (ValueId v : reg.sinks) us += conversion_us(t_, bytes(v));
    }
    return us;
  }

  // Gives every value of a chosen region its layout and inserts the conversions.
  void rewrite(const std::map<ValueId, ir::Layout>& chosen) {
    auto layout_of = [&](ValueId v) -> std::optional<ir::Layout> {
      if (!in_region_.count(v)) return std::nullopt;
      auto it = chosen.find(find(v));
      if (it == chosen.end()) return std::nullopt;
      return it->second;
    };
    std::map<ValueId, ValueId> stored;   // row-major source -> its converted copy
    std::map<ValueId, ValueId> logical;  // value made in the layout -> its row-major copy
    std::vector<ir::Node> out;
    auto convert = [&](ValueId v, ir::Layout to) {
      ir::TensorType t = g_.value(v).type;
      t.layout = to;
      std::string base = g_.value(v).name + "." + ir::layout_name(to);
      ValueId c = new_value(g_, base, t);
      std::vector<int64_t> id(static_cast<size_t>(t.rank()));
      std::iota(id.begin(), id.end(), 0);
      out.push_back(make_node("transpose", {v}, {{"perm", id}, {"layout", std::string(ir::layout_name(to))}}, {c}, {}));
      ++r_.conversions;
      return c;
    };
    // Region sources that are graph inputs or params are converted first.
    for (auto& [root, reg] : regions_) {
      auto it = chosen.find(root);
      if (it == chosen.end()) continue;
      for (ValueId v : reg.sources) {
        const ir::Value& val = g_.value(v);
        if (val.kind != ir::ValueKind::node) stored[v] = convert(v, it->second);
      }
    }
    std::set<ValueId> all_sinks;
    for (auto& [root, reg] : regions_)
      if (chosen.count(root)) all_sinks.insert(reg.sinks.begin(), reg.sinks.end());
    std::vector<ir::Node> nodes = std::move(g_.nodes);
    for (size_t i = 0; i < nodes.size(); ++i) {
      ir::Node n = std::move(nodes[i]);
      std::set<size_t> fops, fres;
      if (follow_[i]) {
        fops.insert(follow_[i]->operands.begin(), follow_[i]->operands.end());
        fres.insert(follow_[i]->results.begin(), follow_[i]->results.end());
      }
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        ValueId v = n.inputs[k];
        if (!layout_of(v)) continue;
        if (fops.count(k) && stored.count(v)) n.inputs[k] = stored[v];
        if (!fops.count(k) && logical.count(v)) n.inputs[k] = logical[v];
      }
      std::vector<ValueId> outs = n.outputs;
      out.push_back(std::move(n));
      for (size_t k = 0; k < outs.size(); ++k) {
        ValueId r = outs[k];
        std::optional<ir::Layout> l = layout_of(r);
        if (!l) continue;
        if (fres.count(k)) {
          g_.value(r).type.layout = *l;
          if (all_sinks.count(r)) logical[r] = convert(r, ir::Layout::row_major);
        } else {
          stored[r] = convert(r, *l);
        }
      }
    }
    g_.nodes = std::move(out);
    for (ValueId& v : g_.outputs)
      if (logical.count(v)) v = logical[v];
    for (auto& [name, v] : g_.updates)
      if (logical.count(v)) v = logical[v];
  }

  const ir::Module& m_;
  ir::Graph& g_;
  const Target& t_;
  GraphLayoutReport& r_;
  LayoutChoice choice_;
  int64_t batch_ = 1;
  std::vector<ValueId> parent_;
  std::vector<std::optional<Follow>> follow_;
  std::set<ValueId> in_region_, made_in_layout_;
  std::map<ValueId, Region> regions_;  // by union-find root
};

int count_transposes(const ir::Graph& g) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) { return n.op == "transpose"; }));
}

}  // namespace

const char* layout_choice_name(LayoutChoice c) {
  switch (c) {
    case LayoutChoice::automatic: return "auto";
    case LayoutChoice::nchw: return "nchw";
    case LayoutChoice::nhwc: return "nhwc";
  }
  DNNC_UNREACHABLE("layout choice");
}

LayoutChoice parse_layout_choice(const std::string& name) {
  for (LayoutChoice c : {LayoutChoice::automatic, LayoutChoice::nchw, LayoutChoice::nhwc})
    if (name == layout_choice_name(c)) return c;
  throw std::invalid_argument(fmt::format("unknown layout '{}'; expected auto, nchw or nhwc", name));
}

bool select_layout(ir::Module& m, const Target& target, LayoutReport* report, LayoutChoice choice) {
  LayoutReport local;
  LayoutReport& rep = report ? *report : local;
  rep.target = target.name;
  rep.choice = layout_choice_name(choice);
  rep.graphs.clear();
  bool changed = false;
  for (ir::Graph& g : m.graphs) {
    if (!g.groups.empty()) continue;  // already fused: layouts are fixed
    GraphLayoutReport r;
    r.graph = g.name;
    r.transposes_before = count_transposes(g);
    bool c = TransposeFolder(g, target, r).run();
    c |= LayoutSelector(m, g, target, r, choice).run();
    r.transposes_after = count_transposes(g);
    if (c) ir::verify_graph(g, m);  // a wrong follow table would show here, not in a kernel
    changed |= c;
    rep.graphs.push_back(std::move(r));
  }
  return changed;
}

}  // namespace dnnc::passes
