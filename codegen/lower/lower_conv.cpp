// conv2d and its backward-weight op: direct loops for small kernels and grouped convolutions,
// otherwise im2col kernels around batched GEMM library calls (backward-input:
// lower_conv_backward_input.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/lower/lower_chain.h"
#include "codegen/lower/lower_window.h"

namespace dnnc::codegen {

ConvGeom conv_geom(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Dims& x, const Dims& w,
                   const Dims& y) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) ctx.fail(n, "expected 4-d x, weight and dy");
  auto pair = [&](const char* key) {
    const auto& v = ir::attr_ints(a, key);
    if (v.size() != 2) ctx.fail(n, std::string(key) + " must have 2 entries");
    return v;
  };
  auto st = pair("stride"), pad = pair("padding"), dil = pair("dilation");
  int64_t groups = ir::attr_int(a, "groups");
  if (groups < 1 || w[0] % groups != 0 || x[1] != w[1] * groups) ctx.fail(n, "channels disagree with groups");
  return {x[0], x[1], x[2],   x[3],  w[0],  w[1],   w[0] / groups, w[2],   w[3],
          y[2], y[3], groups, st[0], st[1], pad[0], pad[1],        dil[0], dil[1]};
}

std::pair<Expr, Expr> valid_range(Expr k, int64_t kmax, int64_t s, int64_t p, int64_t d, int64_t in, int64_t out) {
  Expr a = i64c(p) - k * i64c(d);  // o*s >= a
  int64_t min_a = p - (kmax - 1) * d;
  Expr lo = s == 1 ? a : floordiv(a + i64c(s - 1), s, min_a + s - 1);
  Expr hi = (s == 1 ? a + i64c(in - 1) : floordiv(a + i64c(in - 1), s, min_a + in - 1)) + i64c(1);
  return {max(i64c(0), lo), min(i64c(out), hi)};
}

void vector_chunks(KernelBuilder& kb, const std::string& base, int64_t n, const std::function<void(Expr, Expr)>& f) {
  constexpr int64_t kChunk = 16;
  if (n <= kChunk || n % kChunk == 0) {
    kb.loop(base, n, false, [&](Expr i) { f(i, Expr()); });
    return;
  }
  kb.loop(base + "c", (n + kChunk - 1) / kChunk, false, [&](Expr c) {
    Expr lo = kb.let(base + "_lo", c * i64c(kChunk));
    Expr start = kb.let(base + "0", min(lo, i64c(n - kChunk)));
    kb.loop(base, start, start + i64c(kChunk), false, [&](Expr i) { f(i, lo); });
  });
}

void for_each_tap(KernelBuilder& kb, const ConvGeom& g, const std::function<void(Expr, Expr)>& per_tap,
                  const std::function<void(Expr, Expr, Expr, Expr, Expr, Expr)>& f) {
  kb.loop("ki", g.kh, false, [&](Expr ki) {
    kb.loop("kj", g.kw, false, [&](Expr kj) {
      if (per_tap) per_tap(ki, kj);
      auto [oh0, oh1] = valid_range(ki, g.kh, g.s0, g.p0, g.d0, g.h, g.ho);
      auto [ow0, ow1] = valid_range(kj, g.kw, g.s1, g.p1, g.d1, g.w, g.wo);
      kb.loop("oh", oh0, oh1, false, [&](Expr oh) {
        Expr ih = kb.let("ih", oh * i64c(g.s0) - i64c(g.p0) + ki * i64c(g.d0));
        kb.loop("ow", ow0, ow1, false,
                [&](Expr ow) { f(ki, kj, oh, ow, ih, ow * i64c(g.s1) - i64c(g.p1) + kj * i64c(g.d1)); });
      });
    });
  });
}

void for_each_weighted_tap(KernelBuilder& kb, const ConvGeom& g, int w, Expr o, Expr cw,
                           const std::function<void(Expr, Expr, Expr, Expr, Expr)>& f) {
  Expr wv;
  for_each_tap(
      kb, g,
      [&](Expr ki, Expr kj) {
        wv = kb.let("wv", kb.load(w, ((o * i64c(g.cg) + cw) * i64c(g.kh) + ki) * i64c(g.kw) + kj));
      },
      [&](Expr, Expr, Expr oh, Expr ow, Expr ih, Expr iw) { f(oh, ow, ih, iw, wv); });
}

int emit_padded_input(LowerCtx& ctx, const ConvGeom& g, int x, const std::string& x_name, ConvGeom* unpadded) {
  const int64_t hp = g.h + 2 * g.p0, wp = g.w + 2 * g.p1;
  const int xp = ctx.scratch("xpad", g.b * g.c * hp * wp);
  std::vector<std::string> saved = ctx.comment;
  ctx.comment.push_back("  (" + x_name + " with its padding as zeros)");
  KernelDraft d(ctx, ctx.kernel_name("pad"));
  const int in = d.read(x), out = d.write(xp);
  KernelBuilder& kb = d.kb;
  kb.loop("bc", g.b * g.c, ctx.parallel(g.b * g.c * hp * wp), [&](Expr bc) {
    Expr ibase = kb.let("ibase", bc * i64c(g.h * g.w));
    Expr obase = kb.let("obase", bc * i64c(hp * wp));
    if (g.p0 > 0) {
      kb.loop("i", g.p0 * wp, false, [&](Expr i) { kb.store(out, obase + i, f32c(0)); });
      kb.loop("i", g.p0 * wp, false, [&](Expr i) { kb.store(out, obase + i64c((hp - g.p0) * wp) + i, f32c(0)); });
    }
    kb.loop("r", g.h, false, [&](Expr r) {
      Expr orow = kb.let("orow", obase + (r + i64c(g.p0)) * i64c(wp));
      if (g.p1 > 0) {
        kb.loop("j", g.p1, false, [&](Expr j) { kb.store(out, orow + j, f32c(0)); });
        kb.loop("j", g.p1, false, [&](Expr j) { kb.store(out, orow + i64c(g.p1 + g.w) + j, f32c(0)); });
      }
      Expr irow = kb.let("irow", ibase + r * i64c(g.w));
      kb.loop("j", g.w, false, [&](Expr j) { kb.store(out, orow + i64c(g.p1) + j, kb.load(in, irow + j)); });
    });
  });
  ctx.emit(std::move(d));
  ctx.comment = std::move(saved);
  *unpadded = g;
  unpadded->h = hp, unpadded->w = wp, unpadded->p0 = 0, unpadded->p1 = 0;
  return xp;
}

// Direct loops for grouped convolutions and small kernels (K = C/groups·kh·kw up to
// direct_conv_max_k), except a padded one with at least 16 output channels: padded direct loops
// add each tap into the output plane in memory (two memory operations per multiply-add), and
// from 16 rows the GEMM is faster (vgg_cifar's 3 -> 32 first convolution: 3.6 -> 0.9 ms at
// batch 64).
bool use_direct(const LowerCtx& ctx, const ConvGeom& g) {
  if (g.groups > 1) return true;
  if (g.k() > ctx.options.direct_conv_max_k) return false;
  return (g.p0 == 0 && g.p1 == 0) || g.o < 16;
}

// Images per chunk so that a chunk's im2col columns (K x P floats per image) fit in
// LowerOptions::conv_columns_bytes, but at least conv_min_chunk_images; the whole batch where
// the budget is 0 or already fits.
int64_t images_per_chunk(const LowerCtx& ctx, const ConvGeom& g) {
  const int64_t per_image = g.k() * g.p() * 4;
  if (ctx.options.conv_columns_bytes <= 0 || g.b * per_image <= ctx.options.conv_columns_bytes) return g.b;
  return std::min(g.b, std::max({int64_t{1}, ctx.options.conv_min_chunk_images,
                                 ctx.options.conv_columns_bytes / per_image}));
}

GemmCall::Threads batch_threads(const LowerCtx& ctx, const GemmCall& c) {
  int64_t flops = 2 * c.m * c.n * c.k * c.batch;
  if (flops < ctx.options.gemm_parallel_flops) return GemmCall::Threads::single;
  return c.batch > 1 && !c.accumulate_batches ? GemmCall::Threads::over_batch : GemmCall::Threads::split;
}

namespace {


// Writes the im2col matrix of x. Per image (`across_batch` false): col[b][row][p]; across the
// batch (`across_batch` true, one GEMM for all images): col[row][b*P + p]. row = (c*kh + ki)*kw + kj,
// p = oh*wo + ow.
// The kernel of emit_im2col on buffers x_buffer -> col (g.b images); returns the kernel's index.
int emit_im2col_kernel(LowerCtx& ctx, const ConvGeom& g, int x_buffer, int col, bool across_batch) {
  KernelDraft d(ctx, ctx.kernel_name("im2col"));
  int x = d.read(x_buffer);
  int cp = d.write(col);
  KernelBuilder& kb = d.kb;
  bool padded = g.p0 > 0 || g.p1 > 0;
  int64_t taps = g.kh * g.kw;
  // Distance between consecutive rows of one image's block, and where (b, c)'s first row starts.
  int64_t row_stride = across_batch ? g.b * g.p() : g.p();
  kb.loop("bc", g.b * g.c, ctx.parallel(g.b * g.k() * g.p()), [&](Expr bc) {
    Expr xbase = kb.let("xbase", bc * i64c(g.h * g.w));
    // per image: (b*K + c*taps)*P = bc*taps*P;  across the batch: c*taps*B*P + b*P
    Expr cbase = across_batch ? kb.let("cbase", bc % i64c(g.c) * i64c(taps * row_stride) + bc / i64c(g.c) * i64c(g.p()))
                              : kb.let("cbase", bc * i64c(taps * g.p()));
    if (!padded) {
      for_each_tap(kb, g, nullptr, [&](Expr ki, Expr kj, Expr oh, Expr ow, Expr ih, Expr iw) {
        Expr row = ki * i64c(g.kw) + kj;
        kb.store(cp, cbase + row * i64c(row_stride) + oh * i64c(g.wo) + ow, kb.load(x, xbase + ih * i64c(g.w) + iw));
      });
      return;
    }
    // Padded: every element of a tap's row written once, the padding's zeros and the copied
    // pixels in contiguous runs (zero-filling the rows first wrote most of them twice).
    auto zeros = [&](Expr at, Expr begin, Expr end) {
      kb.loop("z", begin, end, false, [&](Expr i) { kb.store(cp, at + i, f32c(0)); });
    };
    kb.loop("ki", g.kh, false, [&](Expr ki) {
      kb.loop("kj", g.kw, false, [&](Expr kj) {
        auto [oh0, oh1] = valid_range(ki, g.kh, g.s0, g.p0, g.d0, g.h, g.ho);
        auto [ow0, ow1] = valid_range(kj, g.kw, g.s1, g.p1, g.d1, g.w, g.wo);
        Expr rbase = kb.let("rbase", cbase + (ki * i64c(g.kw) + kj) * i64c(row_stride));
        zeros(rbase, i64c(0), oh0 * i64c(g.wo));  // rows above the image
        kb.loop("oh", oh0, oh1, false, [&](Expr oh) {
          Expr ih = kb.let("ih", oh * i64c(g.s0) - i64c(g.p0) + ki * i64c(g.d0));
          Expr at = kb.let("at", rbase + oh * i64c(g.wo));
          zeros(at, i64c(0), ow0);
          kb.loop("ow", ow0, ow1, false, [&](Expr ow) {
            kb.store(cp, at + ow, kb.load(x, xbase + ih * i64c(g.w) + ow * i64c(g.s1) - i64c(g.p1) + kj * i64c(g.d1)));
          });
          zeros(at, ow1, i64c(g.wo));
        });
        zeros(rbase, oh1 * i64c(g.wo), i64c(g.p()));  // rows below
      });
    });
  });
  return ctx.emit(std::move(d));
}

int emit_im2col(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, ir::ValueId xv, bool across_batch) {
  int col = ctx.scratch("col", g.b * g.k() * g.p());
  ctx.comment = {ctx.node_text(n), "  (im2col of " + ctx.graph.value(xv).name + ")"};
  emit_im2col_kernel(ctx, g, ctx.buffer(xv), col, across_batch);
  return col;
}


}  // namespace

void lower_conv2d_im2col(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g, const Chain* chain) {
  // Per chunk of images (images_per_chunk): its im2col columns, then one GEMM per image of
  // the chunk, all chunks through one columns buffer.
  const bool has_bias = n.inputs.size() > 2;
  const bool fused = chain && !chain->nodes.empty();
  const ir::ValueId stored = fused ? chain->nodes.back()->outputs[0] : n.outputs[0];
  const int64_t chunk = images_per_chunk(ctx, g);
  const int col = ctx.scratch("col", chunk * g.k() * g.p());
  const int x = ctx.buffer(n.inputs[0]);
  const int64_t x_image = g.c * g.h * g.w, y_image = g.o * g.p();
  int y = -1;  // defined after the first im2col, as the program has always numbered it
  int kernel = -1;
  int64_t kernel_images = 0;
  std::map<int64_t, int> epilogues;  // images of a chunk -> its epilogue kernel
  std::vector<std::string> chain_comment;
  if (fused)
    for (const ir::Node* c : chain->nodes) chain_comment.push_back(ctx.node_text(*c));
  for (int64_t b0 = 0; b0 < g.b; b0 += chunk) {
    const int64_t nb = std::min(chunk, g.b - b0);
    ConvGeom gc = g;
    gc.b = nb;
    const bool whole = nb == g.b;
    const int xc = whole ? x : ctx.view(x, b0 * x_image, {nb, g.c, g.h, g.w});
    ctx.comment = {ctx.node_text(n), whole ? "  (im2col of " + ctx.graph.value(n.inputs[0]).name + ")"
                                           : fmt::format("  (im2col of images {}..{})", b0, b0 + nb - 1)};
    if (nb == kernel_images)
      ctx.emit_again(kernel, {xc, col});
    else
      kernel = emit_im2col_kernel(ctx, gc, xc, col, false), kernel_images = nb;
    ctx.comment = {ctx.node_text(n)};
    if (y < 0) {
      y = ctx.define(stored);
      if (fused) ctx.share_buffer(n.outputs[0], y);  // the GEMM writes C where the chain's end goes
    }
    const Dims chunk_shape{nb, g.o, g.ho, g.wo};
    const int yc = whole ? y : ctx.view(y, b0 * y_image, chunk_shape);
    GemmCall c;
    c.a = ctx.buffer(n.inputs[1]);
    c.b = col;
    c.c = yc;
    c.m = g.o, c.n = g.p(), c.k = g.k();
    c.lda = g.k(), c.ldb = g.p(), c.ldc = g.p();
    c.batch = nb, c.stride_a = 0, c.stride_b = g.k() * g.p(), c.stride_c = g.o * g.p();
    if (has_bias) {
      c.bias = ctx.buffer(n.inputs[2]);
      c.bias_kind = GemmCall::Bias::per_row;
    }
    c.threads = batch_threads(ctx, c);
    ctx.emit_gemm(c);
    if (!fused) continue;
    // The chain on each image's output right after its GEMM, in place, by the thread that
    // computed it: one epilogue kernel per chunk size, over the chunk's views.
    ctx.comment = chain_comment;
    KernelDraft d(ctx, fmt::format("g{}_epilogue", ctx.prog.steps.size() - 1));
    const int cp = d.write(yc);
    std::vector<std::vector<int>> operands;
    for (const ir::Node* cn : chain->nodes) {
      std::vector<int> ps{-1};
      for (size_t i = 1; i < cn->inputs.size(); ++i) {
        const int buf = ctx.buffer(cn->inputs[i]);
        ps.push_back(d.read(whole ? buf : ctx.view(buf, b0 * y_image, chunk_shape)));
      }
      operands.push_back(std::move(ps));
    }
    auto it = epilogues.find(nb);
    if (it != epilogues.end()) {
      Step& s = ctx.prog.steps.back();
      s.gemm.epilogue = it->second;
      s.args = d.args;
      s.comment.insert(s.comment.end(), chain_comment.begin(), chain_comment.end());
      continue;
    }
    Expr begin = d.kb.index_param("begin"), end = d.kb.index_param("end");
    d.kb.loop("i", begin, end, false, [&](Expr i) {
      d.kb.store(cp, i, apply_chain(d.kb, *chain, operands, d.kb.load(cp, i), i));
    });
    epilogues.emplace(nb, static_cast<int>(ctx.prog.kernels.size()));
    ctx.attach_epilogue(std::move(d));
  }
}

namespace {

void lower_conv2d(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  Dims ys = ctx.shape(n.outputs[0]);
  ConvGeom g = conv_geom(ctx, n, a, ctx.shape(n.inputs[0]), ctx.shape(n.inputs[1]), ys);
  if (conv_nhwc(ctx, n, g, n.inputs[0], n.outputs[0])) return lower_conv2d_nhwc(ctx, n, g);
  if (!use_direct(ctx, g)) return lower_conv2d_im2col(ctx, n, g, nullptr);
  const bool has_bias = n.inputs.size() > 2;
  int x_buffer = ctx.buffer(n.inputs[0]);
  if ((g.p0 > 0 || g.p1 > 0) && g.k() <= ctx.options.direct_conv_max_k) {
    // Padded: the unrolled loops below over an explicitly zero-padded copy (lenet5's 1 -> 6 5x5
    // conv with relu and pool at batch 64: 0.71 -> 0.23 ms, the copy 0.03 ms), the taps summed in
    // the same order.
    ctx.comment = {ctx.node_text(n)};
    x_buffer = emit_padded_input(ctx, g, x_buffer, ctx.graph.value(n.inputs[0]).name, &g);
  }
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(x_buffer);
  int w = d.read(ctx.buffer(n.inputs[1]));
  int bias = has_bias ? d.read(ctx.buffer(n.inputs[2])) : -1;
  int y = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  if (g.p0 == 0 && g.p1 == 0 && g.k() <= ctx.options.direct_conv_max_k) {
    // No padding: every tap of every output cell is inside the image, so each output is one
    // register accumulation over its taps (unrolled here, weights hoisted out of the plane), in
    // the reference's order, and the loop over a row's cells vectorizes.
    kb.loop("bo", g.b * g.o, ctx.parallel(product(ys) * g.k()), [&](Expr bo) {
      Expr b = kb.let("b", bo / i64c(g.o));
      Expr o = kb.let("o", bo % i64c(g.o));
      Expr c0 = g.groups == 1 ? i64c(0) : kb.let("c0", o / i64c(g.og) * i64c(g.cg));
      Expr xbase = kb.let("xbase", (b * i64c(g.c) + c0) * i64c(g.h * g.w));
      Expr wbase = kb.let("wbase", o * i64c(g.k()));
      std::vector<Expr> wv;
      for (int64_t t = 0; t < g.k(); ++t) wv.push_back(kb.let("w" + std::to_string(t), kb.load(w, wbase + i64c(t))));
      Expr init = has_bias ? kb.let("bias", kb.load(bias, o)) : f32c(0);
      kb.loop("oh", g.ho, false, [&](Expr oh) {
        Expr row = kb.let("row", xbase + oh * i64c(g.s0 * g.w));
        vector_chunks(kb, "ow", g.wo, [&](Expr ow, Expr) {  // idempotent stores: overlap is harmless
          Expr col = row + ow * i64c(g.s1);
          Expr acc = init;
          for (int64_t cw = 0, t = 0; cw < g.cg; ++cw)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj, ++t)
                acc = acc +
                      wv[static_cast<size_t>(t)] * kb.load(x, col + i64c(cw * g.h * g.w + ki * g.d0 * g.w + kj * g.d1));
          kb.store(y, bo * i64c(g.p()) + oh * i64c(g.wo) + ow, acc);
        });
      });
    });
    ctx.emit(std::move(d));
    return;
  }
  kb.loop("bo", g.b * g.o, ctx.parallel(product(ys) * g.k()), [&](Expr bo) {
    Expr b = kb.let("b", bo / i64c(g.o));
    Expr o = kb.let("o", bo % i64c(g.o));
    Expr ybase = kb.let("ybase", bo * i64c(g.p()));
    Expr init = has_bias ? kb.let("bias", kb.load(bias, o)) : f32c(0);
    kb.loop("i", g.p(), false, [&](Expr i) { kb.store(y, ybase + i, init); });
    Expr c0 = g.groups == 1 ? i64c(0) : kb.let("c0", o / i64c(g.og) * i64c(g.cg));
    kb.loop("cw", g.cg, false, [&](Expr cw) {
      Expr xbase = kb.let("xbase", (b * i64c(g.c) + c0 + cw) * i64c(g.h * g.w));
      for_each_weighted_tap(kb, g, w, o, cw, [&](Expr oh, Expr ow, Expr ih, Expr iw, Expr wv) {
        kb.accumulate(y, ybase + oh * i64c(g.wo) + ow, wv * kb.load(x, xbase + ih * i64c(g.w) + iw));
      });
    });
  });
  ctx.emit(std::move(d));
}

// Backward-weight in chunks of images (images_per_chunk): per chunk, the im2col columns of its
// images, then dW accumulates their products: dy_b · col_bᵀ summed in image order, either by one
// GEMM per chunk (β = 0 on the first, 1 after) or, where threads pay, the chunk's products side
// by side and a sum into dW (stored on the first chunk, added after). Both sum the images in the
// order the unchunked lowering does.
void lower_conv2d_backward_weight_chunked(LowerCtx& ctx, const ir::Node& n, const ConvGeom& g) {
  const int64_t chunk = images_per_chunk(ctx, g);
  const int col = ctx.scratch("col", chunk * g.k() * g.p());
  const int x = ctx.buffer(n.inputs[1]), dy = ctx.buffer(n.inputs[0]), dw = ctx.define(n.outputs[0]);
  const int64_t x_image = g.c * g.h * g.w, y_image = g.o * g.p(), ok = g.o * g.k();
  GemmCall per_image;  // dy_b [O, P] · col_bᵀ [P, K]
  per_image.trans_b = true;
  per_image.m = g.o, per_image.n = g.k(), per_image.k = g.p();
  per_image.lda = g.p(), per_image.ldb = g.p(), per_image.ldc = g.k();
  per_image.batch = chunk, per_image.stride_a = g.o * g.p(), per_image.stride_b = g.k() * g.p(), per_image.stride_c = ok;
  const bool threaded = batch_threads(ctx, per_image) == GemmCall::Threads::over_batch;
  const int parts = threaded ? ctx.scratch("dw_parts", chunk * ok) : -1;
  std::map<std::pair<int64_t, bool>, int> sum_kernels;  // (images, first chunk) -> kernel
  int im2col_kernel = -1;
  int64_t im2col_images = 0;
  for (int64_t b0 = 0; b0 < g.b; b0 += chunk) {
    const int64_t nb = std::min(chunk, g.b - b0);
    const bool first = b0 == 0;
    ConvGeom gc = g;
    gc.b = nb;
    const int xc = ctx.view(x, b0 * x_image, {nb, g.c, g.h, g.w});
    const int dyc = ctx.view(dy, b0 * y_image, {nb, g.o, g.ho, g.wo});
    ctx.comment = {ctx.node_text(n), fmt::format("  (im2col of images {}..{})", b0, b0 + nb - 1)};
    if (nb == im2col_images)
      ctx.emit_again(im2col_kernel, {xc, col});
    else
      im2col_kernel = emit_im2col_kernel(ctx, gc, xc, col, false), im2col_images = nb;
    ctx.comment = {ctx.node_text(n), fmt::format("  (images {}..{})", b0, b0 + nb - 1)};
    GemmCall c = per_image;
    c.a = dyc;
    c.b = col;
    c.batch = nb;
    if (!threaded) {
      c.c = dw;
      c.stride_c = 0;
      c.accumulate_batches = true;
      c.beta = first ? 0.0f : 1.0f;
      c.threads = GemmCall::Threads::single;
      ctx.emit_gemm(c);
      continue;
    }
    c.c = parts;
    c.threads = GemmCall::Threads::over_batch;
    ctx.emit_gemm(c);
    ctx.comment = {ctx.node_text(n), fmt::format("  (sum of images {}..{})", b0, b0 + nb - 1)};
    auto it = sum_kernels.find({nb, first});
    if (it != sum_kernels.end()) {
      ctx.emit_again(it->second, {parts, dw});
      continue;
    }
    KernelDraft d(ctx, ctx.kernel_name("dw_sum"));
    int pp = d.read(parts);
    int out = d.write(dw);
    KernelBuilder& kb = d.kb;
    if (first) kb.loop("i", ok, false, [&](Expr i) { kb.store(out, i, kb.load(pp, i)); });
    kb.loop("b", i64c(first ? 1 : 0), i64c(nb), false, [&](Expr b) {
      kb.loop("i", ok, false, [&](Expr i) { kb.accumulate(out, i, kb.load(pp, b * i64c(ok) + i)); });
    });
    sum_kernels[{nb, first}] = ctx.emit(std::move(d));
  }
}

void lower_conv2d_backward_weight(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  Dims ws = ctx.shape(n.outputs[0]);
  ConvGeom g = conv_geom(ctx, n, a, ctx.shape(n.inputs[1]), ws, ctx.shape(n.inputs[0]));
  if (conv_nhwc(ctx, n, g, n.inputs[0], n.inputs[1])) return lower_conv2d_backward_weight_nhwc(ctx, n, g);
  if (g.groups == 1 && images_per_chunk(ctx, g) < g.b) return lower_conv2d_backward_weight_chunked(ctx, n, g);
  if (g.groups == 1) {
    // dW [O, K] = sum over images of dy_b [O, P] · col_bᵀ [P, K]: one GEMM per image, summed
    // into dW, reading dy in place (no transpose).
    int col = emit_im2col(ctx, n, g, n.inputs[1], false);
    ctx.comment = {ctx.node_text(n)};
    GemmCall c;
    c.a = ctx.buffer(n.inputs[0]);
    c.b = col;
    c.trans_b = true;
    c.c = ctx.define(n.outputs[0]);
    c.m = g.o, c.n = g.k(), c.k = g.p();
    c.lda = g.p(), c.ldb = g.p(), c.ldc = g.k();
    c.batch = g.b, c.stride_a = g.o * g.p(), c.stride_b = g.k() * g.p(), c.stride_c = 0;
    c.accumulate_batches = true;
    c.threads = GemmCall::Threads::single;
    GemmCall per_image = c;
    per_image.accumulate_batches = false;
    if (g.b == 1 || batch_threads(ctx, per_image) != GemmCall::Threads::over_batch) {
      ctx.emit_gemm(c);
      return;
    }
    // Worth threads: the images' products side by side in scratch, on different threads, then
    // summed over the images.
    int64_t ok = g.o * g.k();
    int parts = ctx.scratch("dw_parts", g.b * ok);
    per_image.c = parts;
    per_image.stride_c = ok;
    per_image.threads = GemmCall::Threads::over_batch;
    ctx.emit_gemm(per_image);
    ctx.comment = {ctx.node_text(n), "  (sum of the images' products)"};
    KernelDraft d(ctx, ctx.kernel_name("dw_sum"));
    int pp = d.read(parts);
    int dw = d.write(ctx.define(n.outputs[0]));
    if (ctx.options.image_sums_outer) {
      d.kb.loop("i", ok, false, [&](Expr i) { d.kb.store(dw, i, d.kb.load(pp, i)); });
      d.kb.loop("b", i64c(1), i64c(g.b), false, [&](Expr b) {
        d.kb.loop("i", ok, false, [&](Expr i) { d.kb.accumulate(dw, i, d.kb.load(pp, b * i64c(ok) + i)); });
      });
    } else {
      d.kb.loop("i", ok, true, [&](Expr i) {
        Expr acc = d.kb.let("acc", d.kb.load(pp, i));
        d.kb.loop("b", i64c(1), i64c(g.b), false,
                  [&](Expr b) { d.kb.assign(acc, acc + d.kb.load(pp, b * i64c(ok) + i)); });
        d.kb.store(dw, i, acc);
      });
    }
    ctx.emit(std::move(d));
    return;
  }
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int x = d.read(ctx.buffer(n.inputs[1]));
  int dw = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  int64_t taps = g.kh * g.kw;
  kb.loop("ow_idx", g.o * g.cg, ctx.parallel(g.b * g.p() * product(ws)), [&](Expr oc) {
    Expr o = kb.let("o", oc / i64c(g.cg));
    Expr cw = kb.let("cw", oc % i64c(g.cg));
    Expr c = kb.let("c", o / i64c(g.og) * i64c(g.cg) + cw);
    kb.loop("tap", taps, false, [&](Expr tap) {
      Expr ki = kb.let("ki", tap / i64c(g.kw));
      Expr kj = kb.let("kj", tap % i64c(g.kw));
      Expr acc = kb.let("acc", f32c(0));
      auto [oh0, oh1] = valid_range(ki, g.kh, g.s0, g.p0, g.d0, g.h, g.ho);
      auto [ow0, ow1] = valid_range(kj, g.kw, g.s1, g.p1, g.d1, g.w, g.wo);
      kb.loop("b", g.b, false, [&](Expr b) {
        Expr ybase = kb.let("ybase", (b * i64c(g.o) + o) * i64c(g.p()));
        Expr xbase = kb.let("xbase", (b * i64c(g.c) + c) * i64c(g.h * g.w));
        kb.loop("oh", oh0, oh1, false, [&](Expr oh) {
          Expr ih = kb.let("ih", oh * i64c(g.s0) - i64c(g.p0) + ki * i64c(g.d0));
          kb.loop("ow", ow0, ow1, false, [&](Expr ow) {
            Expr iw = ow * i64c(g.s1) - i64c(g.p1) + kj * i64c(g.d1);
            kb.assign(acc, acc + kb.load(dy, ybase + oh * i64c(g.wo) + ow) * kb.load(x, xbase + ih * i64c(g.w) + iw));
          });
        });
      });
      kb.store(dw, oc * i64c(taps) + tap, acc);
    });
  });
  ctx.emit(std::move(d));
}

}  // namespace

void register_conv_lowerings(LowerTable& t) {
  t["conv2d"] = lower_conv2d;
  t["conv2d_backward_input"] = lower_conv2d_backward_input;
  t["conv2d_backward_weight"] = lower_conv2d_backward_weight;
}

}  // namespace dnnc::codegen
