// Structural comparison of modules: the "equal in content" that the text round trip preserves
// (values compared by name and type, not by ValueId, so value numbering may differ).
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::ir {

/// "" if `a` and `b` have the same content, else a one-line description of the first difference.
/// Compared: module name, source file, batch symbol; params (name, type, role, init, loc);
/// the train config when present (floats bit-exactly); graphs in order: name, inputs, nodes (op,
/// operands and results by kind/name/type, attrs bit-exactly, loc), outputs and updates.
/// Values that no node, output or update refers to are not compared. Never throws.
std::string module_diff(const Module& a, const Module& b);

/// Bit-exact equality of attribute values (so NaN equals itself and 0.0 differs from -0.0).
bool attr_equal(const AttrValue& a, const AttrValue& b);

}  // namespace dnnc::ir
