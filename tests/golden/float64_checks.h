// The float64 checks of tests/golden/float64/ (README.md "Float64 goldens"), for any backend:
// each op case's outputs and gradients within 2x PyTorch fp32's error against float64 (+1.2e-7),
// and the resnet_mnist trajectory's losses (1e-5) and state_dict (10x PyTorch's distance).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace dnnc::golden {

/// One compiled graph: inputs by name in, outputs out (params updated in the store it was made with).
using Runner = std::function<std::vector<runtime::Tensor>(const std::map<std::string, runtime::Tensor>&)>;
/// Compiles `graph` of a module for a backend, bound to `params` (which outlives the Runner).
using RunnerFactory =
    std::function<Runner(const ir::Module&, const std::string& graph, runtime::ParamStore& params, int64_t batch)>;

/// One op case file on `backend` (a name for messages).
void check_float64_op(const std::string& path, const std::string& backend, const RunnerFactory& make);
/// The trajectory file on `backend`.
void check_float64_trajectory(const std::string& path, const std::string& backend, const RunnerFactory& make);

/// Registers "float64 op <case> <backend>" and "float64 model <model> <backend>" for every file of
/// tests/golden/float64 (at static initialisation), with `tags` plus [op] or [trajectory]; cases
/// for which `skip` returns true are left out. A file that cannot be read gets a failing test.
void register_float64_tests(const std::string& backend, const std::string& tags, RunnerFactory make,
                            const std::function<bool(const std::string&)>& skip = {});

}  // namespace dnnc::golden
