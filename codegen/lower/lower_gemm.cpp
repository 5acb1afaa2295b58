// linear and matmul as GEMM library calls: transposes become flags, linear's bias an epilogue
// (the bias is written first and the product added to it).
#include "codegen/lower/lower_ctx.h"

namespace dnnc::codegen {

namespace {

GemmCall::Threads gemm_threads(const LowerCtx& ctx, int64_t m, int64_t n, int64_t k) {
  return 2 * m * n * k >= ctx.options.gemm_parallel_flops ? GemmCall::Threads::split : GemmCall::Threads::single;
}

void lower_linear(LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
  Dims xs = ctx.shape(n.inputs[0]), ws = ctx.shape(n.inputs[1]);
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) ctx.fail(n, "x does not match weight [out, in]");
  GemmCall g;
  g.m = product(xs) / ws[1];
  g.n = ws[0];
  g.k = ws[1];
  g.a = ctx.buffer(n.inputs[0]);
  g.b = ctx.buffer(n.inputs[1]);
  g.trans_b = true;  // y = x · Wᵀ
  g.lda = g.k;
  g.ldb = g.k;
  g.ldc = g.n;
  if (n.inputs.size() > 2) {
    g.bias = ctx.buffer(n.inputs[2]);
    g.bias_kind = GemmCall::Bias::per_col;
  }
  g.c = ctx.define(n.outputs[0]);
  g.threads = gemm_threads(ctx, g.m, g.n, g.k);
  ctx.emit_gemm(g);
}

void lower_matmul(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  Dims as = ctx.shape(n.inputs[0]), bs = ctx.shape(n.inputs[1]);
  if (as.size() != 2 || bs.size() != 2) ctx.fail(n, "matmul operands must be 2-d");
  GemmCall g;
  g.trans_a = ir::attr_bool(a, "transpose_a");
  g.trans_b = ir::attr_bool(a, "transpose_b");
  g.m = g.trans_a ? as[1] : as[0];
  g.k = g.trans_a ? as[0] : as[1];
  g.n = g.trans_b ? bs[0] : bs[1];
  if ((g.trans_b ? bs[1] : bs[0]) != g.k) ctx.fail(n, "matmul inner sizes differ");
  g.a = ctx.buffer(n.inputs[0]);
  g.b = ctx.buffer(n.inputs[1]);
  g.lda = as[1];
  g.ldb = bs[1];
  g.ldc = g.n;
  g.c = ctx.define(n.outputs[0]);
  g.threads = gemm_threads(ctx, g.m, g.n, g.k);
  ctx.emit_gemm(g);
}

}  // namespace

void register_gemm_lowerings(LowerTable& t) {
  t["linear"] = lower_linear;
  t["matmul"] = lower_matmul;
}

namespace {

// Bias-gradient sums in a GEMM epilogue: if nodes[i] is reduce_sum over axis 0 (not kept) of
// `c_value`, the 2-d value the GEMM step just emitted leaves in C after its epilogue, the GEMM's
// threads sum the columns of their rows (LowerOptions::bias_grad_in_gemm). Returns the number
// of nodes lowered (0 or 1).
size_t lower_gemm_col_sums(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i, ir::ValueId c_value) {
  if (!ctx.options.bias_grad_in_gemm || i >= nodes.size()) return 0;
  const ir::Node& n = *nodes[i];
  if (n.op != "reduce_sum" || n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0] != c_value) return 0;
  ir::Attrs a = completed_attrs(ctx, n);
  std::vector<int64_t> axes = ir::attr_ints(a, "axes");
  Dims in = ctx.shape(c_value);
  if (in.size() != 2 || ir::attr_bool(a, "keepdim") ||
      !(axes == std::vector<int64_t>{0} || axes == std::vector<int64_t>{-2}))
    return 0;
  if (ctx.graph.value(n.outputs[0]).type.dtype != ir::DType::f32 || ctx.in_place.count(n.outputs[0])) return 0;
  Step& s = ctx.prog.steps.back();
  if (s.kind != Step::Kind::gemm || s.gemm.epilogue < 0 || s.gemm.col_sums >= 0 || s.gemm.m != in[0] ||
      s.gemm.n != in[1] || ctx.root(s.gemm.c) != ctx.root(ctx.buffer(c_value)))
    return 0;
  s.gemm.col_sums = ctx.define(n.outputs[0]);
  s.comment.push_back(ctx.node_text(n));
  return 1;
}

// Names the activation of the GEMM step just emitted when its epilogue `maps` is exactly one
// relu of the product, or one relu_backward of the product (the incoming gradient) masked by
// another f32 value of C's shape (GemmCall::act; the CUDA printer maps it to cuBLASLt).
void tag_gemm_act(LowerCtx& ctx, const std::vector<const ir::Node*>& maps, ir::ValueId result) {
  if (maps.size() != 1) return;
  const ir::Node& n = *maps[0];
  GemmCall& g = ctx.prog.steps.back().gemm;
  if (n.op == "relu" && n.inputs.size() == 1 && n.inputs[0] == result) {
    g.act = GemmCall::Act::relu;
  } else if (n.op == "relu_backward" && n.inputs.size() == 2 && n.inputs[0] == result && n.inputs[1] != result &&
             ctx.graph.value(n.inputs[1]).type.dtype == ir::DType::f32 && ctx.shape(n.inputs[1]) == ctx.shape(result)) {
    g.act = GemmCall::Act::relu_backward;
    g.act_mask = ctx.buffer(n.inputs[1]);
  }
}

}  // namespace

// GEMM epilogue: if nodes[i] is a linear/matmul whose result feeds a run of map ops that join
// it element by element (relu after linear, relu_backward after the input-gradient matmul), and
// the result itself is used nowhere else, lowers the GEMM writing straight into the buffer of
// the run's first stored result and the run as its epilogue. Returns the number of nodes
// lowered (0: not this pattern; nothing emitted).
size_t lower_gemm_epilogue(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i,
                           const std::function<void(const ir::Node&)>& lower_one) {
  const ir::Node& gemm = *nodes[i];
  if ((gemm.op != "linear" && gemm.op != "matmul") || gemm.outputs.size() != 1) return 0;
  ir::ValueId result = gemm.outputs[0];
  Dims out = ctx.shape(result);
  std::vector<const ir::Node*> run{&gemm};
  for (size_t j = i + 1; j < nodes.size() && joins_run(ctx, *nodes[j], out, run); ++j) run.push_back(nodes[j]);
  if (run.size() < 2) return 0;
  std::vector<const ir::Node*> maps(run.begin() + 1, run.end());
  if (used_outside(ctx.graph, result, maps)) return 0;
  ir::ValueId target = ir::kNoValue;  // the first result of the run read after it
  for (const ir::Node* n : maps) {
    MapOp op;
    map_op_of(ctx, *n, completed_attrs(ctx, *n), &op);
    if (op.setup) return 0;  // no hoisted scalars or checks inside a GEMM's threads
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      bool scalar =
          k < op.operand_strides.size() && !op.operand_strides[k].empty() &&
          std::all_of(op.operand_strides[k].begin(), op.operand_strides[k].end(), [](int64_t x) { return x == 0; });
      if (!scalar && !reads_at_element(op, k, out)) return 0;
    }
    for (ir::ValueId o : n->outputs)
      if (target == ir::kNoValue && ctx.graph.value(o).type.dtype == ir::DType::f32 &&
          (used_outside(ctx.graph, o, maps) || maps.size() == 1))
        target = o;
  }
  if (target == ir::kNoValue || ctx.in_place.count(target) || ctx.graph.value(result).type.dtype != ir::DType::f32)
    return 0;
  ctx.share_buffer(result, ctx.define(target));
  ctx.comment = {ctx.node_text(gemm)};
  lower_one(gemm);
  ctx.comment.clear();
  for (const ir::Node* n : maps) ctx.comment.push_back(ctx.node_text(*n));
  lower_map_group(ctx, maps, result);
  tag_gemm_act(ctx, maps, result);
  return run.size() + lower_gemm_col_sums(ctx, nodes, i + run.size(), target);
}

}  // namespace dnnc::codegen
