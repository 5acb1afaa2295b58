// batchnorm2d (training), layernorm and their backward ops as KernelIR loops: one parallel
// loop over channels (batchnorm) or rows (layernorm); every sum accumulates in double and is
// rounded once (docs/ops.md, "Accuracy of sums"), batchnorm's blocked by channel_sums. Also the
// batchnorm2d_epilogue group (batchnorm -> chain -> max pool in the channel loop).
#include <fmt/format.h>

#include "codegen/lower/lower_norm.h"

#include "codegen/lower/lower_chain.h"
#include "codegen/lower/lower_window.h"

namespace dnnc::codegen {

BnGeom bn_geom(const LowerCtx& ctx, const ir::Node& n, ir::ValueId xv) {
  Dims x = ctx.shape(xv);
  if (x.size() != 4) ctx.fail(n, "expected x [B,C,H,W]");
  BnGeom g{x[0], x[1], x[2] * x[3], ctx.nhwc(xv)};
  for (const auto* vs : {&n.inputs, &n.outputs})
    for (ir::ValueId v : *vs)
      if (ctx.shape(v) == x && ctx.nhwc(v) != g.nhwc) ctx.fail(n, "its activations are in different layouts");
  return g;
}

void for_channel(KernelBuilder& kb, const BnGeom& g, Expr c, const std::function<void(Expr)>& f) {
  kb.loop("b", g.b, false, [&](Expr b) {
    if (g.nhwc) {
      Expr base = kb.let("base", b * i64c(g.hw * g.c) + c);
      kb.loop("i", g.hw, false, [&](Expr i) { f(base + i * i64c(g.c)); });
      return;
    }
    Expr base = kb.let("base", (b * i64c(g.c) + c) * i64c(g.hw));
    kb.loop("i", g.hw, false, [&](Expr i) { f(base + i); });
  });
}

namespace {

// The channel loop runs on several threads where it is worth it, in NCHW only: channels-last
// channels interleave in memory, which the race checker cannot prove apart (NHWC batchnorm is
// serial; the cpu cost model does not pick NHWC).
bool channel_loop_parallel(const LowerCtx& ctx, const BnGeom& g) {
  return !g.nhwc && ctx.parallel(g.c * g.count()) && g.c > 1;
}

// Adds to each of `sums` (f64 locals) its term of every element of channel c, terms(index)
// giving one term per sum (widened to double). Double accumulators make the B·H·W-long sums
// exact to fp32 whatever their length (docs/ops.md, "Accuracy of sums"). NCHW: images outer,
// pixels inner, the inner loop a plain sum (the C++ printer blocks it over vector lanes: `omp simd
// reduction`). NHWC, whose strided loop the compiler leaves scalar: per image, a partial sum per
// block of 16 pixels, added to the sums.
void channel_sums(KernelBuilder& kb, const BnGeom& g, Expr c, const std::vector<Expr>& sums,
                  const std::function<std::vector<Expr>(Expr)>& terms) {
  auto add = [&](const std::vector<Expr>& to, Expr index) {
    std::vector<Expr> t = terms(index);
    for (size_t k = 0; k < to.size(); ++k) kb.assign(to[k], to[k] + cast(ScalarType::f64, t[k]));
  };
  if (!g.nhwc) {
    for_channel(kb, g, c, [&](Expr i) { add(sums, i); });
    return;
  }
  constexpr int64_t kBlock = 16;
  kb.loop("b", g.b, false, [&](Expr b) {
    Expr base = kb.let("base", b * i64c(g.hw * g.c) + c);
    kb.loop("ib", (g.hw + kBlock - 1) / kBlock, false, [&](Expr ib) {
      std::vector<Expr> part;
      for (size_t k = 0; k < sums.size(); ++k) part.push_back(kb.let("part", f64c(0)));
      Expr i0 = kb.let("i0", ib * i64c(kBlock));
      kb.loop("i", i0, min(i0 + i64c(kBlock), i64c(g.hw)), false, [&](Expr i) { add(part, base + i * i64c(g.c)); });
      for (size_t k = 0; k < sums.size(); ++k) kb.assign(sums[k], sums[k] + part[k]);
    });
  });
}

// Training batchnorm, optionally followed (a batchnorm2d_epilogue group) by an elementwise chain
// on y and a max pool of the chain's end: per channel, the statistics, then each image's plane
// normalized and run through the chain into `out` (y, the chain's end, or scratch where only the
// pool's result is read later), then pooled while the plane is in cache. Unfused: empty chain,
// no pool, out = y.
void emit_batchnorm(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, const Chain& chain, const ir::Node* pool,
                    int out) {
  BnGeom g = bn_geom(ctx, n, n.inputs[0]);
  if (g.count() <= 1)
    ctx.fail(n, fmt::format("batchnorm2d: expected more than 1 value per channel when training, found {}", g.count()));
  KernelDraft d(ctx, ctx.kernel_name(pool ? "batchnorm2d_pool" : chain.nodes.empty() ? n.op : "batchnorm2d_chain"));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int w = d.read(ctx.buffer(n.inputs[1]));
  int bias = d.read(ctx.buffer(n.inputs[2]));
  int rm = d.read(ctx.buffer(n.inputs[3]));
  int rv = d.read(ctx.buffer(n.inputs[4]));
  std::vector<std::vector<int>> operands = chain_operands(d, ctx, chain);
  int y = d.write(out);
  int mean_out = d.write(ctx.define(n.outputs[1]));
  int invstd_out = d.write(ctx.define(n.outputs[2]));
  int rm_out = d.write(ctx.define(n.outputs[3]));
  int rv_out = d.write(ctx.define(n.outputs[4]));
  PoolGeom pg{};
  int py = -1;
  if (pool) {
    pg = pool_geom(ctx, *pool, completed_attrs(ctx, *pool), ctx.shape(n.outputs[0]), ctx.shape(pool->outputs[0]));
    py = d.write(ctx.define(pool->outputs[0]));
  }
  KernelBuilder& kb = d.kb;
  Expr count = f64c(static_cast<double>(g.count()));
  Expr m = f32c(ir::attr_float(a, "momentum"));
  kb.loop("c", g.c, channel_loop_parallel(ctx, g), [&](Expr c) {
    Expr sum = kb.let("sum", f64c(0));
    channel_sums(kb, g, c, {sum}, [&](Expr i) { return std::vector<Expr>{kb.load(x, i)}; });
    Expr mean = kb.let("mean", cast(ScalarType::f32, sum / count));
    Expr var_sum = kb.let("var_sum", f64c(0));
    channel_sums(kb, g, c, {var_sum}, [&](Expr i) {
      Expr dev = kb.let("dev", cast(ScalarType::f64, kb.load(x, i) - mean));
      return std::vector<Expr>{dev * dev};
    });
    // 1/sqrt(biased var + eps) and the unbiased var in double, each rounded once.
    Expr invstd = kb.let(
        "invstd", cast(ScalarType::f32, f64c(1) / sqrt(var_sum / count + f64c(ir::attr_float(a, "eps")))));
    Expr unbiased = cast(ScalarType::f32, var_sum / f64c(static_cast<double>(g.count() - 1)));
    kb.store(mean_out, c, mean);
    kb.store(invstd_out, c, invstd);
    kb.store(rm_out, c, m * mean + (f32c(1) - m) * kb.load(rm, c));
    kb.store(rv_out, c, m * unbiased + (f32c(1) - m) * kb.load(rv, c));
    Expr alpha = kb.let("alpha", invstd * kb.load(w, c));
    Expr beta = kb.let("beta", kb.load(bias, c) - mean * alpha);
    auto normalize = [&](Expr i) {
      Expr v = kb.load(x, i) * alpha + beta;
      if (!chain.nodes.empty()) v = apply_chain(kb, chain, operands, kb.let("bn", v), i);
      kb.store(y, i, v);
    };
    if (!pool) {
      for_channel(kb, g, c, normalize);
      return;
    }
    kb.loop("b", g.b, false, [&](Expr b) {  // NCHW (lower_batchnorm_group)
      Expr bc = kb.let("bc", b * i64c(g.c) + c);
      Expr base = kb.let("base", bc * i64c(g.hw));
      kb.loop("i", g.hw, false, [&](Expr i) { normalize(base + i); });
      maxpool_plane(kb, pg, y, base, py, kb.let("pbase", bc * i64c(pg.ho * pg.wo)));
    });
  });
  ctx.emit(std::move(d));
}

void lower_batchnorm(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  emit_batchnorm(ctx, n, a, Chain{}, nullptr, ctx.define(n.outputs[0]));
}

void lower_batchnorm_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  BnBackward p = bn_backward_params(ctx, d, n, d.read(ctx.buffer(n.inputs[0])));
  KernelBuilder& kb = d.kb;
  kb.loop("c", p.g.c, channel_loop_parallel(ctx, p.g), [&](Expr c) {
    BnBackwardSums s = bn_backward_begin(kb, p, c);
    channel_sums(kb, p.g, c, {s.sum, s.dotp}, [&](Expr i) { return bn_backward_terms(kb, p, s, i); });
    bn_backward_finish(kb, p, c, s);
  });
  ctx.emit(std::move(d));
}

// Rows of layernorm's input: (rows, d) with d = numel(normalized_shape).
std::pair<int64_t, int64_t> ln_rows(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, ir::ValueId x) {
  int64_t d = product(Dims(ir::attr_ints(a, "normalized_shape").begin(), ir::attr_ints(a, "normalized_shape").end()));
  int64_t total = ctx.numel(x);
  if (d <= 0 || total % d != 0) ctx.fail(n, "x does not end in normalized_shape");
  return {total / d, d};
}

void lower_layernorm(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  auto [rows, dim] = ln_rows(ctx, n, a, n.inputs[0]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int w = d.read(ctx.buffer(n.inputs[1]));
  int bias = d.read(ctx.buffer(n.inputs[2]));
  int y = d.write(ctx.define(n.outputs[0]));
  int mean_out = d.write(ctx.define(n.outputs[1]));
  int invstd_out = d.write(ctx.define(n.outputs[2]));
  KernelBuilder& kb = d.kb;
  // Row sums in double, rounded once (docs/ops.md, "Accuracy of sums").
  Expr count = f64c(static_cast<double>(dim));
  kb.loop("r", rows, ctx.parallel(rows * dim) && rows > 1, [&](Expr r) {
    Expr base = kb.let("base", r * i64c(dim));
    Expr sum = kb.let("sum", f64c(0));
    kb.loop("j", dim, false, [&](Expr j) { kb.assign(sum, sum + cast(ScalarType::f64, kb.load(x, base + j))); });
    Expr mean = kb.let("mean", cast(ScalarType::f32, sum / count));
    Expr var = kb.let("var", f64c(0));
    kb.loop("j", dim, false, [&](Expr j) {
      Expr dev = kb.let("dev", cast(ScalarType::f64, kb.load(x, base + j) - mean));
      kb.assign(var, var + dev * dev);
    });
    Expr invstd =
        kb.let("invstd", cast(ScalarType::f32, f64c(1) / sqrt(var / count + f64c(ir::attr_float(a, "eps")))));
    kb.store(mean_out, r, mean);
    kb.store(invstd_out, r, invstd);
    kb.loop("j", dim, false, [&](Expr j) {
      kb.store(y, base + j, (kb.load(x, base + j) - mean) * invstd * kb.load(w, j) + kb.load(bias, j));
    });
  });
  ctx.emit(std::move(d));
}

void lower_layernorm_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  auto [rows, dim] = ln_rows(ctx, n, a, n.inputs[1]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int x = d.read(ctx.buffer(n.inputs[1]));
  int w = d.read(ctx.buffer(n.inputs[2]));
  int mean = d.read(ctx.buffer(n.inputs[3]));
  int invstd = d.read(ctx.buffer(n.inputs[4]));
  int dx = d.write(ctx.define(n.outputs[0]));
  int dw = d.write(ctx.define(n.outputs[1]));
  int db = d.write(ctx.define(n.outputs[2]));
  KernelBuilder& kb = d.kb;
  Expr count = f64c(static_cast<double>(dim));
  bool par = ctx.parallel(rows * dim);
  kb.loop("r", rows, par && rows > 1, [&](Expr r) {
    Expr base = kb.let("base", r * i64c(dim));
    Expr mu = kb.let("mu", kb.load(mean, r));
    Expr is = kb.let("is", kb.load(invstd, r));
    Expr sum_g = kb.let("sum_g", f64c(0));
    Expr sum_gx = kb.let("sum_gx", f64c(0));
    kb.loop("j", dim, false, [&](Expr j) {
      Expr xhat = kb.let("xhat", (kb.load(x, base + j) - mu) * is);
      Expr gv = kb.let("g", kb.load(dy, base + j) * kb.load(w, j));
      kb.assign(sum_g, sum_g + cast(ScalarType::f64, gv));
      kb.assign(sum_gx, sum_gx + cast(ScalarType::f64, gv * xhat));
    });
    Expr mean_g = kb.let("mean_g", cast(ScalarType::f32, sum_g / count));
    Expr mean_gx = kb.let("mean_gx", cast(ScalarType::f32, sum_gx / count));
    kb.loop("j", dim, false, [&](Expr j) {
      Expr xhat = (kb.load(x, base + j) - mu) * is;
      Expr gv = kb.load(dy, base + j) * kb.load(w, j);
      kb.store(dx, base + j, is * (gv - mean_g - xhat * mean_gx));
    });
  });
  // Parameter gradients: a second pass over columns, summing over rows in order.
  kb.loop("j", dim, par && dim > 1, [&](Expr j) {
    Expr sw = kb.let("sw", f64c(0));
    Expr sb = kb.let("sb", f64c(0));
    kb.loop("r", rows, false, [&](Expr r) {
      Expr gy = kb.let("gy", kb.load(dy, r * i64c(dim) + j));
      Expr xhat = (kb.load(x, r * i64c(dim) + j) - kb.load(mean, r)) * kb.load(invstd, r);
      kb.assign(sw, sw + cast(ScalarType::f64, gy * xhat));
      kb.assign(sb, sb + cast(ScalarType::f64, gy));
    });
    kb.store(dw, j, cast(ScalarType::f32, sw));
    kb.store(db, j, cast(ScalarType::f32, sb));
  });
  ctx.emit(std::move(d));
}

}  // namespace

BnBackward bn_backward_params(LowerCtx& ctx, KernelDraft& d, const ir::Node& n, int dy) {
  BnBackward p{bn_geom(ctx, n, n.inputs[1])};
  p.dy = dy;
  p.x = d.read(ctx.buffer(n.inputs[1]));
  p.w = d.read(ctx.buffer(n.inputs[2]));
  p.mean = d.read(ctx.buffer(n.inputs[3]));
  p.invstd = d.read(ctx.buffer(n.inputs[4]));
  p.dx = d.write(ctx.define(n.outputs[0]));
  p.dw = d.write(ctx.define(n.outputs[1]));
  p.db = d.write(ctx.define(n.outputs[2]));
  return p;
}

BnBackwardSums bn_backward_begin(KernelBuilder& kb, const BnBackward& p, Expr c) {
  BnBackwardSums s;
  s.mu = kb.let("mu", kb.load(p.mean, c));
  s.is = kb.let("is", kb.load(p.invstd, c));
  s.sum = kb.let("sum", f64c(0));
  s.dotp = kb.let("dotp", f64c(0));
  return s;
}

std::vector<Expr> bn_backward_terms(KernelBuilder& kb, const BnBackward& p, const BnBackwardSums& s, Expr i) {
  Expr gy = kb.let("gy", kb.load(p.dy, i));
  return {gy, (kb.load(p.x, i) - s.mu) * gy};
}

void bn_backward_finish(KernelBuilder& kb, const BnBackward& p, Expr c, const BnBackwardSums& s) {
  Expr count = f64c(static_cast<double>(p.g.count()));
  Expr is64 = cast(ScalarType::f64, s.is);
  Expr k = kb.let("k", cast(ScalarType::f32, s.dotp * is64 * is64 / count));
  Expr grad_mean = kb.let("grad_mean", cast(ScalarType::f32, s.sum / count));
  Expr wc = kb.let("wc", kb.load(p.w, c));
  for_channel(kb, p.g, c, [&](Expr i) {
    Expr proj = (kb.load(p.x, i) - s.mu) * k;
    kb.store(p.dx, i, (kb.load(p.dy, i) - grad_mean - proj) * s.is * wc);
  });
  kb.store(p.dw, c, cast(ScalarType::f32, s.dotp * is64));
  kb.store(p.db, c, cast(ScalarType::f32, s.sum));
}

size_t lower_batchnorm_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  const ir::Node& bn = *nodes[i];
  if (!ctx.options.batchnorm_epilogues || bn.op != "batchnorm2d" || bn.outputs.size() != 5) return 0;
  const Dims ys = ctx.shape(bn.outputs[0]);
  if (ys.size() != 4 || !is_f32(ctx, bn.outputs[0]) || !is_f32(ctx, bn.inputs[0])) return 0;
  for (ir::ValueId v : bn.inputs)  // the planes of the pool are NCHW planes
    if (ctx.nhwc(v)) return 0;
  if (ctx.nhwc(bn.outputs[0])) return 0;
  Chain chain = chain_after(ctx, nodes, i + 1, bn.outputs[0], ys);
  ir::ValueId last = chain.nodes.empty() ? bn.outputs[0] : chain.nodes.back()->outputs[0];
  size_t j = i + 1 + chain.nodes.size();
  const ir::Node* pool = nullptr;
  if (j < nodes.size() && nodes[j]->op == "maxpool2d" && nodes[j]->inputs[0] == last &&
      is_f32(ctx, nodes[j]->outputs[0]) && !ctx.nhwc(nodes[j]->outputs[0]))
    pool = nodes[j];
  if (chain.nodes.empty() && !pool) return 0;
  std::vector<const ir::Node*> inside{&bn};
  inside.insert(inside.end(), chain.nodes.begin(), chain.nodes.end());
  if (pool) inside.push_back(pool);
  // Only the chain's end (and the pooled result) may be read after the group.
  if (!chain_stays_inside(ctx, bn.outputs[0], chain, inside)) return 0;
  ctx.comment.clear();
  for (const ir::Node* n : inside) ctx.comment.push_back(ctx.node_text(*n));
  const bool keep_last = !pool || used_outside(ctx.graph, last, inside);
  emit_batchnorm(ctx, bn, completed_attrs(ctx, bn), chain, pool,
                 keep_last ? ctx.define(last) : ctx.scratch("plane", product(ys)));
  return inside.size();
}

void register_norm_lowerings(LowerTable& t) {
  t["batchnorm2d"] = lower_batchnorm;
  t["batchnorm2d_backward"] = lower_batchnorm_backward;
  t["layernorm"] = lower_layernorm;
  t["layernorm_backward"] = lower_layernorm_backward;
}

}  // namespace dnnc::codegen
