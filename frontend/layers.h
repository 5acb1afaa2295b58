// Layers of the .dnn language (linear, conv2d, batchnorm2d, layernorm): declaring one creates
// its parameters with PyTorch's state_dict names, shapes, order and default init; applying
// one adds its op to the forward graph.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/const_eval.h"
#include "frontend/emit.h"
#include "ir/graph.h"

namespace dnnc::frontend {

struct Layer {
  std::string name;                 // the user's name: params are `name.weight`, ...
  std::string kind;                 // the constructor: "linear", "conv2d", "batchnorm2d", "layernorm"
  ir::SourceLoc loc;                // the name in the declaration
  std::string size_arg;             // "in_features", "in_channels", "num_features", "normalized_shape"
  ir::SourceLoc size_loc;           // start of that argument's expression
  std::vector<int64_t> in_size;     // its value (normalized_shape may have several dims)
  std::vector<std::string> params;  // param names in the op's operand order after x
  ir::Attrs attrs;                  // attributes of the op given in the declaration
  int applications = 0;
  ir::SourceLoc first_use;  // the first application's call
};

/// True for linear, conv2d, batchnorm2d, layernorm.
bool is_layer_constructor(const std::string& name);
const std::vector<std::string>& layer_constructor_names();

/// Declares layer `name` from constructor call `call`, appending its params to `m.params`.
/// Throws ir::CompileError at the argument at fault for arity/keyword errors, non-constant or
/// ill-typed arguments, sizes < 1 (padding < 0), groups not dividing the channels, and
/// parameter tensors whose element count overflows.
Layer declare_layer(const std::string& name, ir::SourceLoc name_loc, const ast::Expr& call, const ConstEval& ev,
                    ir::Module& m, const std::string& file);

/// Applies `layer` to `x` (lowered from `input`, located at `call_loc`) and returns the
/// result. A size mismatch between the declaration and the input is reported at the
/// declaration's size argument ("layer 'fc' declares in_features 576, but its input
/// flatten(...) at 11:12 has 3600 features: expected 3600, found 576"); other shape errors
/// at `call_loc`. Batchnorm's new running statistics become `g.updates`; applying a
/// batchnorm layer twice is an error.
ir::ValueId apply_layer(Layer& layer, ir::ValueId x, const ast::Expr& input, ir::SourceLoc call_loc, ir::Graph& g,
                        ValueNamer& namer, const ir::Module& m, const std::string& result_name,
                        const std::string& file);

}  // namespace dnnc::frontend
