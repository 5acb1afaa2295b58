// The IR verifier: checks a Module's invariants (ops, attributes, types, SSA order, params,
// updates) and reports the first violation naming the graph, node index, op and types.
#pragma once
#include <stdexcept>
#include <string>

#include "ir/graph.h"

namespace dnnc::ir {

/// A broken IR invariant found by verify(); what() names the graph, node, op and types at fault.
class VerifyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Checks every graph of `m` and its params table. Throws VerifyError on the first violation of:
/// well-formed types (dims >= 0 or the batch dim; nhwc only on rank 4, col_major only on rank 2;
/// no batch dim in params), unique param/graph/value names, each node's op registered, attrs complete
/// (every schema attr present with the schema's kind, defaults included, no unknown ones), operand
/// count, result types equal to infer_types() of the operand types (the count too: ops with optional
/// operands may have fewer results than OpDef::num_outputs), SSA (every value defined once, used only
/// after its definition; inputs and params never defined by nodes), param reads matching
/// module.params by name and type, updates naming existing params with the param's type, outputs defined.
void verify(const Module& m);

/// Checks one graph of `m` (as verify(Module) does for each). Throws VerifyError.
void verify_graph(const Graph& g, const Module& m);

}  // namespace dnnc::ir
