// Gradient rules (reverse mode) for every differentiable op of docs/ops.md.
#include "passes/grad_rules.h"

#include <map>

#include "ir/op_registry.h"

namespace dnnc::passes {
namespace {

using ir::kNoValue;
using ir::ValueId;
using Ids = std::vector<ValueId>;

std::string dname(GradBuilder& b, ValueId v) { return "d" + b.graph().value(v).name; }

ir::Attrs pick(const ir::Attrs& a, const std::vector<std::string>& keys) {
  ir::Attrs out;
  for (const std::string& k : keys)
    if (auto it = a.find(k); it != a.end()) out.emplace(k, it->second);
  return out;
}

// y = f(x) elementwise, gradient op(dy, saved) where saved is the input (x) or the output (y).
GradRule unary(const char* backward_op, bool saves_output, std::vector<std::string> attrs = {}) {
  // `attrs` is owned by the lambda (an initializer_list capture would dangle once the table is built).
  return [=](GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
    Ids r(n.inputs.size(), kNoValue);
    if (!needs[0]) return r;
    ValueId saved = saves_output ? n.outputs[0] : n.inputs[0];
    r[0] = b.emit1(backward_op, {d[0], saved}, pick(n.attrs, attrs), dname(b, n.inputs[0]));
    return r;
  };
}

Ids reshape_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  if (!needs[0]) return r;
  const ir::Shape& s = b.type(n.inputs[0]).shape;
  r[0] = b.emit1("reshape", {d[0]}, {{"shape", std::vector<int64_t>(s)}}, dname(b, n.inputs[0]));
  return r;
}

Ids transpose_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  if (!needs[0]) return r;
  const auto& perm = ir::attr_ints(n.attrs, "perm");
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  r[0] = b.emit1("transpose", {d[0]}, {{"perm", inv}}, dname(b, n.inputs[0]));
  return r;
}

Ids scalar_op_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  if (!needs[0]) return r;
  if (n.op == "add_scalar") {
    r[0] = d[0];
  } else {  // mul_scalar / div_scalar: the same scaling of the gradient
    r[0] = b.emit1(n.op, {d[0]}, pick(n.attrs, {"value"}), dname(b, n.inputs[0]));
  }
  return r;
}

Ids binary_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(2, kNoValue);
  ValueId a = n.inputs[0], c = n.inputs[1], dy = d[0];
  const ir::Shape sa = b.type(a).shape, sc = b.type(c).shape;
  if (n.op == "add" || n.op == "sub") {
    if (needs[0]) r[0] = b.sum_to(dy, sa, dname(b, a));
    if (needs[1]) {
      ValueId g = b.sum_to(dy, sc, dname(b, c));
      r[1] = n.op == "add" ? g : b.emit1("neg", {g}, {}, dname(b, c));
    }
  } else if (n.op == "mul") {
    if (needs[0]) r[0] = b.sum_to(b.emit1("mul", {dy, c}), sa, dname(b, a));
    if (needs[1]) r[1] = b.sum_to(b.emit1("mul", {dy, a}), sc, dname(b, c));
  } else {  // div: d/da = dy / c, d/dc = -dy * a / c^2 = -(dy / c) * (a / c)
    ValueId dy_over_c = b.emit1("div", {dy, c});
    if (needs[0]) r[0] = b.sum_to(dy_over_c, sa, dname(b, a));
    if (needs[1]) {
      ValueId q = b.emit1("mul", {dy_over_c, b.emit1("div", {a, c})});
      r[1] = b.emit1("neg", {b.sum_to(q, sc)}, {}, dname(b, c));
    }
  }
  return r;
}

Ids matmul_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(2, kNoValue);
  bool ta = ir::attr_bool(n.attrs, "transpose_a"), tb = ir::attr_bool(n.attrs, "transpose_b");
  ValueId a = n.inputs[0], c = n.inputs[1], dy = d[0];
  auto mm = [&](ValueId x, ValueId y, bool tx, bool ty, const std::string& name) {
    return b.emit1("matmul", {x, y}, {{"transpose_a", tx}, {"transpose_b", ty}}, name);
  };
  // C = op(A) op(B): dA = dC op(B)^T (or its transpose), dB = op(A)^T dC (or its transpose).
  if (needs[0]) r[0] = ta ? mm(c, dy, tb, true, dname(b, a)) : mm(dy, c, false, !tb, dname(b, a));
  if (needs[1]) r[1] = tb ? mm(dy, a, true, ta, dname(b, c)) : mm(a, dy, !ta, false, dname(b, c));
  return r;
}

// Rank-2 x: two GEMMs and a column sum. Rank > 2 ([..., in]): the batch dim cannot be merged
// with the others, so dx = linear(dy, W^T) and dW sums the per-row outer products dy ⊗ x
// over the leading dims.
Ids linear_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  ValueId x = n.inputs[0], w = n.inputs[1], dy = d[0];
  int64_t rank = b.type(x).rank();
  std::vector<int64_t> lead;
  for (int64_t i = 0; i + 1 < rank; ++i) lead.push_back(i);
  if (rank == 2) {
    if (needs[0]) r[0] = b.emit1("matmul", {dy, w}, {{"transpose_a", false}, {"transpose_b", false}}, dname(b, x));
    if (needs[1]) r[1] = b.emit1("matmul", {dy, x}, {{"transpose_a", true}, {"transpose_b", false}}, dname(b, w));
  } else {
    if (needs[0]) {
      ValueId wt = b.emit1("transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}});
      r[0] = b.emit1("linear", {dy, wt}, {}, dname(b, x));
    }
    if (needs[1]) {
      std::vector<int64_t> col(b.type(dy).shape), row(b.type(x).shape);
      col.push_back(1);
      row.insert(row.end() - 1, 1);
      ValueId outer = b.emit1("mul", {b.emit1("reshape", {dy}, {{"shape", col}}), b.emit1("reshape", {x}, {{"shape", row}})});
      r[1] = b.emit1("reduce_sum", {outer}, {{"axes", lead}, {"keepdim", false}}, dname(b, w));
    }
  }
  if (n.inputs.size() > 2 && needs[2])
    r[2] = b.emit1("reduce_sum", {dy}, {{"axes", lead}, {"keepdim", false}}, dname(b, n.inputs[2]));
  return r;
}

Ids conv2d_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  ValueId x = n.inputs[0], w = n.inputs[1], dy = d[0];
  ir::Attrs geo = pick(n.attrs, {"stride", "padding", "dilation", "groups"});
  if (needs[0]) {
    ir::Attrs a = geo;
    const ir::Shape& xs = b.type(x).shape;
    a["input_hw"] = std::vector<int64_t>{xs[2], xs[3]};
    r[0] = b.emit1("conv2d_backward_input", {dy, w}, a, dname(b, x));
  }
  if (needs[1]) {
    ir::Attrs a = geo;
    const ir::Shape& ws = b.type(w).shape;
    a["kernel"] = std::vector<int64_t>{ws[2], ws[3]};
    r[1] = b.emit1("conv2d_backward_weight", {dy, x}, a, dname(b, w));
  }
  if (n.inputs.size() > 2 && needs[2])
    r[2] = b.emit1("reduce_sum", {dy}, {{"axes", std::vector<int64_t>{0, 2, 3}}, {"keepdim", false}},
                   dname(b, n.inputs[2]));
  return r;
}

Ids pool_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  if (!needs[0]) return r;
  std::string op = n.op + "_backward";
  ir::Attrs a = n.op == "maxpool2d" ? pick(n.attrs, {"kernel", "stride", "padding"})
                                    : pick(n.attrs, {"kernel", "stride", "padding", "count_include_pad"});
  r[0] = b.emit1(op, {d[0], n.inputs[0]}, a, dname(b, n.inputs[0]));
  return r;
}

Ids norm_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  bool any = false;
  for (size_t i = 0; i < 3 && i < needs.size(); ++i) any |= needs[i];
  if (!any) return r;
  // outputs: y, mean, invstd (, running stats): the statistics are saved for the backward.
  ir::Attrs a = n.op == "layernorm" ? pick(n.attrs, {"normalized_shape"}) : ir::Attrs{};
  Ids g = b.emit(n.op + "_backward", {d[0], n.inputs[0], n.inputs[1], n.outputs[1], n.outputs[2]}, a);
  for (size_t i = 0; i < 3; ++i)
    if (needs[i]) r[i] = g[i];
  return r;
}

// concat: each operand's gradient is its slice of dy along the axis.
Ids concat_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  const int64_t rank = static_cast<int64_t>(b.type(n.inputs[0]).rank());
  int64_t axis = ir::attr_int(ir::complete_attrs(*ir::find_op("concat"), n.attrs), "axis");
  if (axis < 0) axis += rank;
  int64_t start = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    int64_t length = b.type(n.inputs[i]).shape[static_cast<size_t>(axis)];
    if (needs[i])
      r[i] = b.emit1("slice", {d[0]}, {{"axis", axis}, {"start", start}, {"length", length}}, dname(b, n.inputs[i]));
    start += length;
  }
  return r;
}

Ids dropout_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  if (needs[0]) r[0] = b.emit1("mul", {d[0], n.outputs[1]}, {}, dname(b, n.inputs[0]));
  return r;
}

Ids loss_back(GradBuilder& b, const ir::Node& n, const Ids& d, const std::vector<bool>& needs) {
  Ids r(n.inputs.size(), kNoValue);
  ValueId pred = n.inputs[0], target = n.inputs[1];
  if (n.op == "cross_entropy") {
    if (needs[1]) b.fail(n.loc, "autodiff: cross_entropy targets are class indices, not differentiable");
    if (needs[0]) {
      ir::Attrs a;  // the forward's smoothing (absent: 0, and the IR text stays as it was)
      if (auto it = n.attrs.find("label_smoothing"); it != n.attrs.end() && ir::attr_float(n.attrs, "label_smoothing") != 0)
        a["label_smoothing"] = it->second;
      r[0] = b.emit1("cross_entropy_backward", {d[0], pred, target}, a, dname(b, pred));
    }
    return r;
  }
  ValueId dp = b.emit1("mse_loss_backward", {d[0], pred, target}, {}, dname(b, pred));
  if (needs[0]) r[0] = dp;
  if (needs[1]) r[1] = b.emit1("neg", {dp}, {}, dname(b, target));
  return r;
}

const std::map<std::string, GradRule>& rules() {
  static const std::map<std::string, GradRule> table = [] {
    std::map<std::string, GradRule> t;
    t["relu"] = unary("relu_backward", true);  // y > 0 exactly where x > 0: save the output, as PyTorch does
    t["leaky_relu"] = unary("leaky_relu_backward", false, {"negative_slope"});
    t["gelu"] = unary("gelu_backward", false);
    t["tanh"] = unary("tanh_backward", true);
    t["sigmoid"] = unary("sigmoid_backward", true);
    t["softmax"] = unary("softmax_backward", true, {"axis"});
    t["log_softmax"] = unary("log_softmax_backward", true, {"axis"});
    t["flatten"] = reshape_back;
    t["reshape"] = reshape_back;
    t["transpose"] = transpose_back;
    t["concat"] = concat_back;
    t["add_scalar"] = scalar_op_back;
    t["mul_scalar"] = scalar_op_back;
    t["div_scalar"] = scalar_op_back;
    for (const char* op : {"add", "sub", "mul", "div"}) t[op] = binary_back;
    t["matmul"] = matmul_back;
    t["linear"] = linear_back;
    t["conv2d"] = conv2d_back;
    t["maxpool2d"] = pool_back;
    t["avgpool2d"] = pool_back;
    t["batchnorm2d"] = norm_back;
    t["layernorm"] = norm_back;
    t["dropout"] = dropout_back;
    t["cross_entropy"] = loss_back;
    t["mse_loss"] = loss_back;
    return t;
  }();
  return table;
}

}  // namespace

const GradRule* find_grad_rule(const std::string& op) {
  auto it = rules().find(op);
  return it == rules().end() ? nullptr : &it->second;
}

std::vector<std::string> ops_with_grad_rules() {
  std::vector<std::string> out;
  for (const auto& [k, v] : rules()) out.push_back(k);
  return out;
}

}  // namespace dnnc::passes
