// Op definitions: elementwise maps, broadcasting binary ops, scalar ops, softmax and reduce_sum.
#include <fmt/format.h>

#include <algorithm>

#include "ir/op_defs.h"
#include "ir/shape_check.h"

namespace dnnc::ir::detail {
namespace {

using Types = std::vector<TensorType>;

// A unary map: output has x's type (any layout; the map does not care how x is stored).
ShapeRule unary(std::string op) {
  return [op](const Types& in, const Attrs&) -> Types {
    expect_dtype(op, "input", in[0], DType::f32, 0);
    return {in[0]};
  };
}

// Like unary, plus an `axis` attribute that must name a dim of x.
ShapeRule unary_with_axis(std::string op) {
  return [op](const Types& in, const Attrs& attrs) -> Types {
    expect_dtype(op, "input", in[0], DType::f32, 0);
    expect_min_rank(op, "input", in[0], 1, 0);
    normalize_axis(op, "axis", attr_int(attrs, "axis"), in[0].rank());
    return {in[0]};
  };
}

// numpy broadcasting. The result takes the layout of the first operand whose shape is the full
// result shape; the other operand must be row_major or share that layout.
ShapeRule binary(std::string op) {
  return [op](const Types& in, const Attrs&) -> Types {
    const TensorType &a = in[0], &b = in[1];
    expect_dtype(op, "a", a, DType::f32, 0);
    expect_dtype(op, "b", b, DType::f32, 1);
    Shape out = broadcast_shapes(op, a.shape, b.shape);
    Layout layout = a.shape == out ? a.layout : b.shape == out ? b.layout : Layout::row_major;
    for (int i = 0; i < 2; ++i) expect_layout_in(op, i == 0 ? "a" : "b", in[i], {Layout::row_major, layout}, i);
    return {TensorType{DType::f32, out, layout}};
  };
}

// x + 1 on an i64 counter of any shape (batchnorm's num_batches_tracked).
Types increment_rule(const Types& in, const Attrs&) {
  expect_dtype("increment", "counter", in[0], DType::i64, 0);
  expect_row_major("increment", "counter", in[0], 0);
  return {in[0]};
}

Types reduce_sum_rule(const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  expect_dtype("reduce_sum", "input", x, DType::f32, 0);
  expect_row_major("reduce_sum", "input", x, 0);
  const auto& axes = attr_ints(attrs, "axes");
  if (axes.empty()) throw ShapeError("reduce_sum: attribute 'axes' must not be empty; expected >= 1 axes, found 0");
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes) {
    if (x.rank() == 0) throw ShapeError("reduce_sum: cannot reduce a scalar; expected rank >= 1, found rank 0", 0);
    int64_t n = normalize_axis("reduce_sum", "axes", a, x.rank());
    if (reduced[static_cast<size_t>(n)])
      throw ShapeError(fmt::format("reduce_sum: axis {} is listed twice; expected distinct axes, found {}", n,
                                   attr_to_string(axes)));
    reduced[static_cast<size_t>(n)] = true;
  }
  bool keepdim = attr_bool(attrs, "keepdim");
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i])
      out.push_back(x.shape[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return {TensorType{DType::f32, out, Layout::row_major}};
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  struct Unary {
    const char* name;
    const char* summary;
  };
  for (Unary u : {Unary{"relu", "max(x, 0)"}, Unary{"tanh", "tanh(x)"}, Unary{"sigmoid", "1 / (1 + exp(-x))"},
                  Unary{"gelu", "x * Phi(x) (exact erf form)"}}) {
    t.add({.name = u.name,
           .operands = {operand("x")},
           .attrs = {},
           .num_outputs = 1,
           .fusion = FusionClass::elementwise,
           .infer = unary(u.name),
           .summary = u.summary});
  }
  t.add({.name = "leaky_relu",
         .operands = {operand("x")},
         .attrs = {opt_float("negative_slope", 0.01)},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = unary("leaky_relu"),
         .summary = "x > 0 ? x : negative_slope * x"});
  t.add({.name = "softmax",
         .operands = {operand("x")},
         .attrs = {opt_int("axis", -1)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = unary_with_axis("softmax"),
         .summary = "exp(x) / sum(exp(x), axis)"});
  t.add({.name = "log_softmax",
         .operands = {operand("x")},
         .attrs = {opt_int("axis", -1)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = unary_with_axis("log_softmax"),
         .summary = "x - log(sum(exp(x), axis))"});
  for (const char* name : {"add", "sub", "mul", "div"}) {
    t.add({.name = name,
           .operands = {operand("a"), operand("b")},
           .attrs = {},
           .num_outputs = 1,
           .fusion = FusionClass::broadcast,
           .infer = binary(name),
           .summary = fmt::format("a {} b with numpy broadcasting", std::string(name) == "add"   ? "+"
                                                                    : std::string(name) == "sub" ? "-"
                                                                    : std::string(name) == "mul" ? "*"
                                                                                                 : "/")});
  }
  struct Scalar {
    const char* name;
    const char* summary;
  };
  for (Scalar s :
       {Scalar{"add_scalar", "x + value"}, Scalar{"mul_scalar", "x * value"}, Scalar{"div_scalar", "x / value"}}) {
    t.add({.name = s.name,
           .operands = {operand("x")},
           .attrs = {required("value", AttrKind::float_)},
           .num_outputs = 1,
           .fusion = FusionClass::elementwise,
           .infer = unary(s.name),
           .summary = s.summary});
  }
  t.add({.name = "neg",
         .operands = {operand("x")},
         .attrs = {},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = unary("neg"),
         .internal = true,
         .summary = "-x"});
  t.add({.name = "increment",
         .operands = {operand("x")},
         .attrs = {},
         .num_outputs = 1,
         .fusion = FusionClass::opaque,
         .infer = increment_rule,
         .internal = true,
         .summary = "x + 1 on an i64 counter"});
  t.add({.name = "reduce_sum",
         .operands = {operand("x")},
         .attrs = {required("axes", AttrKind::ints), opt_bool("keepdim", false)},
         .num_outputs = 1,
         .fusion = FusionClass::reduction,
         .infer = reduce_sum_rule,
         .internal = true,
         .summary = "sum over the listed (non-empty, distinct) axes; keepdim keeps them as size 1"});
}

}  // namespace dnnc::ir::detail
