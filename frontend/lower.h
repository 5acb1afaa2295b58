// Lowering of a parsed model block to the IR: params (PyTorch state_dict names and order)
// and the "forward" graph whose outputs are [loss, prediction].
#pragma once
#include <string>

#include "frontend/ast.h"
#include "ir/graph.h"

namespace dnnc::frontend {

/// Builds a Module holding the params and the "forward" graph of `f.model` (module.train is
/// left empty; see lower_train). Every node is typed by ir::infer_types and carries complete
/// attributes and the source location of its call. Throws ir::CompileError for every user
/// error (unknown/undefined names with suggestions, redefinitions, arity and argument
/// errors, bad dtypes or dims, shape mismatches, a missing or non-scalar loss, unused layers).
ir::Module lower_model(const ast::File& f, const std::string& file);

}  // namespace dnnc::frontend
