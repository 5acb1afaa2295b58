// Graph construction helpers and module lookups.
#include "ir/graph.h"

#include "ir/check.h"

namespace dnnc::ir {

ValueId Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<ValueId>(i);
  return kNoValue;
}

std::string Graph::fresh_name(const std::string& base) {
  if (!base.empty() && find_value(base) == kNoValue) return base;
  for (int i = base.empty() ? 0 : 1;; ++i) {
    std::string n = base.empty() ? std::to_string(i) : base + "." + std::to_string(i);
    if (find_value(n) == kNoValue) return n;
  }
}

ValueId Graph::add_input(const std::string& name, const TensorType& type) {
  DNNC_CHECK(find_value(name) == kNoValue, "duplicate input name");
  values.push_back(Value{name, type, ValueKind::input});
  ValueId id = static_cast<ValueId>(values.size() - 1);
  inputs.push_back(id);
  return id;
}

ValueId Graph::param(const std::string& name, const TensorType& type) {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].kind == ValueKind::param && values[i].name == name) return static_cast<ValueId>(i);
  values.push_back(Value{name, type, ValueKind::param});
  return static_cast<ValueId>(values.size() - 1);
}

std::vector<ValueId> Graph::add_node(const std::string& op, std::vector<ValueId> ins, Attrs attrs,
                                     const std::vector<TensorType>& output_types, SourceLoc loc,
                                     const std::vector<std::string>& names) {
  Node n{op, std::move(ins), {}, std::move(attrs), loc};
  for (size_t i = 0; i < output_types.size(); ++i) {
    std::string name = fresh_name(i < names.size() ? names[i] : "");
    values.push_back(Value{name, output_types[i], ValueKind::node});
    n.outputs.push_back(static_cast<ValueId>(values.size() - 1));
  }
  std::vector<ValueId> outs = n.outputs;
  nodes.push_back(std::move(n));
  return outs;
}

int Graph::producer(ValueId id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId o : nodes[i].outputs)
      if (o == id) return static_cast<int>(i);
  return -1;
}

const char* param_role_name(ParamRole r) {
  switch (r) {
    case ParamRole::weight:
      return "weight";
    case ParamRole::buffer:
      return "buffer";
    case ParamRole::optimizer_state:
      return "optimizer_state";
  }
  return "?";
}

Graph* Module::graph(const std::string& n) {
  for (auto& g : graphs)
    if (g.name == n) return &g;
  return nullptr;
}
const Graph* Module::graph(const std::string& n) const {
  for (const auto& g : graphs)
    if (g.name == n) return &g;
  return nullptr;
}
Param* Module::param(const std::string& n) {
  for (auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}
const Param* Module::param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

}  // namespace dnnc::ir
