// One gradient rule per differentiable op, looked up by op name (used by pass `autodiff`).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/grad_builder.h"

namespace dnnc::passes {

/// Given the node, the gradient of each of its outputs (kNoValue where none flows) and which
/// inputs need a gradient, emits backward nodes and returns one gradient per input
/// (kNoValue where not needed or not differentiable).
using GradRule = std::function<std::vector<ir::ValueId>(GradBuilder&, const ir::Node&,
                                                        const std::vector<ir::ValueId>& douts,
                                                        const std::vector<bool>& needs)>;

/// nullptr if the op has no gradient rule (autodiff then reports it at the node).
const GradRule* find_grad_rule(const std::string& op);

/// Ops with a rule, for the completeness test against the registry.
std::vector<std::string> ops_with_grad_rules();

}  // namespace dnnc::passes
