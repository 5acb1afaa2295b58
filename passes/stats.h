// Compilation statistics of the IR: kernel launches before and after fusion, fusion groups, layout.
#pragma once
#include <functional>
#include <string>

#include "ir/graph.h"
#include "passes/passes.h"

namespace dnnc::passes {

/// Kernel launches if every non-view node were its own kernel (what fusion starts from).
int unfused_kernel_count(const ir::Graph& g);

/// The fusion groups of `g` by kind, in order of first appearance:
/// `conv2d_epilogue x1 (3 nodes), softmax_xent x1 (4 nodes)`.
std::string format_groups(const ir::Graph& g);

/// Per graph: `train_step: kernels 27 -> 10` (unfused -> fused launches), then (if fuse ran)
/// `  fuse: ` and the groups by kind (format_groups), then, given select-layout's report,
/// `  select-layout (cuda): transposes 2 -> 0 (1 into GEMM flags, 1 cancelled); 1 of 2 activation
/// regions nhwc, 2 conversions; modelled 12.3 us (all NCHW: 15.0 us)`, then what `more` returns
/// for the graph (the CLI adds codegen's plan-memory figures there).
std::string format_stats(const ir::Module& m, const LayoutReport* layout = nullptr,
                         const std::function<std::string(const ir::Graph&)>& more = {});

}  // namespace dnnc::passes
