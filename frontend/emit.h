// Adds a typed node to the forward graph through the op registry (the one place shape rules
// live) and turns the registry's ShapeError into a located CompileError.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dnnc::frontend {

struct TypedNode {
  ir::Attrs attrs;  // completed with the registry's defaults
  std::vector<ir::TensorType> outputs;
};

/// Completes `attrs` and infers the output types of `op`. Throws ir::ShapeError (from the
/// registry) on a mismatch; asserts that `op` is registered.
TypedNode type_node(const std::string& op, const std::vector<ir::TensorType>& inputs, const ir::Attrs& attrs);

/// Names of node outputs: the user's name for output 0 and name + suffix for the others, or
/// fresh numbers "0", "1", ... in creation order for unnamed values (what
/// Graph::fresh_name("") gives, without its search over every number and value).
class ValueNamer {
 public:
  /// `count` names; suffixes[i - 1] names output i (missing ones: ".i").
  std::vector<std::string> names(const std::string& name, size_t count, const std::vector<std::string>& suffixes = {});

 private:
  int64_t next_ = 0;
};

/// type_node + Graph::add_node with outputs named by `namer` from `name` and `suffixes`.
/// Throws ir::CompileError(file, loc, <registry message>) on a ShapeError.
std::vector<ir::ValueId> emit_node(ir::Graph& g, ValueNamer& namer, const std::string& op,
                                   const std::vector<ir::ValueId>& inputs, const ir::Attrs& attrs, ir::SourceLoc loc,
                                   const std::string& name, const std::vector<std::string>& suffixes,
                                   const std::string& file);

/// Adds a node whose types were already inferred by type_node.
std::vector<ir::ValueId> add_typed(ir::Graph& g, ValueNamer& namer, const std::string& op,
                                   const std::vector<ir::ValueId>& inputs, TypedNode typed, ir::SourceLoc loc,
                                   const std::string& name, const std::vector<std::string>& suffixes);

/// Input types of `ids` in `g`.
std::vector<ir::TensorType> types_of(const ir::Graph& g, const std::vector<ir::ValueId>& ids);

}  // namespace dnnc::frontend
