// maxpool2d / avgpool2d and their backward ops as KernelIR loops over (image, channel) planes,
// with PyTorch's window rules (max: first maximum, NaN propagates; avg: count_include_pad).
#include <limits>

#include "codegen/lower/lower_window.h"
#include "ir/check.h"
#include "ir/shape_check.h"

namespace dnnc::codegen {

PoolGeom pool_geom(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Dims& x, const Dims& y) {
  if (x.size() != 4 || y.size() != 4) ctx.fail(n, "expected x [B,C,H,W]");
  const auto& k = ir::attr_ints(a, "kernel");
  const auto& p = ir::attr_ints(a, "padding");
  if (k.size() != 2 || p.size() != 2) ctx.fail(n, "kernel and padding must have 2 entries");
  std::array<int64_t, 2> s;
  try {
    s = ir::pool_stride(n.op, a);
  } catch (const std::exception& e) {
    ctx.fail(n, e.what());
  }
  return {x[0] * x[1], x[2], x[3], y[2], y[3], k[0], k[1], s[0], s[1], p[0], p[1]};
}

PlaneMap plane_map(const LowerCtx& ctx, ir::ValueId v) {
  Dims s = ctx.shape(v);
  DNNC_CHECK(s.size() == 4, "plane_map of a {}-d value", s.size());
  return {s[1], s[2] * s[3], ctx.nhwc(v)};
}

Expr PlaneMap::plane(KernelBuilder& kb, const std::string& name, Expr bc) const {
  if (!nhwc) return kb.let(name, bc * i64c(hw));
  return kb.let(name, bc / i64c(c) * i64c(hw * c) + bc % i64c(c));
}

namespace {

// The clipped window of output cell (oh, ow): rows [h0, h1), columns [w0, w1).
struct Window {
  Expr h0, h1, w0, w1;
};

Window max_window(KernelBuilder& kb, const PoolGeom& g, Expr oh, Expr ow) {
  Expr h0 = kb.let("h0", oh * i64c(g.s0) - i64c(g.p0));
  Expr w0 = kb.let("w0", ow * i64c(g.s1) - i64c(g.p1));
  return {max(h0, i64c(0)), min(h0 + i64c(g.k0), i64c(g.h)), max(w0, i64c(0)), min(w0 + i64c(g.k1), i64c(g.w))};
}

// PyTorch's avg_pool2d window and divisor; returns the divisor as an i64 expression.
Expr avg_window(KernelBuilder& kb, const PoolGeom& g, bool include_pad, Expr oh, Expr ow, Window* win) {
  Expr h0 = kb.let("h0", oh * i64c(g.s0) - i64c(g.p0));
  Expr w0 = kb.let("w0", ow * i64c(g.s1) - i64c(g.p1));
  Expr h1 = kb.let("h1", min(h0 + i64c(g.k0), i64c(g.h + g.p0)));
  Expr w1 = kb.let("w1", min(w0 + i64c(g.k1), i64c(g.w + g.p1)));
  Expr padded = (h1 - h0) * (w1 - w0);
  *win = {kb.let("ch0", max(h0, i64c(0))), kb.let("ch1", min(h1, i64c(g.h))), kb.let("cw0", max(w0, i64c(0))),
          kb.let("cw1", min(w1, i64c(g.w)))};
  return kb.let("divisor", include_pad ? padded : (win->h1 - win->h0) * (win->w1 - win->w0));
}

// Loops over planes and output cells: f(xbase, ybase, oh, ow), with x's and y's planes as
// `xm` and `ym` address them (the same layout; pixel() apart).
void for_each_cell(LowerCtx& ctx, KernelBuilder& kb, const PoolGeom& g, const PlaneMap& xm, const PlaneMap& ym,
                   int dx_zero, const std::function<void(Expr, Expr, Expr, Expr)>& f) {
  int64_t work = g.bc * std::max(g.h * g.w, g.ho * g.wo * g.k0 * g.k1);
  auto plane = [&](Expr xbase, Expr ybase) {
    if (dx_zero >= 0)
      kb.loop("i", g.h * g.w, false, [&](Expr i) { kb.store(dx_zero, xbase + times(i, xm.pixel()), f32c(0)); });
    kb.loop("oh", g.ho, false, [&](Expr oh) { kb.loop("ow", g.wo, false, [&](Expr ow) { f(xbase, ybase, oh, ow); }); });
  };
  if (xm.nhwc) {
    // Channels-last planes interleave: threads take whole images (contiguous, so the parallel
    // loop is provably race-free), the channels of an image in order: the same plane order.
    const int64_t images = g.bc / xm.c;
    kb.loop("b", images, ctx.parallel(work) && images > 1, [&](Expr b) {
      kb.loop("c", xm.c, false, [&](Expr c) {
        Expr xbase = kb.let("xbase", b * i64c(xm.hw * xm.c) + c);
        Expr ybase = kb.let("ybase", b * i64c(ym.hw * ym.c) + c);
        plane(xbase, ybase);
      });
    });
    return;
  }
  kb.loop("bc", g.bc, ctx.parallel(work) && g.bc > 1, [&](Expr bc) {
    Expr xbase = xm.plane(kb, "xbase", bc);  // in this order: the lets print as they are made
    Expr ybase = ym.plane(kb, "ybase", bc);
    plane(xbase, ybase);
  });
}

}  // namespace

Expr window_argmax(KernelBuilder& kb, int x, const PoolGeom& g, Expr xbase, Expr oh, Expr ow, Expr* value,
                   int64_t pixel) {
  Window win = max_window(kb, g, oh, ow);
  Expr best = kb.let("best", win.h0 * i64c(g.w) + win.w0);
  Expr best_val = kb.let("best_val", f32c(-std::numeric_limits<float>::infinity()));
  kb.loop("ih", win.h0, win.h1, false, [&](Expr ih) {
    kb.loop("iw", win.w0, win.w1, false, [&](Expr iw) {
      Expr v = kb.let("v", kb.load(x, pixel_at(xbase, ih, g.w, iw, pixel)));
      kb.if_(binary(BinaryOp::logical_or, gt(v, best_val), unary(UnaryOp::is_nan, v)), [&] {
        kb.assign(best_val, v);
        kb.assign(best, ih * i64c(g.w) + iw);
      });
    });
  });
  if (value) *value = best_val;
  return best;
}

// Max pooling of one plane (x at xbase, y at ybase). Unpadded windows (always inside the plane)
// are unrolled into selects so the loop over output columns vectorizes; padded ones use the
// clipped-window loop. Same result as the reference: the first maximum, NaN propagating.
// Output rows [ph_begin, ph_end) if given, else all.
void maxpool_plane(KernelBuilder& kb, const PoolGeom& g, int x, Expr xbase, int y, Expr ybase, Expr ph_begin,
                   Expr ph_end) {
  bool unrolled = g.p0 == 0 && g.p1 == 0 && g.k0 * g.k1 <= 64;
  if (!ph_begin) {
    ph_begin = i64c(0);
    ph_end = i64c(g.ho);
  }
  kb.loop("ph", ph_begin, ph_end, false, [&](Expr oh) {
    if (!unrolled) {
      kb.loop("pw", g.wo, false, [&](Expr ow) {
        Expr best_val;
        Expr best = window_argmax(kb, x, g, xbase, oh, ow, &best_val);
        kb.store(y, ybase + oh * i64c(g.wo) + ow, kb.load(x, xbase + best));
      });
      return;
    }
    Expr row = kb.let("prow", xbase + oh * i64c(g.s0 * g.w));
    kb.loop("pw", g.wo, false, [&](Expr ow) {
      Expr col = row + ow * i64c(g.s1);
      Expr best;
      for (int64_t r = 0; r < g.k0; ++r)
        for (int64_t q = 0; q < g.k1; ++q) {
          Expr v = kb.let("v", kb.load(x, col + i64c(r * g.w + q)));
          best = !best ? v
                       : kb.let("m",
                                select(binary(BinaryOp::logical_or, gt(v, best), unary(UnaryOp::is_nan, v)), v, best));
        }
      kb.store(y, ybase + oh * i64c(g.wo) + ow, best);
    });
  });
}

namespace {

void lower_maxpool(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  PoolGeom g = pool_geom(ctx, n, a, ctx.shape(n.inputs[0]), ctx.shape(n.outputs[0]));
  PlaneMap xm = plane_map(ctx, n.inputs[0]), ym = plane_map(ctx, n.outputs[0]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int y = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  if (!xm.nhwc && g.p0 == 0 && g.p1 == 0 && g.k0 * g.k1 <= 64) {
    // Unpadded NCHW windows: unrolled selects, the loop over output columns vectorizes (lenet5's
    // second pool at batch 64: 0.145 -> 0.044 ms).
    kb.loop("bc", g.bc, ctx.parallel(g.bc * g.h * g.w) && g.bc > 1, [&](Expr bc) {
      maxpool_plane(kb, g, x, kb.let("xbase", bc * i64c(g.h * g.w)), y, kb.let("ybase", bc * i64c(g.ho * g.wo)));
    });
    ctx.emit(std::move(d));
    return;
  }
  for_each_cell(ctx, kb, g, xm, ym, -1, [&](Expr xbase, Expr ybase, Expr oh, Expr ow) {
    Expr best_val;
    Expr best = window_argmax(kb, x, g, xbase, oh, ow, &best_val, xm.pixel());
    kb.store(y, pixel_at(ybase, oh, g.wo, ow, ym.pixel()), kb.load(x, xbase + times(best, xm.pixel())));
  });
  ctx.emit(std::move(d));
}

void lower_maxpool_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  PoolGeom g = pool_geom(ctx, n, a, ctx.shape(n.inputs[1]), ctx.shape(n.inputs[0]));
  PlaneMap xm = plane_map(ctx, n.inputs[1]), ym = plane_map(ctx, n.inputs[0]);
  DNNC_CHECK(ctx.nhwc(n.outputs[0]) == xm.nhwc, "maxpool2d_backward: dx and x in different layouts");
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int x = d.read(ctx.buffer(n.inputs[1]));
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  const int64_t px = xm.pixel(), py = ym.pixel();
  for_each_cell(ctx, kb, g, xm, ym, dx, [&](Expr xbase, Expr ybase, Expr oh, Expr ow) {
    Expr best = window_argmax(kb, x, g, xbase, oh, ow, nullptr, px);
    kb.accumulate(dx, xbase + times(best, px), kb.load(dy, pixel_at(ybase, oh, g.wo, ow, py)));
  });
  ctx.emit(std::move(d));
}

void lower_avgpool(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  PoolGeom g = pool_geom(ctx, n, a, ctx.shape(n.inputs[0]), ctx.shape(n.outputs[0]));
  bool include_pad = ir::attr_bool(a, "count_include_pad");
  PlaneMap xm = plane_map(ctx, n.inputs[0]), ym = plane_map(ctx, n.outputs[0]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int y = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  const int64_t px = xm.pixel(), py = ym.pixel();
  for_each_cell(ctx, kb, g, xm, ym, -1, [&](Expr xbase, Expr ybase, Expr oh, Expr ow) {
    Window win;
    Expr divisor = avg_window(kb, g, include_pad, oh, ow, &win);
    Expr sum = kb.let("sum", f32c(0));
    kb.loop("ih", win.h0, win.h1, false, [&](Expr ih) {
      kb.loop("iw", win.w0, win.w1, false,
              [&](Expr iw) { kb.assign(sum, sum + kb.load(x, pixel_at(xbase, ih, g.w, iw, px))); });
    });
    kb.store(y, pixel_at(ybase, oh, g.wo, ow, py),
             select(gt(divisor, i64c(0)), sum / cast(ScalarType::f32, divisor), f32c(0)));
  });
  ctx.emit(std::move(d));
}

void lower_avgpool_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  PoolGeom g = pool_geom(ctx, n, a, ctx.shape(n.inputs[1]), ctx.shape(n.inputs[0]));
  bool include_pad = ir::attr_bool(a, "count_include_pad");
  PlaneMap xm = plane_map(ctx, n.outputs[0]), ym = plane_map(ctx, n.inputs[0]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  const int64_t px = xm.pixel(), py = ym.pixel();
  for_each_cell(ctx, kb, g, xm, ym, dx, [&](Expr xbase, Expr ybase, Expr oh, Expr ow) {
    Window win;
    Expr divisor = avg_window(kb, g, include_pad, oh, ow, &win);
    kb.if_(gt(divisor, i64c(0)), [&] {
      Expr grad =
          kb.let("grad", kb.load(dy, pixel_at(ybase, oh, g.wo, ow, py)) / cast(ScalarType::f32, divisor));
      kb.loop("ih", win.h0, win.h1, false, [&](Expr ih) {
        kb.loop("iw", win.w0, win.w1, false,
                [&](Expr iw) { kb.accumulate(dx, pixel_at(xbase, ih, g.w, iw, px), grad); });
      });
    });
  });
  ctx.emit(std::move(d));
}

}  // namespace

void register_pool_lowerings(LowerTable& t) {
  t["maxpool2d"] = lower_maxpool;
  t["maxpool2d_backward"] = lower_maxpool_backward;
  t["avgpool2d"] = lower_avgpool;
  t["avgpool2d_backward"] = lower_avgpool_backward;
}

}  // namespace dnnc::codegen
