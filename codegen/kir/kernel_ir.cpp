// KernelIR expression and statement builders, with integer constant folding.
#include "codegen/kir/kernel_ir.h"

#include <algorithm>
#include <cmath>

#include "ir/check.h"

namespace dnnc::codegen {

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::boolean:
      return "bool";
    case ScalarType::i64:
      return "i64";
    case ScalarType::u64:
      return "u64";
    case ScalarType::f32:
      return "f32";
    case ScalarType::f64:
      return "f64";
  }
  return "?";
}

int scalar_type_bytes(ScalarType t) {
  switch (t) {
    case ScalarType::boolean:
      return 1;
    case ScalarType::f32:
      return 4;
    case ScalarType::i64:
    case ScalarType::u64:
    case ScalarType::f64:
      return 8;
  }
  return 8;
}

bool is_float(ScalarType t) { return t == ScalarType::f32 || t == ScalarType::f64; }
bool is_int(ScalarType t) { return t == ScalarType::i64 || t == ScalarType::u64; }

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"neg", "exp", "log", "tanh", "erf", "sqrt", "abs", "is_nan", "not", "floor"};
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "mod", "min", "max", "pow", "lt", "le",
                                "gt",  "ge",  "eq",  "ne",  "and", "or",  "xor", "shr", "shl"};
  return names[static_cast<int>(op)];
}

const char* binary_op_c_token(BinaryOp op) {
  static const char* tokens[] = {"+", "-",  "*",  "/",  "%",  nullptr, nullptr, nullptr, "<", "<=",
                                 ">", ">=", "==", "!=", "&&", "||",    "^",     ">>",    "<<"};
  return tokens[static_cast<int>(op)];
}

ScalarType Expr::type() const {
  DNNC_CHECK(node_, "type() of an empty Expr");
  return node_->type;
}

namespace {

Expr make(ExprNode n) { return Expr(std::make_shared<const ExprNode>(std::move(n))); }

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::lt || op == BinaryOp::le || op == BinaryOp::gt || op == BinaryOp::ge || op == BinaryOp::eq ||
         op == BinaryOp::ne;
}

// Folds i64 arithmetic on constants and the identities x+0, x*1, x*0, x/1.
Expr fold(BinaryOp op, const Expr& a, const Expr& b) {
  if (a.type() != ScalarType::i64) return {};
  int64_t x = 0, y = 0;
  bool ca = is_int_const(a, &x), cb = is_int_const(b, &y);
  if (ca && cb) {
    switch (op) {
      case BinaryOp::add:
        return i64c(x + y);
      case BinaryOp::sub:
        return i64c(x - y);
      case BinaryOp::mul:
        return i64c(x * y);
      case BinaryOp::div:
        if (y != 0) return i64c(x / y);
        break;
      case BinaryOp::mod:
        if (y != 0) return i64c(x % y);
        break;
      case BinaryOp::min:
        return i64c(std::min(x, y));
      case BinaryOp::max:
        return i64c(std::max(x, y));
      default:
        break;
    }
    return {};
  }
  // (x + c1) + c2 -> x + (c1 + c2);  x - c -> x + (-c);  0 - x -> -x
  if (op == BinaryOp::sub && cb) return binary(BinaryOp::add, a, i64c(-y));
  if (op == BinaryOp::sub && ca && x == 0) return unary(UnaryOp::neg, b);
  if (op == BinaryOp::add && cb && y != 0 && a->kind == ExprKind::binary && a->binary == BinaryOp::add) {
    int64_t z = 0;
    if (is_int_const(a->args[1], &z)) return binary(BinaryOp::add, a->args[0], i64c(z + y));
  }
  if (op == BinaryOp::add && cb && y == 0) return a;
  if (op == BinaryOp::add && ca && x == 0) return b;
  if (op == BinaryOp::sub && cb && y == 0) return a;
  if (op == BinaryOp::mul && cb && y == 1) return a;
  if (op == BinaryOp::mul && ca && x == 1) return b;
  if (op == BinaryOp::mul && ((cb && y == 0) || (ca && x == 0))) return i64c(0);
  if (op == BinaryOp::div && cb && y == 1) return a;
  if (op == BinaryOp::mod && cb && y == 1) return i64c(0);
  return {};
}

}  // namespace

Expr i64c(int64_t v) {
  ExprNode n;
  n.kind = ExprKind::int_const;
  n.type = ScalarType::i64;
  n.int_value = v;
  return make(std::move(n));
}

Expr u64c(uint64_t v) {
  ExprNode n;
  n.kind = ExprKind::int_const;
  n.type = ScalarType::u64;
  n.int_value = static_cast<int64_t>(v);
  return make(std::move(n));
}

Expr f32c(double v) {
  ExprNode n;
  n.kind = ExprKind::float_const;
  n.type = ScalarType::f32;
  n.float_value = static_cast<double>(static_cast<float>(v));
  return make(std::move(n));
}

Expr f64c(double v) {
  ExprNode n;
  n.kind = ExprKind::float_const;
  n.type = ScalarType::f64;
  n.float_value = v;
  return make(std::move(n));
}

Expr constant(ScalarType t, double v) {
  switch (t) {
    case ScalarType::f32:
      return f32c(v);
    case ScalarType::f64:
      return f64c(v);
    case ScalarType::u64:
      return u64c(static_cast<uint64_t>(v));
    case ScalarType::i64:
      return i64c(static_cast<int64_t>(v));
    case ScalarType::boolean:
      break;
  }
  DNNC_UNREACHABLE("no constants of type bool");
  return {};
}

Expr var(const std::string& name, ScalarType t) {
  ExprNode n;
  n.kind = ExprKind::var;
  n.type = t;
  n.name = name;
  return make(std::move(n));
}

Expr unary(UnaryOp op, Expr a) {
  ExprNode n;
  n.kind = ExprKind::unary;
  n.unary = op;
  n.type = op == UnaryOp::is_nan ? ScalarType::boolean : a.type();
  if (op == UnaryOp::neg) {
    int64_t v = 0;
    if (is_int_const(a, &v) && a.type() == ScalarType::i64) return i64c(-v);
  }
  if (op != UnaryOp::neg && op != UnaryOp::abs && op != UnaryOp::logical_not)
    DNNC_CHECK(is_float(a.type()), "transcendental ops take floats");
  if (op == UnaryOp::logical_not) DNNC_CHECK(a.type() == ScalarType::boolean, "logical_not takes a bool");
  n.args = {std::move(a)};
  return make(std::move(n));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  DNNC_CHECK(a && b, "binary of an empty Expr");
  DNNC_CHECK(a.type() == b.type(), "binary operands must have the same type");
  if (Expr f = fold(op, a, b)) return f;
  ExprNode n;
  n.kind = ExprKind::binary;
  n.binary = op;
  if (op == BinaryOp::logical_and || op == BinaryOp::logical_or)
    DNNC_CHECK(a.type() == ScalarType::boolean, "logical ops take bools");
  if (op == BinaryOp::bit_xor || op == BinaryOp::shr || op == BinaryOp::shl)
    DNNC_CHECK(a.type() == ScalarType::u64, "bit ops take u64");
  if (op == BinaryOp::pow) DNNC_CHECK(is_float(a.type()), "pow takes floats");
  n.type = is_comparison(op) ? ScalarType::boolean : a.type();
  n.args = {std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr select(Expr cond, Expr then_value, Expr else_value) {
  DNNC_CHECK(cond.type() == ScalarType::boolean, "select needs a bool condition");
  DNNC_CHECK(then_value.type() == else_value.type(), "select branches must have the same type");
  ExprNode n;
  n.kind = ExprKind::select;
  n.type = then_value.type();
  n.args = {std::move(cond), std::move(then_value), std::move(else_value)};
  return make(std::move(n));
}

Expr cast(ScalarType t, Expr a) {
  if (a.type() == t) return a;
  int64_t v = 0;
  if (t == ScalarType::i64 && a.type() == ScalarType::u64 && is_int_const(a, &v)) return i64c(v);
  ExprNode n;
  n.kind = ExprKind::cast;
  n.type = t;
  n.args = {std::move(a)};
  return make(std::move(n));
}

Expr operator+(Expr a, Expr b) { return binary(BinaryOp::add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(BinaryOp::sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(BinaryOp::mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(BinaryOp::div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return binary(BinaryOp::mod, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return unary(UnaryOp::neg, std::move(a)); }
Expr operator+(Expr a, double b) {
  ScalarType t = a.type();
  return std::move(a) + constant(t, b);
}
Expr operator-(Expr a, double b) {
  ScalarType t = a.type();
  return std::move(a) - constant(t, b);
}
Expr operator*(Expr a, double b) {
  ScalarType t = a.type();
  return std::move(a) * constant(t, b);
}
Expr operator/(Expr a, double b) {
  ScalarType t = a.type();
  return std::move(a) / constant(t, b);
}
Expr operator%(Expr a, int64_t b) {
  ScalarType t = a.type();
  return std::move(a) % constant(t, static_cast<double>(b));
}
Expr operator+(double a, Expr b) { return constant(b.type(), a) + std::move(b); }
Expr operator-(double a, Expr b) { return constant(b.type(), a) - std::move(b); }
Expr operator*(double a, Expr b) { return constant(b.type(), a) * std::move(b); }
Expr operator/(double a, Expr b) { return constant(b.type(), a) / std::move(b); }
Expr lt(Expr a, Expr b) { return binary(BinaryOp::lt, std::move(a), std::move(b)); }
Expr le(Expr a, Expr b) { return binary(BinaryOp::le, std::move(a), std::move(b)); }
Expr gt(Expr a, Expr b) { return binary(BinaryOp::gt, std::move(a), std::move(b)); }
Expr ge(Expr a, Expr b) { return binary(BinaryOp::ge, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return binary(BinaryOp::eq, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return binary(BinaryOp::ne, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(BinaryOp::min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(BinaryOp::max, std::move(a), std::move(b)); }
Expr exp(Expr a) { return unary(UnaryOp::exp, std::move(a)); }
Expr log(Expr a) { return unary(UnaryOp::log, std::move(a)); }
Expr sqrt(Expr a) { return unary(UnaryOp::sqrt, std::move(a)); }

bool is_int_const(const Expr& e, int64_t* value) {
  if (!e || e->kind != ExprKind::int_const) return false;
  if (value) *value = e->int_value;
  return true;
}

// ---- KernelBuilder ---------------------------------------------------------------------------

KernelBuilder::KernelBuilder(std::string name) {
  k_.name = std::move(name);
  stack_.push_back(&k_.body);
}

int KernelBuilder::param(const std::string& name, ScalarType type, bool written, int64_t numel) {
  std::string n = fresh(name);
  k_.params.push_back({n, type, written, numel});
  return static_cast<int>(k_.params.size()) - 1;
}

ScalarType KernelBuilder::param_type(int p) const { return k_.params.at(static_cast<size_t>(p)).type; }

void KernelBuilder::set_written(int p) { k_.params.at(static_cast<size_t>(p)).written = true; }

Expr KernelBuilder::index_param(const std::string& name) {
  std::string n = fresh(name);
  k_.index_params.push_back(n);
  return var(n, ScalarType::i64);
}

Expr KernelBuilder::load(int p, Expr index) const {
  DNNC_CHECK(p >= 0 && p < static_cast<int>(k_.params.size()), "load of an unknown param");
  DNNC_CHECK(index.type() == ScalarType::i64, "indices are i64");
  ExprNode n;
  n.kind = ExprKind::load;
  n.type = k_.params[static_cast<size_t>(p)].type;
  n.param = p;
  n.args = {std::move(index)};
  return make(std::move(n));
}

void KernelBuilder::push(Stmt s) { stack_.back()->push_back(std::move(s)); }

void KernelBuilder::store(int p, Expr index, Expr value) {
  DNNC_CHECK(k_.params.at(static_cast<size_t>(p)).written, "store to a read-only param");
  DNNC_CHECK(value.type() == param_type(p), "stored value must have the buffer's type");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::store;
  s->param = p;
  s->index = std::move(index);
  s->value = std::move(value);
  push(std::move(s));
}

void KernelBuilder::accumulate(int p, Expr index, Expr value) {
  store(p, std::move(index), std::move(value));
  stack_.back()->back()->accumulate = true;
}

Expr KernelBuilder::let(const std::string& base, Expr value) {
  ScalarType t = value.type();
  return let(base, t, std::move(value));
}

Expr KernelBuilder::let(const std::string& base, ScalarType t, Expr value) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::let;
  s->var = fresh(base);
  s->type = t;
  s->value = cast(t, std::move(value));
  Expr v = var(s->var, t);
  push(std::move(s));
  return v;
}

void KernelBuilder::assign(const Expr& v, Expr value) {
  DNNC_CHECK(v->kind == ExprKind::var, "assign to a non-variable");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::assign;
  s->var = v->name;
  s->type = v.type();
  s->value = cast(v.type(), std::move(value));
  push(std::move(s));
}

void KernelBuilder::loop(const std::string& base, Expr begin, Expr end, bool parallel,
                         const std::function<void(Expr)>& body) {
  DNNC_CHECK(begin.type() == ScalarType::i64 && end.type() == ScalarType::i64, "loop bounds are i64");
  DNNC_CHECK(!(parallel && parallel_depth_ > 0), "nested parallel loops");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::loop;
  s->var = fresh(base);
  s->begin = std::move(begin);
  s->end = std::move(end);
  s->parallel = parallel;
  Expr v = var(s->var, ScalarType::i64);
  push(s);
  stack_.push_back(&s->body);
  parallel_depth_ += parallel ? 1 : 0;
  body(v);
  parallel_depth_ -= parallel ? 1 : 0;
  stack_.pop_back();
}

void KernelBuilder::loop(const std::string& base, int64_t extent, bool parallel,
                         const std::function<void(Expr)>& body) {
  loop(base, i64c(0), i64c(extent), parallel, body);
}

void KernelBuilder::if_(Expr cond, const std::function<void()>& body) {
  DNNC_CHECK(cond.type() == ScalarType::boolean, "if needs a bool condition");
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::if_;
  s->cond = std::move(cond);
  push(s);
  stack_.push_back(&s->body);
  body();
  stack_.pop_back();
}

void KernelBuilder::fail(Expr cond, std::string message) {
  DNNC_CHECK(parallel_depth_ == 0, "fail inside a parallel loop");
  DNNC_CHECK(cond.type() == ScalarType::boolean, "fail needs a bool condition");
  k_.errors.push_back(std::move(message));
  int code = static_cast<int>(k_.errors.size());
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::fail;
  s->cond = std::move(cond);
  s->code = code;
  push(std::move(s));
}

std::string KernelBuilder::fresh(const std::string& base) {
  if (used_.insert(base).second) return base;
  int& i = next_suffix_.try_emplace(base, 1).first->second;
  std::string name = base + std::to_string(i);
  while (!used_.insert(name).second) name = base + std::to_string(++i);
  ++i;
  return name;
}

Kernel KernelBuilder::finish() {
  DNNC_CHECK(stack_.size() == 1, "finish() with an open block");
  return std::move(k_);
}

}  // namespace dnnc::codegen
