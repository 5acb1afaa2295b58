// Op definitions: the backward ops the autodiff pass emits (one or more per forward op).
#include <fmt/format.h>

#include "ir/op_defs.h"
#include "ir/shape_check.h"

namespace dnnc::ir::detail {
namespace {

using Types = std::vector<TensorType>;
const std::vector<Layout> kRowOrNhwc = {Layout::row_major, Layout::nhwc};

// Throws unless `t` has exactly the type `like` (dtype, shape and layout).
void expect_type(const std::string& op, const std::string& what, const TensorType& t, const TensorType& like,
                 int operand) {
  if (t == like) return;
  throw ShapeError(
      fmt::format("{}: {} has the wrong type; expected {}, found {}", op, what, to_string(like), to_string(t)),
      operand);
}

// (dy, x or y) -> like dy: dy and the saved tensor have the same f32 type.
ShapeRule elementwise_backward(std::string op, std::string saved) {
  return [op, saved](const Types& in, const Attrs&) -> Types {
    expect_dtype(op, "dy", in[0], DType::f32, 0);
    expect_type(op, saved + " (like dy)", in[1], in[0], 1);
    return {in[0]};
  };
}

ShapeRule softmax_backward(std::string op) {
  return [op](const Types& in, const Attrs& attrs) -> Types {
    expect_dtype(op, "dy", in[0], DType::f32, 0);
    expect_min_rank(op, "dy", in[0], 1, 0);
    expect_type(op, "y (like dy)", in[1], in[0], 1);
    normalize_axis(op, "axis", attr_int(attrs, "axis"), in[0].rank());
    return {in[0]};
  };
}

Types cross_entropy_backward_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "cross_entropy_backward";
  expect_f32_scalar(op, "dloss", in[0], 0);
  const OpDef* fwd = find_op("cross_entropy");
  try {
    fwd->infer({in[1], in[2]}, attrs);
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("{}: {}", op, e.what()), e.operand() < 0 ? -1 : e.operand() + 1);
  }
  return {in[1]};
}

Types mse_loss_backward_rule(const Types& in, const Attrs&) {
  const std::string op = "mse_loss_backward";
  expect_f32_scalar(op, "dloss", in[0], 0);
  expect_dtype(op, "pred", in[1], DType::f32, 1);
  expect_row_major(op, "pred", in[1], 1);
  expect_type(op, "target (like pred)", in[2], in[1], 2);
  return {in[1]};
}

// Checks groups against the channel counts and returns it.
int64_t checked_groups(const std::string& op, const Attrs& attrs, Dim in_channels, Dim out_channels) {
  int64_t g = attr_int(attrs, "groups");
  if (g < 1) throw ShapeError(fmt::format("{}: attribute 'groups' must be >= 1; expected >= 1, found {}", op, g));
  if (in_channels % g != 0 || out_channels % g != 0)
    throw ShapeError(
        fmt::format("{}: channels {} (in) and {} (out) must be divisible by groups; expected multiples "
                    "of {}, found {} and {}",
                    op, in_channels, out_channels, g, in_channels, out_channels));
  return g;
}

void expect_conv_activation(const std::string& op, const std::string& what, const TensorType& t, int operand) {
  expect_dtype(op, what, t, DType::f32, operand);
  expect_rank(op, what, t, 4, operand);
  expect_batch_leading(op, what, t, operand);
  expect_layout_in(op, what, t, kRowOrNhwc, operand);
}

// dy [B, O, Ho, Wo] must be what conv2d of an input of spatial size (h, w) produces.
void expect_conv_dy(const std::string& op, const TensorType& dy, Dim o, Dim h, Dim w, Dim kh, Dim kw,
                    const Attrs& attrs) {
  auto [ho, wo] = conv2d_out_hw(op, h, w, kh, kw, attrs);
  Shape expected = {dy.shape[0], o, ho, wo};
  expect_shape(op, "dy (the conv2d output)", dy, expected, 0);
}

Types conv2d_backward_input_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "conv2d_backward_input";
  const TensorType &dy = in[0], &w = in[1];
  expect_conv_activation(op, "dy", dy, 0);
  expect_dtype(op, "weight", w, DType::f32, 1);
  expect_rank(op, "weight", w, 4, 1);
  expect_layout_in(op, "weight", w, kRowOrNhwc, 1);
  auto hw = pair_attr(op, attrs, "input_hw", 1);
  int64_t g = checked_groups(op, attrs, w.shape[1] * attr_int(attrs, "groups"), w.shape[0]);
  expect_conv_dy(op, dy, w.shape[0], hw[0], hw[1], w.shape[2], w.shape[3], attrs);
  return {TensorType{DType::f32, {dy.shape[0], w.shape[1] * g, hw[0], hw[1]}, dy.layout}};
}

Types conv2d_backward_weight_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "conv2d_backward_weight";
  const TensorType &dy = in[0], &x = in[1];
  expect_conv_activation(op, "dy", dy, 0);
  expect_conv_activation(op, "x", x, 1);
  if (x.shape[0] != dy.shape[0])
    throw ShapeError(fmt::format("{}: x and dy batch sizes differ; expected {}, found {}", op,
                                 dim_to_string(dy.shape[0]), dim_to_string(x.shape[0])),
                     1);
  auto k = pair_attr(op, attrs, "kernel", 1);
  int64_t g = checked_groups(op, attrs, x.shape[1], dy.shape[1]);
  expect_conv_dy(op, dy, dy.shape[1], x.shape[2], x.shape[3], k[0], k[1], attrs);
  return {TensorType{DType::f32, {dy.shape[1], x.shape[1] / g, k[0], k[1]}, Layout::row_major}};
}

ShapeRule pool_backward(std::string op) {
  return [op](const Types& in, const Attrs& attrs) -> Types {
    const TensorType &dy = in[0], &x = in[1];
    expect_conv_activation(op, "x", x, 1);
    auto [ho, wo] = pool2d_out_hw(op, x, attrs);
    expect_type(op, "dy (the pooling output)", dy, TensorType{DType::f32, {x.shape[0], x.shape[1], ho, wo}, x.layout},
                0);
    return {x};
  };
}

Types batchnorm2d_backward_rule(const Types& in, const Attrs&) {
  const std::string op = "batchnorm2d_backward";
  expect_conv_activation(op, "x", in[1], 1);
  expect_type(op, "dy (like x)", in[0], in[1], 0);
  TensorType stat{DType::f32, {in[1].shape[1]}, Layout::row_major};
  static const char* names[] = {"dy", "x", "weight", "mean", "invstd"};
  for (int i = 2; i < 5; ++i) expect_type(op, fmt::format("{} (one entry per channel)", names[i]), in[i], stat, i);
  return {in[1], stat, stat};
}

Types layernorm_backward_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "layernorm_backward";
  // The forward rule checks x, weight and normalized_shape and gives the saved statistics' type.
  Types fwd;
  try {
    fwd = find_op("layernorm")
              ->infer({in[1], in[2], in[2]}, Attrs{{"normalized_shape", attrs.at("normalized_shape")}, {"eps", 1e-5}});
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("{}: {}", op, e.what()), e.operand() < 0 ? -1 : std::min(e.operand() + 1, 2));
  }
  expect_type(op, "dy (like x)", in[0], in[1], 0);
  expect_type(op, "mean", in[3], fwd[1], 3);
  expect_type(op, "invstd", in[4], fwd[2], 4);
  return {in[1], in[2], in[2]};
}

}  // namespace

void register_backward_ops(OpTable& t) {
  struct Ew {
    const char* name;
    const char* saved;
    const char* summary;
  };
  for (Ew e :
       {Ew{"relu_backward", "x", "dy * (x > 0)"}, Ew{"tanh_backward", "y", "dy * (1 - y*y)"},
        Ew{"sigmoid_backward", "y", "dy * y * (1 - y)"}, Ew{"gelu_backward", "x", "dy * (Phi(x) + x * phi(x))"}}) {
    t.add({.name = e.name,
           .operands = {operand("dy"), operand(e.saved)},
           .attrs = {},
           .num_outputs = 1,
           .fusion = FusionClass::elementwise,
           .infer = elementwise_backward(e.name, e.saved),
           .internal = true,
           .summary = e.summary});
  }
  t.add({.name = "leaky_relu_backward",
         .operands = {operand("dy"), operand("x")},
         .attrs = {required("negative_slope", AttrKind::float_)},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = elementwise_backward("leaky_relu_backward", "x"),
         .internal = true,
         .summary = "dy * (x > 0 ? 1 : negative_slope)"});
  t.add({.name = "softmax_backward",
         .operands = {operand("dy"), operand("y")},
         .attrs = {required("axis", AttrKind::int_)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = softmax_backward("softmax_backward"),
         .internal = true,
         .summary = "y * (dy - sum(dy * y, axis))"});
  t.add({.name = "log_softmax_backward",
         .operands = {operand("dy"), operand("y")},
         .attrs = {required("axis", AttrKind::int_)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = softmax_backward("log_softmax_backward"),
         .internal = true,
         .summary = "dy - exp(y) * sum(dy, axis)"});
  t.add({.name = "cross_entropy_backward",
         .operands = {operand("dloss"), operand("logits"), operand("target")},
         .attrs = {opt_float("label_smoothing", 0.0)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = cross_entropy_backward_rule,
         .internal = true,
         .summary = "dloss * (softmax(logits) - (1 - e) * onehot(target) - e / C) / B, e = label_smoothing"});
  t.add({.name = "mse_loss_backward",
         .operands = {operand("dloss"), operand("pred"), operand("target")},
         .attrs = {},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = mse_loss_backward_rule,
         .internal = true,
         .summary = "dloss * 2 * (pred - target) / numel"});
  t.add({.name = "conv2d_backward_input",
         .operands = {operand("dy"), operand("weight")},
         .attrs = {required("stride", AttrKind::ints), required("padding", AttrKind::ints),
                   required("dilation", AttrKind::ints), required("groups", AttrKind::int_),
                   required("input_hw", AttrKind::ints)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = conv2d_backward_input_rule,
         .internal = true,
         .summary = "dx [B, C, H, W] of conv2d, (H, W) = input_hw"});
  t.add({.name = "conv2d_backward_weight",
         .operands = {operand("dy"), operand("x")},
         .attrs = {required("stride", AttrKind::ints), required("padding", AttrKind::ints),
                   required("dilation", AttrKind::ints), required("groups", AttrKind::int_),
                   required("kernel", AttrKind::ints)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = conv2d_backward_weight_rule,
         .internal = true,
         .summary = "dweight [O, C/groups, kh, kw] of conv2d, (kh, kw) = kernel"});
  t.add({.name = "maxpool2d_backward",
         .operands = {operand("dy"), operand("x")},
         .attrs = {required("kernel", AttrKind::ints), required("stride", AttrKind::ints),
                   required("padding", AttrKind::ints)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = pool_backward("maxpool2d_backward"),
         .internal = true,
         .summary = "dx like x: dy routed to the first max of each window"});
  t.add({.name = "avgpool2d_backward",
         .operands = {operand("dy"), operand("x")},
         .attrs = {required("kernel", AttrKind::ints), required("stride", AttrKind::ints),
                   required("padding", AttrKind::ints), required("count_include_pad", AttrKind::bool_)},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = pool_backward("avgpool2d_backward"),
         .internal = true,
         .summary = "dx like x: dy spread evenly over each window"});
  t.add({.name = "batchnorm2d_backward",
         .operands = {operand("dy"), operand("x"), operand("weight"), operand("mean"), operand("invstd")},
         .attrs = {},
         .num_outputs = 3,
         .fusion = FusionClass::opaque,
         .infer = batchnorm2d_backward_rule,
         .internal = true,
         .summary = "training batch norm backward; outputs dx, dweight, dbias"});
  t.add({.name = "layernorm_backward",
         .operands = {operand("dy"), operand("x"), operand("weight"), operand("mean"), operand("invstd")},
         .attrs = {required("normalized_shape", AttrKind::ints)},
         .num_outputs = 3,
         .fusion = FusionClass::opaque,
         .infer = layernorm_backward_rule,
         .internal = true,
         .summary = "layer norm backward; outputs dx, dweight, dbias"});
}

}  // namespace dnnc::ir::detail
