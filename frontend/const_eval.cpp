// Constant evaluation with checked integer arithmetic.
#include "frontend/const_eval.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/attrs.h"

namespace dnnc::frontend {

using ast::ExprKind;

std::string Const::describe() const {
  switch (kind) {
    case Kind::int_: return fmt::format("integer {}", i);
    case Kind::float_: return fmt::format("number {}", ir::attr_to_string(ir::AttrValue(f)));
    case Kind::bool_: return b ? "true" : "false";
  }
  return "?";
}

ir::SourceLoc expr_start(const ast::Expr& e) {
  const ast::Expr* p = &e;
  while (p->kind == ExprKind::binary) p = p->elems[0].get();
  return p->loc;
}

std::string describe_expr(const ast::Expr& e) {
  switch (e.kind) {
    case ExprKind::int_lit: return fmt::format("integer {}", e.int_value);
    case ExprKind::float_lit: return fmt::format("number {}", ir::attr_to_string(ir::AttrValue(e.float_value)));
    case ExprKind::bool_lit: return e.bool_value ? "true" : "false";
    case ExprKind::string_lit: return "a string";
    case ExprKind::ident: return e.name;
    case ExprKind::tuple: return "a tuple";
    case ExprKind::call: return e.name + "(...)";
    case ExprKind::neg:
    case ExprKind::binary: return "an expression";
  }
  return "?";
}

void ConstEval::fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }

void ConstEval::fail_kind(const ast::Expr& e, const std::string& what, const char* expected) const {
  std::string found;
  switch (e.kind) {
    case ExprKind::string_lit: found = "a string"; break;
    case ExprKind::tuple: found = fmt::format("a tuple of {}", e.elems.size()); break;
    case ExprKind::call: found = fmt::format("a call {}(...)", e.name); break;
    default: found = eval(e, what).describe(); break;
  }
  fail(expr_start(e), fmt::format("{} expects {}, found {}", what, expected, found));
}

Const ConstEval::eval(const ast::Expr& e, const std::string& what) const {
  switch (e.kind) {
    case ExprKind::int_lit: return Const::of_int(e.int_value);
    case ExprKind::float_lit: return Const::of_float(e.float_value);
    case ExprKind::bool_lit: return Const::of_bool(e.bool_value);
    case ExprKind::string_lit: fail(e.loc, fmt::format("{} expects a constant, found a string", what));
    case ExprKind::tuple:
      fail(e.loc, fmt::format("{} expects a single value, found a tuple of {}", what, e.elems.size()));
    case ExprKind::call: fail(e.loc, fmt::format("{} expects a constant, found a call {}(...)", what, e.name));
    case ExprKind::ident: {
      Resolved r = resolve_(e);
      if (!r.value) fail(e.loc, fmt::format("{} expects a constant, found {}", what, r.description));
      return *r.value;
    }
    case ExprKind::neg: {
      Const v = eval(*e.elems[0], what);
      if (v.kind == Const::Kind::bool_) fail(e.loc, fmt::format("{}: cannot negate a boolean", what));
      if (v.kind == Const::Kind::float_) return Const::of_float(-v.f);
      int64_t r = 0;
      if (__builtin_sub_overflow(int64_t{0}, v.i, &r)) fail(e.loc, "integer overflow in negation");
      return Const::of_int(r);
    }
    case ExprKind::binary: break;
  }
  Const a = eval(*e.elems[0], what);
  Const b = eval(*e.elems[1], what);
  if (a.kind == Const::Kind::bool_ || b.kind == Const::Kind::bool_)
    fail(e.loc, fmt::format("{}: arithmetic on a boolean", what));
  if (a.kind == Const::Kind::float_ || b.kind == Const::Kind::float_) {
    double r = 0;
    switch (e.op) {
      case '+': r = a.f + b.f; break;
      case '-': r = a.f - b.f; break;
      case '*': r = a.f * b.f; break;
      default:
        if (b.f == 0.0) fail(e.loc, "division by zero");
        r = a.f / b.f;
    }
    if (!std::isfinite(r)) fail(e.loc, fmt::format("{}: the value overflows a 64-bit float", what));
    return Const::of_float(r);
  }
  int64_t r = 0;
  bool overflow = false;
  switch (e.op) {
    case '+': overflow = __builtin_add_overflow(a.i, b.i, &r); break;
    case '-': overflow = __builtin_sub_overflow(a.i, b.i, &r); break;
    case '*': overflow = __builtin_mul_overflow(a.i, b.i, &r); break;
    default:
      if (b.i == 0) fail(e.loc, "division by zero");
      if (a.i == INT64_MIN && b.i == -1)
        overflow = true;
      else if (a.i % b.i != 0)
        fail(e.loc, fmt::format("integer division {} / {} is not exact; write a float (e.g. {}.0) for a fraction", a.i,
                                b.i, a.i));
      else
        r = a.i / b.i;
  }
  if (overflow) fail(e.loc, fmt::format("integer overflow in {} {} {}", a.i, e.op, b.i));
  return Const::of_int(r);
}

int64_t ConstEval::eval_int(const ast::Expr& e, const std::string& what) const {
  if (e.kind == ExprKind::tuple || e.kind == ExprKind::call || e.kind == ExprKind::string_lit)
    fail_kind(e, what, "an integer");
  Const c = eval(e, what);
  if (c.kind != Const::Kind::int_)
    fail(expr_start(e), fmt::format("{} expects an integer, found {}", what, c.describe()));
  return c.i;
}

double ConstEval::eval_float(const ast::Expr& e, const std::string& what) const {
  if (e.kind == ExprKind::tuple || e.kind == ExprKind::call || e.kind == ExprKind::string_lit)
    fail_kind(e, what, "a number");
  Const c = eval(e, what);
  if (c.kind == Const::Kind::bool_)
    fail(expr_start(e), fmt::format("{} expects a number, found {}", what, c.describe()));
  return c.f;
}

bool ConstEval::eval_bool(const ast::Expr& e, const std::string& what) const {
  if (e.kind == ExprKind::tuple || e.kind == ExprKind::call || e.kind == ExprKind::string_lit)
    fail_kind(e, what, "true or false");
  Const c = eval(e, what);
  if (c.kind != Const::Kind::bool_)
    fail(expr_start(e), fmt::format("{} expects true or false, found {}", what, c.describe()));
  return c.b;
}

std::vector<int64_t> ConstEval::eval_ints(const ast::Expr& e, const std::string& what) const {
  if (e.kind != ExprKind::tuple) return {eval_int(e, what)};
  std::vector<int64_t> out;
  for (const auto& x : e.elems) out.push_back(eval_int(*x, what));
  return out;
}

std::vector<double> ConstEval::eval_floats(const ast::Expr& e, const std::string& what) const {
  if (e.kind != ExprKind::tuple) return {eval_float(e, what)};
  std::vector<double> out;
  for (const auto& x : e.elems) out.push_back(eval_float(*x, what));
  return out;
}

std::vector<int64_t> ConstEval::eval_pair(const ast::Expr& e, const std::string& what) const {
  if (e.kind != ExprKind::tuple) {
    int64_t v = eval_int(e, what);
    return {v, v};
  }
  if (e.elems.size() != 2)
    fail(e.loc, fmt::format("{} expects an integer or a pair (a, b), found a tuple of {}", what, e.elems.size()));
  return {eval_int(*e.elems[0], what), eval_int(*e.elems[1], what)};
}

}  // namespace dnnc::frontend
