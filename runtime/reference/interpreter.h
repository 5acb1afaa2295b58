// The reference interpreter: runs an ir::Graph node by node with the reference kernels
// (the numerical oracle for every backend), and initialises a module's parameters.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace dnnc::runtime::reference {

/// Module params, buffers and optimizer state by name (PyTorch state_dict keys for weights).
struct ParamStore {
  std::map<std::string, Tensor> tensors;

  /// nullptr if absent.
  const Tensor* find(const std::string& name) const;
};

/// Every param of `m` initialised per its ir::InitSpec: "uniform" draws U[-bound, bound)
/// from a std::mt19937_64 seeded per param from (seed, name) (see docs/init.md), "zeros" and
/// "ones" fill. f32 params get f32 tensors, i64 params i64 tensors. Deterministic for a
/// given seed; a param's values do not depend on the other params. Throws
/// std::runtime_error naming the param if its shape has the batch dim or is negative, its
/// init kind is unknown, its bound is negative, or "uniform" is asked of an i64 param.
ParamStore init_params(const ir::Module& m, uint64_t seed);

/// The seed of param `name`'s generator: splitmix64(seed + fnv1a64(name)) (docs/init.md).
uint64_t param_seed(uint64_t seed, const std::string& name);

/// Every value of a run by name: graph inputs, the params read (their values before the
/// updates), and every node output.
using ValueTrace = std::map<std::string, Tensor>;
/// Like ValueTrace, but each value as stored: in its type's layout, with the storage shape.
using StorageTrace = std::map<std::string, Tensor>;

struct RefOptions {
  /// Sums and dot products accumulate in double and round once (storage stays f32): each op is
  /// then exact to fp32 up to its last rounding, the oracle the backends are held to. false:
  /// plain fp32 running sums, for showing what that costs.
  bool fp64_accumulate = true;
  StorageTrace* storage_trace = nullptr;  // with `trace`: also every value as stored
};

/// Runs `g` (a graph of `m`) on `inputs` (by input name) and returns the graph's outputs in
/// order; then writes each of g.updates into `params` (every node read the old values).
/// The batch size is taken from the first input whose type has the batch dim, and every
/// other batch-carrying input must agree. If `trace` is given it receives every value (in
/// logical order). Inputs, params, outputs and updates are in logical (PyTorch) order; inside
/// the run a value typed nhwc or col_major is stored in that order.
/// Throws std::runtime_error: an input missing or of the wrong dtype/shape (naming the input,
/// expected vs found), a param missing or mis-shaped (naming it), a layout that does not fit
/// a value's rank, an op without a registry entry or a reference kernel, or a kernel error
/// (e.g. a label out of range), each prefixed with the graph and the failing node.
std::vector<Tensor> run_reference(const ir::Module& m, const ir::Graph& g, const std::map<std::string, Tensor>& inputs,
                                  ParamStore& params, const RefOptions& opts = {}, ValueTrace* trace = nullptr);

}  // namespace dnnc::runtime::reference

namespace dnnc::runtime {
// The param store is shared by every backend, the trainer and checkpoints (also declared in
// runtime/backend.h).
using reference::ParamStore;
}  // namespace dnnc::runtime
