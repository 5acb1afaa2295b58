// Layer declarations (params with PyTorch names/shapes/init) and layer application.
#include "frontend/layers.h"

#include <fmt/format.h>

#include <cmath>

#include "frontend/call_args.h"
#include "frontend/emit.h"
#include "ir/op_registry.h"

namespace dnnc::frontend {

const std::vector<std::string>& layer_constructor_names() {
  static const std::vector<std::string> names = {"linear", "conv2d", "batchnorm2d", "batchnorm1d", "layernorm"};
  return names;
}

bool is_layer_constructor(const std::string& name) {
  for (const auto& n : layer_constructor_names())
    if (n == name) return true;
  return false;
}

namespace {

class Declarer {
 public:
  Declarer(const std::string& name, ir::SourceLoc loc, const ast::Expr& call, const ConstEval& ev, ir::Module& m,
           const std::string& file)
      : call_(call), ev_(ev), m_(m), file_(file) {
    layer_.name = name;
    layer_.kind = call.name;
    layer_.loc = loc;
  }

  Layer run() {
    if (layer_.kind == "linear")
      linear();
    else if (layer_.kind == "conv2d")
      conv2d();
    else if (layer_.kind == "batchnorm2d" || layer_.kind == "batchnorm1d")
      batchnorm();
    else
      layernorm();
    return std::move(layer_);
  }

 private:
  Layer layer_;
  const ast::Expr& call_;
  const ConstEval& ev_;
  ir::Module& m_;
  const std::string& file_;
  Bound bound_;

  void bind(std::vector<std::string> params, size_t required) {
    bound_ = bind_args(call_, Signature{layer_.kind, std::move(params), required, false}, file_);
  }
  const ast::Expr* slot(size_t i) const { return bound_.slots[i]; }
  std::string what(const std::string& arg) const { return fmt::format("argument '{}' of {}", arg, layer_.kind); }
  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }

  int64_t int_at_least(size_t i, const std::string& arg, int64_t min) const {
    int64_t v = ev_.eval_int(*slot(i), what(arg));
    if (v < min)
      fail(expr_start(*slot(i)), fmt::format("{} of {} must be at least {}, found {}", arg, layer_.kind, min, v));
    return v;
  }
  std::vector<int64_t> pair_at_least(size_t i, const std::string& arg, int64_t def, int64_t min) const {
    if (!slot(i)) return {def, def};
    std::vector<int64_t> v = ev_.eval_pair(*slot(i), what(arg));
    for (int64_t x : v)
      if (x < min)
        fail(expr_start(*slot(i)), fmt::format("{} of {} must be at least {}, found {}", arg, layer_.kind, min, x));
    return v;
  }
  double float_in(size_t i, const std::string& arg, double def, double lo, bool lo_open, double hi) const {
    if (!slot(i)) return def;
    double v = ev_.eval_float(*slot(i), what(arg));
    bool ok = (lo_open ? v > lo : v >= lo) && v <= hi;
    if (!ok)
      fail(expr_start(*slot(i)),
           fmt::format("{} of {} must be in {}{}, {}], found {}", arg, layer_.kind, lo_open ? "(" : "[", lo, hi, v));
    return v;
  }
  bool flag(size_t i, const std::string& arg, bool def) const {
    return slot(i) ? ev_.eval_bool(*slot(i), what(arg)) : def;
  }
  void set_size(size_t i, const std::string& arg, std::vector<int64_t> v) {
    layer_.size_arg = arg;
    layer_.size_loc = expr_start(*slot(i));
    layer_.in_size = std::move(v);
  }

  void add_param(const std::string& suffix, ir::TensorType type, ir::ParamRole role, ir::InitSpec init,
                 bool operand = true) {
    std::optional<int64_t> n = type.numel(1);
    if (!n || *n > INT64_MAX / 8)
      fail(layer_.loc, fmt::format("layer '{}': {} {} has too many elements (the count overflows 64 bits)", layer_.name,
                                   suffix, ir::to_string(type)));
    std::string pname = layer_.name + "." + suffix;
    m_.params.push_back(ir::Param{pname, std::move(type), role, std::move(init), layer_.loc});
    if (operand) layer_.params.push_back(pname);
  }
  static ir::InitSpec uniform(int64_t fan_in) { return {"uniform", 1.0 / std::sqrt(static_cast<double>(fan_in))}; }

  /// linear(in_features, out_features, bias: true)
  void linear() {
    bind({"in_features", "out_features", "bias"}, 2);
    int64_t in = int_at_least(0, "in_features", 1);
    int64_t out = int_at_least(1, "out_features", 1);
    set_size(0, "in_features", {in});
    add_param("weight", {ir::DType::f32, {out, in}}, ir::ParamRole::weight, uniform(in));
    if (flag(2, "bias", true)) add_param("bias", {ir::DType::f32, {out}}, ir::ParamRole::weight, uniform(in));
  }

  /// conv2d(in_channels, out_channels, kernel, stride: 1, padding: 0, dilation: 1, groups: 1, bias: true)
  void conv2d() {
    bind({"in_channels", "out_channels", "kernel", "stride", "padding", "dilation", "groups", "bias"}, 3);
    int64_t in = int_at_least(0, "in_channels", 1);
    int64_t out = int_at_least(1, "out_channels", 1);
    std::vector<int64_t> kernel = pair_at_least(2, "kernel", 1, 1);
    std::vector<int64_t> stride = pair_at_least(3, "stride", 1, 1);
    std::vector<int64_t> padding = pair_at_least(4, "padding", 0, 0);
    std::vector<int64_t> dilation = pair_at_least(5, "dilation", 1, 1);
    int64_t groups = slot(6) ? int_at_least(6, "groups", 1) : 1;
    if (in % groups != 0 || out % groups != 0)
      fail(expr_start(*slot(6)),
           fmt::format("groups of conv2d must divide in_channels ({}) and out_channels ({}), found {}", in, out,
                       groups));
    set_size(0, "in_channels", {in});
    layer_.attrs = {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
    int64_t fan_in = 0;
    if (__builtin_mul_overflow(in / groups, kernel[0], &fan_in) || __builtin_mul_overflow(fan_in, kernel[1], &fan_in))
      fail(layer_.loc,
           fmt::format("layer '{}': weight has too many elements (the count overflows 64 bits)", layer_.name));
    add_param("weight", {ir::DType::f32, {out, in / groups, kernel[0], kernel[1]}}, ir::ParamRole::weight,
              uniform(fan_in));
    if (flag(7, "bias", true)) add_param("bias", {ir::DType::f32, {out}}, ir::ParamRole::weight, uniform(fan_in));
  }

  /// batchnorm2d(num_features, eps: 1e-5, momentum: 0.1), batchnorm1d(...) alike
  void batchnorm() {
    bind({"num_features", "eps", "momentum"}, 1);
    int64_t c = int_at_least(0, "num_features", 1);
    set_size(0, "num_features", {c});
    if (slot(1)) layer_.attrs["eps"] = float_in(1, "eps", 1e-5, 0.0, true, INFINITY);
    if (slot(2)) layer_.attrs["momentum"] = float_in(2, "momentum", 0.1, 0.0, false, 1.0);
    ir::TensorType vec{ir::DType::f32, {c}};
    add_param("weight", vec, ir::ParamRole::weight, {"ones", 0.0});
    add_param("bias", vec, ir::ParamRole::weight, {"zeros", 0.0});
    add_param("running_mean", vec, ir::ParamRole::buffer, {"zeros", 0.0});
    add_param("running_var", vec, ir::ParamRole::buffer, {"ones", 0.0});
    add_param("num_batches_tracked", {ir::DType::i64, {}}, ir::ParamRole::buffer, {"zeros", 0.0}, false);
  }

  /// layernorm(normalized_shape, eps: 1e-5)
  void layernorm() {
    bind({"normalized_shape", "eps"}, 1);
    std::vector<int64_t> ns = ev_.eval_ints(*slot(0), what("normalized_shape"));
    for (int64_t d : ns)
      if (d < 1)
        fail(expr_start(*slot(0)), fmt::format("normalized_shape of layernorm must have sizes >= 1, found {}", d));
    set_size(0, "normalized_shape", ns);
    layer_.attrs["normalized_shape"] = ns;
    if (slot(1)) layer_.attrs["eps"] = float_in(1, "eps", 1e-5, 0.0, true, INFINITY);
    ir::TensorType t{ir::DType::f32, ns};
    add_param("weight", t, ir::ParamRole::weight, {"ones", 0.0});
    add_param("bias", t, ir::ParamRole::weight, {"zeros", 0.0});
  }
};

std::string tuple_text(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + ")";
}

// Throws the declaration-side diagnostic if the input's feature size disagrees with the
// layer's declared size; returns otherwise (the caller reports the registry's message).
void report_size_mismatch(const Layer& l, const ir::TensorType& xt, const ast::Expr& input, const std::string& file) {
  ir::SourceLoc at = expr_start(input);
  std::string input_text = fmt::format("its input {} at {}:{}", describe_expr(input), at.line, at.col);
  auto fail = [&](const std::string& msg) { throw ir::CompileError(file, l.size_loc, msg); };
  if (l.kind == "layernorm") {
    size_t k = l.in_size.size();
    if (xt.shape.size() < k) return;
    std::vector<int64_t> trailing(xt.shape.end() - static_cast<std::ptrdiff_t>(k), xt.shape.end());
    for (int64_t d : trailing)
      if (d == ir::kBatch) return;
    if (trailing == l.in_size) return;
    fail(fmt::format("layer '{}' declares normalized_shape {}, but {} has trailing dims {}: expected {}, found {}",
                     l.name, tuple_text(l.in_size), input_text, tuple_text(trailing), tuple_text(trailing),
                     tuple_text(l.in_size)));
  }
  int64_t have = 0;
  const char* unit = "channels";
  if (l.kind == "linear") {
    if (xt.shape.empty()) return;
    have = xt.shape.back();
    unit = "features";
  } else {
    if (xt.shape.size() != 4) return;
    have = xt.shape[1];
  }
  int64_t declared = l.in_size[0];
  if (have == ir::kBatch || have == declared) return;
  std::string hint;
  if (l.kind == "linear" && xt.shape.size() > 2 && xt.numel(1) == declared)
    hint = fmt::format("; flatten it first: {}(flatten({}))", l.name, describe_expr(input));
  fail(fmt::format("layer '{}' declares {} {}, but {} has {} {}: expected {}, found {}{}", l.name, l.size_arg, declared,
                   input_text, have, unit, have, declared, hint));
}

}  // namespace

Layer declare_layer(const std::string& name, ir::SourceLoc name_loc, const ast::Expr& call, const ConstEval& ev,
                    ir::Module& m, const std::string& file) {
  return Declarer(name, name_loc, call, ev, m, file).run();
}

ir::ValueId apply_layer(Layer& layer, ir::ValueId x, const ast::Expr& input, ir::SourceLoc call_loc, ir::Graph& g,
                        ValueNamer& namer, const ir::Module& m, const std::string& result_name,
                        const std::string& file) {
  bool is_bn = layer.kind == "batchnorm2d" || layer.kind == "batchnorm1d";
  // batchnorm1d is PyTorch's BatchNorm1d on [N, C] or [N, C, L]: the statistics per channel over
  // N (and L) are batchnorm2d's over [N, C, 1, 1] (or [N, C, L, 1]), so it is lowered as that
  // batchnorm2d between two reshapes (views).
  const bool bn1d = layer.kind == "batchnorm1d";
  const ir::TensorType x_type = g.value(x).type;
  if (bn1d) {
    int64_t rank = static_cast<int64_t>(x_type.rank());
    if (x_type.dtype != ir::DType::f32 || (rank != 2 && rank != 3) || x_type.shape[0] != ir::kBatch)
      throw ir::CompileError(file, call_loc,
                             fmt::format("batchnorm1d layer '{}' expects an f32 input [{}, C] or [{}, C, L], found {}",
                                         layer.name, m.batch_symbol, m.batch_symbol,
                                         ir::to_string(x_type, m.batch_symbol)));
    std::vector<int64_t> shape4(x_type.shape.begin(), x_type.shape.end());
    while (shape4.size() < 4) shape4.push_back(1);
    x = emit_node(g, namer, "reshape", {x}, {{"shape", shape4}}, call_loc, "", {}, file)[0];
  }
  if (is_bn && layer.applications > 0)
    throw ir::CompileError(file, call_loc,
                           fmt::format("batchnorm layer '{}' is already applied at {}:{}; a batchnorm layer can be "
                                       "applied once, since it updates its running statistics once per step",
                                       layer.name, layer.first_use.line, layer.first_use.col));
  if (layer.applications++ == 0) layer.first_use = call_loc;
  std::vector<ir::ValueId> ins{x};
  for (const auto& p : layer.params) ins.push_back(g.param(p, m.param(p)->type));
  TypedNode typed;
  try {
    typed = type_node(bn1d ? "batchnorm2d" : layer.kind, types_of(g, ins), layer.attrs);
  } catch (const ir::ShapeError& e) {
    report_size_mismatch(layer, g.value(x).type, input, file);
    throw ir::CompileError(file, call_loc, e.what());
  }
  std::vector<std::string> suffixes;
  if (is_bn) suffixes = {".mean", ".invstd", ".running_mean", ".running_var"};
  if (layer.kind == "layernorm") suffixes = {".mean", ".invstd"};
  std::vector<ir::ValueId> outs = add_typed(g, namer, bn1d ? "batchnorm2d" : layer.kind, ins, std::move(typed),
                                            call_loc, bn1d ? "" : result_name, suffixes);
  if (is_bn) {
    g.updates.emplace_back(layer.name + ".running_mean", outs[3]);
    g.updates.emplace_back(layer.name + ".running_var", outs[4]);
    // PyTorch's BatchNorm2d.forward adds 1 to num_batches_tracked in training mode (it only
    // reads it when momentum is None, which dnnc has no spelling for; it is kept for state_dicts).
    std::string counter = layer.name + ".num_batches_tracked";
    ir::ValueId c = g.param(counter, m.param(counter)->type);
    g.updates.emplace_back(counter, emit_node(g, namer, "increment", {c}, {}, call_loc, counter, {}, file)[0]);
  }
  if (bn1d) {
    std::vector<int64_t> back(x_type.shape.begin(), x_type.shape.end());
    return emit_node(g, namer, "reshape", {outs[0]}, {{"shape", back}}, call_loc, result_name, {}, file)[0];
  }
  return outs[0];
}

}  // namespace dnnc::frontend
