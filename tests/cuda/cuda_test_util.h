// Shared helpers for the CUDA tests: models through the default pipeline, lowered the way the
// cuda backend lowers them, and the test kernel cache / plugin directory of the build tree.
#pragma once
#include <cstdlib>
#include <string>

#include "codegen/cuda/cuda_printer.h"
#include "codegen/lower/lower.h"
#include "frontend/frontend.h"
#include "passes/pass_manager.h"

namespace dnnc::test {

inline ir::Module cuda_pipeline_model(const std::string& path) {
  ir::Module m = frontend::compile_file(path);
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::run_pipeline(m, r, {});
  return m;
}

/// Graph `graph` of `m` lowered as the cuda backend does (every independent loop parallel).
inline codegen::Program cuda_lower(const ir::Module& m, const std::string& graph, int64_t batch) {
  return codegen::lower_graph(m, *m.graph(graph), batch, codegen::cuda_lower_options());
}

/// Points the plugin loader at the build tree (before its first use in the process).
inline void use_build_tree_plugin() { setenv("DNNC_PLUGIN_DIR", DNNC_PLUGIN_BUILD_DIR, 0); }

}  // namespace dnnc::test
