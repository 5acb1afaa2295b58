// Entry points of every pass, one per file in passes/. Each mutates the module in place and
// returns whether it changed anything; user errors throw ir::CompileError.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/target.h"

namespace dnnc::passes {

/// infer-shapes: recomputes every node's result types from the op registry. Throws
/// ir::CompileError at the node's source location on a shape error.
bool infer_shapes(ir::Module& m);

/// autodiff: derives graph "train_step" from "forward": the forward nodes, then reverse-mode
/// gradients of the loss (forward output 0) for every trainable param. Outputs: loss,
/// prediction, then one gradient per trainable param named `<param>.grad`.
bool autodiff(ir::Module& m);

/// optimizer: turns train_step's gradient outputs into parameter updates (sgd/adam/adamw
/// per module.train.optimizer, PyTorch semantics), adding optimizer-state params.
bool optimizer(ir::Module& m);

/// derive-infer: builds graph "infer" (forward pass to the prediction, eval-mode batchnorm,
/// no dropout, no loss and no label input).
bool derive_infer(ir::Module& m);

/// simplify: dead-code elimination and common-subexpression elimination on every graph.
bool simplify(ir::Module& m);

/// What select-layout did to one graph.
struct GraphLayoutReport {
  std::string graph;
  int transposes_before = 0;     // transpose nodes on entry
  int folded_into_gemm = 0;      // transposes a matmul/linear now reads through a GEMM transpose flag
  int cancelled = 0;             // transposes composed into the transpose they fed (identity: both gone)
  int regions = 0;               // connected regions of 4-d activations
  int nhwc_regions = 0;          // regions the cost model put in NHWC
  int conversions = 0;           // layout conversions inserted at the edges of those regions
  int transposes_after = 0;      // transpose nodes left (the conversions included)
  double cost_us = 0;            // modelled time of the regions as chosen (+ conversions)
  double row_major_cost_us = 0;  // the same with every region row-major
};

struct LayoutReport {
  std::string target;
  std::string choice = "auto";  // layout_choice_name of the choice select-layout was given
  std::vector<GraphLayoutReport> graphs;
};

/// How select-layout picks each region's layout: by the target's cost model (`auto`), or forced
/// (`nchw`: every region row-major; `nhwc`: every region the target can lower in NHWC).
enum class LayoutChoice { automatic, nchw, nhwc };
/// "auto", "nchw" or "nhwc".
const char* layout_choice_name(LayoutChoice c);
/// The choice named `name` (auto|nchw|nhwc). Throws std::invalid_argument naming the value.
LayoutChoice parse_layout_choice(const std::string& name);

/// select-layout: folds transposes into GEMM transpose flags (matmul flags; linear(x, transpose(V))
/// becomes matmul(x, V) + bias), composes transposes of transposes (cancelling identities), then
/// gives each connected region of 4-d activations the layout (row_major = NCHW, or nhwc) that
/// `target`'s cost model rates cheapest, inserting layout conversions (transpose with the identity
/// perm) at the region's edges. Params, graph inputs and outputs stay row-major. Skips graphs that
/// are already fused. Fills `report` (if given) per graph. `choice` overrides the cost model.
bool select_layout(ir::Module& m, const Target& target, LayoutReport* report = nullptr,
                   LayoutChoice choice = LayoutChoice::automatic);

/// fuse: groups nodes into kernels (patterns in passes/fuse.cpp); sets Node::group and
/// Graph::groups and makes each group's nodes contiguous.
bool fuse(ir::Module& m);

/// schedule: reorders kernels (groups kept whole) to lower peak live memory. The order is the
/// one codegen lowers, and codegen's plan-memory (codegen/lower/plan_memory.h) places the
/// lowered buffers over it.
bool schedule(ir::Module& m);

}  // namespace dnnc::passes
