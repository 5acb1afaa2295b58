// Internal to codegen: an elementwise chain applied inside another op's kernel (a conv's or a
// batchnorm's output, a pool backward's gradient) instead of as a loop nest of its own; shared by
// the fused conv/pool lowerings (lower_conv_fused.cpp) and batchnorm's (lower_norm.cpp).
#pragma once
#include "codegen/lower/lower_ctx.h"

namespace dnnc::codegen {

/// An elementwise chain on a plane-shaped value: map ops with one f32 result of shape `shape`,
/// operand 0 the previous value, every other operand a contiguous tensor of that shape read at
/// the same element, no setup.
struct Chain {
  std::vector<const ir::Node*> nodes;
  std::vector<MapOp> ops;
};

inline bool is_f32(const LowerCtx& ctx, ir::ValueId v) { return ctx.graph.value(v).type.dtype == ir::DType::f32; }

/// The longest chain of nodes[j...] starting from value `start` (of shape `shape`); empty if
/// nodes[j] does not qualify.
Chain chain_after(const LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t j, ir::ValueId start,
                  const Dims& shape);

/// The kernel parameters of the chain's other operands (per chain node, per operand; -1 for
/// operand 0), read by `d`.
std::vector<std::vector<int>> chain_operands(KernelDraft& d, LowerCtx& ctx, const Chain& c);

/// The chain applied to `v`, the value at flat element `index` (where the other operands are read).
Expr apply_chain(KernelBuilder& kb, const Chain& c, const std::vector<std::vector<int>>& operand_param, Expr v,
                 Expr index);

/// Whether a fused kernel may keep the chain's values to itself: neither the head's result `start`
/// (when the chain follows it) nor any link but the last is read outside `inside`, and no result
/// of `inside` is updated in place.
bool chain_stays_inside(const LowerCtx& ctx, ir::ValueId start, const Chain& c,
                        const std::vector<const ir::Node*>& inside);

}  // namespace dnnc::codegen
