// Compile-time constants of the .dnn language: layer sizes, op arguments, train settings.
// Integer arithmetic is checked (overflow, exact division); mixing in a float gives a float.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"

namespace dnnc::frontend {

struct Const {
  enum class Kind : uint8_t { int_, float_, bool_ } kind = Kind::int_;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;

  static Const of_int(int64_t v) { return {Kind::int_, v, static_cast<double>(v), false}; }
  static Const of_float(double v) { return {Kind::float_, 0, v, false}; }
  static Const of_bool(bool v) { return {Kind::bool_, 0, 0.0, v}; }
  /// "integer 3", "number 0.5", "true"
  std::string describe() const;
};

/// What an identifier means in a constant context: its constant, or (when it is not one)
/// how to name it in "expected X, found Y" ("tensor 'h'", "layer 'fc'"). Resolvers throw
/// ir::CompileError themselves for unknown identifiers.
struct Resolved {
  std::optional<Const> value;
  std::string description;
};
using ConstResolver = std::function<Resolved(const ast::Expr& ident)>;

/// Leftmost source location of an expression (for `16 * 6 * 6`, the `16`).
ir::SourceLoc expr_start(const ast::Expr& e);
/// How diagnostics name an expression: "flatten(...)", "h", "integer 3", "tuple", "expression".
std::string describe_expr(const ast::Expr& e);

/// Evaluates constant expressions. Every failure is an ir::CompileError at the offending
/// sub-expression; `what` names the slot in messages, e.g. "argument 'p' of dropout".
class ConstEval {
 public:
  ConstEval(std::string file, ConstResolver resolve) : file_(std::move(file)), resolve_(std::move(resolve)) {}

  /// Literal, identifier, negation or arithmetic; throws for tuples, calls and strings.
  Const eval(const ast::Expr& e, const std::string& what) const;
  /// An integer; throws "`what` expects an integer, found ...".
  int64_t eval_int(const ast::Expr& e, const std::string& what) const;
  /// An integer or a float, as a double.
  double eval_float(const ast::Expr& e, const std::string& what) const;
  bool eval_bool(const ast::Expr& e, const std::string& what) const;
  /// An integer or a tuple of integers.
  std::vector<int64_t> eval_ints(const ast::Expr& e, const std::string& what) const;
  /// A number or a tuple of numbers.
  std::vector<double> eval_floats(const ast::Expr& e, const std::string& what) const;
  /// An integer v (meaning (v, v)) or a pair (a, b).
  std::vector<int64_t> eval_pair(const ast::Expr& e, const std::string& what) const;

 private:
  std::string file_;
  ConstResolver resolve_;
  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const;
  [[noreturn]] void fail_kind(const ast::Expr& e, const std::string& what, const char* expected) const;
};

}  // namespace dnnc::frontend
