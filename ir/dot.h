// Graphviz rendering of one graph (`dnnc dump-ir --format=dot`).
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::ir {

/// A `digraph` with one box per node (label: op, results and their types), inputs as
/// parallelograms, params as cylinders, the graph outputs as a `return` node and updates as
/// dashed edges back to their param. Names are quoted and escaped. Out-of-range value ids
/// (an unverified graph) are drawn as red "bad value" nodes. Never throws.
std::string to_dot(const Graph& g, const Module& m);

}  // namespace dnnc::ir
