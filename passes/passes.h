// Entry points of every pass, one per file in passes/. Each mutates the module in place and
// returns whether it changed anything; user errors throw ir::CompileError.
#pragma once
#include "ir/graph.h"

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

/// fuse: groups nodes into kernels (patterns in passes/fuse.cpp); sets Node::group and
/// Graph::groups and makes each group's nodes contiguous.
bool fuse(ir::Module& m);

/// schedule: reorders kernels (groups kept whole) to lower peak live memory.
bool schedule(ir::Module& m);

/// plan-memory: assigns every materialised intermediate an offset in one arena per graph
/// (Graph::memory), for the train block's batch size.
bool plan_memory(ir::Module& m);

}  // namespace dnnc::passes
