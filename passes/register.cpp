// The one place where passes are registered, and the default pipeline.
#include "passes/pass_manager.h"
#include "passes/passes.h"

namespace dnnc::passes {

void register_all_passes(PassRegistry& r, const PassConfig& config) {
  r.add({"infer-shapes", "recompute every result type from the op registry", infer_shapes});
  r.add({"autodiff", "derive train_step: forward + reverse-mode gradients of the loss", autodiff});
  r.add({"optimizer", "append the optimizer update (sgd/adam/adamw) to train_step", optimizer});
  r.add({"derive-infer", "derive the eval-mode infer graph (forward to the prediction)", derive_infer});
  r.add({"simplify", "common-subexpression and dead-code elimination", simplify});
  r.add({"select-layout", "per-target layouts (NCHW/NHWC) by cost; transposes folded into GEMM flags",
         [config](ir::Module& m) { return select_layout(m, *config.target, config.layout_report, config.layout); }});
  r.add({"fuse", "group nodes into kernels (epilogues, softmax-xent, multi-tensor update)", fuse});
  r.add({"schedule", "reorder kernels to lower peak live memory", schedule});
}

std::vector<std::string> default_pipeline() {
  return {
      "infer-shapes",   // types from the registry (the frontend already checked them; cheap re-check)
      "autodiff",       // train_step = forward + backward
      "optimizer",      // + parameter updates: train_step is now one whole training step
      "derive-infer",   // infer = eval-mode forward to the prediction
      "simplify",       // CSE + DCE over every graph
      "select-layout",  // transposes into GEMM flags; NCHW/NHWC per region by the target's cost model
      "fuse",           // group nodes into kernels
      "schedule",       // launch order with a lower memory peak (codegen's plan-memory places the buffers)
  };
}

}  // namespace dnnc::passes
