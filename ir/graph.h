// The IR proper: a Module holds the parameter table, the train config and named SSA Graphs.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/diagnostic.h"
#include "ir/types.h"

namespace dnnc::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

enum class ValueKind : uint8_t {
  input,  // a graph argument (a batch tensor), printed `%name`
  param,  // a module parameter / buffer / optimizer state read by the graph, printed `@name`
  node,   // a result of a node, printed `%name`
};

struct Value {
  std::string name;  // unique within the graph (params: the param's name)
  TensorType type;
  ValueKind kind = ValueKind::node;
};

struct Node {
  std::string op;  // an OpDef name from the registry
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
  SourceLoc loc;  // where in the .dnn file this node came from (unknown for derived nodes)
  int32_t group = -1;  // index into Graph::groups when pass `fuse` put this node in a kernel
  std::string role;    // in a group: the node's role in its pattern (ir/fusion.h); else empty
};

/// A fusion group: nodes that codegen lowers as one unit by the lowering of their pattern (set
/// by pass `fuse`). The nodes of a group are contiguous in Graph::nodes, each with its role;
/// values produced and consumed only inside the group are never materialised in memory.
struct FusionGroup {
  std::string kind;  // the fusion pattern (ir/fusion.h): "linear_epilogue", "elementwise", ...
};

/// An SSA graph. `nodes` is always in a valid topological order; a value is defined once.
/// After the graph runs, each `updates` entry writes a value back into a module param
/// (optimizer steps, running statistics); until then every read of `@p` sees the old value.
struct Graph {
  std::string name;
  std::vector<Value> values;  // indexed by ValueId
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<std::pair<std::string, ValueId>> updates;  // param name <- value
  std::vector<FusionGroup> groups;  // see Node::group

  ValueId add_input(const std::string& name, const TensorType& type);
  /// Returns the value that reads module param `name`, creating it on first use.
  ValueId param(const std::string& name, const TensorType& type);
  /// Appends a node; creates one output value per type, named `names[i]` if given and
  /// otherwise with a fresh numeric name. Returns the output ids.
  std::vector<ValueId> add_node(const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
                                const std::vector<TensorType>& output_types, SourceLoc loc = {},
                                const std::vector<std::string>& names = {});
  /// A name not yet used by any value of this graph: `base` if free, else base.1, base.2, ...
  /// With an empty base, the next free number ("0", "1", ...).
  std::string fresh_name(const std::string& base = "");

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  ValueId find_value(const std::string& name) const;  // kNoValue if absent
  /// Index of the node defining `id`, or -1 for inputs and params. O(nodes).
  int producer(ValueId id) const;
};

enum class ParamRole : uint8_t {
  weight,           // trainable: gets a gradient and an optimizer update; in the state_dict
  buffer,           // not trained but in the state_dict (batchnorm running stats)
  optimizer_state,  // momentum buffers, Adam moments, step counters; saved only for --resume
};
const char* param_role_name(ParamRole r);

/// How a param is initialised; all draws are uniform(-bound, bound) unless `kind` says
/// otherwise ("zeros", "ones"). See docs/init.md for the PyTorch correspondence.
struct InitSpec {
  std::string kind = "zeros";  // "uniform" | "zeros" | "ones"
  double bound = 0.0;
};

struct Param {
  std::string name;  // PyTorch state_dict key, e.g. "fc1.weight"
  TensorType type;   // never has the batch dimension
  ParamRole role = ParamRole::weight;
  InitSpec init;
  SourceLoc loc;
};

struct DataConfig {
  std::string dataset;  // "mnist" | "fashion_mnist" | "cifar10" | "" (none given)
  std::vector<double> mean, std;  // per-channel normalisation, (x/255 - mean)/std
  int64_t crop_padding = 0;       // augment: random_crop(padding: P); 0: none
  double flip_p = 0;              // augment: random_horizontal_flip(p); 0: none
};

struct OptimizerConfig {
  std::string kind = "sgd";  // "sgd" | "adam" | "adamw"
  Attrs attrs;               // lr, momentum, dampening, nesterov, weight_decay, betas, eps
};

/// A learning-rate schedule (torch.optim.lr_scheduler semantics, docs/training.md): "step"
/// (step_size, gamma), "multistep" (milestones, gamma), "cosine" (t_max, eta_min), "linear"
/// (start_factor, end_factor, total_iters), all stepped at epoch ends; "one_cycle" (max_lr,
/// pct_start, anneal_strategy, div_factor, final_div_factor), stepped after every batch.
struct ScheduleConfig {
  std::string kind;  // "" (none: the optimizer's lr throughout) or one of the above
  Attrs attrs;
};

/// The train_step graph input that carries the step's learning rate (f32[]) when the train
/// config has a schedule; the update ops then read it in place of their `lr` attribute.
inline constexpr const char* kLrInput = "dnnc.lr";

struct TrainConfig {
  bool present = false;  // a `train` block was given
  DataConfig data;
  int64_t batch = 0;
  int64_t epochs = 0;
  int64_t seed = 0;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  double clip_grad_norm = 0;  // > 0: gradients scaled to this global L2 norm at most (clip_grad_norm_)
  SourceLoc loc;
};

struct Module {
  std::string name;
  std::string source_file;  // the .dnn path, for diagnostics
  std::string batch_symbol = "N";
  std::vector<Param> params;
  TrainConfig train;
  std::vector<Graph> graphs;  // "forward", later "train_step", "infer"

  Graph* graph(const std::string& name);  // nullptr if absent
  const Graph* graph(const std::string& name) const;
  Param* param(const std::string& name);  // nullptr if absent
  const Param* param(const std::string& name) const;
};

}  // namespace dnnc::ir
