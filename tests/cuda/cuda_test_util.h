// Shared helpers for the CUDA tests: models lowered the way the cuda backend lowers them, and
// the plugin directory of the build tree (models themselves: tests/support/models.h).
#pragma once
#include <cstdlib>
#include <string>

#include "codegen/cuda/cuda_printer.h"
#include "codegen/lower/lower.h"
#include "tests/support/models.h"

namespace dnnc::test {

/// Graph `graph` of `m` lowered as the cuda backend does (every independent loop parallel).
inline codegen::Program cuda_lower(const ir::Module& m, const std::string& graph, int64_t batch) {
  return codegen::lower_graph(m, *m.graph(graph), batch, codegen::cuda_lower_options());
}

/// Points the plugin loader at the build tree (before its first use in the process).
inline void use_build_tree_plugin() { setenv("DNNC_PLUGIN_DIR", DNNC_PLUGIN_BUILD_DIR, 0); }

}  // namespace dnnc::test
