// Adds a typed node to the forward graph through the op registry (the one place shape rules
// live) and turns the registry's ShapeError into a located CompileError.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dnnc::frontend {

struct TypedNode {
  ir::Attrs attrs;                       // completed with the registry's defaults
  std::vector<ir::TensorType> outputs;
};

/// Completes `attrs` and infers the output types of `op`. Throws ir::ShapeError (from the
/// registry) on a mismatch; asserts that `op` is registered.
TypedNode type_node(const std::string& op, const std::vector<ir::TensorType>& inputs, const ir::Attrs& attrs);

/// type_node + Graph::add_node; output i is named names[i] (fresh numbers when empty).
/// Throws ir::CompileError(file, loc, <registry message>) on a ShapeError.
std::vector<ir::ValueId> emit_node(ir::Graph& g, const std::string& op, const std::vector<ir::ValueId>& inputs,
                                   const ir::Attrs& attrs, ir::SourceLoc loc, const std::vector<std::string>& names,
                                   const std::string& file);

/// Adds a node whose types were already inferred by type_node.
std::vector<ir::ValueId> add_typed(ir::Graph& g, const std::string& op, const std::vector<ir::ValueId>& inputs,
                                   TypedNode typed, ir::SourceLoc loc, const std::vector<std::string>& names);

/// Input types of `ids` in `g`.
std::vector<ir::TensorType> types_of(const ir::Graph& g, const std::vector<ir::ValueId>& ids);

}  // namespace dnnc::frontend
