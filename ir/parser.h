// Parses the IR text form (docs/ir.md) back into a Module: the inverse of print(Module).
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::ir {

/// module ::= 'module' name '{' module_item* '}'   (full grammar in docs/ir.md)
/// Builds the Module that `text` describes; print(parse_module(print(m))) == print(m).
/// Throws CompileError(filename, line:col, "expected X, found Y") on malformed text, and also on
/// text that cannot name a graph: an undefined or redefined %value, an unknown @param, a duplicate
/// param/graph/input, a result-type count differing from the result count. It does not check op
/// names, attributes or shapes: run verify() on the result for that.
Module parse_module(const std::string& text, const std::string& filename);

}  // namespace dnnc::ir
