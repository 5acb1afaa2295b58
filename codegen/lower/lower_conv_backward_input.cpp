// conv2d_backward_input: direct loops for grouped convolutions and small kernels, otherwise
// dcol = Wᵀ · dy by batched GEMMs, then col2im of dcol into dx, per chunk of images. col2im of a
// stride-1 convolution is a gather (each dx element sums its taps in registers and is stored
// once); other strides scatter-add each tap into a zeroed plane. A conv2d_backward_input_epilogue
// group's chain runs at the gather's stores (lower_conv_backward_input_group).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/lower/lower_chain.h"
#include "codegen/lower/lower_window.h"
#include "ir/check.h"

namespace dnnc::codegen {

namespace {

// The rows (or columns) [lo, hi) of an input plane every tap of a stride-1, dilation-1 kernel of
// size k with padding p reaches: input i gets tap t from output i + p - t, inside [0, out) for
// every t in [0, k) iff k - 1 - p <= i < out - p.
std::pair<int64_t, int64_t> full_taps(int64_t k, int64_t p, int64_t in, int64_t out) {
  const int64_t lo = std::clamp<int64_t>(k - 1 - p, 0, in);
  return {lo, std::clamp<int64_t>(out - p, lo, in)};
}

// Whether col2im of g gathers: stride and dilation 1, and at most 8 edge rows and 8 edge
// columns (unrolled one by one, each with its own set of taps).
bool col2im_gathers(const ConvGeom& g) {
  if (g.s0 != 1 || g.s1 != 1 || g.d0 != 1 || g.d1 != 1 || g.groups != 1 || g.kh * g.kw > 49) return false;
  auto [r0, r1] = full_taps(g.kh, g.p0, g.h, g.ho);
  auto [c0, c1] = full_taps(g.kw, g.p1, g.w, g.wo);
  return g.h - (r1 - r0) <= 8 && g.w - (c1 - c0) <= 8;
}

// col2im of one plane as a gather: dx(ih, iw) = the sum over the taps (ki, kj) whose output
// (ih + p0 - ki, iw + p1 - kj) is inside, of dcol[cbase + (ki*kw + kj)*P + that output], in
// (ki, kj) order from 0 — the order the scatter adds them in, so the same bits. put(index, v)
// stores element index (xbase + ih*W + iw) of the plane. The interior rows and columns (every tap
// inside) are loops whose column loop vectorizes; the edge rows and columns are unrolled.
void col2im_gather(KernelBuilder& kb, const ConvGeom& g, int src, Expr cbase, Expr xbase,
                   const std::function<void(Expr, Expr)>& put) {
  auto [r0, r1] = full_taps(g.kh, g.p0, g.h, g.ho);
  auto [c0, c1] = full_taps(g.kw, g.p1, g.w, g.wo);
  auto inside = [](int64_t i, int64_t t, int64_t p, int64_t out) { return i + p - t >= 0 && i + p - t < out; };
  // The taps' sum at (ih, iw); a static row (col) index >= 0 limits the taps to those inside.
  auto sum = [&](Expr ih, int64_t row, Expr iw, int64_t col) {
    Expr acc = f32c(0);
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      if (row >= 0 && !inside(row, ki, g.p0, g.ho)) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        if (col >= 0 && !inside(col, kj, g.p1, g.wo)) continue;
        Expr at = cbase + i64c((ki * g.kw + kj) * g.p()) + (ih + i64c(g.p0 - ki)) * i64c(g.wo) + iw + i64c(g.p1 - kj);
        acc = acc + kb.load(src, at);
      }
    }
    return acc;
  };
  auto row = [&](Expr ih, int64_t r) {
    Expr xrow = kb.let("xrow", xbase + ih * i64c(g.w));
    for (int64_t iw = 0; iw < c0; ++iw) put(xrow + i64c(iw), sum(ih, r, i64c(iw), iw));
    if (c1 > c0) kb.loop("iw", i64c(c0), i64c(c1), false, [&](Expr iw) { put(xrow + iw, sum(ih, r, iw, -1)); });
    for (int64_t iw = c1; iw < g.w; ++iw) put(xrow + i64c(iw), sum(ih, r, i64c(iw), iw));
  };
  for (int64_t ih = 0; ih < r0; ++ih) row(i64c(ih), ih);
  if (r1 > r0) kb.loop("ih", i64c(r0), i64c(r1), false, [&](Expr ih) { row(ih, -1); });
  for (int64_t ih = r1; ih < g.h; ++ih) row(i64c(ih), ih);
}

// The col2im kernel of the images of g (g.b of them): bufs = {dcol, the chain's other operands
// in chain_operands' order, dx or the chain's end}, each a buffer of g.b images. Returns the
// kernel; *params receives the kernel param of each entry of bufs (the draft binds a storage
// once), so a later chunk can run it again on its own buffers.
int emit_col2im(LowerCtx& ctx, const ConvGeom& g, const std::vector<int>& bufs, const Chain* chain,
                std::vector<int>* params) {
  KernelDraft d(ctx, ctx.kernel_name(chain ? "col2im_chain" : "col2im"));
  params->clear();
  int src = d.read(bufs.front());
  params->push_back(src);
  std::vector<std::vector<int>> operands;
  size_t next = 1;
  if (chain)
    for (const ir::Node* n : chain->nodes) {
      std::vector<int> ps{-1};
      for (size_t i = 1; i < n->inputs.size(); ++i) {
        ps.push_back(d.read(bufs.at(next++)));
        params->push_back(ps.back());
      }
      operands.push_back(std::move(ps));
    }
  DNNC_CHECK(next + 1 == bufs.size(), "col2im: {} buffers for {} chain operands", bufs.size(), next - 1);
  int out = d.write(bufs.back());
  params->push_back(out);
  KernelBuilder& kb = d.kb;
  const int64_t plane = g.h * g.w;
  kb.loop("bc", g.b * g.c, ctx.parallel(g.b * g.c * plane * g.kh * g.kw), [&](Expr bc) {
    Expr xbase = kb.let("xbase", bc * i64c(plane));
    Expr cbase = kb.let("cbase", bc * i64c(g.kh * g.kw * g.p()));
    if (col2im_gathers(g)) {
      col2im_gather(kb, g, src, cbase, xbase, [&](Expr idx, Expr v) {
        kb.store(out, idx, chain ? apply_chain(kb, *chain, operands, v, idx) : v);
      });
      return;
    }
    DNNC_CHECK(!chain, "col2im: a chain on a scattering col2im");
    kb.loop("i", plane, false, [&](Expr i) { kb.store(out, xbase + i, f32c(0)); });
    for_each_tap(kb, g, nullptr, [&](Expr ki, Expr kj, Expr oh, Expr ow, Expr ih, Expr iw) {
      Expr row = ki * i64c(g.kw) + kj;
      kb.accumulate(out, xbase + ih * i64c(g.w) + iw, kb.load(src, cbase + row * i64c(g.p()) + oh * i64c(g.wo) + ow));
    });
  });
  return ctx.emit(std::move(d));
}

// The buffers of the chain's other operands (in chain_operands' order).
std::vector<int> chain_operand_buffers(LowerCtx& ctx, const Chain* chain) {
  std::vector<int> out;
  if (chain)
    for (const ir::Node* n : chain->nodes)
      for (size_t i = 1; i < n->inputs.size(); ++i) out.push_back(ctx.buffer(n->inputs[i]));
  return out;
}

void emit_dcol_gemm(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, int dy, int dcol, int64_t images) {
  GemmCall c;  // dcol_b [K, P] = Wᵀ [K, O] · dy_b [O, P]
  c.a = ctx.buffer(n.inputs[1]);
  c.trans_a = true;
  c.b = dy;
  c.c = dcol;
  c.m = g.k(), c.n = g.p(), c.k = g.o;
  c.lda = g.k(), c.ldb = g.p(), c.ldc = g.p();
  c.batch = images, c.stride_a = 0, c.stride_b = g.o * g.p(), c.stride_c = g.k() * g.p();
  c.threads = batch_threads(ctx, c);
  ctx.emit_gemm(c);
}

// Backward-input through dcol, in chunks of images (images_per_chunk; one chunk of the whole
// batch if it fits): per chunk, dcol_b = Wᵀ · dy_b for its images, then col2im of the chunk into
// its images of dx (or of the chain's end), all chunks through one dcol buffer.
void lower_backward_input_gemm(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, const Chain* chain) {
  const int64_t chunk = images_per_chunk(ctx, g);
  const int dcol = ctx.scratch("dcol", chunk * g.k() * g.p());
  const ir::ValueId last = chain ? chain->nodes.back()->outputs[0] : n.outputs[0];
  const int dy = ctx.buffer(n.inputs[0]);
  const std::vector<int> operands = chain_operand_buffers(ctx, chain);
  // The kernels' comment: the group's nodes (set by the caller) or the op's.
  const std::vector<std::string> base = chain ? ctx.comment : std::vector<std::string>{ctx.node_text(n)};
  if (chunk >= g.b) {
    emit_dcol_gemm(ctx, n, g, dy, dcol, g.b);
    std::vector<int> bufs{dcol};
    bufs.insert(bufs.end(), operands.begin(), operands.end());
    bufs.push_back(ctx.define(last));
    std::vector<int> params;
    emit_col2im(ctx, g, bufs, chain, &params);
    return;
  }
  const int dx = ctx.define(last);
  const int64_t x_image = g.c * g.h * g.w, y_image = g.o * g.p();
  int kernel = -1;
  int64_t kernel_images = 0;
  std::vector<int> params;
  for (int64_t b0 = 0; b0 < g.b; b0 += chunk) {
    const int64_t nb = std::min(chunk, g.b - b0);
    const Dims xc{nb, g.c, g.h, g.w};
    ctx.comment = base;
    ctx.comment.push_back(fmt::format("  (images {}..{})", b0, b0 + nb - 1));
    emit_dcol_gemm(ctx, n, g, ctx.view(dy, b0 * y_image, {nb, g.o, g.ho, g.wo}), dcol, nb);
    std::vector<int> bufs{dcol};
    for (int op : operands) bufs.push_back(ctx.view(op, b0 * x_image, xc));
    bufs.push_back(ctx.view(dx, b0 * x_image, xc));
    if (nb == kernel_images) {
      std::vector<int> args(ctx.prog.kernels.at(static_cast<size_t>(kernel)).params.size(), -1);
      for (size_t i = 0; i < bufs.size(); ++i) args.at(static_cast<size_t>(params[i])) = bufs[i];
      ctx.emit_again(kernel, args);
      continue;
    }
    ConvGeom gc = g;
    gc.b = nb;
    kernel = emit_col2im(ctx, gc, bufs, chain, &params), kernel_images = nb;
  }
}

// Direct loops: dx(b, c) = Σ_o Σ_taps w(o, c, tap) · dy(b, o) shifted, per plane.
void lower_backward_input_direct(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g) {
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int w = d.read(ctx.buffer(n.inputs[1]));
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  kb.loop("bc", g.b * g.c, ctx.parallel(g.b * g.c * g.h * g.w * g.kh * g.kw), [&](Expr bc) {
    Expr xbase = kb.let("xbase", bc * i64c(g.h * g.w));
    kb.loop("i", g.h * g.w, false, [&](Expr i) { kb.store(dx, xbase + i, f32c(0)); });
    Expr b = kb.let("b", bc / i64c(g.c));
    Expr c = kb.let("c", bc % i64c(g.c));
    Expr cw = g.groups == 1 ? c : kb.let("cw", c % i64c(g.cg));
    Expr o0 = g.groups == 1 ? i64c(0) : kb.let("o0", c / i64c(g.cg) * i64c(g.og));
    kb.loop("oi", g.og, false, [&](Expr oi) {
      Expr o = o0 + oi;
      Expr ybase = kb.let("ybase", (b * i64c(g.o) + o) * i64c(g.p()));
      for_each_weighted_tap(kb, g, w, o, cw, [&](Expr oh, Expr ow, Expr ih, Expr iw, Expr wv) {
        kb.accumulate(dx, xbase + ih * i64c(g.w) + iw, wv * kb.load(dy, ybase + oh * i64c(g.wo) + ow));
      });
    });
  });
  ctx.emit(std::move(d));
}

ConvGeom backward_input_geom(const LowerCtx& ctx, const ir::Node& n) {
  return conv_geom(ctx, n, completed_attrs(ctx, n), ctx.shape(n.outputs[0]), ctx.shape(n.inputs[1]),
                   ctx.shape(n.inputs[0]));
}

}  // namespace

void lower_conv2d_backward_input(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  ConvGeom g = conv_geom(ctx, n, a, ctx.shape(n.outputs[0]), ctx.shape(n.inputs[1]), ctx.shape(n.inputs[0]));
  if (conv_nhwc(ctx, n, g, n.inputs[0], n.outputs[0])) return lower_conv2d_backward_input_nhwc(ctx, n, g);
  if (use_direct(ctx, g)) return lower_backward_input_direct(ctx, n, g);
  lower_backward_input_gemm(ctx, n, g, nullptr);
}

size_t lower_conv_backward_input_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  const ir::Node& n = *nodes[i];
  if (n.op != "conv2d_backward_input" || n.outputs.size() != 1 || !is_f32(ctx, n.outputs[0])) return 0;
  ConvGeom g = backward_input_geom(ctx, n);
  if (ctx.nhwc(n.outputs[0]) || ctx.nhwc(n.inputs[0]) || use_direct(ctx, g) || !col2im_gathers(g)) return 0;
  const Dims xs = ctx.shape(n.outputs[0]);
  Chain chain = chain_after(ctx, nodes, i + 1, n.outputs[0], xs);
  if (chain.nodes.empty()) return 0;
  std::vector<const ir::Node*> inside{&n};
  inside.insert(inside.end(), chain.nodes.begin(), chain.nodes.end());
  if (!chain_stays_inside(ctx, n.outputs[0], chain, inside)) return 0;
  for (const ir::Node* c : chain.nodes)
    for (ir::ValueId v : c->inputs)
      if (ctx.nhwc(v)) return 0;
  if (ctx.nhwc(chain.nodes.back()->outputs[0])) return 0;
  ctx.comment.clear();
  for (const ir::Node* c : inside) ctx.comment.push_back(ctx.node_text(*c));
  lower_backward_input_gemm(ctx, n, g, &chain);
  return inside.size();
}

}  // namespace dnnc::codegen
