// Op definitions: linear, matmul, conv2d, pooling, dropout, batchnorm, layernorm and the losses.
#include <fmt/format.h>

#include "ir/op_defs.h"
#include "ir/shape_check.h"

namespace dnnc::ir::detail {
namespace {

using Types = std::vector<TensorType>;
const std::vector<Layout> kRowOrCol = {Layout::row_major, Layout::col_major};
const std::vector<Layout> kRowOrNhwc = {Layout::row_major, Layout::nhwc};

TensorType f32(Shape s, Layout l = Layout::row_major) { return TensorType{DType::f32, std::move(s), l}; }

Types linear_rule(const Types& in, const Attrs&) {
  const TensorType &x = in[0], &w = in[1];
  expect_dtype("linear", "input", x, DType::f32, 0);
  expect_min_rank("linear", "input", x, 2, 0);
  expect_row_major("linear", "input", x, 0);
  expect_dtype("linear", "weight", w, DType::f32, 1);
  expect_rank("linear", "weight", w, 2, 1);
  expect_layout_in("linear", "weight", w, kRowOrCol, 1);
  Dim features = x.shape.back(), in_features = w.shape[1], out_features = w.shape[0];
  if (features != in_features)
    throw ShapeError(fmt::format("linear: input has {} features but weight expects {} (in_features); "
                                 "expected {}, found {}",
                                 dim_to_string(features), dim_to_string(in_features), dim_to_string(features),
                                 dim_to_string(in_features)),
                     1);
  if (in.size() > 2) {
    expect_dtype("linear", "bias", in[2], DType::f32, 2);
    expect_row_major("linear", "bias", in[2], 2);
    expect_shape("linear", "bias (out_features)", in[2], {out_features}, 2);
  }
  Shape out = x.shape;
  out.back() = out_features;
  return {f32(out)};
}

Types matmul_rule(const Types& in, const Attrs& attrs) {
  const TensorType &a = in[0], &b = in[1];
  for (int i = 0; i < 2; ++i) {
    const char* what = i == 0 ? "a" : "b";
    expect_dtype("matmul", what, in[i], DType::f32, i);
    expect_rank("matmul", what, in[i], 2, i);
    expect_layout_in("matmul", what, in[i], kRowOrCol, i);
  }
  bool ta = attr_bool(attrs, "transpose_a"), tb = attr_bool(attrs, "transpose_b");
  Dim m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  Dim kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb)
    throw ShapeError(fmt::format("matmul: inner dimensions differ ({} @ {}{}{}); expected {}, found {}",
                                 shape_to_string(a.shape), shape_to_string(b.shape), ta ? " with a transposed" : "",
                                 tb ? " with b transposed" : "", dim_to_string(k), dim_to_string(kb)),
                     1);
  return {f32({m, n})};
}

Types conv2d_rule(const Types& in, const Attrs& attrs) {
  const TensorType &x = in[0], &w = in[1];
  expect_dtype("conv2d", "input", x, DType::f32, 0);
  expect_rank("conv2d", "input", x, 4, 0);
  expect_batch_leading("conv2d", "input", x, 0);
  expect_layout_in("conv2d", "input", x, kRowOrNhwc, 0);
  expect_dtype("conv2d", "weight", w, DType::f32, 1);
  expect_rank("conv2d", "weight", w, 4, 1);
  expect_layout_in("conv2d", "weight", w, kRowOrNhwc, 1);
  int64_t groups = attr_int(attrs, "groups");
  if (groups < 1)
    throw ShapeError(fmt::format("conv2d: attribute 'groups' must be >= 1; expected >= 1, found {}", groups));
  Dim c = x.shape[1], o = w.shape[0];
  if (c == kBatch) throw ShapeError("conv2d: input channels cannot be the batch dim; expected a size, found N", 0);
  if (c % groups != 0)
    throw ShapeError(fmt::format("conv2d: input channels must be divisible by groups; expected a multiple of {}, "
                                 "found {}",
                                 groups, c),
                     0);
  if (o % groups != 0)
    throw ShapeError(fmt::format("conv2d: out_channels must be divisible by groups; expected a multiple of {}, "
                                 "found {}",
                                 groups, o),
                     1);
  if (w.shape[1] * groups != c)
    throw ShapeError(fmt::format("conv2d: input has {} channels but weight expects {} (in_channels); "
                                 "expected {}, found {}",
                                 c, w.shape[1] * groups, c, w.shape[1] * groups),
                     1);
  if (in.size() > 2) {
    expect_dtype("conv2d", "bias", in[2], DType::f32, 2);
    expect_row_major("conv2d", "bias", in[2], 2);
    expect_shape("conv2d", "bias (out_channels)", in[2], {o}, 2);
  }
  auto [ho, wo] = conv2d_out_hw("conv2d", x.shape[2], x.shape[3], w.shape[2], w.shape[3], attrs);
  return {f32({x.shape[0], o, ho, wo}, x.layout)};
}

Types pool_rule(const std::string& op, const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  expect_dtype(op, "input", x, DType::f32, 0);
  expect_rank(op, "input", x, 4, 0);
  expect_batch_leading(op, "input", x, 0);
  expect_layout_in(op, "input", x, kRowOrNhwc, 0);
  auto [ho, wo] = pool2d_out_hw(op, x, attrs);
  return {f32({x.shape[0], x.shape[1], ho, wo}, x.layout)};
}

Types dropout_rule(const Types& in, const Attrs& attrs) {
  expect_dtype("dropout", "input", in[0], DType::f32, 0);
  expect_f32_scalar("dropout", "step", in[1], 1);
  double p = attr_float(attrs, "p");
  if (!(p >= 0.0 && p <= 1.0))
    throw ShapeError(fmt::format("dropout: probability has to be between 0 and 1; expected p in [0, 1], found {}",
                                 attr_to_string(p)));
  return {in[0], in[0]};
}

// Checks the per-channel operands of batchnorm2d / batchnorm2d_infer and returns C.
Dim batchnorm_check(const std::string& op, const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  expect_dtype(op, "input", x, DType::f32, 0);
  expect_rank(op, "input", x, 4, 0);
  expect_batch_leading(op, "input", x, 0);
  expect_layout_in(op, "input", x, kRowOrNhwc, 0);
  Dim c = x.shape[1];
  static const char* names[] = {"input", "weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i < 5; ++i) {
    expect_dtype(op, names[i], in[i], DType::f32, i);
    expect_row_major(op, names[i], in[i], i);
    expect_shape(op, fmt::format("{} (one entry per channel)", names[i]), in[i], {c}, i);
  }
  if (!(attr_float(attrs, "eps") > 0.0))
    throw ShapeError(fmt::format("{}: attribute 'eps' must be > 0; expected > 0, found {}", op,
                                 attr_to_string(attr_float(attrs, "eps"))));
  return c;
}

Types batchnorm2d_rule(const Types& in, const Attrs& attrs) {
  Dim c = batchnorm_check("batchnorm2d", in, attrs);
  double m = attr_float(attrs, "momentum");
  if (!(m >= 0.0 && m <= 1.0))
    throw ShapeError(
        fmt::format("batchnorm2d: attribute 'momentum' must be in [0, 1]; expected a value in [0, 1], "
                    "found {}",
                    attr_to_string(m)));
  TensorType stat = f32({c});
  return {in[0], stat, stat, stat, stat};
}

Types batchnorm2d_infer_rule(const Types& in, const Attrs& attrs) {
  batchnorm_check("batchnorm2d_infer", in, attrs);
  return {in[0]};
}

Types layernorm_rule(const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  const auto& ns = attr_ints(attrs, "normalized_shape");
  expect_dtype("layernorm", "input", x, DType::f32, 0);
  expect_row_major("layernorm", "input", x, 0);
  if (ns.empty())
    throw ShapeError("layernorm: attribute 'normalized_shape' must not be empty; expected >= 1 entries, found 0");
  for (int64_t d : ns)
    if (d < 1)
      throw ShapeError(fmt::format("layernorm: normalized_shape entries must be >= 1; expected >= 1, found {}", d));
  Shape norm(ns.begin(), ns.end());
  size_t lead = x.shape.size() >= norm.size() ? x.shape.size() - norm.size() : 0;
  if (x.shape.size() < norm.size() || Shape(x.shape.begin() + static_cast<long>(lead), x.shape.end()) != norm)
    throw ShapeError(fmt::format("layernorm: input does not end in normalized_shape {}; expected [*,{}, found {}",
                                 shape_to_string(norm), shape_to_string(norm).substr(1), shape_to_string(x.shape)),
                     0);
  for (int i = 1; i < 3; ++i) {
    const char* what = i == 1 ? "weight" : "bias";
    expect_dtype("layernorm", what, in[i], DType::f32, i);
    expect_row_major("layernorm", what, in[i], i);
    expect_shape("layernorm", fmt::format("{} (normalized_shape)", what), in[i], norm, i);
  }
  if (!(attr_float(attrs, "eps") > 0.0))
    throw ShapeError(fmt::format("layernorm: attribute 'eps' must be > 0; expected > 0, found {}",
                                 attr_to_string(attr_float(attrs, "eps"))));
  TensorType stat = f32(Shape(x.shape.begin(), x.shape.begin() + static_cast<long>(lead)));
  return {x, stat, stat};
}

Types cross_entropy_rule(const Types& in, const Attrs& attrs) {
  const TensorType &logits = in[0], &target = in[1];
  double eps = attr_float(attrs, "label_smoothing");
  if (!(eps >= 0.0 && eps <= 1.0))
    throw ShapeError(fmt::format("cross_entropy: label_smoothing must be in [0, 1], found {}", attr_to_string(eps)));
  expect_dtype("cross_entropy", "logits", logits, DType::f32, 0);
  expect_rank("cross_entropy", "logits ([batch, classes])", logits, 2, 0);
  expect_row_major("cross_entropy", "logits", logits, 0);
  expect_dtype("cross_entropy", "target (class indices)", target, DType::i64, 1);
  expect_rank("cross_entropy", "target ([batch])", target, 1, 1);
  expect_row_major("cross_entropy", "target", target, 1);
  if (target.shape[0] != logits.shape[0])
    throw ShapeError(fmt::format("cross_entropy: input batch size does not match target batch size; "
                                 "expected {}, found {}",
                                 dim_to_string(logits.shape[0]), dim_to_string(target.shape[0])),
                     1);
  return {f32({})};
}

Types mse_loss_rule(const Types& in, const Attrs&) {
  expect_dtype("mse_loss", "input", in[0], DType::f32, 0);
  expect_row_major("mse_loss", "input", in[0], 0);
  expect_dtype("mse_loss", "target", in[1], DType::f32, 1);
  expect_row_major("mse_loss", "target", in[1], 1);
  expect_shape("mse_loss", "target (same shape as input)", in[1], in[0].shape, 1);
  return {f32({})};
}

}  // namespace

void register_nn_ops(OpTable& t) {
  t.add({.name = "linear",
         .operands = {operand("x"), operand("weight"), optional_operand("bias")},
         .attrs = {},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = linear_rule,
         .summary = "y = x @ weight^T + bias; x [..., in], weight [out, in], bias [out]"});
  t.add({.name = "matmul",
         .operands = {operand("a"), operand("b")},
         .attrs = {opt_bool("transpose_a", false), opt_bool("transpose_b", false)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = matmul_rule,
         .summary = "[M, K] @ [K, Nc], each side optionally read transposed"});
  t.add({.name = "conv2d",
         .operands = {operand("x"), operand("weight"), optional_operand("bias")},
         .attrs = {opt_ints("stride", {1, 1}), opt_ints("padding", {0, 0}), opt_ints("dilation", {1, 1}),
                   opt_int("groups", 1)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = conv2d_rule,
         .summary = "2-d convolution (cross-correlation) as torch.nn.functional.conv2d"});
  t.add({.name = "maxpool2d",
         .operands = {operand("x")},
         .attrs = {required("kernel", AttrKind::ints), opt_ints("stride", {}), opt_ints("padding", {0, 0})},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = [](const Types& in, const Attrs& a) { return pool_rule("maxpool2d", in, a); },
         .summary = "2-d max pooling, floor mode; stride [] means stride = kernel"});
  t.add({.name = "avgpool2d",
         .operands = {operand("x")},
         .attrs = {required("kernel", AttrKind::ints), opt_ints("stride", {}), opt_ints("padding", {0, 0}),
                   opt_bool("count_include_pad", true)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = [](const Types& in, const Attrs& a) { return pool_rule("avgpool2d", in, a); },
         .summary = "2-d average pooling, floor mode; stride [] means stride = kernel"});
  t.add({.name = "dropout",
         .operands = {operand("x"), operand("step")},
         .attrs = {opt_float("p", 0.5), opt_int("seed", 0)},
         .num_outputs = 2,
         .fusion = FusionClass::elementwise,
         .infer = dropout_rule,
         .summary = "y = x * mask, mask = 0 or 1/(1-p) from a hash of (seed, step, index); outputs y, mask"});
  t.add(
      {.name = "batchnorm2d",
       .operands = {operand("x"), operand("weight"), operand("bias"), operand("running_mean"), operand("running_var")},
       .attrs = {opt_float("eps", 1e-5), opt_float("momentum", 0.1)},
       .num_outputs = 5,
       .fusion = FusionClass::opaque,
       .infer = batchnorm2d_rule,
       .summary = "training batch norm; outputs y, batch mean, invstd, new running_mean, new running_var"});
  t.add(
      {.name = "batchnorm2d_infer",
       .operands = {operand("x"), operand("weight"), operand("bias"), operand("running_mean"), operand("running_var")},
       .attrs = {opt_float("eps", 1e-5)},
       .num_outputs = 1,
       .fusion = FusionClass::broadcast,
       .infer = batchnorm2d_infer_rule,
       .summary = "inference batch norm from the running statistics"});
  t.add({.name = "layernorm",
         .operands = {operand("x"), operand("weight"), operand("bias")},
         .attrs = {required("normalized_shape", AttrKind::ints), opt_float("eps", 1e-5)},
         .num_outputs = 3,
         .fusion = FusionClass::opaque,
         .infer = layernorm_rule,
         .summary = "layer norm over the trailing normalized_shape dims; outputs y, mean, invstd (leading dims)"});
  t.add({.name = "cross_entropy",
         .operands = {operand("logits"), operand("target")},
         .attrs = {opt_float("label_smoothing", 0.0)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = cross_entropy_rule,
         .summary = "mean cross-entropy of logits [B, C] against class indices i64[B]; label_smoothing e mixes "
                    "the one-hot target with the uniform distribution, as PyTorch's (1 - e) * onehot + e / C"});
  t.add({.name = "mse_loss",
         .operands = {operand("pred"), operand("target")},
         .attrs = {},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = mse_loss_rule,
         .summary = "mean squared error of two same-shape tensors"});
}

}  // namespace dnnc::ir::detail
