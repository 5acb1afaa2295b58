// Pass `autodiff`: reverse-mode differentiation of the forward graph into graph "train_step".
#include <fmt/format.h>

#include <map>

#include "passes/grad_builder.h"
#include "passes/grad_rules.h"
#include "passes/passes.h"

namespace dnnc::passes {

bool autodiff(ir::Module& m) {
  const ir::Graph* fwd = m.graph("forward");
  if (!fwd) throw ir::CompileError(m.source_file, {}, "autodiff: the module has no forward graph");
  if (m.graph("train_step")) return false;  // already derived
  if (fwd->outputs.empty()) throw ir::CompileError(m.source_file, {}, "autodiff: the forward graph has no loss output");

  ir::Graph g = *fwd;  // the train step starts as a copy of the forward pass
  g.name = "train_step";
  ir::ValueId loss = g.outputs[0];
  if (g.value(loss).type.dtype != ir::DType::f32 || !g.value(loss).type.shape.empty())
    throw ir::CompileError(m.source_file, {}, fmt::format("autodiff: the loss must be an f32 scalar, found {}",
                                                          ir::to_string(g.value(loss).type, m.batch_symbol)));

  // Which values depend on a trainable param (and so need a gradient).
  std::vector<bool> requires_grad(g.values.size(), false);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].kind != ir::ValueKind::param) continue;
    const ir::Param* p = m.param(g.values[v].name);
    requires_grad[v] = p && p->role == ir::ParamRole::weight;
  }
  size_t forward_nodes = g.nodes.size();
  for (size_t i = 0; i < forward_nodes; ++i) {
    bool any = false;
    for (ir::ValueId in : g.nodes[i].inputs) any |= requires_grad[static_cast<size_t>(in)];
    for (ir::ValueId out : g.nodes[i].outputs) requires_grad[static_cast<size_t>(out)] = any;
  }
  if (!requires_grad[static_cast<size_t>(loss)])
    throw ir::CompileError(m.source_file, {}, "autodiff: the loss does not depend on any trainable parameter");

  GradBuilder b(g, m);
  std::map<ir::ValueId, ir::ValueId> grad;  // value -> its accumulated gradient
  auto accumulate = [&](ir::ValueId v, ir::ValueId d) {
    auto it = grad.find(v);
    if (it == grad.end()) {
      grad[v] = d;
      return;
    }
    it->second = b.emit1("add", {it->second, d}, {}, "d" + g.value(v).name);  // fan-out: sum
  };
  b.set_loc(g.nodes.empty() ? ir::SourceLoc{} : g.nodes.back().loc);
  grad[loss] = b.emit1("fill", {}, {{"value", 1.0}, {"shape", std::vector<int64_t>{}}}, "d" + g.value(loss).name);

  for (size_t i = forward_nodes; i-- > 0;) {
    const ir::Node node = g.nodes[i];  // copy: emitting appends to g.nodes
    std::vector<ir::ValueId> douts;
    bool flows = false;
    for (ir::ValueId out : node.outputs) {
      auto it = grad.find(out);
      douts.push_back(it == grad.end() ? ir::kNoValue : it->second);
      flows |= it != grad.end();
    }
    if (!flows) continue;
    std::vector<bool> needs;
    bool any_need = false;
    for (ir::ValueId in : node.inputs) {
      needs.push_back(requires_grad[static_cast<size_t>(in)]);
      any_need |= needs.back();
    }
    if (!any_need) continue;
    const GradRule* rule = find_grad_rule(node.op);
    if (!rule) b.fail(node.loc, fmt::format("autodiff: op '{}' has no gradient rule", node.op));
    if (douts[0] == ir::kNoValue)
      b.fail(node.loc, fmt::format("autodiff: gradient reaches only a secondary result of '{}'", node.op));
    b.set_loc(node.loc);
    std::vector<ir::ValueId> dins = (*rule)(b, node, douts, needs);
    for (size_t k = 0; k < node.inputs.size(); ++k)
      if (needs[k] && dins[k] != ir::kNoValue) accumulate(node.inputs[k], dins[k]);
  }

  // Outputs: loss, prediction, then the gradient of each trainable param in module order.
  std::vector<ir::ValueId> outputs(g.outputs.begin(), g.outputs.begin() + std::min<size_t>(2, g.outputs.size()));
  for (const ir::Param& p : m.params) {
    if (p.role != ir::ParamRole::weight) continue;
    ir::ValueId pv = g.find_value(p.name);
    if (pv == ir::kNoValue || g.value(pv).kind != ir::ValueKind::param) continue;
    auto it = grad.find(pv);
    if (it == grad.end()) continue;  // unused param: no gradient, no update (as PyTorch's grad None)
    ir::ValueId d = it->second;
    // The optimizer finds gradients by their name `<param>.grad`. A gradient value that already
    // carries another name that matters (shared by two params, or a forward output) gets an
    // exact copy (x * 1) under its own name.
    std::string name = p.name + ".grad";
    bool taken = g.value(d).kind != ir::ValueKind::node || g.value(d).name.ends_with(".grad");
    for (ir::ValueId o : outputs) taken |= o == d;
    if (taken) {
      d = b.emit1("mul_scalar", {d}, {{"value", 1.0}}, name);
    } else {
      g.value(d).name = g.fresh_name(name);
    }
    outputs.push_back(d);
  }
  g.outputs = outputs;
  m.graphs.push_back(std::move(g));
  return true;
}

}  // namespace dnnc::passes
