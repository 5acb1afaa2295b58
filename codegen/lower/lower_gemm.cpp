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

}  // namespace dnnc::codegen
