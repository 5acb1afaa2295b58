// The elementwise chains that run inside another op's kernel (lower_chain.h).
#include "codegen/lower/lower_chain.h"

namespace dnnc::codegen {

Chain chain_after(const LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t j, ir::ValueId start,
                  const Dims& shape) {
  Chain c;
  ir::ValueId cur = start;
  for (; j < nodes.size(); ++j) {
    const ir::Node& n = *nodes[j];
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != cur) break;
    MapOp op;
    if (!map_op_of(ctx, n, completed_attrs(ctx, n), &op) || op.setup) break;
    if (ctx.shape(n.outputs[0]) != shape || !is_f32(ctx, n.outputs[0])) break;
    bool ok = true;
    for (size_t i = 1; i < n.inputs.size() && ok; ++i) {
      bool contiguous = i >= op.operand_strides.size() || at_element(op.operand_strides[i], shape);
      // Not a value of the group itself (those may live in registers only).
      ok = contiguous && ctx.shape(n.inputs[i]) == shape && is_f32(ctx, n.inputs[i]) && n.inputs[i] != cur &&
           n.inputs[i] != start;
      for (const ir::Node* p : c.nodes) ok &= p->outputs[0] != n.inputs[i];
    }
    if (!ok) break;
    c.nodes.push_back(&n);
    c.ops.push_back(std::move(op));
    cur = n.outputs[0];
  }
  return c;
}

Expr apply_chain(KernelBuilder& kb, const Chain& c, const std::vector<std::vector<int>>& operand_param, Expr v,
                 Expr index) {
  for (size_t k = 0; k < c.nodes.size(); ++k) {
    MapEnv env;
    env.index = index;
    env.kb = &kb;
    env.in.push_back(v);
    for (size_t i = 1; i < c.nodes[k]->inputs.size(); ++i) env.in.push_back(kb.load(operand_param[k][i], index));
    v = c.ops[k].body(env).at(0);
    if (k + 1 < c.nodes.size()) v = kb.let("t", v);
  }
  return v;
}

std::vector<std::vector<int>> chain_operands(KernelDraft& d, LowerCtx& ctx, const Chain& c) {
  std::vector<std::vector<int>> out;
  for (const ir::Node* n : c.nodes) {
    std::vector<int> ps{-1};
    for (size_t i = 1; i < n->inputs.size(); ++i) ps.push_back(d.read(ctx.buffer(n->inputs[i])));
    out.push_back(std::move(ps));
  }
  return out;
}

bool chain_stays_inside(const LowerCtx& ctx, ir::ValueId start, const Chain& c,
                        const std::vector<const ir::Node*>& inside) {
  if (!c.nodes.empty() && used_outside(ctx.graph, start, inside)) return false;
  for (size_t k = 0; k + 1 < c.nodes.size(); ++k)
    if (used_outside(ctx.graph, c.nodes[k]->outputs[0], inside)) return false;
  for (const ir::Node* n : inside)
    if (ctx.in_place.count(n->outputs[0])) return false;
  return true;
}

}  // namespace dnnc::codegen
