// passes::compile: the one entry point that runs dnnc's passes over a module. It registers
// every pass for a target and runs a pipeline (the default one unless told otherwise); the
// CLI, the benchmarks and the tests all compile through it.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass_manager.h"

namespace dnnc::passes {

struct CompileOptions {
  const Target* target = &cpu_target();   // select-layout's target (cost model, layouts)
  LayoutReport* layout_report = nullptr;  // if set, select-layout's decisions per graph
  LayoutChoice layout = LayoutChoice::automatic;  // --layout: select-layout's cost model, or forced
  PipelineOptions pipeline;               // which passes, bisecting, verification, dumps
};

/// Runs the pipeline `options` describe over `m` in place. Throws as run_pipeline does:
/// ir::CompileError for the user's errors, std::invalid_argument for an unknown pass name,
/// dnnc::InternalError naming the pass for a broken invariant.
void compile(ir::Module& m, const CompileOptions& options = {});

/// The names of every pass compile() can run, in registration order.
std::vector<std::string> pass_names();

}  // namespace dnnc::passes
