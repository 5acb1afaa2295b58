// Reductions: reduce_sum over any axes, the softmax family along one axis, and the losses.
// Sums whose length grows with the batch (reduce_sum, the losses' means, the bias gradient of
// softmax_xent) accumulate in double and round once (docs/ops.md, "Accuracy of sums"); sums over
// one row of classes stay in f32, blocked over vector lanes by the C++ printer.
#include <limits>

#include "codegen/lower/lower_ctx.h"
#include "ir/op_registry.h"

namespace dnnc::codegen {

namespace {

// One dim of reduce_sum after merging neighbours: extent, reduced or kept, strides in x and out.
struct RDim {
  int64_t extent;
  bool reduced;
  int64_t x_stride = 0, out_stride = 0;
};

void lower_reduce_sum(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  Dims xs = ctx.shape(n.inputs[0]);
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t ax : ir::attr_ints(a, "axes")) {
    int64_t r = static_cast<int64_t>(xs.size());
    if (ax < -r || ax >= r) ctx.fail(n, "axis out of range");
    reduced[static_cast<size_t>(ax < 0 ? ax + r : ax)] = true;
  }
  std::vector<RDim> dims;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] == 1) continue;
    if (!dims.empty() && dims.back().reduced == reduced[i])
      dims.back().extent *= xs[i];
    else
      dims.push_back({xs[i], reduced[i]});
  }
  int64_t xstride = 1, ostride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    dims[i].x_stride = xstride;
    xstride *= dims[i].extent;
    if (!dims[i].reduced) {
      dims[i].out_stride = ostride;
      ostride *= dims[i].extent;
    }
  }
  int64_t out_numel = ctx.numel(n.outputs[0]), total = ctx.numel(n.inputs[0]);

  if (ctx.options.two_stage_sums && dims.size() == 3 && dims[0].reduced && !dims[1].reduced && dims[2].reduced) {
    // [R0, K, R1] -> [K] in two kernels: each (r0, k) row summed into scratch, then over r0.
    const int64_t r0 = dims[0].extent, k = dims[1].extent, r1 = dims[2].extent;
    const std::vector<std::string> comment = ctx.comment;
    int part = ctx.scratch("sum_part", r0 * k);
    {
      ctx.comment = comment;
      ctx.comment.push_back("  (stage 1: sums of rows)");
      KernelDraft d(ctx, ctx.kernel_name(n.op));
      int x = d.read(ctx.buffer(n.inputs[0]));
      int p = d.write(part);
      d.kb.loop("p", r0 * k, true, [&](Expr pv) {
        Expr acc = d.kb.let("acc", f64c(0));
        d.kb.loop("r", r1, false,
                  [&](Expr r) { d.kb.assign(acc, acc + cast(ScalarType::f64, d.kb.load(x, pv * i64c(r1) + r))); });
        d.kb.store(p, pv, cast(ScalarType::f32, acc));
      });
      ctx.emit(std::move(d));
    }
    ctx.comment = comment;
    ctx.comment.push_back("  (stage 2: sums of the row sums)");
    KernelDraft d(ctx, ctx.kernel_name(n.op));
    int p = d.read(part);
    int y = d.write(ctx.define(n.outputs[0]));
    d.kb.loop("k", k, true, [&](Expr kv) {
      Expr acc = d.kb.let("acc", f64c(0));
      d.kb.loop("r", r0, false,
                [&](Expr r) { d.kb.assign(acc, acc + cast(ScalarType::f64, d.kb.load(p, r * i64c(k) + kv))); });
      d.kb.store(y, kv, cast(ScalarType::f32, acc));
    });
    ctx.emit(std::move(d));
    return;
  }

  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int y = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  // Output-stationary: kept coordinates outermost, then the reduced ones in order into a double
  // accumulator. (An innermost kept dim makes the inner loop strided; such sums are bias
  // gradients of [B, features], which the GEMM's column sums usually take instead.)
  std::vector<RDim> kept, red;
  for (const RDim& r : dims) (r.reduced ? red : kept).push_back(r);
  kb.loop("o", out_numel, ctx.parallel(total) && out_numel > 1, [&](Expr o) {
    Expr base = i64c(0);
    for (const RDim& k : kept) base = base + (o / i64c(k.out_stride)) % i64c(k.extent) * i64c(k.x_stride);
    Expr acc = kb.let("acc", f64c(0));
    std::function<void(size_t, Expr)> nest = [&](size_t level, Expr off) {
      if (level == red.size()) {
        kb.assign(acc, acc + cast(ScalarType::f64, kb.load(x, off)));
        return;
      }
      kb.loop("r", red[level].extent, false, [&](Expr r) { nest(level + 1, off + r * i64c(red[level].x_stride)); });
    };
    nest(0, base);
    kb.store(y, o, cast(ScalarType::f32, acc));
  });
  ctx.emit(std::move(d));
}

// The [outer, n, inner] view of a tensor around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const LowerCtx& ctx, const ir::Node& n, const Dims& s, int64_t axis) {
  int64_t r = static_cast<int64_t>(s.size());
  if (axis < -r || axis >= r) ctx.fail(n, "axis out of range");
  size_t ax = static_cast<size_t>(axis < 0 ? axis + r : axis);
  AxisView v;
  for (size_t i = 0; i < ax; ++i) v.outer *= s[i];
  v.n = s[ax];
  for (size_t i = ax + 1; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

// Runs `row(base, inner)` for every row along the axis; element k of a row is at base + k*inner.
void for_each_row(LowerCtx& ctx, KernelBuilder& kb, const AxisView& v,
                  const std::function<void(Expr base, int64_t step)>& row) {
  int64_t rows = v.outer * v.inner;
  kb.loop("row", rows, ctx.parallel(rows * v.n) && rows > 1, [&](Expr r) {
    Expr base = v.inner == 1 ? r * i64c(v.n) : (r / i64c(v.inner)) * i64c(v.n * v.inner) + r % i64c(v.inner);
    row(base, v.inner);
  });
}

Expr row_max(KernelBuilder& kb, int x, Expr base, int64_t step, int64_t n) {
  Expr mx = kb.let("mx", f32c(-std::numeric_limits<float>::infinity()));
  kb.loop("c", n, false, [&](Expr c) { kb.assign(mx, max(mx, kb.load(x, base + c * i64c(step)))); });
  return mx;
}

Expr row_sum_exp(KernelBuilder& kb, int x, Expr base, int64_t step, int64_t n, Expr mx) {
  Expr sum = kb.let("sum_exp", f64c(0));
  kb.loop("c", n, false,
          [&](Expr c) { kb.assign(sum, sum + cast(ScalarType::f64, exp(kb.load(x, base + c * i64c(step)) - mx))); });
  return kb.let("sum", cast(ScalarType::f32, sum));
}

void lower_softmax(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, bool log_form) {
  AxisView v = axis_view(ctx, n, ctx.shape(n.inputs[0]), ir::attr_int(a, "axis"));
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int x = d.read(ctx.buffer(n.inputs[0]));
  int y = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  for_each_row(ctx, kb, v, [&](Expr base, int64_t step) {
    Expr mx = row_max(kb, x, base, step, v.n);
    Expr sum = row_sum_exp(kb, x, base, step, v.n, mx);
    Expr log_sum = log_form ? kb.let("log_sum", log(sum)) : Expr();
    kb.loop("c", v.n, false, [&](Expr c) {
      Expr at = base + c * i64c(step);
      Expr xv = kb.load(x, at);
      kb.store(y, at, log_form ? xv - mx - log_sum : exp(xv - mx) / sum);
    });
  });
  ctx.emit(std::move(d));
}

void lower_softmax_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, bool log_form) {
  AxisView v = axis_view(ctx, n, ctx.shape(n.inputs[1]), ir::attr_int(a, "axis"));
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dy = d.read(ctx.buffer(n.inputs[0]));
  int y = d.read(ctx.buffer(n.inputs[1]));
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  for_each_row(ctx, kb, v, [&](Expr base, int64_t step) {
    Expr acc = kb.let(log_form ? "sum" : "dot", f32c(0));
    kb.loop("c", v.n, false, [&](Expr c) {
      Expr at = base + c * i64c(step);
      kb.assign(acc, acc + (log_form ? kb.load(dy, at) : kb.load(dy, at) * kb.load(y, at)));
    });
    kb.loop("c", v.n, false, [&](Expr c) {
      Expr at = base + c * i64c(step);
      Expr g = kb.load(dy, at), yv = kb.load(y, at);
      kb.store(dx, at, log_form ? g - exp(yv) * acc : yv * (g - acc));
    });
  });
  ctx.emit(std::move(d));
}

// Stops the kernel if a class label is outside [0, classes). The labels are folded into one
// flag first (a reduction a GPU team can split) and the kernel stops after the loop, so no
// thread leaves while others still run it.
void check_labels(KernelBuilder& kb, int target, int64_t batch, int64_t classes, const std::string& op) {
  Expr bad = kb.let("bad", i64c(0));
  kb.loop("b", batch, false, [&](Expr b) {
    Expr t = kb.load(target, b);
    kb.assign(bad,
              max(bad, select(binary(BinaryOp::logical_or, lt(t, i64c(0)), ge(t, i64c(classes))), i64c(1), i64c(0))));
  });
  kb.fail(ne(bad, i64c(0)), op + ": a target label is out of range for " + std::to_string(classes) + " classes");
}

// Label `b` for use as an index: check_labels has stopped the kernel for any label outside
// [0, classes), so the clamp changes nothing; it makes the index provably in bounds (the kernel
// IR verifier cannot see through the flag check_labels folds the labels into).
Expr label_index(KernelBuilder& kb, int target, Expr b, int64_t classes) {
  Expr label = kb.let("label", kb.load(target, std::move(b)));
  return min(max(label, i64c(0)), i64c(classes - 1));
}

// Label smoothing e: the row's loss term (1 - e) * (lse - x[t]) + e * (lse - mean_c x[c]);
// with e = 0, lse - x[t] as before. `row` is the row's first element.
Expr smoothed_row_loss(KernelBuilder& kb, int logits, Expr row, int64_t C, Expr lse, Expr x_t, double e) {
  if (e == 0) return lse - x_t;
  Expr rs = kb.let("row_sum", f64c(0));
  kb.loop("c", C, false, [&](Expr c) { kb.assign(rs, rs + cast(ScalarType::f64, kb.load(logits, row + c))); });
  Expr mean = kb.let("row_mean", cast(ScalarType::f32, rs / f64c(static_cast<double>(C))));
  return f32c(1.0 - e) * (lse - x_t) + f32c(e) * (lse - mean);
}

// d loss / d logits[c] before the scale: p - (1 - e) * [c == t] - e / C.
Expr smoothed_dlogit(Expr p, Expr c, Expr t, int64_t C, double e) {
  if (e == 0) return p - select(eq(c, t), f32c(1), f32c(0));
  return p - select(eq(c, t), f32c(1.0 - e), f32c(0)) - f32c(e / static_cast<double>(C));
}

void lower_cross_entropy(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& attrs) {
  const double e = ir::attr_float(attrs, "label_smoothing");
  Dims ls = ctx.shape(n.inputs[0]);
  if (ls.size() != 2) ctx.fail(n, "expected logits [B,C]");
  int64_t B = ls[0], C = ls[1];
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int logits = d.read(ctx.buffer(n.inputs[0]));
  int target = d.read(ctx.buffer(n.inputs[1]));
  int loss = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  check_labels(kb, target, B, C, "cross_entropy");
  Expr total = kb.let("total", f64c(0));
  kb.loop("b", B, false, [&](Expr b) {
    Expr base = b * i64c(C);
    Expr mx = row_max(kb, logits, base, 1, C);
    Expr sum = row_sum_exp(kb, logits, base, 1, C, mx);
    Expr lse = kb.let("lse", log(sum) + mx);
    Expr x_t = kb.load(logits, base + label_index(kb, target, b, C));
    kb.assign(total, total + cast(ScalarType::f64, smoothed_row_loss(kb, logits, base, C, lse, x_t, e)));
  });
  kb.store(loss, i64c(0), cast(ScalarType::f32, total / f64c(static_cast<double>(B))));
  ctx.emit(std::move(d));
}

void lower_cross_entropy_backward(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& attrs) {
  const double e = ir::attr_float(attrs, "label_smoothing");
  Dims ls = ctx.shape(n.inputs[1]);
  if (ls.size() != 2) ctx.fail(n, "expected logits [B,C]");
  int64_t B = ls[0], C = ls[1];
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int dloss = d.read(ctx.buffer(n.inputs[0]));
  int logits = d.read(ctx.buffer(n.inputs[1]));
  int target = d.read(ctx.buffer(n.inputs[2]));
  int dx = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  check_labels(kb, target, B, C, "cross_entropy_backward");
  Expr scale = kb.let("scale", kb.load(dloss, i64c(0)) / f32c(static_cast<double>(B)));
  kb.loop("b", B, ctx.parallel(B * C) && B > 1, [&](Expr b) {
    Expr base = b * i64c(C);
    Expr mx = row_max(kb, logits, base, 1, C);
    Expr sum = row_sum_exp(kb, logits, base, 1, C, mx);
    Expr t = kb.let("t", kb.load(target, b));
    kb.loop("c", C, false, [&](Expr c) {
      Expr p = exp(kb.load(logits, base + c) - mx) / sum;
      kb.store(dx, base + c, scale * smoothed_dlogit(p, c, t, C, e));
    });
  });
  ctx.emit(std::move(d));
}

void lower_mse_loss(LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
  int64_t count = ctx.numel(n.inputs[0]);
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int pred = d.read(ctx.buffer(n.inputs[0]));
  int target = d.read(ctx.buffer(n.inputs[1]));
  int loss = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  Expr sum = kb.let("sum", f64c(0));
  kb.loop("i", count, false, [&](Expr i) {
    Expr diff = kb.let("diff", cast(ScalarType::f64, kb.load(pred, i) - kb.load(target, i)));
    kb.assign(sum, sum + diff * diff);
  });
  kb.store(loss, i64c(0), cast(ScalarType::f32, sum / f64c(static_cast<double>(count))));
  ctx.emit(std::move(d));
}

}  // namespace

size_t lower_softmax_xent(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i) {
  if (i >= nodes.size() || nodes[i]->op != "cross_entropy" || nodes[i]->inputs.size() != 2) return 0;
  const ir::Node& fwd = *nodes[i];
  size_t j = i + 1;
  const ir::Node* fill = nullptr;
  if (j < nodes.size() && nodes[j]->op == "fill" && nodes[j]->inputs.empty() && ctx.numel(nodes[j]->outputs[0]) == 1 &&
      ctx.graph.value(nodes[j]->outputs[0]).type.dtype == ir::DType::f32)
    fill = nodes[j++];
  if (j >= nodes.size() || nodes[j]->op != "cross_entropy_backward" || nodes[j]->inputs.size() != 3) return 0;
  const ir::Node& bwd = *nodes[j++];
  if (bwd.inputs[1] != fwd.inputs[0] || bwd.inputs[2] != fwd.inputs[1]) return 0;
  if (fill && bwd.inputs[0] != fill->outputs[0]) return 0;
  const double e = ir::attr_float(ir::complete_attrs(*ir::find_op("cross_entropy"), fwd.attrs), "label_smoothing");
  if (ir::attr_float(ir::complete_attrs(*ir::find_op("cross_entropy_backward"), bwd.attrs), "label_smoothing") != e)
    return 0;
  Dims ls = ctx.shape(fwd.inputs[0]);
  if (ls.size() != 2 || ctx.numel(bwd.inputs[0]) != 1) return 0;
  const int64_t B = ls[0], C = ls[1];
  const ir::Node* sum = nullptr;  // the bias gradient: reduce_sum over the batch of dlogits
  if (j < nodes.size() && nodes[j]->op == "reduce_sum" && nodes[j]->inputs.size() == 1 &&
      nodes[j]->inputs[0] == bwd.outputs[0]) {
    const ir::OpDef* def = ir::find_op("reduce_sum");
    ir::Attrs a = ir::complete_attrs(*def, nodes[j]->attrs);
    std::vector<int64_t> axes = ir::attr_ints(a, "axes");
    if ((axes == std::vector<int64_t>{0} || axes == std::vector<int64_t>{-2}) && !ir::attr_bool(a, "keepdim"))
      sum = nodes[j++];
  }

  ctx.comment.clear();
  for (size_t k = i; k < j; ++k) ctx.comment.push_back(ctx.node_text(*nodes[k]));
  KernelDraft d(ctx, ctx.kernel_name("softmax_xent"));
  int logits = d.read(ctx.buffer(fwd.inputs[0]));
  int target = d.read(ctx.buffer(fwd.inputs[1]));
  int loss = d.write(ctx.define(fwd.outputs[0]));
  int dloss = fill ? d.write(ctx.define(fill->outputs[0])) : d.read(ctx.buffer(bwd.inputs[0]));
  int dx = d.write(ctx.define(bwd.outputs[0]));
  int db = sum ? d.write(ctx.define(sum->outputs[0])) : -1;
  KernelBuilder& kb = d.kb;
  check_labels(kb, target, B, C, "cross_entropy");
  Expr scale;
  if (fill) {
    float v = static_cast<float>(ir::attr_float(ir::complete_attrs(*ir::find_op("fill"), fill->attrs), "value"));
    kb.store(dloss, i64c(0), f32c(v));
    scale = kb.let("scale", f32c(v) / f32c(static_cast<double>(B)));
  } else {
    scale = kb.let("scale", kb.load(dloss, i64c(0)) / f32c(static_cast<double>(B)));
  }
  // Rows are independent: each computes its max, exp(x - max) into dlogits while summing, its
  // loss term (into scratch) and dlogits = scale * (e / sum - onehot), each exp computed once.
  // The loss and the bias gradient are then summed over the rows in row order, in double, so a
  // GPU can spread the rows over threads.
  int row_loss = d.write(ctx.scratch("row_loss", B));
  kb.loop("b", B, false, [&](Expr b) {
    Expr base = b * i64c(C);
    Expr mx = row_max(kb, logits, base, 1, C);
    Expr s64 = kb.let("sum_exp", f64c(0));
    kb.loop("c", C, false, [&](Expr c) {
      Expr e = kb.let("e", exp(kb.load(logits, base + c) - mx));
      kb.store(dx, base + c, e);
      kb.assign(s64, s64 + cast(ScalarType::f64, e));
    });
    Expr s = kb.let("sum", cast(ScalarType::f32, s64));
    Expr t = kb.let("t", label_index(kb, target, b, C));
    if (e == 0) {
      kb.store(row_loss, b, log(s) + mx - kb.load(logits, base + t));
    } else {
      Expr lse = kb.let("lse", log(s) + mx);
      kb.store(row_loss, b, smoothed_row_loss(kb, logits, base, C, lse, kb.load(logits, base + t), e));
    }
    kb.loop("c", C, false, [&](Expr c) {
      kb.store(dx, base + c, scale * smoothed_dlogit(kb.load(dx, base + c) / s, c, t, C, e));
    });
  });
  Expr total = kb.let("total", f64c(0));
  kb.loop("b", B, false, [&](Expr b) { kb.assign(total, total + cast(ScalarType::f64, kb.load(row_loss, b))); });
  if (sum)
    kb.loop("c", C, false, [&](Expr c) {
      Expr acc = kb.let("acc", f64c(0));
      kb.loop("b", B, false,
              [&](Expr b) { kb.assign(acc, acc + cast(ScalarType::f64, kb.load(dx, b * i64c(C) + c))); });
      kb.store(db, c, cast(ScalarType::f32, acc));
    });
  kb.store(loss, i64c(0), cast(ScalarType::f32, total / f64c(static_cast<double>(B))));
  ctx.emit(std::move(d));
  return j - i;
}

void register_reduce_lowerings(LowerTable& t) {
  t["reduce_sum"] = lower_reduce_sum;
  t["softmax"] = [](LowerCtx& c, const ir::Node& n, const ir::Attrs& a) { lower_softmax(c, n, a, false); };
  t["log_softmax"] = [](LowerCtx& c, const ir::Node& n, const ir::Attrs& a) { lower_softmax(c, n, a, true); };
  t["softmax_backward"] = [](LowerCtx& c, const ir::Node& n, const ir::Attrs& a) {
    lower_softmax_backward(c, n, a, false);
  };
  t["log_softmax_backward"] = [](LowerCtx& c, const ir::Node& n, const ir::Attrs& a) {
    lower_softmax_backward(c, n, a, true);
  };
  t["cross_entropy"] = lower_cross_entropy;
  t["cross_entropy_backward"] = lower_cross_entropy_backward;
  t["mse_loss"] = lower_mse_loss;
}

}  // namespace dnnc::codegen
