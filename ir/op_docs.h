// Renders the op registry as a markdown table (for `dnnc ops` and for checking docs/ops.md).
#pragma once
#include <string>

namespace dnnc::ir {

/// One row per registered op, in registration order: op, operands (optional ones marked `?`),
/// attributes with defaults (`required` when none), maximum result count, fusion class, whether
/// internal, summary. Never fails.
std::string render_ops_markdown();

}  // namespace dnnc::ir
