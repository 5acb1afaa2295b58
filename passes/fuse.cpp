// Pass `fuse`: groups nodes into kernels. Patterns, tried in this order:
//   multi_tensor_update  every optimizer update (+ the step counter) of the graph as one kernel
//   softmax_xent         cross_entropy + its backward (+ the constant dloss and the bias-grad sums)
//   <head>_epilogue      a GEMM / convolution / pooling backward / batchnorm followed by a chain
//                        of elementwise ops on its result (then a max pool after a conv2d or
//                        batchnorm2d chain), then bias-grad reductions of the chain (or, after
//                        a max-pool backward's chain, the batchnorm backward of its end)
//   elementwise          a chain of elementwise/broadcast ops (+ reductions of the chain's end)
// A group's nodes are made contiguous; a group whose contraction would create a cycle is dropped.
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "ir/fusion.h"
#include "ir/op_registry.h"
#include "passes/graph_analysis.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

bool is_pointwise(const ir::Node& n) {
  const ir::OpDef* d = ir::find_op(n.op);
  return d && (d->fusion == ir::FusionClass::elementwise || d->fusion == ir::FusionClass::broadcast) &&
         n.op != "fill" && n.op != "dropout";
}

bool is_head(const std::string& op) {
  const auto& heads = ir::fusion::epilogue_heads();
  return std::find(heads.begin(), heads.end(), op) != heads.end();
}

bool is_bias_grad_sum(const ir::Node& n, const ir::Graph& g) {
  if (n.op != "reduce_sum") return false;
  const auto& axes = ir::attr_ints(n.attrs, "axes");
  size_t rank = g.value(n.inputs[0]).type.shape.size();
  if (rank == 2) return axes == std::vector<int64_t>{0};
  if (rank == 4) return axes == std::vector<int64_t>{0, 2, 3};
  return false;
}

struct Grouping {
  std::vector<int> gid;            // per node, -1 if none
  std::vector<std::string> role;   // per node: its role in its group (ir/fusion.h)
  std::vector<std::string> kinds;
  std::vector<int> swaps;          // commutative nodes whose chain value is operand 1: swapped
};

class Fuser {
 public:
  explicit Fuser(const ir::Graph& g) : g_(g), users_(value_users(g)), esc_(escapes(g)) {
    grouping_.gid.assign(g.nodes.size(), -1);
    grouping_.role.assign(g.nodes.size(), "");
  }

  Grouping run() {
    group_updates();
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (g_.nodes[i].op == "cross_entropy") group_softmax_xent(static_cast<int>(i));
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (free(static_cast<int>(i)) && is_head(g_.nodes[i].op))
        group_chain(static_cast<int>(i), ir::fusion::epilogue_kind(g_.nodes[i].op));
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (free(static_cast<int>(i)) && is_pointwise(g_.nodes[i])) group_chain(static_cast<int>(i), ir::fusion::kElementwise);
    return grouping_;
  }

 private:
  bool free(int n) const { return grouping_.gid[static_cast<size_t>(n)] < 0; }

  // A group of `nodes`, each with its role (same order).
  void add_group(const std::vector<int>& nodes, const std::vector<std::string>& roles, const std::string& kind) {
    if (nodes.size() < 2) return;
    int id = static_cast<int>(grouping_.kinds.size());
    grouping_.kinds.push_back(kind);
    for (size_t i = 0; i < nodes.size(); ++i) {
      grouping_.gid[static_cast<size_t>(nodes[i])] = id;
      grouping_.role[static_cast<size_t>(nodes[i])] = roles[i];
    }
  }

  void group_updates() {
    std::vector<int> nodes;
    std::vector<std::string> roles;
    std::set<ir::ValueId> steps;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const ir::Node& n = g_.nodes[i];
      if (n.op != "sgd_update" && n.op != "adam_update") continue;
      nodes.push_back(static_cast<int>(i));
      roles.push_back(ir::fusion::kUpdate);
      if (n.op == "adam_update") steps.insert(n.inputs[4]);
      if (n.op == "sgd_update" && n.inputs.size() >= 4) steps.insert(n.inputs[3]);
    }
    if (nodes.empty()) return;
    for (ir::ValueId s : steps) {  // the step counter's increment, if only updates read it
      int p = g_.producer(s);
      if (p < 0) continue;
      bool only_updates = true;
      for (int u : users_[static_cast<size_t>(s)])
        only_updates &= g_.nodes[static_cast<size_t>(u)].op == "sgd_update" || g_.nodes[static_cast<size_t>(u)].op == "adam_update";
      if (only_updates) {
        nodes.push_back(p);
        roles.push_back(ir::fusion::kStep);
      }
    }
    add_group(nodes, roles, ir::fusion::kMultiTensorUpdate);
  }

  void group_softmax_xent(int fwd) {
    const ir::Node& c = g_.nodes[static_cast<size_t>(fwd)];
    if (!free(fwd)) return;
    std::vector<int> nodes{fwd};
    std::vector<std::string> roles{ir::fusion::kLoss};
    for (int u : users_[static_cast<size_t>(c.inputs[0])]) {
      const ir::Node& b = g_.nodes[static_cast<size_t>(u)];
      if (b.op != "cross_entropy_backward" || !free(u) || b.inputs[1] != c.inputs[0] || b.inputs[2] != c.inputs[1])
        continue;
      nodes.push_back(u);
      roles.push_back(ir::fusion::kLossGrad);
      int f = g_.producer(b.inputs[0]);  // the constant dloss = 1
      if (f >= 0 && g_.nodes[static_cast<size_t>(f)].op == "fill" && users_[static_cast<size_t>(b.inputs[0])].size() == 1 &&
          !esc_[static_cast<size_t>(b.inputs[0])]) {
        nodes.push_back(f);
        roles.push_back(ir::fusion::kDloss);
      }
      absorb_reductions(b.outputs[0], nodes, roles);
    }
    add_group(nodes, roles, ir::fusion::kSoftmaxXent);
  }

  void absorb_reductions(ir::ValueId v, std::vector<int>& nodes, std::vector<std::string>& roles) {
    for (int u : users_[static_cast<size_t>(v)])
      if (free(u) && is_bias_grad_sum(g_.nodes[static_cast<size_t>(u)], g_) &&
          std::find(nodes.begin(), nodes.end(), u) == nodes.end()) {
        nodes.push_back(u);
        roles.push_back(ir::fusion::kBiasGrad);
      }
  }

  // The head, then while its result has exactly one pointwise user reading it as operand 0 (or
  // as operand 1 of a commutative add / mul, whose operands are then swapped), that user; then
  // a max pool after a conv or batchnorm chain; then bias-grad sums of the end.
  void group_chain(int head, const std::string& kind) {
    std::vector<int> nodes{head};
    std::vector<std::string> roles{kind == ir::fusion::kElementwise ? ir::fusion::kChain : ir::fusion::kHead};
    std::vector<int> swaps;
    ir::ValueId cur = g_.nodes[static_cast<size_t>(head)].outputs[0];
    const std::string& head_op = g_.nodes[static_cast<size_t>(head)].op;
    const bool pools = head_op == "conv2d" || head_op == "batchnorm2d";
    for (;;) {
      int next = -1, candidates = 0;
      bool swap = false;
      for (int u : users_[static_cast<size_t>(cur)]) {
        const ir::Node& n = g_.nodes[static_cast<size_t>(u)];
        const bool second = swappable(n, cur);
        bool ok = free(u) && (n.inputs[0] == cur || second) && n.outputs.size() == 1 &&
                  (is_pointwise(n) || (pools && n.op == "maxpool2d")) && operands_before(n, head, second);
        if (ok) {
          next = u;
          swap = second;
          ++candidates;
        }
      }
      if (candidates != 1) break;
      if (swap) swaps.push_back(next);
      nodes.push_back(next);
      const bool pool = g_.nodes[static_cast<size_t>(next)].op == "maxpool2d";
      roles.push_back(pool ? ir::fusion::kPool : ir::fusion::kChain);
      cur = g_.nodes[static_cast<size_t>(next)].outputs[0];
      if (pool) break;
    }
    if (head_op != "maxpool2d_backward" || !absorb_norm_grad(cur, nodes, roles)) absorb_reductions(cur, nodes, roles);
    if (nodes.size() >= 2) grouping_.swaps.insert(grouping_.swaps.end(), swaps.begin(), swaps.end());
    add_group(nodes, roles, kind);
  }

  // Whether n is a commutative binary op (add, mul) of two operands of one type that reads the
  // chain's value v as operand 1 only (`x + bn(conv(x))`): the chain may take it with its
  // operands swapped, which computes the same value bit for bit.
  bool swappable(const ir::Node& n, ir::ValueId v) const {
    return (n.op == "add" || n.op == "mul") && n.inputs.size() == 2 && n.inputs[1] == v && n.inputs[0] != v &&
           g_.value(n.inputs[0]).type == g_.value(n.inputs[1]).type;
  }

  // Whether every operand of n but the chain's (the first, or the second if `swapped`) is
  // computed before node `head` (or is an input or param): then it cannot depend on the group.
  // Without this a chain could take the residual add of a later block, whose contraction is a
  // cycle that drops the group (and, newest first, every group formed after it).
  bool operands_before(const ir::Node& n, int head, bool swapped) const {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (i != (swapped ? 1u : 0u) && g_.producer(n.inputs[i]) >= head) return false;
    return true;
  }

  // The batchnorm2d_backward whose dy is v (a max-pool backward chain's end): it then sums its
  // dy plane by plane in the pool backward's kernel.
  bool absorb_norm_grad(ir::ValueId v, std::vector<int>& nodes, std::vector<std::string>& roles) {
    for (int u : users_[static_cast<size_t>(v)]) {
      const ir::Node& n = g_.nodes[static_cast<size_t>(u)];
      if (free(u) && n.op == "batchnorm2d_backward" && n.inputs[0] == v) {
        nodes.push_back(u);
        roles.push_back(ir::fusion::kNormGrad);
        return true;
      }
    }
    return false;
  }

  const ir::Graph& g_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> esc_;
  Grouping grouping_;
};

// Orders nodes so that every group is contiguous (Kahn's algorithm over the contracted graph,
// earliest original node first). Returns false if the contraction has a cycle.
bool contiguous_order(const ir::Graph& g, const std::vector<int>& gid, std::vector<int>& order) {
  size_t n = g.nodes.size();
  // super-node of each node: its group (offset by n) or itself
  auto super = [&](size_t i) { return gid[i] >= 0 ? n + static_cast<size_t>(gid[i]) : i; };
  std::map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < n; ++i) members[super(i)].push_back(i);
  std::map<size_t, std::set<size_t>> succ;
  std::map<size_t, int> indeg;
  for (auto& [s, m] : members) indeg[s] = 0;
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId o : g.nodes[i].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(i);
  for (size_t i = 0; i < n; ++i)
    for (ir::ValueId in : g.nodes[i].inputs) {
      int p = producer[static_cast<size_t>(in)];
      if (p < 0) continue;
      size_t a = super(static_cast<size_t>(p)), b = super(i);
      if (a != b && succ[a].insert(b).second) ++indeg[b];
    }
  using Item = std::pair<size_t, size_t>;  // (first member index, super id)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (auto& [s, d] : indeg)
    if (d == 0) ready.push({members[s].front(), s});
  order.clear();
  while (!ready.empty()) {
    auto [first, s] = ready.top();
    ready.pop();
    for (size_t i : members[s]) order.push_back(static_cast<int>(i));
    for (size_t t : succ[s])
      if (--indeg[t] == 0) ready.push({members[t].front(), t});
  }
  return order.size() == n;
}

bool fuse_graph(ir::Graph& g) {
  if (!g.groups.empty()) return false;
  Grouping grouping = Fuser(g).run();
  std::vector<int> order;
  // Drop groups, newest first, until the contracted graph is acyclic.
  while (!contiguous_order(g, grouping.gid, order)) {
    int last = static_cast<int>(grouping.kinds.size()) - 1;
    for (int& id : grouping.gid)
      if (id == last) id = -1;
    grouping.kinds.pop_back();
  }
  if (grouping.kinds.empty()) return false;
  for (int i : grouping.swaps)
    if (grouping.gid[static_cast<size_t>(i)] >= 0) {
      auto& in = g.nodes[static_cast<size_t>(i)].inputs;
      std::swap(in[0], in[1]);
    }
  // Renumber groups in order of appearance.
  std::map<int, int> renumber;
  std::vector<ir::Node> nodes;
  for (int i : order) {
    ir::Node n = g.nodes[static_cast<size_t>(i)];
    int old = grouping.gid[static_cast<size_t>(i)];
    if (old >= 0) {
      auto [it, fresh] = renumber.emplace(old, static_cast<int>(renumber.size()));
      if (fresh) g.groups.push_back(ir::FusionGroup{grouping.kinds[static_cast<size_t>(old)]});
      n.group = it->second;
      n.role = grouping.role[static_cast<size_t>(i)];
    }
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  return true;
}

}  // namespace

bool fuse(ir::Module& m) {
  bool changed = false;
  for (auto& g : m.graphs) changed |= fuse_graph(g);
  return changed;
}

}  // namespace dnnc::passes
