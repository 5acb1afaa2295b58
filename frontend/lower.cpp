// Model lowering: scope of names, inputs, layer declarations and tensor expressions.
#include "frontend/lower.h"

#include <fmt/format.h>

#include <map>

#include "frontend/call_args.h"
#include "frontend/const_eval.h"
#include "frontend/emit.h"
#include "frontend/layers.h"
#include "frontend/op_surface.h"
#include "frontend/suggest.h"
#include "ir/op_registry.h"

namespace dnnc::frontend {
namespace {

using ast::Expr;
using ast::ExprKind;

constexpr const char* kStepParam = "dnnc.step";
// dnnc compiles small models; these bounds keep hostile inputs from taking minutes (graph
// construction is quadratic in the number of values).
constexpr size_t kMaxStatements = 10000;
constexpr size_t kMaxNodes = 10000;

struct Entity {
  enum class Kind : uint8_t { value, layer, constant } kind = Kind::value;
  ir::ValueId value = ir::kNoValue;
  size_t layer = 0;
  Const constant;
  ir::SourceLoc loc;       // the name where it is defined
  ir::SourceLoc expr_loc;  // start of its defining expression (inputs: the name)
};

// A lowered expression: a tensor value or a compile-time constant.
struct Operand {
  bool is_const = false;
  Const c;
  ir::ValueId v = ir::kNoValue;
};

std::string loc_text(ir::SourceLoc l) { return fmt::format("{}:{}", l.line, l.col); }

class ModelLowering {
 public:
  ModelLowering(const ast::ModelBlock& mb, const std::string& file)
      : mb_(mb), file_(file), ev_(file, [this](const Expr& e) { return resolve(e); }) {
    m_.name = mb.name;
    m_.source_file = file;
    g_.name = "forward";
    batch_symbol_.clear();
  }

  ir::Module run() {
    for (const auto& s : mb_.stmts) {
      const std::string& n = s.input ? s.input->name : s.assign->name;
      definitions_.emplace(n, s.input ? s.input->loc : s.assign->loc);
    }
    if (mb_.stmts.size() > kMaxStatements) {
      const auto& s = mb_.stmts[kMaxStatements];
      fail(s.input ? s.input->loc : s.assign->loc,
           fmt::format("the model has more than {} statements; dnnc compiles small models", kMaxStatements));
    }
    for (const auto& s : mb_.stmts) {
      current_ = s.input ? s.input->name : s.assign->name;
      if (s.input)
        input(*s.input);
      else
        assign(*s.assign);
      if (g_.nodes.size() > kMaxNodes)
        fail(s.input ? s.input->loc : s.assign->loc,
             fmt::format("the model has more than {} ops; dnnc compiles small models", kMaxNodes));
    }
    current_.clear();
    for (const auto& l : layers_)
      if (l.applications == 0) fail(l.loc, fmt::format("layer '{}' is declared but never applied", l.name));
    finish_outputs();
    if (step_used_)
      m_.params.push_back(
          ir::Param{kStepParam, {ir::DType::f32, {}}, ir::ParamRole::optimizer_state, {"zeros", 0.0}, {}});
    if (!batch_symbol_.empty()) m_.batch_symbol = batch_symbol_;
    m_.graphs.push_back(std::move(g_));
    return std::move(m_);
  }

 private:
  const ast::ModelBlock& mb_;
  const std::string& file_;
  ConstEval ev_;
  ir::Module m_;
  ir::Graph g_;
  ValueNamer namer_;
  std::map<std::string, Entity> scope_;
  std::multimap<std::string, ir::SourceLoc> definitions_;  // every definition, for "used before"
  std::vector<Layer> layers_;
  std::string batch_symbol_;
  int64_t dropouts_ = 0;
  bool step_used_ = false;
  std::string current_;  // the name the statement being lowered defines

  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }

  std::vector<std::string> scope_names() const {
    std::vector<std::string> out;
    for (const auto& [n, e] : scope_) out.push_back(n);
    return out;
  }

  [[noreturn]] void unknown_identifier(const Expr& e) const {
    if (e.name == current_)
      fail(e.loc,
           fmt::format("'{}' is used in its own definition; every name is assigned once, so pick a new name", e.name));
    auto it = definitions_.find(e.name);
    if (it != definitions_.end())
      fail(e.loc, fmt::format("'{}' is used before its definition at {}", e.name, loc_text(it->second)));
    if (e.name == "True" || e.name == "False")  // Python's spelling
      fail(e.loc, fmt::format("unknown identifier '{}'; booleans are written {} in .dnn", e.name,
                              e.name == "True" ? "true" : "false"));
    std::vector<std::string> names = scope_names();
    if (!batch_symbol_.empty()) names.push_back(batch_symbol_);
    fail(e.loc, fmt::format("unknown identifier '{}'{}", e.name, did_you_mean(e.name, names)));
  }

  Resolved resolve(const Expr& e) const {
    auto it = scope_.find(e.name);
    if (it == scope_.end()) {
      if (e.name == batch_symbol_) return {std::nullopt, fmt::format("the batch dimension '{}'", e.name)};
      unknown_identifier(e);
    }
    const Entity& ent = it->second;
    switch (ent.kind) {
      case Entity::Kind::constant: return {ent.constant, ""};
      case Entity::Kind::layer: return {std::nullopt, fmt::format("layer '{}'", e.name)};
      case Entity::Kind::value: break;
    }
    return {std::nullopt,
            fmt::format("tensor '{}' ({})", e.name, ir::to_string(g_.value(ent.value).type, batch_symbol_))};
  }

  void define(const std::string& name, ir::SourceLoc loc, Entity ent) {
    auto it = scope_.find(name);
    if (it != scope_.end())
      fail(loc, fmt::format("redefinition of '{}' (first defined at {}); every name is assigned once", name,
                            loc_text(it->second.loc)));
    ent.loc = loc;
    scope_.emplace(name, ent);
  }

  void check_fresh(const std::string& name, ir::SourceLoc loc) {
    auto it = scope_.find(name);
    if (it != scope_.end())
      fail(loc, fmt::format("redefinition of '{}' (first defined at {}); every name is assigned once", name,
                            loc_text(it->second.loc)));
    if (!batch_symbol_.empty() && name == batch_symbol_)
      fail(loc, fmt::format("'{}' is the batch dimension symbol and cannot be assigned", name));
    if (find_surface(name) || is_layer_constructor(name))
      fail(loc, fmt::format("'{}' is the name of an op and cannot be assigned", name));
  }

  std::string type_text(const ir::TensorType& t) const {
    return ir::to_string(t, batch_symbol_.empty() ? "N" : batch_symbol_);
  }

  /// input_decl: dtype, dims (one symbolic batch dim, first), element count.
  void input(const ast::InputDecl& d) {
    check_fresh(d.name, d.loc);
    std::optional<ir::DType> dt = ir::parse_dtype(d.dtype);
    if (!dt)
      fail(d.dtype_loc,
           fmt::format("unknown dtype '{}'; expected f32 or i64{}", d.dtype, did_you_mean(d.dtype, {"f32", "i64"})));
    ir::TensorType t{*dt, {}};
    for (size_t i = 0; i < d.dims.size(); ++i) {
      const Expr& e = *d.dims[i];
      bool symbolic = e.kind == ExprKind::ident && !scope_.count(e.name);
      if (symbolic) {
        if (batch_symbol_.empty()) batch_symbol_ = m_.batch_symbol = e.name;  // messages name it from here on
        if (e.name != batch_symbol_)
          fail(e.loc, fmt::format("only one symbolic dimension, the batch '{}', is supported; found '{}'",
                                  batch_symbol_, e.name));
        if (i != 0)
          fail(e.loc,
               fmt::format("the batch dimension '{}' must be the first dimension of input '{}'", e.name, d.name));
        t.shape.push_back(ir::kBatch);
        continue;
      }
      int64_t v = ev_.eval_int(e, fmt::format("a dimension of input '{}'", d.name));
      if (v < 1) fail(expr_start(e), fmt::format("dimensions of input '{}' must be at least 1, found {}", d.name, v));
      t.shape.push_back(v);
    }
    if (t.shape.empty() || t.shape[0] != ir::kBatch)
      fail(d.loc, fmt::format("input '{}' has no batch dimension; inputs are batches, declare it like {}[{}{}]", d.name,
                              d.dtype, batch_symbol_.empty() ? "N" : batch_symbol_, t.shape.empty() ? "" : ", ..."));
    std::optional<int64_t> n = t.numel(1);
    if (!n || *n > INT64_MAX / 8)
      fail(d.loc, fmt::format("input '{}' of type {} has too many elements per sample (the count overflows 64 bits)",
                              d.name, type_text(t)));
    Entity ent;
    ent.value = g_.add_input(d.name, t);
    ent.expr_loc = d.loc;
    define(d.name, d.loc, ent);
  }

  /// assign: a layer declaration, a named constant, or a tensor computation.
  void assign(const ast::Assign& a) {
    check_fresh(a.name, a.loc);
    const Expr& e = *a.value;
    Entity ent;
    ent.expr_loc = expr_start(e);
    if (e.kind == ExprKind::call && is_layer_constructor(e.name) && !scope_.count(e.name)) {
      layers_.push_back(declare_layer(a.name, a.loc, e, ev_, m_, file_));
      ent.kind = Entity::Kind::layer;
      ent.layer = layers_.size() - 1;
      define(a.name, a.loc, ent);
      return;
    }
    Operand op = lower(e, a.name);
    if (op.is_const) {
      ent.kind = Entity::Kind::constant;
      ent.constant = op.c;
    } else {
      ent.value = op.v;
    }
    define(a.name, a.loc, ent);
  }

  ir::ValueId tensor(const Expr& e, const std::string& what, const std::string& name = "") {
    Operand o = lower(e, name);
    if (o.is_const) fail(expr_start(e), fmt::format("{} expects a tensor, found {}", what, o.c.describe()));
    return o.v;
  }

  Operand constant(Const c) { return Operand{true, c, ir::kNoValue}; }
  Operand value(ir::ValueId v) { return Operand{false, {}, v}; }

  ir::ValueId emit(const std::string& op, const std::vector<ir::ValueId>& ins, const ir::Attrs& attrs,
                   ir::SourceLoc loc, const std::string& name) {
    return emit_node(g_, namer_, op, ins, attrs, loc, name, {}, file_)[0];
  }

  /// Lowers a tensor-or-constant expression; `name` names the value the outermost node defines.
  Operand lower(const Expr& e, const std::string& name) {
    switch (e.kind) {
      case ExprKind::int_lit: return constant(Const::of_int(e.int_value));
      case ExprKind::float_lit: return constant(Const::of_float(e.float_value));
      case ExprKind::bool_lit: return constant(Const::of_bool(e.bool_value));
      case ExprKind::string_lit: fail(e.loc, "a string is not a tensor or a number");
      case ExprKind::tuple:
        fail(e.loc, fmt::format("a tuple of {} is not a tensor; tuples are only op arguments", e.elems.size()));
      case ExprKind::ident: return ident(e);
      case ExprKind::neg: {
        Operand x = lower(*e.elems[0], "");
        if (x.is_const) return constant(ev_.eval(e, "negation"));
        return value(emit("mul_scalar", {x.v}, {{"value", -1.0}}, e.loc, name));
      }
      case ExprKind::binary: {
        Operand a = lower(*e.elems[0], "");
        Operand b = lower(*e.elems[1], "");
        if (a.is_const && b.is_const) return constant(ev_.eval(e, "expression"));
        return binary(e.op, a, b, *e.elems[0], *e.elems[1], e.loc, name);
      }
      case ExprKind::call: return call(e, name);
    }
    fail(e.loc, "unsupported expression");
  }

  Operand ident(const Expr& e) {
    auto it = scope_.find(e.name);
    if (it == scope_.end()) {
      if (e.name == batch_symbol_) fail(e.loc, fmt::format("'{}' is the batch dimension symbol, not a value", e.name));
      unknown_identifier(e);
    }
    const Entity& ent = it->second;
    if (ent.kind == Entity::Kind::layer)
      fail(e.loc, fmt::format("'{}' is a layer, not a value; apply it to an input, e.g. {}(x)", e.name, e.name));
    if (ent.kind == Entity::Kind::constant) return constant(ent.constant);
    return value(ent.value);
  }

  double scalar_of(const Operand& o, const Expr& e) const {
    if (o.c.kind == Const::Kind::bool_) fail(expr_start(e), "arithmetic on a boolean");
    return o.c.f;
  }

  /// Infix + - * / (and add/sub/mul/div): tensor with tensor broadcasts; a constant side
  /// becomes add_scalar / mul_scalar / div_scalar.
  Operand binary(char op, const Operand& a, const Operand& b, const Expr& ea, const Expr& eb, ir::SourceLoc loc,
                 const std::string& name) {
    static const std::map<char, std::string> ops = {{'+', "add"}, {'-', "sub"}, {'*', "mul"}, {'/', "div"}};
    if (!a.is_const && !b.is_const) return value(emit(ops.at(op), {a.v, b.v}, {}, loc, name));
    if (!a.is_const) {
      double c = scalar_of(b, eb);
      switch (op) {
        case '+': return value(emit("add_scalar", {a.v}, {{"value", c}}, loc, name));
        case '-': return value(emit("add_scalar", {a.v}, {{"value", -c}}, loc, name));
        case '*': return value(emit("mul_scalar", {a.v}, {{"value", c}}, loc, name));
        default:
          if (c == 0.0) fail(expr_start(eb), "division by the constant zero");
          return value(emit("div_scalar", {a.v}, {{"value", c}}, loc, name));
      }
    }
    double c = scalar_of(a, ea);
    switch (op) {
      case '+': return value(emit("add_scalar", {b.v}, {{"value", c}}, loc, name));
      case '*': return value(emit("mul_scalar", {b.v}, {{"value", c}}, loc, name));
      case '-': {
        ir::ValueId neg = emit("mul_scalar", {b.v}, {{"value", -1.0}}, loc, "");
        return value(emit("add_scalar", {neg}, {{"value", c}}, loc, name));
      }
      default:
        fail(loc, "dividing a constant by a tensor is not supported; only tensor / constant and tensor / tensor are");
    }
  }

  Operand call(const Expr& e, const std::string& name) {
    auto it = scope_.find(e.name);
    if (it != scope_.end()) {
      const Entity& ent = it->second;
      if (ent.kind != Entity::Kind::layer)
        fail(e.loc, fmt::format("'{}' is a {}, not a layer or an op, and cannot be called", e.name,
                                ent.kind == Entity::Kind::constant ? "constant" : "tensor"));
      return value(apply(layers_[ent.layer], e, name));
    }
    if (is_layer_constructor(e.name))
      fail(e.loc, fmt::format("layer constructor '{}' must be assigned to a name, e.g. fc = {}(...), and then applied",
                              e.name, e.name));
    if (const OpSurface* s = find_surface(e.name)) return op_call(*s, e, name);
    if (ir::find_op(e.name))
      fail(e.loc, fmt::format("op '{}' is made by the compiler and cannot be called from a .dnn file", e.name));
    auto later = definitions_.find(e.name);
    if (e.name == current_) unknown_identifier(e);
    if (later != definitions_.end())
      fail(e.loc, fmt::format("'{}' is used before its definition at {}", e.name, loc_text(later->second)));
    std::vector<std::string> names = surface_names();
    for (const auto& c : layer_constructor_names()) names.push_back(c);
    for (const auto& l : layers_) names.push_back(l.name);
    fail(e.loc, fmt::format("unknown op or layer '{}'{}", e.name, did_you_mean(e.name, names)));
  }

  ir::ValueId apply(Layer& layer, const Expr& e, const std::string& name) {
    for (const auto& a : e.args)
      if (!a.key.empty())
        fail(a.key_loc,
             fmt::format("layer '{}' takes no keyword arguments; its settings are in its declaration", layer.name));
    if (e.args.size() != 1)
      fail(e.args.empty() ? e.loc : expr_start(*e.args[1].value),
           fmt::format("layer '{}' takes 1 input, found {}", layer.name, e.args.size()));
    const Expr& input = *e.args[0].value;
    ir::ValueId x = tensor(input, fmt::format("layer '{}'", layer.name));
    return apply_layer(layer, x, input, e.loc, g_, namer_, m_, name, file_);
  }

  Operand op_call(const OpSurface& s, const Expr& e, const std::string& name) {
    Bound b = bind_args(e, signature_of(s), file_);
    static const std::map<std::string, char> infix = {{"add", '+'}, {"sub", '-'}, {"mul", '*'}, {"div", '/'}};
    if (auto it = infix.find(s.name); it != infix.end()) {
      Operand a = lower(*b.slots[0], "");
      Operand c = lower(*b.slots[1], "");
      if (a.is_const && c.is_const)
        fail(e.loc, fmt::format("{} needs at least one tensor operand, found two constants", s.name));
      return binary(it->second, a, c, *b.slots[0], *b.slots[1], e.loc, name);
    }
    std::vector<ir::ValueId> ins;
    if (s.name == "concat") {  // a tuple of 2 to kMaxConcat tensors, as torch.cat's list
      const Expr& list = *b.slots[0];
      if (list.kind != ExprKind::tuple || list.elems.size() < 2 ||
          list.elems.size() > static_cast<size_t>(ir::kMaxConcat))
        fail(expr_start(list), fmt::format("concat expects a tuple of 2 to {} tensors, e.g. concat((a, b), axis: 1); "
                                           "found {}",
                                           ir::kMaxConcat, describe_expr(list)));
      for (size_t i = 0; i < list.elems.size(); ++i)
        ins.push_back(tensor(*list.elems[i], fmt::format("tensor {} of concat", i + 1)));
    } else {
      for (size_t i = 0; i < s.operands.size(); ++i)
        ins.push_back(tensor(*b.slots[i], fmt::format("argument '{}' of {}", s.operands[i], s.name)));
    }
    ir::Attrs attrs = convert_attrs(s, b, ev_, batch_symbol_, file_);
    if (s.name == "dropout") {
      if (!attrs.count("seed")) attrs["seed"] = dropouts_;
      ++dropouts_;
      ins.push_back(g_.param(kStepParam, {ir::DType::f32, {}}));
      step_used_ = true;
    }
    return value(emit_node(g_, namer_, s.name, ins, attrs, e.loc, name, {".mask"}, file_)[0]);
  }

  // The prediction is the first operand of the loss op (cross_entropy / mse_loss) the loss
  // comes from; arithmetic on scalars (e.g. `2 * cross_entropy(...)`) is followed back.
  ir::ValueId prediction_of(ir::ValueId loss, ir::SourceLoc at) const {
    ir::ValueId v = loss;
    for (;;) {
      int p = g_.producer(v);
      if (p < 0) break;
      const ir::Node& n = g_.nodes[static_cast<size_t>(p)];
      if (n.op == "cross_entropy" || n.op == "mse_loss") return n.inputs[0];
      ir::ValueId next = ir::kNoValue;
      for (ir::ValueId in : n.inputs)
        if (g_.value(in).type.shape.empty() && g_.value(in).kind == ir::ValueKind::node) {
          next = in;
          break;
        }
      if (next == ir::kNoValue) break;
      v = next;
    }
    fail(at, "loss must be computed by cross_entropy or mse_loss");
  }

  void finish_outputs() {
    auto it = scope_.find("loss");
    if (it == scope_.end())
      fail(mb_.loc,
           fmt::format("model '{}' has no loss; assign one, e.g. loss = cross_entropy(logits, label)", mb_.name));
    const Entity& ent = it->second;
    if (ent.kind == Entity::Kind::layer)
      fail(ent.loc, "loss must be a scalar f32[] computed by cross_entropy or mse_loss, found a layer");
    if (ent.kind == Entity::Kind::constant)
      fail(ent.expr_loc, fmt::format("loss must be a scalar f32[] computed by cross_entropy or mse_loss, found {}",
                                     ent.constant.describe()));
    const ir::TensorType& t = g_.value(ent.value).type;
    if (t.dtype != ir::DType::f32 || !t.shape.empty())
      fail(ent.expr_loc,
           fmt::format("loss must be a scalar f32[] computed by cross_entropy or mse_loss, found {}", type_text(t)));
    g_.outputs = {ent.value, prediction_of(ent.value, ent.expr_loc)};
  }
};

}  // namespace

ir::Module lower_model(const ast::File& f, const std::string& file) { return ModelLowering(f.model, file).run(); }

}  // namespace dnnc::frontend
