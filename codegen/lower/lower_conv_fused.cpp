// Fused conv/pool lowerings for the groups of pass `fuse` (one kernel per (image, channel) plane):
//   forward:  conv2d -> elementwise chain (relu ...) -> maxpool2d
//             each output row is computed, run through the chain and stored once (only the values
//             read after the group); the plane, still in cache, is then pooled.
//   backward: maxpool2d_backward -> elementwise chain (relu_backward ...) -> bias-grad reduce_sum
//             or batchnorm2d_backward (its sums per plane, its dx per channel)
//             the gradient of each window is written where its maximum is (no zeroing pass, no
//             scatter when windows do not overlap), the chain applied on the way, and the bias
//             gradient summed per column of the plane (vectorizable) then across columns.
// Called by the lowering of a `conv2d_epilogue` / `maxpool2d_backward_epilogue` group
// (lower_groups.cpp), and for a lone conv2d or maxpool2d_backward with an empty chain. A group
// these do not cover (an im2col conv, values needed elsewhere, non-f32) returns 0 and the group's
// lowering runs the head on its own and the chain as one loop nest.
#include <algorithm>
#include <limits>

#include "codegen/lower/lower_chain.h"
#include "codegen/lower/lower_norm.h"
#include "codegen/lower/lower_window.h"
#include "ir/op_registry.h"

namespace dnnc::codegen {

namespace {

// ---- forward: conv2d -> chain -> maxpool2d ---------------------------------------------------

size_t lower_conv_chain_pool(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  const ir::Node& conv = *nodes[i];
  if (conv.outputs.size() != 1 || !is_f32(ctx, conv.outputs[0])) return 0;
  Dims ys = ctx.shape(conv.outputs[0]);
  ir::Attrs ca = completed_attrs(ctx, conv);
  ConvGeom g = conv_geom(ctx, conv, ca, ctx.shape(conv.inputs[0]), ctx.shape(conv.inputs[1]), ys);
  Chain chain = chain_after(ctx, nodes, i + 1, conv.outputs[0], ys);
  if (g.groups == 1 && g.k() > ctx.options.direct_conv_max_k) {
    // im2col + GEMM is faster; the chain (not the pool) runs as the GEMMs' epilogues.
    std::vector<const ir::Node*> inside{&conv};
    inside.insert(inside.end(), chain.nodes.begin(), chain.nodes.end());
    if (chain.nodes.empty() || !ctx.options.gemm_epilogues || !chain_stays_inside(ctx, conv.outputs[0], chain, inside))
      return 0;
    ctx.comment = {ctx.node_text(conv)};
    lower_conv2d_im2col(ctx, conv, g, &chain);
    return 1 + chain.nodes.size();
  }
  ir::ValueId last = chain.nodes.empty() ? conv.outputs[0] : chain.nodes.back()->outputs[0];
  size_t j = i + 1 + chain.nodes.size();
  const ir::Node* pool = nullptr;
  if (j < nodes.size() && nodes[j]->op == "maxpool2d" && nodes[j]->inputs[0] == last &&
      is_f32(ctx, nodes[j]->outputs[0]))
    pool = nodes[j];
  if (chain.nodes.empty() && !pool) return 0;
  std::vector<const ir::Node*> inside{&conv};
  inside.insert(inside.end(), chain.nodes.begin(), chain.nodes.end());
  if (pool) inside.push_back(pool);
  // Only the chain's end (and the pooled result) may be read after the group.
  if (!chain_stays_inside(ctx, conv.outputs[0], chain, inside)) return 0;
  bool keep_last = !pool || used_outside(ctx.graph, last, inside);

  ctx.comment.clear();
  for (const ir::Node* n : inside) ctx.comment.push_back(ctx.node_text(*n));
  // The plane buffer: the chain's end if it is needed later, else scratch.
  int plane_buf = keep_last ? ctx.define(last) : ctx.scratch("plane", product(ys));
  PoolGeom pg{};
  if (pool) pg = pool_geom(ctx, *pool, completed_attrs(ctx, *pool), ys, ctx.shape(pool->outputs[0]));
  int x_buffer = ctx.buffer(conv.inputs[0]);
  if ((g.p0 > 0 || g.p1 > 0) && g.k() <= ctx.options.direct_conv_max_k) {
    // Padded: the unrolled loops over an explicitly zero-padded copy (emit_padded_input).
    std::vector<std::string> group_comment = ctx.comment;
    ctx.comment = {ctx.node_text(conv)};
    x_buffer = emit_padded_input(ctx, g, x_buffer, ctx.graph.value(conv.inputs[0]).name, &g);
    ctx.comment = std::move(group_comment);
  }
  KernelDraft d(ctx, ctx.kernel_name(pool ? "conv2d_pool" : "conv2d_chain"));
  int x = d.read(x_buffer);
  int w = d.read(ctx.buffer(conv.inputs[1]));
  bool has_bias = conv.inputs.size() > 2;
  int bias = has_bias ? d.read(ctx.buffer(conv.inputs[2])) : -1;
  std::vector<std::vector<int>> operands = chain_operands(d, ctx, chain);
  int y = d.write(plane_buf);
  int py = pool ? d.write(ctx.define(pool->outputs[0])) : -1;
  KernelBuilder& kb = d.kb;
  bool unrolled = g.p0 == 0 && g.p1 == 0 && g.k() <= ctx.options.direct_conv_max_k;
  bool par = ctx.parallel(product(ys) * g.k());
  if (unrolled) {
    // Every tap inside the image: one register sum per output cell (the reference's order),
    // for `blk` (up to 8) out-channels of a group at once, so each input load feeds blk FMAs and
    // blk independent sums hide the FMA latency (4 -> 8: the seed CNN's conv 37 -> 27 us);
    // weights hoisted out of the planes, the chain applied before the single store; then the
    // planes, still in cache, pooled.
    int64_t blk = ctx.options.conv_channels_per_pass;
    while (blk > 1 && g.og % blk != 0) blk /= 2;
    int64_t nblk = g.o / blk;
    // Row bands (LowerOptions::conv_row_bands): band t computes conv rows [t*band, t*band +
    // band) (the last band also the rows after the last pooled one) and pools row t.
    const bool bands =
        ctx.options.conv_row_bands && (!pool || (pg.p0 == 0 && pg.p1 == 0 && pg.k0 <= pg.s0 && pg.k0 * pg.k1 <= 64));
    const int64_t band = pool ? pg.s0 : 1;
    const int64_t nbands = bands ? (pool ? pg.ho : g.ho) : 1;
    kb.loop("bq", g.b * nblk * nbands, par && g.b * nblk * nbands > 1, [&](Expr bq) {
      Expr t, q = bq;
      if (bands) {
        t = kb.let("band", bq % i64c(nbands));
        q = kb.let("plane", bq / i64c(nbands));
      }
      Expr b = kb.let("b", q / i64c(nblk));
      Expr o0 = kb.let("o0", q % i64c(nblk) * i64c(blk));
      Expr c0 = g.groups == 1 ? i64c(0) : kb.let("c0", o0 / i64c(g.og) * i64c(g.cg));
      Expr xbase = kb.let("xbase", (b * i64c(g.c) + c0) * i64c(g.h * g.w));
      Expr ybase = kb.let("ybase", (b * i64c(g.o) + o0) * i64c(g.p()));
      std::vector<std::vector<Expr>> wv(static_cast<size_t>(blk));
      std::vector<Expr> init(static_cast<size_t>(blk));
      for (int64_t j = 0; j < blk; ++j) {
        Expr wbase = kb.let("wbase", (o0 + i64c(j)) * i64c(g.k()));
        for (int64_t t = 0; t < g.k(); ++t)
          wv[static_cast<size_t>(j)].push_back(kb.let("w", kb.load(w, wbase + i64c(t))));
        init[static_cast<size_t>(j)] = has_bias ? kb.let("bias", kb.load(bias, o0 + i64c(j))) : f32c(0);
      }
      Expr oh_begin = i64c(0), oh_end = i64c(g.ho);
      if (bands) {
        oh_begin = kb.let("oh_lo", t * i64c(band));
        if (nbands * band >= g.ho)
          oh_end = kb.let("oh_hi", min(oh_begin + i64c(band), i64c(g.ho)));
        else  // conv rows after the last pooled row: the last band's
          oh_end = kb.let("oh_hi", select(eq(t, i64c(nbands - 1)), i64c(g.ho), oh_begin + i64c(band)));
      }
      kb.loop("oh", oh_begin, oh_end, false, [&](Expr oh) {
        Expr row = kb.let("row", xbase + oh * i64c(g.s0 * g.w));
        Expr yrow = kb.let("yrow", ybase + oh * i64c(g.wo));
        vector_chunks(kb, "ow", g.wo, [&](Expr ow, Expr) {  // idempotent stores: overlap is harmless
          Expr col = row + ow * i64c(g.s1);
          std::vector<Expr> acc = init;
          for (int64_t cw = 0, t = 0; cw < g.cg; ++cw)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj, ++t) {
                Expr xv = kb.let("x", kb.load(x, col + i64c(cw * g.h * g.w + ki * g.d0 * g.w + kj * g.d1)));
                for (int64_t j = 0; j < blk; ++j) {
                  auto& a = acc[static_cast<size_t>(j)];
                  a = a + wv[static_cast<size_t>(j)][static_cast<size_t>(t)] * xv;
                  if (blk > 1) a = kb.let("acc", a);
                }
              }
          for (int64_t j = 0; j < blk; ++j) {
            Expr at = yrow + i64c(j * g.p()) + ow;
            Expr v = acc[static_cast<size_t>(j)];
            if (!chain.nodes.empty() && blk == 1) v = kb.let("acc", v);
            kb.store(y, at, apply_chain(kb, chain, operands, v, at));
          }
        });
      });
      if (pool)
        for (int64_t j = 0; j < blk; ++j)
          maxpool_plane(kb, pg, y, ybase + i64c(j * g.p()), py, (b * i64c(g.o) + o0 + i64c(j)) * i64c(pg.ho * pg.wo),
                        bands ? t : Expr{}, bands ? t + i64c(1) : Expr{});
    });
    ctx.emit(std::move(d));
    return inside.size();
  }
  kb.loop("bo", g.b * g.o, par && g.b * g.o > 1, [&](Expr bo) {
    Expr b = kb.let("b", bo / i64c(g.o));
    Expr o = kb.let("o", bo % i64c(g.o));
    Expr ybase = kb.let("ybase", bo * i64c(g.p()));
    Expr c0 = g.groups == 1 ? i64c(0) : kb.let("c0", o / i64c(g.og) * i64c(g.cg));
    Expr init = has_bias ? kb.let("bias", kb.load(bias, o)) : f32c(0);
    {
      // Padded (or large) kernels: accumulate tap by tap into the plane, then the chain in place.
      kb.loop("i", g.p(), false, [&](Expr i) { kb.store(y, ybase + i, init); });
      kb.loop("cw", g.cg, false, [&](Expr cw) {
        Expr xbase = kb.let("xbase", (b * i64c(g.c) + c0 + cw) * i64c(g.h * g.w));
        kb.loop("ki", g.kh, false, [&](Expr ki) {
          kb.loop("kj", g.kw, false, [&](Expr kj) {
            Expr wt = kb.let("wv", kb.load(w, ((o * i64c(g.cg) + cw) * i64c(g.kh) + ki) * i64c(g.kw) + kj));
            auto [oh0, oh1] = valid_range(ki, g.kh, g.s0, g.p0, g.d0, g.h, g.ho);
            auto [ow0, ow1] = valid_range(kj, g.kw, g.s1, g.p1, g.d1, g.w, g.wo);
            kb.loop("oh", oh0, oh1, false, [&](Expr oh) {
              Expr ih = kb.let("ih", oh * i64c(g.s0) - i64c(g.p0) + ki * i64c(g.d0));
              kb.loop("ow", ow0, ow1, false, [&](Expr ow) {
                Expr iw = ow * i64c(g.s1) - i64c(g.p1) + kj * i64c(g.d1);
                kb.accumulate(y, ybase + oh * i64c(g.wo) + ow, wt * kb.load(x, xbase + ih * i64c(g.w) + iw));
              });
            });
          });
        });
      });
      if (!chain.nodes.empty())
        kb.loop("i", g.p(), false, [&](Expr i) {
          Expr v = kb.let("c", kb.load(y, ybase + i));
          kb.store(y, ybase + i, apply_chain(kb, chain, operands, v, ybase + i));
        });
    }
    if (pool) maxpool_plane(kb, pg, y, ybase, py, bo * i64c(pg.ho * pg.wo));
  });
  ctx.emit(std::move(d));
  return inside.size();
}

// ---- backward: maxpool2d_backward -> chain -> bias-grad sum ---------------------------------

size_t lower_pool_backward_chain(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  const ir::Node& pb = *nodes[i];
  if (pb.outputs.size() != 1 || !is_f32(ctx, pb.outputs[0]) || !is_f32(ctx, pb.inputs[0]) || !is_f32(ctx, pb.inputs[1]))
    return 0;
  Dims xs = ctx.shape(pb.outputs[0]);
  PoolGeom g = pool_geom(ctx, pb, completed_attrs(ctx, pb), ctx.shape(pb.inputs[1]), ctx.shape(pb.inputs[0]));
  Chain chain = chain_after(ctx, nodes, i + 1, pb.outputs[0], xs);
  ir::ValueId last = chain.nodes.empty() ? pb.outputs[0] : chain.nodes.back()->outputs[0];
  size_t j = i + 1 + chain.nodes.size();
  const ir::Node* bsum = nullptr;
  if (ctx.options.pool_bias_grad_fused && j < nodes.size() && nodes[j]->op == "reduce_sum" &&
      nodes[j]->inputs[0] == last && is_f32(ctx, nodes[j]->outputs[0])) {
    ir::Attrs ra = completed_attrs(ctx, *nodes[j]);
    if (ir::attr_ints(ra, "axes") == std::vector<int64_t>{0, 2, 3} && !ir::attr_bool(ra, "keepdim")) bsum = nodes[j];
  }
  // Or batchnorm's backward of the chain's end (LowerOptions::batchnorm_epilogues): its sums
  // added up plane by plane while each is in cache, its dx after the channel's last image.
  const ir::Node* bnb = nullptr;
  if (!bsum && ctx.options.batchnorm_epilogues && j < nodes.size() && nodes[j]->op == "batchnorm2d_backward" &&
      nodes[j]->inputs[0] == last && ctx.shape(nodes[j]->inputs[1]) == xs && is_f32(ctx, nodes[j]->inputs[1]) &&
      !ctx.nhwc(nodes[j]->inputs[1]) && !ctx.nhwc(nodes[j]->outputs[0]))
    bnb = nodes[j];
  std::vector<const ir::Node*> inside{&pb};
  inside.insert(inside.end(), chain.nodes.begin(), chain.nodes.end());
  if (bsum) inside.push_back(bsum);
  if (bnb) inside.push_back(bnb);
  if (!chain_stays_inside(ctx, pb.outputs[0], chain, inside)) return 0;
  int64_t b = xs[0], c = xs[1];
  int64_t plane = g.h * g.w;

  ctx.comment.clear();
  for (const ir::Node* n : inside) ctx.comment.push_back(ctx.node_text(*n));
  int part = bsum ? ctx.scratch("bias_part", c * g.w) : -1;
  bool tiled = g.p0 == 0 && g.p1 == 0 && g.s0 == g.k0 && g.s1 == g.k1 && g.k0 * g.k1 <= 64;
  // The argmax of each window of a row, per parallel iteration (tiled windows only).
  const bool by_channel = bsum || bnb;  // channels over the threads, images inside
  int idx = tiled ? ctx.scratch("pool_argmax", (by_channel ? c : b * c) * g.wo) : -1;
  KernelDraft d(ctx, ctx.kernel_name(bsum  ? "maxpool2d_backward_bias"
                                     : bnb ? "maxpool2d_backward_batchnorm"
                                           : "maxpool2d_backward_chain"));
  int dy = d.read(ctx.buffer(pb.inputs[0]));
  int x = d.read(ctx.buffer(pb.inputs[1]));
  std::vector<std::vector<int>> operands = chain_operands(d, ctx, chain);
  int dx = d.write(ctx.define(last));
  int pp = bsum ? d.write(part) : -1;
  int ip = tiled ? d.write(idx) : -1;
  int bg = bsum ? d.write(ctx.define(bsum->outputs[0])) : -1;
  BnBackward bp;
  if (bnb) bp = bn_backward_params(ctx, d, *bnb, dx);
  KernelBuilder& kb = d.kb;
  // Windows that tile the plane without overlap or padding: each input cell gets its window's
  // gradient or 0 directly; cells past the last window get 0. With `pbase` (a bias-grad sum),
  // every value written is also added into the channel's partial sums at pbase + its window
  // column (or its own column, outside the windows), so the plane is not read again.
  auto plane_body = [&](Expr xbase, Expr ybase, Expr ibase, Expr pbase) {
    auto put = [&](Expr idx, Expr v) {
      Expr cv = apply_chain(kb, chain, operands, v, idx);
      if (!pbase) {
        kb.store(dx, idx, cv);
        return cv;
      }
      Expr named = kb.let("d", cv);
      kb.store(dx, idx, named);
      return named;
    };
    if (tiled) {
      kb.loop("oh", g.ho, false, [&](Expr oh) {
        Expr row = kb.let("row", xbase + oh * i64c(g.k0 * g.w));
        // Two passes over the row's windows: their argmax into scratch, then the writes (gcc
        // vectorizes each pass; one loop doing both is left scalar, "control flow in loop").
        kb.loop("ow", g.wo, false, [&](Expr ow) {
          Expr col = kb.let("col", row + ow * i64c(g.k1));
          Expr best, best_val;
          for (int64_t r = 0, t = 0; r < g.k0; ++r)
            for (int64_t q = 0; q < g.k1; ++q, ++t) {
              Expr v = kb.let("v", kb.load(x, col + i64c(r * g.w + q)));
              if (!best) {
                best_val = v;
                best = f32c(0);
                continue;
              }
              // The window position as an f32 (exact for < 2^24), so the selects vectorize with
              // the values' lanes; the condition is not a named bool, which blocks if-conversion.
              Expr nan = unary(UnaryOp::is_nan, v), more = gt(v, best_val);
              Expr tv = f32c(static_cast<double>(t));
              best = kb.let("bi", select(nan, tv, select(more, tv, best)));
              best_val = kb.let("m", select(nan, v, select(more, v, best_val)));
            }
          kb.store(ip, ibase + ow, best);
        });
        kb.loop("ow", g.wo, false, [&](Expr ow) {
          Expr col = kb.let("col", row + ow * i64c(g.k1));
          Expr best = kb.let("bi", kb.load(ip, ibase + ow));
          Expr grad = kb.let("grad", kb.load(dy, ybase + oh * i64c(g.wo) + ow));
          Expr sum;
          for (int64_t r = 0, t = 0; r < g.k0; ++r)
            for (int64_t q = 0; q < g.k1; ++q, ++t) {
              Expr v = put(col + i64c(r * g.w + q), select(eq(best, f32c(static_cast<double>(t))), grad, f32c(0)));
              sum = sum ? sum + v : v;
            }
          if (pbase) kb.accumulate(pp, pbase + ow, sum);
        });
        // Columns right of the last window.
        if (g.w > g.wo * g.k1)
          kb.loop("r", g.k0, false, [&](Expr r) {
            kb.loop("cx", i64c(g.wo * g.k1), i64c(g.w), false, [&](Expr cx) {
              Expr v = put(row + r * i64c(g.w) + cx, f32c(0));
              if (pbase) kb.accumulate(pp, pbase + cx, v);
            });
          });
      });
      if (g.h > g.ho * g.k0)  // rows below the last window
        kb.loop("ih", i64c(g.ho * g.k0), i64c(g.h), false, [&](Expr ih) {
          kb.loop("iw", g.w, false, [&](Expr iw) {
            Expr v = put(xbase + ih * i64c(g.w) + iw, f32c(0));
            if (pbase) kb.accumulate(pp, pbase + iw, v);
          });
        });
    } else {
      // Overlapping or padded windows: zero the plane, add each window's gradient at its
      // maximum, then the chain in place.
      kb.loop("i", plane, false, [&](Expr i) { kb.store(dx, xbase + i, f32c(0)); });
      kb.loop("oh", g.ho, false, [&](Expr oh) {
        kb.loop("ow", g.wo, false, [&](Expr ow) {
          Expr best = window_argmax(kb, x, g, xbase, oh, ow, nullptr);
          kb.accumulate(dx, xbase + best, kb.load(dy, ybase + oh * i64c(g.wo) + ow));
        });
      });
      if (!chain.nodes.empty())
        kb.loop("i", plane, false, [&](Expr i) {
          Expr v = kb.let("g", kb.load(dx, xbase + i));
          put(xbase + i, v);
        });
    }
  };
  bool par = ctx.parallel(product(xs));
  if (bnb) {
    kb.loop("ch", c, par && c > 1, [&](Expr ch) {
      BnBackwardSums sums = bn_backward_begin(kb, bp, ch);
      kb.loop("b", b, false, [&](Expr bv) {
        Expr xbase = kb.let("xbase", (bv * i64c(c) + ch) * i64c(plane));
        plane_body(xbase, kb.let("ybase", (bv * i64c(c) + ch) * i64c(g.ho * g.wo)), ch * i64c(g.wo), Expr());
        kb.loop("i", plane, false, [&](Expr iv) {  // the plane just written, still in cache
          std::vector<Expr> t = bn_backward_terms(kb, bp, sums, xbase + iv);
          kb.assign(sums.sum, sums.sum + cast(ScalarType::f64, t[0]));
          kb.assign(sums.dotp, sums.dotp + cast(ScalarType::f64, t[1]));
        });
      });
      bn_backward_finish(kb, bp, ch, sums);
    });
  } else if (!bsum) {
    kb.loop("bc", b * c, par && b * c > 1, [&](Expr bc) {
      plane_body(kb.let("xbase", bc * i64c(plane)), kb.let("ybase", bc * i64c(g.ho * g.wo)), bc * i64c(g.wo), Expr());
    });
  } else {
    // Channels over the threads, images inside: the bias gradient of a channel is summed per
    // column of its planes (no reduction in the inner loop), then across the columns.
    kb.loop("ch", c, par && c > 1, [&](Expr ch) {
      Expr pbase = kb.let("pbase", ch * i64c(g.w));
      kb.loop("j", g.w, false, [&](Expr jv) { kb.store(pp, pbase + jv, f32c(0)); });
      kb.loop("b", b, false, [&](Expr bv) {
        Expr bc = kb.let("bc", bv * i64c(c) + ch);
        Expr xbase = kb.let("xbase", bc * i64c(plane));
        plane_body(xbase, kb.let("ybase", bc * i64c(g.ho * g.wo)), ch * i64c(g.wo), tiled ? pbase : Expr());
        if (!tiled)  // the scatter path: sum the finished plane per column
          kb.loop("ih", g.h, false, [&](Expr ih) {
            Expr row = kb.let("srow", xbase + ih * i64c(g.w));
            kb.loop("iw", g.w, false, [&](Expr iw) { kb.accumulate(pp, pbase + iw, kb.load(dx, row + iw)); });
          });
      });
      Expr acc = kb.let("acc", f32c(0));
      kb.loop("j", g.w, false, [&](Expr jv) { kb.assign(acc, acc + kb.load(pp, pbase + jv)); });
      kb.store(bg, ch, acc);
    });
  }
  ctx.emit(std::move(d));
  return inside.size();
}

}  // namespace

size_t lower_conv_pool_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  // The plane kernels address NCHW planes: an {nhwc} group is lowered role by role (its head by
  // the op's NHWC lowering, the chain as one loop nest, the pool and the sums).
  for (ir::ValueId v : nodes[i]->inputs)
    if (ctx.nhwc(v)) return 0;
  for (ir::ValueId v : nodes[i]->outputs)
    if (ctx.nhwc(v)) return 0;
  if (nodes[i]->op == "conv2d") return lower_conv_chain_pool(ctx, nodes, i);
  if (nodes[i]->op == "maxpool2d_backward") return lower_pool_backward_chain(ctx, nodes, i);
  return 0;
}

}  // namespace dnnc::codegen
