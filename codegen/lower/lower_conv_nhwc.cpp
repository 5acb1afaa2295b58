// conv2d and its backward ops on {nhwc} (channels-last) activations. A convolution of
// channels-last images is one GEMM over every output pixel of the batch: the im2col matrix has a
// row per output pixel (b, oh, ow) and a column per weight element in the weight's own
// (c, ki, kj) order, so the weight [O, C, kh, kw] is read as it is stored:
//   forward:         y [B*P, O]     = col [B*P, K] · Wᵀ (+ bias per column)   — y is {nhwc}
//   backward input:  dcol [B*P, K]  = dy [B*P, O] · W, then col2im into dx
//   backward weight: dW [O, K]      = dyᵀ [O, B*P] · col [B*P, K]
// A 1x1 convolution with stride 1 and no padding reads x itself as its im2col matrix.
#include <fmt/format.h>

#include "codegen/lower/lower_window.h"

namespace dnnc::codegen {

namespace {

// Whether x itself is the im2col matrix [B*H*W, C] (a 1x1 kernel, stride 1, no padding).
bool pointwise(const ConvGeom& g) {
  return g.kh == 1 && g.kw == 1 && g.s0 == 1 && g.s1 == 1 && g.p0 == 0 && g.p1 == 0;
}

GemmCall::Threads threads_for(const LowerCtx& ctx, const GemmCall& c) {
  return 2 * c.m * c.n * c.k >= ctx.options.gemm_parallel_flops ? GemmCall::Threads::split
                                                                 : GemmCall::Threads::single;
}

// col [B*P, K] of the channels-last x: row b*P + oh*Wo + ow, column (c*kh + ki)*kw + kj; zero
// where the tap falls into the padding.
int emit_im2col_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, ir::ValueId xv) {
  const int64_t taps = g.kh * g.kw, rows = g.p() * g.k();
  int col = ctx.scratch("col", g.b * rows);
  ctx.comment = {ctx.node_text(n), "  (im2col of channels-last " + ctx.graph.value(xv).name + ")"};
  KernelDraft d(ctx, ctx.kernel_name("im2col_nhwc"));
  int x = d.read(ctx.buffer(xv));
  int cp = d.write(col);
  KernelBuilder& kb = d.kb;
  kb.loop("b", g.b, ctx.parallel(g.b * rows) && g.b > 1, [&](Expr b) {
    Expr xbase = kb.let("xbase", b * i64c(g.h * g.w * g.c));
    Expr cbase = kb.let("cbase", b * i64c(rows));
    if (g.p0 > 0 || g.p1 > 0) kb.loop("i", rows, false, [&](Expr i) { kb.store(cp, cbase + i, f32c(0)); });
    for_each_tap(kb, g, nullptr, [&](Expr ki, Expr kj, Expr oh, Expr ow, Expr ih, Expr iw) {
      Expr src = kb.let("src", xbase + (ih * i64c(g.w) + iw) * i64c(g.c));
      Expr dst = kb.let("dst", cbase + (oh * i64c(g.wo) + ow) * i64c(g.k()) + ki * i64c(g.kw) + kj);
      kb.loop("c", g.c, false, [&](Expr c) { kb.store(cp, dst + c * i64c(taps), kb.load(x, src + c)); });
    });
  });
  ctx.emit(std::move(d));
  return col;
}

}  // namespace

bool conv_nhwc(const LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, ir::ValueId a, ir::ValueId b) {
  bool na = ctx.nhwc(a), nb = ctx.nhwc(b);
  if (na != nb)
    ctx.fail(n, fmt::format("'{}' and '{}' are in different layouts", ctx.graph.value(a).name,
                            ctx.graph.value(b).name));
  if (na && g.groups != 1)
    ctx.fail(n, "a grouped convolution has no {nhwc} lowering");
  return na;
}

void lower_conv2d_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g) {
  int col = pointwise(g) ? ctx.buffer(n.inputs[0]) : emit_im2col_nhwc(ctx, n, g, n.inputs[0]);
  ctx.comment = {ctx.node_text(n)};
  GemmCall c;  // y [B*P, O] = col [B*P, K] · Wᵀ
  c.a = col;
  c.b = ctx.buffer(n.inputs[1]);
  c.trans_b = true;
  c.c = ctx.define(n.outputs[0]);
  c.m = g.b * g.p(), c.n = g.o, c.k = g.k();
  c.lda = g.k(), c.ldb = g.k(), c.ldc = g.o;
  if (n.inputs.size() > 2) {
    c.bias = ctx.buffer(n.inputs[2]);
    c.bias_kind = GemmCall::Bias::per_col;
  }
  c.threads = threads_for(ctx, c);
  ctx.emit_gemm(c);
}

void lower_conv2d_backward_input_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g) {
  const bool direct = pointwise(g);
  int dcol = direct ? ctx.define(n.outputs[0]) : ctx.scratch("dcol", g.b * g.p() * g.k());
  ctx.comment = {ctx.node_text(n)};
  GemmCall c;  // dcol [B*P, K] = dy [B*P, O] · W [O, K]
  c.a = ctx.buffer(n.inputs[0]);
  c.b = ctx.buffer(n.inputs[1]);
  c.c = dcol;
  c.m = g.b * g.p(), c.n = g.k(), c.k = g.o;
  c.lda = g.o, c.ldb = g.k(), c.ldc = g.k();
  c.threads = threads_for(ctx, c);
  ctx.emit_gemm(c);
  if (direct) return;
  // col2im: each tap's column block added into the pixel it came from, per image, in the
  // (ki, kj, oh, ow) order of the NCHW lowering.
  ctx.comment = {ctx.node_text(n), "  (col2im into channels-last dx)"};
  KernelDraft d(ctx, ctx.kernel_name("col2im_nhwc"));
  int src = d.read(dcol);
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  const int64_t taps = g.kh * g.kw, image = g.h * g.w * g.c;
  kb.loop("b", g.b, ctx.parallel(g.b * g.p() * g.k()) && g.b > 1, [&](Expr b) {
    Expr xbase = kb.let("xbase", b * i64c(image));
    Expr cbase = kb.let("cbase", b * i64c(g.p() * g.k()));
    kb.loop("i", image, false, [&](Expr i) { kb.store(dx, xbase + i, f32c(0)); });
    for_each_tap(kb, g, nullptr, [&](Expr ki, Expr kj, Expr oh, Expr ow, Expr ih, Expr iw) {
      Expr from = kb.let("from", cbase + (oh * i64c(g.wo) + ow) * i64c(g.k()) + ki * i64c(g.kw) + kj);
      Expr to = kb.let("to", xbase + (ih * i64c(g.w) + iw) * i64c(g.c));
      kb.loop("c", g.c, false, [&](Expr c) { kb.accumulate(dx, to + c, kb.load(src, from + c * i64c(taps))); });
    });
  });
  ctx.emit(std::move(d));
}

void lower_conv2d_backward_weight_nhwc(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g) {
  int col = pointwise(g) ? ctx.buffer(n.inputs[1]) : emit_im2col_nhwc(ctx, n, g, n.inputs[1]);
  ctx.comment = {ctx.node_text(n)};
  GemmCall c;  // dW [O, K] = dyᵀ [O, B*P] · col [B*P, K]
  c.a = ctx.buffer(n.inputs[0]);
  c.trans_a = true;
  c.b = col;
  c.c = ctx.define(n.outputs[0]);
  c.m = g.o, c.n = g.k(), c.k = g.b * g.p();
  c.lda = g.o, c.ldb = g.k(), c.ldc = g.k();
  c.threads = threads_for(ctx, c);
  // A small dW and a long sum over the batch's pixels: split the sum over the threads.
  if (c.threads == GemmCall::Threads::split && c.k >= 8 * (c.m + c.n)) c.threads = GemmCall::Threads::split_k;
  ctx.emit_gemm(c);
}

}  // namespace dnnc::codegen
