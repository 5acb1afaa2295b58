// Recursive-descent parser of .dnn files (grammar in docs/dsl.md and on each parse function).
#pragma once
#include <string>

#include "frontend/ast.h"

namespace dnnc::frontend {

/// Deepest expression nesting accepted (parentheses, calls, unary minus and operator chains
/// all count); deeper input is a CompileError, so no input can exhaust the stack.
inline constexpr int kMaxExprDepth = 256;

/// Lexes and parses a whole file. Throws ir::CompileError at the first lexical or syntax error
/// ("expected X, found Y"), never crashes or loops on any input.
ast::File parse(const std::string& source, const std::string& file);

/// Indented, one-node-per-line text of the AST (`dnnc ... --emit=ast`). Never fails.
std::string dump_ast(const ast::File& f);

}  // namespace dnnc::frontend
