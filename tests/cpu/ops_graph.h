// One module whose graph "ops" holds small cases of every op family side by side (each case on
// its own inputs, every result a graph output), so one JIT compile covers every op.
#pragma once
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace dnnc::test {

struct OpsModule {
  ir::Module module;                                       // graph "ops"
  std::map<std::string, std::vector<std::string>> family;  // family -> its output value names
};

/// Builds the module (deterministic). Input naming conventions drive random_op_inputs.
OpsModule build_ops_module();

/// Seeded inputs for graph "ops": labels in [0, classes of their logits), values named `*.pos`
/// in [0.5, 1.5), the input "step" = `step`, everything else uniform in [-1, 1).
std::map<std::string, runtime::Tensor> random_op_inputs(const ir::Graph& g, std::mt19937& rng, float step);

}  // namespace dnnc::test
