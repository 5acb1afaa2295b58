// Binds the arguments of a call (positional and `key: value`) to a signature's parameters.
#pragma once
#include <string>
#include <vector>

#include "frontend/ast.h"

namespace dnnc::frontend {

struct Signature {
  std::string callee;               // "linear", "layer 'fc'", "optimizer sgd": names it in messages
  std::vector<std::string> params;  // in positional order
  size_t required = 0;              // the first `required` params must be given
  bool varargs = false;             // extra positionals are collected in Bound::rest
};

struct Bound {
  std::vector<const ast::Expr*> slots;  // one per param; nullptr when not given
  std::vector<const ast::Expr*> rest;   // extra positionals (varargs only)
};

/// Matches `call`'s arguments to `sig`. Throws ir::CompileError for: a positional argument
/// after a keyword one, too many positionals, an unknown keyword (suggesting the closest),
/// a parameter given twice, and a missing required parameter (at the call).
Bound bind_args(const ast::Expr& call, const Signature& sig, const std::string& file);

/// "(in_features, out_features, bias)"
std::string param_list(const Signature& sig);

}  // namespace dnnc::frontend
