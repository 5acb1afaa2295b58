// Pass `derive-infer`: graph "infer" = the forward pass up to the prediction, in eval mode
// (batchnorm uses running statistics, dropout is the identity), with no loss and no updates.
#include <map>

#include "ir/op_registry.h"
#include "passes/passes.h"

namespace dnnc::passes {

bool derive_infer(ir::Module& m) {
  const ir::Graph* fwd = m.graph("forward");
  if (!fwd || m.graph("infer")) return false;
  if (fwd->outputs.size() < 2)
    throw ir::CompileError(m.source_file, {}, "derive-infer: the forward graph has no prediction output");

  // Nodes the prediction depends on.
  std::vector<bool> live_value(fwd->values.size(), false);
  std::vector<bool> live_node(fwd->nodes.size(), false);
  live_value[static_cast<size_t>(fwd->outputs[1])] = true;
  for (size_t i = fwd->nodes.size(); i-- > 0;) {
    const ir::Node& n = fwd->nodes[i];
    bool live = false;
    for (ir::ValueId o : n.outputs) live |= live_value[static_cast<size_t>(o)];
    if (!live) continue;
    live_node[i] = true;
    size_t used_inputs = n.op == "dropout" ? 1 : n.inputs.size();  // eval dropout ignores its step
    for (size_t k = 0; k < used_inputs; ++k) live_value[static_cast<size_t>(n.inputs[k])] = true;
  }

  ir::Graph g;
  g.name = "infer";
  std::map<ir::ValueId, ir::ValueId> map;
  for (ir::ValueId in : fwd->inputs)
    if (live_value[static_cast<size_t>(in)]) map[in] = g.add_input(fwd->value(in).name, fwd->value(in).type);
  auto get = [&](ir::ValueId v) {
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    const ir::Value& val = fwd->value(v);
    ir::ValueId nv = g.param(val.name, val.type);  // only params are left unmapped
    map[v] = nv;
    return nv;
  };
  for (size_t i = 0; i < fwd->nodes.size(); ++i) {
    if (!live_node[i]) continue;
    const ir::Node& n = fwd->nodes[i];
    if (n.op == "dropout") {
      map[n.outputs[0]] = get(n.inputs[0]);
      continue;
    }
    std::vector<ir::ValueId> ins;
    for (ir::ValueId v : n.inputs) ins.push_back(get(v));
    if (n.op == "batchnorm2d") {
      ir::Attrs a{{"eps", n.attrs.at("eps")}};
      map[n.outputs[0]] = g.add_node("batchnorm2d_infer", ins, a, {fwd->value(n.outputs[0]).type}, n.loc,
                                     {fwd->value(n.outputs[0]).name})[0];
      continue;
    }
    std::vector<ir::TensorType> types;
    std::vector<std::string> names;
    for (ir::ValueId o : n.outputs) {
      types.push_back(fwd->value(o).type);
      names.push_back(fwd->value(o).name);
    }
    auto outs = g.add_node(n.op, ins, n.attrs, types, n.loc, names);
    for (size_t k = 0; k < outs.size(); ++k) map[n.outputs[k]] = outs[k];
  }
  g.outputs = {get(fwd->outputs[1])};
  m.graphs.push_back(std::move(g));
  return true;
}

}  // namespace dnnc::passes
