// Op definitions: the optimizer updates (torch.optim.SGD, Adam and AdamW semantics).
#include <fmt/format.h>

#include "ir/op_defs.h"
#include "ir/shape_check.h"

namespace dnnc::ir::detail {
namespace {

using Types = std::vector<TensorType>;

void expect_like_param(const std::string& op, const std::string& what, const TensorType& t, const TensorType& param,
                       int operand) {
  if (t == param) return;
  throw ShapeError(
      fmt::format("{}: {} must have the param's type; expected {}, found {}", op, what, to_string(param), to_string(t)),
      operand);
}

void expect_at_least(const std::string& op, const Attrs& attrs, const std::string& name, double lo) {
  double v = attr_float(attrs, name);
  if (!(v >= lo))
    throw ShapeError(
        fmt::format("{}: invalid {}; expected >= {}, found {}", op, name, attr_to_string(lo), attr_to_string(v)));
}

// Outputs: new param, plus the new momentum buffer when momentum != 0. With momentum the
// momentum_buf and step operands are required (PyTorch's first step copies the gradient into
// the buffer); without it they must be absent. One more, last operand is the step's learning
// rate (an f32 scalar, the scheduled lr), which then replaces the `lr` attribute.
Types sgd_update_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "sgd_update";
  const TensorType& param = in[0];
  expect_dtype(op, "param", param, DType::f32, 0);
  expect_like_param(op, "grad", in[1], param, 1);
  expect_at_least(op, attrs, "lr", 0.0);
  expect_at_least(op, attrs, "momentum", 0.0);
  expect_at_least(op, attrs, "weight_decay", 0.0);
  double momentum = attr_float(attrs, "momentum");
  if (attr_bool(attrs, "nesterov") && (momentum <= 0.0 || attr_float(attrs, "dampening") != 0.0))
    throw ShapeError(
        fmt::format("{}: nesterov momentum requires a momentum and zero dampening; expected momentum > 0 "
                    "and dampening 0, found momentum {} and dampening {}",
                    op, attr_to_string(momentum), attr_to_string(attr_float(attrs, "dampening"))));
  size_t expected = momentum != 0.0 ? 4 : 2;
  if (in.size() != expected && in.size() != expected + 1)
    throw ShapeError(fmt::format(
        "{}: with momentum {} the operands are {} and an optional lr; expected {} or {} operands, found {}", op,
        attr_to_string(momentum), momentum != 0.0 ? "(param, grad, momentum_buf, step)" : "(param, grad)", expected,
        expected + 1, in.size()));
  if (in.size() == expected + 1) expect_f32_scalar(op, "lr", in[expected], static_cast<int>(expected));
  if (momentum == 0.0) return {param};
  expect_like_param(op, "momentum_buf", in[2], param, 2);
  expect_f32_scalar(op, "step", in[3], 3);
  return {param, param};
}

Types adam_update_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "adam_update";
  const TensorType& param = in[0];
  expect_dtype(op, "param", param, DType::f32, 0);
  expect_like_param(op, "grad", in[1], param, 1);
  expect_like_param(op, "exp_avg", in[2], param, 2);
  expect_like_param(op, "exp_avg_sq", in[3], param, 3);
  expect_f32_scalar(op, "step", in[4], 4);
  if (in.size() > 5) expect_f32_scalar(op, "lr", in[5], 5);
  expect_at_least(op, attrs, "lr", 0.0);
  expect_at_least(op, attrs, "eps", 0.0);
  expect_at_least(op, attrs, "weight_decay", 0.0);
  for (const char* beta : {"beta1", "beta2"}) {
    double b = attr_float(attrs, beta);
    if (!(b >= 0.0 && b < 1.0))
      throw ShapeError(
          fmt::format("{}: invalid {}; expected a value in [0, 1), found {}", op, beta, attr_to_string(b)));
  }
  return {param, param, param};
}

Types clip_coef_rule(const Types& in, const Attrs& attrs) {
  expect_f32_scalar("clip_coef", "total_sq", in[0], 0);
  double max_norm = attr_float(attrs, "max_norm");
  if (!(max_norm > 0))
    throw ShapeError(fmt::format("clip_coef: max_norm must be positive, found {}", attr_to_string(max_norm)));
  return {in[0]};
}

}  // namespace

void register_optim_ops(OpTable& t) {
  t.add({.name = "clip_coef",
         .operands = {operand("total_sq")},
         .attrs = {required("max_norm", AttrKind::float_)},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = clip_coef_rule,
         .internal = true,
         .summary = "gradient clipping's factor from the sum of squares of every gradient: "
                    "min(max_norm / (sqrt(total_sq) + 1e-6), 1), as torch.nn.utils.clip_grad_norm_"});
  t.add({.name = "sgd_update",
         .operands = {operand("param"), operand("grad"), optional_operand("momentum_buf"), optional_operand("step"),
                      optional_operand("lr")},
         .attrs = {required("lr", AttrKind::float_), opt_float("momentum", 0.0), opt_float("dampening", 0.0),
                   opt_float("weight_decay", 0.0), opt_bool("nesterov", false)},
         .num_outputs = 2,
         .fusion = FusionClass::opaque,
         .infer = sgd_update_rule,
         .internal = true,
         .summary = "torch.optim.SGD step; outputs new param (, new momentum_buf when momentum != 0); a last "
                    "f32 scalar operand, if given, is the lr"});
  t.add({.name = "adam_update",
         .operands = {operand("param"), operand("grad"), operand("exp_avg"), operand("exp_avg_sq"), operand("step"),
                      optional_operand("lr")},
         .attrs = {opt_float("lr", 0.001), opt_float("beta1", 0.9), opt_float("beta2", 0.999), opt_float("eps", 1e-8),
                   opt_float("weight_decay", 0.0), opt_bool("decoupled", false)},
         .num_outputs = 3,
         .fusion = FusionClass::opaque,
         .infer = adam_update_rule,
         .internal = true,
         .summary = "torch.optim.Adam (decoupled=false) / AdamW (decoupled=true) step; outputs param, exp_avg, "
                    "exp_avg_sq; a last f32 scalar operand, if given, is the lr"});
}

}  // namespace dnnc::ir::detail
