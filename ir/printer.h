// The IR's text form (see docs/ir.md for the grammar): a Module or one Graph printed
// deterministically, so that parse_module(print(m)) gives m back and golden tests can diff it.
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::ir {

/// The whole module: header, source file, batch symbol, params, train config, graphs.
/// Never fails; an unverified module prints as far as it can (bad value ids print as %<bad:N>).
std::string print(const Module& m);

/// One graph block, unindented, as it appears inside print(m). Types use m's batch symbol.
std::string print(const Graph& g, const Module& m);

/// `%name` / `@name`, quoted (`%"a b"`) when the name has characters other than letters,
/// digits, `_` and `.`.
std::string print_value_name(const std::string& name, char sigil);

}  // namespace dnnc::ir
