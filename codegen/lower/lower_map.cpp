// Map (elementwise) ops: their per-element formulas and the loop nest that runs one or several
// of them over a common output shape, with numpy broadcasting and collapsed contiguous dims.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>

#include "codegen/lower/lower_ctx.h"
#include "ir/check.h"
#include "ir/op_registry.h"

namespace dnnc::codegen {

namespace {

// Strides of an operand of shape `s` read at the coordinates of `out` (numpy broadcasting).
Dims broadcast_strides(const Dims& s, const Dims& out) {
  Dims st(out.size(), 0);
  Dims own = strides_of(s);
  size_t off = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) st[off + i] = s[i] == 1 ? 0 : own[i];
  return st;
}

Expr normal_cdf(Expr x) { return f32c(0.5) * (f32c(1) + unary(UnaryOp::erf, x * f32c(std::numbers::sqrt2 / 2))); }

Expr normal_pdf(Expr x) { return exp(f32c(-0.5) * x * x) * f32c(std::numbers::inv_sqrtpi / std::numbers::sqrt2); }

Expr splitmix64(Expr z) {
  z = z + u64c(0x9e3779b97f4a7c15ULL);
  z = binary(BinaryOp::bit_xor, z, binary(BinaryOp::shr, z, u64c(30))) * u64c(0xbf58476d1ce4e5b9ULL);
  z = binary(BinaryOp::bit_xor, z, binary(BinaryOp::shr, z, u64c(27))) * u64c(0x94d049bb133111ebULL);
  return binary(BinaryOp::bit_xor, z, binary(BinaryOp::shr, z, u64c(31)));
}

using Body = std::function<std::vector<Expr>(const MapEnv&)>;

MapOp simple(Body body) {
  MapOp op;
  op.body = std::move(body);
  return op;
}

// Same-shape unary map: f(x).
MapOp unary_map(std::function<Expr(Expr)> f) {
  return simple([f](const MapEnv& e) { return std::vector<Expr>{f(e.in[0])}; });
}

// Same-shape backward map: f(dy, saved).
MapOp backward_map(std::function<Expr(Expr, Expr)> f) {
  return simple([f](const MapEnv& e) { return std::vector<Expr>{f(e.in[0], e.in[1])}; });
}

MapOp sgd_op(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  double lr = ir::attr_float(a, "lr"), momentum = ir::attr_float(a, "momentum");
  double dampening = ir::attr_float(a, "dampening"), wd = ir::attr_float(a, "weight_decay");
  bool nesterov = ir::attr_bool(a, "nesterov");
  if (momentum != 0 && n.inputs.size() < 4) ctx.fail(n, "momentum != 0 needs operands momentum_buf and step");
  // A last, scalar operand is the scheduled lr (read at run time instead of the attribute).
  const size_t lr_at = momentum != 0 ? 4 : 2;
  const bool lr_operand = n.inputs.size() == lr_at + 1;
  const Dims scalar(ctx.shape(n.outputs[0]).size(), 0);
  MapOp op;
  if (momentum != 0) op.operand_strides = {{}, {}, {}, scalar};
  else op.operand_strides = {{}, {}};
  if (lr_operand) op.operand_strides.push_back(scalar);
  if (momentum != 0) {
    op.setup = [](KernelBuilder& kb, const std::vector<Expr>& s) {
      kb.fail(unary(UnaryOp::logical_not, ge(s[3], f32c(1))), "sgd_update: step must be >= 1");
      return std::vector<Expr>{kb.let("first", eq(s[3], f32c(1)))};
    };
  }
  op.body = [=](const MapEnv& e) {
    Expr p = e.in[0], d_p = e.in[1];
    if (wd != 0) d_p = d_p + f32c(wd) * p;
    std::vector<Expr> out;
    Expr buf;
    if (momentum != 0) {
      Expr keep = dampening == 0 ? d_p : f32c(1.0 - dampening) * d_p;
      buf = e.kb->let("buf", select(e.hoisted[0], d_p, e.in[2] * f32c(momentum) + keep));
      d_p = nesterov ? d_p + f32c(momentum) * buf : buf;
    }
    out.push_back(p + (lr_operand ? -e.in[lr_at] : f32c(-lr)) * d_p);
    if (momentum != 0) out.push_back(buf);
    return out;
  };
  return op;
}

MapOp adam_op(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  double lr = ir::attr_float(a, "lr"), beta1 = ir::attr_float(a, "beta1"), beta2 = ir::attr_float(a, "beta2");
  double eps = ir::attr_float(a, "eps"), wd = ir::attr_float(a, "weight_decay");
  bool decoupled = ir::attr_bool(a, "decoupled");
  // A sixth, scalar operand is the scheduled lr (read at run time instead of the attribute).
  const bool lr_operand = n.inputs.size() == 6;
  const Dims scalar(ctx.shape(n.outputs[0]).size(), 0);
  MapOp op;
  op.operand_strides = {{}, {}, {}, {}, scalar};
  if (lr_operand) op.operand_strides.push_back(scalar);
  op.setup = [=](KernelBuilder& kb, const std::vector<Expr>& s) {
    kb.fail(unary(UnaryOp::logical_not, ge(s[4], f32c(1))), "adam_update: step must be >= 1");
    // Bias corrections in double from the step, as PyTorch computes them on the CPU.
    Expr step = cast(ScalarType::f64, s[4]);
    Expr lr_d = lr_operand ? cast(ScalarType::f64, s[5]) : f64c(lr);
    Expr bc1 = f64c(1) - binary(BinaryOp::pow, f64c(beta1), step);
    Expr bc2 = f64c(1) - binary(BinaryOp::pow, f64c(beta2), step);
    Expr neg_step_size = kb.let("neg_step_size", ScalarType::f32, -(lr_d / bc1));
    Expr bc2_sqrt = kb.let("bc2_sqrt", ScalarType::f32, sqrt(bc2));
    // AdamW's decay factor 1 - lr * weight_decay, in double as PyTorch's Python float.
    Expr decay = !decoupled   ? f32c(1)
                 : lr_operand ? kb.let("decay", ScalarType::f32, f64c(1) - lr_d * f64c(wd))
                              : f32c(1.0 - lr * wd);
    return std::vector<Expr>{neg_step_size, bc2_sqrt, decay};
  };
  op.body = [=](const MapEnv& e) {
    Expr p = e.in[0], g = e.in[1], m = e.in[2], v = e.in[3];
    if (decoupled) {
      p = p * e.hoisted[2];
    } else if (wd != 0) {
      g = g + f32c(wd) * e.in[0];
    }
    float w1 = static_cast<float>(1.0 - beta1);
    // torch.lerp(m, g, w1) on the CPU: the two-sided form, exact at both ends.
    Expr m2 = w1 < 0.5f ? m + f32c(w1) * (g - m) : g - (g - m) * f32c(1.0f - w1);
    Expr v2 = v * f32c(beta2) + f32c(1.0 - beta2) * g * g;
    Expr denom = sqrt(v2) / e.hoisted[1] + f32c(eps);
    return std::vector<Expr>{p + e.hoisted[0] * m2 / denom, m2, v2};
  };
  return op;
}

MapOp dropout_op(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  double p = ir::attr_float(a, "p");
  int64_t seed = ir::attr_int(a, "seed");
  if (!(p >= 0.0 && p <= 1.0)) ctx.fail(n, fmt::format("dropout: p must be in [0, 1], found {}", p));
  float keep_scale = p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
  MapOp op;
  op.operand_strides = {{}, Dims(ctx.shape(n.outputs[0]).size(), 0)};
  op.setup = [=](KernelBuilder& kb, const std::vector<Expr>& s) {
    Expr step = s[1];
    kb.fail(binary(BinaryOp::logical_or, unary(UnaryOp::logical_not, ge(step, f32c(0))),
                   ne(unary(UnaryOp::floor, step), step)),
            "dropout: step must be a non-negative integer");
    Expr mix = binary(BinaryOp::bit_xor, u64c(static_cast<uint64_t>(seed)),
                      binary(BinaryOp::shl, cast(ScalarType::u64, step), u64c(32)));
    return std::vector<Expr>{kb.let("seed_step", mix)};
  };
  op.body = [=](const MapEnv& e) {
    Expr h = splitmix64(binary(BinaryOp::bit_xor, e.hoisted[0], cast(ScalarType::u64, e.index)));
    Expr u = cast(ScalarType::f64, binary(BinaryOp::shr, h, u64c(40))) * f64c(0x1.0p-24);
    Expr mask = select(ge(u, f64c(p)), f32c(keep_scale), f32c(0));
    return std::vector<Expr>{e.in[0] * mask, mask};
  };
  op.reads_index = true;
  return op;
}

}  // namespace

bool map_op_of(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, MapOp* out) {
  const std::string& op = n.op;
  auto slope = [&] { return f32c(ir::attr_float(a, "negative_slope")); };
  if (op == "relu") {
    *out = unary_map([](Expr x) { return select(gt(x, f32c(0)), x, f32c(0)); });
  } else if (op == "leaky_relu") {
    Expr s = slope();
    *out = unary_map([s](Expr x) { return select(gt(x, f32c(0)), x, x * s); });
  } else if (op == "tanh") {
    *out = unary_map([](Expr x) { return unary(UnaryOp::tanh, x); });
  } else if (op == "sigmoid") {
    *out = unary_map([](Expr x) { return f32c(1) / (f32c(1) + exp(-x)); });
  } else if (op == "gelu") {
    *out = unary_map([](Expr x) { return x * normal_cdf(x); });
  } else if (op == "neg") {
    *out = unary_map([](Expr x) { return -x; });
  } else if (op == "add_scalar" || op == "mul_scalar" || op == "div_scalar") {
    Expr v = f32c(ir::attr_float(a, "value"));
    char k = op[0];
    *out = unary_map([v, k](Expr x) { return k == 'a' ? x + v : k == 'm' ? x * v : x / v; });
  } else if (op == "add" || op == "sub" || op == "mul" || op == "div") {
    Dims o = ctx.shape(n.outputs[0]);
    char k = op[0] == 'a' ? '+' : op[0] == 's' ? '-' : op[0] == 'm' ? '*' : '/';
    *out = simple([k](const MapEnv& e) {
      Expr x = e.in[0], y = e.in[1];
      return std::vector<Expr>{k == '+' ? x + y : k == '-' ? x - y : k == '*' ? x * y : x / y};
    });
    // An operand of the result's shape is read through its own strides (it may be {nhwc});
    // a broadcast one (always row-major) through its broadcast strides.
    for (size_t i = 0; i < 2; ++i)
      out->operand_strides.push_back(ctx.shape(n.inputs[i]) == o ? Dims{}
                                                                  : broadcast_strides(ctx.shape(n.inputs[i]), o));
  } else if (op == "relu_backward") {
    *out = backward_map([](Expr g, Expr x) { return select(gt(x, f32c(0)), g, f32c(0)); });
  } else if (op == "leaky_relu_backward") {
    Expr s = slope();
    *out = backward_map([s](Expr g, Expr x) { return select(gt(x, f32c(0)), g, g * s); });
  } else if (op == "tanh_backward") {
    *out = backward_map([](Expr g, Expr y) { return g * (f32c(1) - y * y); });
  } else if (op == "sigmoid_backward") {
    *out = backward_map([](Expr g, Expr y) { return g * y * (f32c(1) - y); });
  } else if (op == "gelu_backward") {
    *out = backward_map([](Expr g, Expr x) { return g * (normal_cdf(x) + x * normal_pdf(x)); });
  } else if (op == "fill") {
    Expr v = f32c(ir::attr_float(a, "value"));
    *out = simple([v](const MapEnv&) { return std::vector<Expr>{v}; });
  } else if (op == "mse_loss_backward") {
    double count = static_cast<double>(ctx.numel(n.inputs[1]));
    *out = simple([](const MapEnv& e) { return std::vector<Expr>{e.hoisted[0] * (e.in[1] - e.in[2])}; });
    out->operand_strides = {Dims(ctx.shape(n.outputs[0]).size(), 0), {}, {}};
    out->setup = [count](KernelBuilder& kb, const std::vector<Expr>& s) {
      return std::vector<Expr>{kb.let("scale", f32c(2) * s[0] / f32c(count))};
    };
  } else if (op == "transpose") {
    // A layout conversion (perm the identity, the result {nhwc} or row-major) is the same
    // gather: the result's strides index the loop, the operand's its own.
    const auto& perm = ir::attr_ints(a, "perm");
    Dims xs = ctx.strides(n.inputs[0]);
    Dims st;
    for (int64_t p : perm) st.push_back(xs.at(static_cast<size_t>(p)));
    *out = simple([](const MapEnv& e) { return std::vector<Expr>{e.in[0]}; });
    out->operand_strides = {st};
  } else if (op == "batchnorm2d_infer") {
    Dims o = ctx.shape(n.outputs[0]);
    if (o.size() != 4) ctx.fail(n, "expected x [B,C,H,W]");
    Dims per_channel{0, 1, 0, 0};
    Expr eps = f32c(ir::attr_float(a, "eps"));
    *out = simple([eps](const MapEnv& e) {
      Expr alpha = e.in[1] / sqrt(e.in[4] + eps);
      Expr beta = e.in[2] - e.in[3] * alpha;
      return std::vector<Expr>{e.in[0] * alpha + beta};
    });
    out->operand_strides = {{}, per_channel, per_channel, per_channel, per_channel};
  } else if (op == "dropout") {
    *out = dropout_op(ctx, n, a);
  } else if (op == "clip_coef") {
    // min(max_norm / (sqrt(total_sq) + 1e-6), 1) in float; NaN stays NaN (the loss check stops).
    Expr max_norm = f32c(ir::attr_float(a, "max_norm"));
    *out = simple([max_norm](const MapEnv& e) {
      Expr coef = e.kb->let("coef", max_norm / (sqrt(e.in[0]) + f32c(1e-6)));
      return std::vector<Expr>{select(ge(coef, f32c(1)), f32c(1), coef)};
    });
  } else if (op == "sgd_update") {
    *out = sgd_op(ctx, n, a);
  } else if (op == "adam_update") {
    *out = adam_op(ctx, n, a);
  } else {
    return false;
  }
  return true;
}

namespace {

// One loop dimension of a map nest: its extent and, per indexed tensor, its stride.
struct LoopDim {
  int64_t extent;
  Dims strides;  // [0] is the output, then one per loaded operand
};

// Drops size-1 dims and merges neighbours that are contiguous for every tensor.
std::vector<LoopDim> collapse(std::vector<LoopDim> dims) {
  std::vector<LoopDim> kept;
  for (auto& d : dims)
    if (d.extent != 1) kept.push_back(std::move(d));
  std::vector<LoopDim> out;
  for (auto& d : kept) {
    if (!out.empty()) {
      LoopDim& prev = out.back();
      bool ok = true;
      for (size_t t = 0; t < d.strides.size(); ++t) ok &= prev.strides[t] == d.strides[t] * d.extent;
      if (ok) {
        prev.extent *= d.extent;
        prev.strides = d.strides;
        continue;
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

// Which values computed by `nodes` are read after the group (later nodes, outputs, updates).
std::set<ir::ValueId> escaping(const LowerCtx& ctx, const std::vector<const ir::Node*>& nodes) {
  const ir::Graph& g = ctx.graph;
  std::set<const ir::Node*> in_group(nodes.begin(), nodes.end());
  std::set<ir::ValueId> used;
  for (const ir::Node& n : g.nodes)
    if (!in_group.count(&n))
      for (ir::ValueId v : n.inputs) used.insert(v);
  for (ir::ValueId v : g.outputs) used.insert(v);
  for (const auto& u : g.updates) used.insert(u.second);
  std::set<ir::ValueId> out;
  for (const ir::Node* n : nodes)
    for (ir::ValueId v : n->outputs)
      if (used.count(v) || nodes.size() == 1) out.insert(v);
  return out;
}

}  // namespace

void lower_map_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, ir::ValueId gemm_result) {
  const bool epilogue = gemm_result != ir::kNoValue;
  DNNC_CHECK(!nodes.empty(), "an empty map group");
  Dims out_shape = ctx.shape(nodes[0]->outputs.at(0));
  Dims out_strides = ctx.strides(nodes[0]->outputs.at(0));  // the results' layout (row-major or nhwc)
  const bool logical_order = out_strides == strides_of(out_shape);
  size_t rank = out_shape.size();

  std::vector<MapOp> ops;
  for (const ir::Node* n : nodes) {
    MapOp op;
    bool ok = map_op_of(ctx, *n, ir::complete_attrs(*ir::find_op(n->op), n->attrs), &op);
    DNNC_CHECK(ok, "lower_map_group on a non-map op");
    (void)ok;
    op.operand_strides.resize(n->inputs.size());
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (op.operand_strides[i].empty()) {
        if (ctx.shape(n->inputs[i]) != out_shape)
          ctx.fail(*n, "an operand has neither the result's shape nor broadcast strides");
        op.operand_strides[i] = ctx.strides(n->inputs[i]);  // its own layout
      } else if (ctx.nhwc(n->inputs[i]) && n->op != "transpose") {
        ctx.fail(*n, "a broadcast operand is {nhwc}; broadcasting reads row-major operands only");
      }
    for (ir::ValueId o : n->outputs) {
      if (ctx.shape(o) != out_shape) ctx.fail(*n, "results of a map group must share one shape");
      if (ctx.strides(o) != out_strides) ctx.fail(*n, "results of a map group must share one layout");
    }
    ops.push_back(std::move(op));
  }

  std::set<ir::ValueId> stored = escaping(ctx, nodes);
  std::set<ir::ValueId> defined;  // values computed inside the group
  for (const ir::Node* n : nodes)
    for (ir::ValueId o : n->outputs) defined.insert(o);
  if (epilogue) defined.insert(gemm_result);  // loaded once per element, before any store

  KernelDraft d(ctx, epilogue ? fmt::format("g{}_epilogue", ctx.prog.steps.size() - 1)
                              : ctx.kernel_name(nodes.size() == 1 ? nodes[0]->op : "fused"));
  // Tensors indexed in the loop nest: the output (0), then each distinct (buffer, strides) read.
  struct Read {
    int param;
    Dims strides;
  };
  std::vector<Read> reads;
  std::map<ir::ValueId, Expr> scalar_of;  // external operands read at a single element
  auto all_zero = [](const Dims& s) { return std::all_of(s.begin(), s.end(), [](int64_t x) { return x == 0; }); };

  // Params: inputs first (in order of use), then outputs.
  std::vector<std::vector<int>> read_of(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k)
    for (size_t i = 0; i < nodes[k]->inputs.size(); ++i) {
      ir::ValueId v = nodes[k]->inputs[i];
      const Dims& st = ops[k].operand_strides[i];
      if (defined.count(v)) {
        if (st != out_strides && !at_element(st, out_shape))
          ctx.fail(*nodes[k], "a fused operand must be read at the element it was computed");
        read_of[k].push_back(-1);
        continue;
      }
      int p = d.read(ctx.buffer(v));
      if (all_zero(st)) {
        read_of[k].push_back(-2);
        if (!scalar_of.count(v))
          scalar_of[v] = d.kb.let("s_" + std::to_string(scalar_of.size()), d.kb.load(p, i64c(0)));
        continue;
      }
      int r = -1;
      for (size_t j = 0; j < reads.size(); ++j)
        if (reads[j].param == p && reads[j].strides == st) r = static_cast<int>(j);
      if (r < 0) {
        reads.push_back({p, st});
        r = static_cast<int>(reads.size()) - 1;
      }
      read_of[k].push_back(r);
    }
  // An epilogue's GEMM result lives in the buffer of one of its results (registered first, so
  // that the result's write binds the same param, now read and written).
  int source_param = epilogue ? d.read(ctx.buffer(gemm_result)) : -1;
  std::map<ir::ValueId, int> out_param;
  for (const ir::Node* n : nodes)
    for (ir::ValueId o : n->outputs)
      if (stored.count(o)) out_param[o] = d.write(ctx.define(o));  // others live in registers only

  // Setup (once, before the loops).
  std::vector<std::vector<Expr>> hoisted(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (!ops[k].setup) continue;
    std::vector<Expr> scalars;
    for (ir::ValueId v : nodes[k]->inputs) scalars.push_back(scalar_of.count(v) ? scalar_of[v] : Expr());
    hoisted[k] = ops[k].setup(d.kb, scalars);
  }

  // The loop nest over collapsed dims.
  // Results not in logical order ({nhwc}): the loops run in storage order of the results, and
  // where an op reads the element's logical (row-major) index (dropout hashes it), that index is
  // tracked as one more offset.
  const bool track_index =
      !logical_order && std::any_of(ops.begin(), ops.end(), [](const MapOp& op) { return op.reads_index; });
  std::vector<LoopDim> dims;
  const Dims logical = strides_of(out_shape);
  for (size_t i = 0; i < rank; ++i) {
    LoopDim ld{out_shape[i], {out_strides[i]}};
    for (const Read& r : reads) ld.strides.push_back(r.strides[i]);
    if (track_index) ld.strides.push_back(logical[i]);
    dims.push_back(std::move(ld));
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const LoopDim& x, const LoopDim& y) { return x.strides[0] > y.strides[0]; });
  dims = collapse(std::move(dims));
  const size_t index_slot = track_index ? reads.size() + 1 : 0;
  // GCC 12.2 at -O3 with AVX2/AVX-512 miscompiles a loop nest whose inner loop (of an extent that
  // is not a multiple of the vector width) loads an array under a select (`d[j] = h[j] > 0 ? a[j]
  // : 0`: a masked, if-converted load); flat loops are fine. In a nest, every operand is loaded
  // into a local first, so no load is conditional (tests/cpu/layout_test.cpp hit it in NHWC).
  const bool load_first = !epilogue && dims.size() > 1;
  int64_t total = product(out_shape);
  bool par = ctx.parallel(total * static_cast<int64_t>(nodes.size()));

  std::function<void(size_t, std::vector<Expr>)> nest = [&](size_t level, std::vector<Expr> offsets) {
    if (level < dims.size()) {
      d.kb.loop(level == dims.size() - 1 ? "i" : "i" + std::to_string(level), dims[level].extent, par && level == 0,
                [&](Expr iv) {
                  std::vector<Expr> next = offsets;
                  for (size_t t = 0; t < next.size(); ++t) next[t] = next[t] + iv * i64c(dims[level].strides[t]);
                  nest(level + 1, next);
                });
      return;
    }
    std::map<ir::ValueId, Expr> value;
    if (epilogue) value[gemm_result] = d.kb.let("c", d.kb.load(source_param, offsets[0]));
    for (size_t k = 0; k < nodes.size(); ++k) {
      MapEnv env;
      env.index = offsets[index_slot];
      env.kb = &d.kb;
      env.hoisted = hoisted[k];
      for (size_t i = 0; i < nodes[k]->inputs.size(); ++i) {
        ir::ValueId v = nodes[k]->inputs[i];
        int r = read_of[k][i];
        if (r == -1)
          env.in.push_back(value.at(v));
        else if (r == -2)
          env.in.push_back(scalar_of.at(v));
        else if (load_first)
          env.in.push_back(
              d.kb.let("x", d.kb.load(reads[static_cast<size_t>(r)].param, offsets[static_cast<size_t>(r) + 1])));
        else
          env.in.push_back(d.kb.load(reads[static_cast<size_t>(r)].param, offsets[static_cast<size_t>(r) + 1]));
      }
      std::vector<Expr> results = ops[k].body(env);
      DNNC_CHECK(results.size() == nodes[k]->outputs.size(), "a map op returned the wrong number of results");
      // Every result is computed before any is stored: an update writes its param in place,
      // and its other results (Adam's moments, with weight decay) read the param too.
      for (size_t o = 0; o < results.size(); ++o) {
        bool direct = k + 1 == nodes.size() && results.size() == 1;
        value[nodes[k]->outputs[o]] = direct ? results[o] : d.kb.let("t", results[o]);
      }
      for (ir::ValueId v : nodes[k]->outputs)
        if (out_param.count(v)) d.kb.store(out_param[v], offsets[0], value.at(v));
    }
  };
  if (!epilogue) {
    nest(0, std::vector<Expr>(reads.size() + (track_index ? 2 : 1), i64c(0)));
    ctx.emit(std::move(d));
    return;
  }
  // Epilogue: every tensor read is contiguous (checked by the caller), one flat loop over the
  // element range the GEMM's thread hands over.
  if (!logical_order) ctx.fail(*nodes[0], "a GEMM epilogue's results are not row-major");
  for (const Read& r : reads)
    if (!at_element(r.strides, out_shape)) ctx.fail(*nodes[0], "a GEMM epilogue operand is not contiguous");
  Expr begin = d.kb.index_param("begin"), end = d.kb.index_param("end");
  d.kb.loop("i", begin, end, false, [&](Expr iv) { nest(dims.size(), std::vector<Expr>(reads.size() + 1, iv)); });
  ctx.attach_epilogue(std::move(d));
}

namespace {

const std::vector<std::string>& map_ops() {
  static const std::vector<std::string> ops = {
      "relu",          "leaky_relu",       "tanh",          "sigmoid",
      "gelu",          "neg",              "add_scalar",    "mul_scalar",
      "div_scalar",    "add",              "sub",           "mul",
      "div",           "relu_backward",    "leaky_relu_backward", "tanh_backward",
      "sigmoid_backward", "gelu_backward", "fill",          "mse_loss_backward",
      "transpose",     "batchnorm2d_infer", "dropout",      "sgd_update",
      "adam_update",   "clip_coef"};
  return ops;
}

}  // namespace

bool is_map_op(const std::string& op) {
  const auto& ops = map_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

void register_map_lowerings(LowerTable& t) {
  for (const std::string& op : map_ops())
    t[op] = [](LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) { lower_map_group(ctx, {&n}); };
}

// Whether node n is a map op all of whose results have shape `out` and which reads every value
// of `run` (computed earlier in the same loop nest) at its own element.
bool joins_run(const LowerCtx& ctx, const ir::Node& n, const Dims& out, const std::vector<const ir::Node*>& run) {
  MapOp op;
  if (!map_op_of(ctx, n, completed_attrs(ctx, n), &op)) return false;
  for (ir::ValueId o : n.outputs)
    if (ctx.shape(o) != out) return false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    bool in_run = false;
    for (const ir::Node* r : run)
      for (ir::ValueId o : r->outputs) in_run |= o == n.inputs[i];
    if (in_run && !reads_at_element(op, i, out)) return false;
  }
  return true;
}

// Reads of value `v` by node `n` (as operand i) at its own element (strides empty or contiguous).
bool reads_at_element(const MapOp& op, size_t i, const Dims& out) {
  return i >= op.operand_strides.size() || at_element(op.operand_strides[i], out);
}

}  // namespace dnnc::codegen
