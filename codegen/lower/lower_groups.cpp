// Lowering of pass fuse's groups, one lowering per kind (ir/fusion.h). A group is lowered by the
// lowering of its kind, which reads its nodes' roles; nothing here decides which nodes belong
// together, and a group its kind's lowering cannot take is an internal error naming it.
#include <fmt/format.h>

#include "codegen/lower/lower_ctx.h"
#include "ir/check.h"
#include "ir/fusion.h"

namespace dnnc::codegen {

namespace {

namespace fusion = ir::fusion;

// A run of map ops as one loop nest (a single node by its own lowering), commented with its nodes.
void lower_run(GroupLowering& gl, const std::vector<const ir::Node*>& run) {
  gl.ctx.comment.clear();
  for (const ir::Node* n : run) gl.ctx.comment.push_back(gl.ctx.node_text(*n));
  if (run.size() > 1)
    lower_map_group(gl.ctx, run);
  else
    gl.lower_one(*run[0]);
}

// Nodes [from, to) one after another: each maximal run of map ops sharing one result shape as
// one loop nest, every other node by its own lowering. Weight-gradient GEMMs fused into their
// optimizer update are lowered with the update; the update in their place.
void lower_sequence(GroupLowering& gl, const std::vector<const ir::Node*>& nodes, size_t from, size_t to) {
  LowerCtx& ctx = gl.ctx;
  auto fused = [&](const ir::Node* n) { return gl.deferred.count(n) || gl.fused_updates.count(n); };
  for (size_t i = from; i < to;) {
    if (gl.deferred.count(nodes[i])) {
      ++i;
      continue;
    }
    if (auto it = gl.fused_updates.find(nodes[i]); it != gl.fused_updates.end()) {
      lower_optimizer_gemm(ctx, *nodes[i], *it->second, gl.lower_one, gl.checked_steps);
      ++i;
      continue;
    }
    Dims out = ctx.shape(nodes[i]->outputs.at(0));
    std::vector<const ir::Node*> run{nodes[i]};
    size_t j = i + 1;
    if (joins_run(ctx, *nodes[i], out, {}))
      for (; j < to && !fused(nodes[j]) && joins_run(ctx, *nodes[j], out, run); ++j) run.push_back(nodes[j]);
    lower_run(gl, run);
    i = j;
  }
}

// A group starts with the role its kind starts with (ir::fusion::first_role).
void expect_first(const std::string& kind, const std::vector<const ir::Node*>& nodes) {
  const std::string role = fusion::first_role(kind);
  DNNC_CHECK(!nodes.empty() && nodes.front()->role == role, "a '{}' group does not start with its {} (found '{}')",
             kind, role, nodes.empty() ? "" : nodes.front()->role);
}

// Nodes [from, end) of a chain-shaped group (`elementwise`, `<head>_epilogue`) that its head's
// kernel did not take, by role: the head by its own lowering, the chain as one loop nest, the
// pool, each bias-gradient sum and the batchnorm backward by their own lowerings. A chain that
// cannot be one loop nest is an internal error: fuse promised it.
void lower_chain_roles(GroupLowering& gl, const std::string& kind, const std::vector<const ir::Node*>& nodes,
                       size_t from) {
  LowerCtx& ctx = gl.ctx;
  size_t i = from;
  if (i < nodes.size() && nodes[i]->role == fusion::kHead) {
    lower_sequence(gl, nodes, i, i + 1);
    ++i;
  }
  std::vector<const ir::Node*> chain;
  for (; i < nodes.size() && nodes[i]->role == fusion::kChain; ++i) {
    const ir::Node& n = *nodes[i];
    const Dims out = ctx.shape(chain.empty() ? n.outputs.at(0) : chain.front()->outputs.at(0));
    DNNC_CHECK(!gl.deferred.count(&n) && !gl.fused_updates.count(&n) && joins_run(ctx, n, out, chain),
               "chain node {} of a '{}' group cannot join the chain's loop nest", ctx.node_text(n), kind);
    chain.push_back(&n);
  }
  if (!chain.empty()) lower_run(gl, chain);
  for (; i < nodes.size(); ++i) {
    const std::string& role = nodes[i]->role;
    DNNC_CHECK(role == fusion::kPool || role == fusion::kBiasGrad || role == fusion::kNormGrad,
               "node {} of a '{}' group has role '{}' after the chain (expected pool, bias_grad or norm_grad)",
               ctx.node_text(*nodes[i]), kind, role);
    lower_sequence(gl, nodes, i, i + 1);
  }
}

}  // namespace

void lower_group(GroupLowering& gl, const std::string& kind, const std::vector<const ir::Node*>& nodes) {
  LowerCtx& ctx = gl.ctx;
  if (kind.empty()) {  // a node outside any group
    // A conv or a max-pool backward on its own may still take the plane kernel of
    // lower_conv_fused.cpp with an empty chain (a direct conv; a pool backward that writes each
    // window once instead of zero-filling and scattering): a choice of the op's lowering, not a
    // fusion.
    if (nodes.size() == 1 && !gl.deferred.count(nodes[0]) && !gl.fused_updates.count(nodes[0]) &&
        lower_conv_pool_group(ctx, nodes, 0) == 1)
      return;
    lower_sequence(gl, nodes, 0, nodes.size());
    return;
  }
  if (kind == fusion::kElementwise) {
    expect_first(kind, nodes);
    lower_chain_roles(gl, kind, nodes, 0);
    return;
  }
  if (kind == fusion::kMultiTensorUpdate) {
    // Each update fused with its weight-gradient GEMM where lower_fused.cpp planned it; the
    // others as loop nests, same-shaped updates sharing one.
    lower_sequence(gl, nodes, 0, nodes.size());
    return;
  }
  if (kind == fusion::kSoftmaxXent) {
    expect_first(kind, nodes);
    const size_t used = lower_softmax_xent(ctx, nodes, 0);
    DNNC_CHECK(used == nodes.size(), "the softmax_xent lowering took {} of the group's {} nodes", used, nodes.size());
    return;
  }
  const std::string head = fusion::epilogue_head(kind);
  DNNC_CHECK(!head.empty(), "no lowering for fusion groups of kind '{}'", kind);
  expect_first(kind, nodes);
  size_t used = 0;
  if (head == "linear" || head == "matmul") {
    // One GEMM with the chain as its epilogue (and the bias-gradient sum as its column sums);
    // a chain that cannot run inside the GEMM's threads (broadcast operands, checks) runs as one
    // loop nest after it.
    if (ctx.options.gemm_epilogues) used = lower_gemm_epilogue(ctx, nodes, 0, gl.lower_one);
  } else if (head == "conv2d" || head == "maxpool2d_backward") {
    // One kernel over planes (lower_conv_fused.cpp) where the conv is direct and the chain
    // qualifies; else the conv (im2col + GEMM) or pool backward, then the chain as a loop nest.
    used = lower_conv_pool_group(ctx, nodes, 0);
  } else if (head == "conv2d_backward_input") {
    // col2im with the chain at its stores where it gathers (stride 1); else role by role.
    used = lower_conv_backward_input_group(ctx, nodes, 0);
  } else if (head == "batchnorm2d") {
    // Statistics, normalization, the chain and the pool in one channel loop (lower_norm.cpp);
    // else (NHWC, batchnorm_epilogues off) role by role.
    used = lower_batchnorm_group(ctx, nodes, 0);
  }
  lower_chain_roles(gl, kind, nodes, used);
}

}  // namespace dnnc::codegen
