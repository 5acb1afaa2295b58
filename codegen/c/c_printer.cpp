// The C-family renderer shared by the C++ and CUDA printers (c_printer.h).
#include "codegen/c/c_printer.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "ir/check.h"

namespace dnnc::codegen {

const char* c_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::boolean:
      return "bool";
    case ScalarType::i64:
      return "i64";
    case ScalarType::u64:
      return "u64";
    case ScalarType::f32:
      return "float";
    case ScalarType::f64:
      return "double";
  }
  DNNC_UNREACHABLE("scalar type {}", static_cast<int>(t));
}

std::string c_float_literal(float v, const CDialect& d) {
  if (std::isnan(v)) return d.nan_f32;
  if (std::isinf(v)) return v > 0 ? d.inf_f32 : d.neg_inf_f32;
  std::string s = fmt::format("{:a}f", v);
  return std::signbit(v) ? "(" + s + ")" : s;
}

std::string c_double_literal(double v, const CDialect& d) {
  if (std::isnan(v)) return d.nan_f64;
  if (std::isinf(v)) return v > 0 ? d.inf_f64 : d.neg_inf_f64;
  std::string s = fmt::format("{:a}", v);
  return std::signbit(v) ? "(" + s + ")" : s;
}

std::string c_param_decl(const KernelParam& p) {
  return fmt::format("{}{}* __restrict__ {}", p.written ? "" : "const ", c_type_name(p.type), p.name);
}

std::string CPrinter::math(const char* name, ScalarType t) const {
  return d_.builtin_prefix + name + (t == ScalarType::f32 ? "f" : "");
}

std::string CPrinter::load(const ExprNode& n) {
  return fmt::format("{}[{}]", k_.params.at(static_cast<size_t>(n.param)).name, expr(n.args[0]));
}

std::string CPrinter::expr(const Expr& e) {
  const ExprNode& n = *e;
  auto arg = [&](size_t i) { return expr(n.args[i]); };
  switch (n.kind) {
    case ExprKind::int_const:
      if (n.type == ScalarType::u64) return fmt::format("0x{:x}ull", static_cast<uint64_t>(n.int_value));
      if (n.int_value < 0) return fmt::format("({}{})", n.int_value, d_.neg_i64_suffix);
      return fmt::format("{}", n.int_value);
    case ExprKind::float_const:
      return n.type == ScalarType::f32 ? c_float_literal(static_cast<float>(n.float_value), d_)
                                       : c_double_literal(n.float_value, d_);
    case ExprKind::var:
      return n.name;
    case ExprKind::load:
      return load(n);
    case ExprKind::cast:
      return fmt::format("(({}){})", c_type_name(n.type), arg(0));
    case ExprKind::select:
      return fmt::format("({} ? {} : {})", arg(0), arg(1), arg(2));
    case ExprKind::unary: {
      ScalarType t = n.args[0].type();
      switch (n.unary) {
        case UnaryOp::neg:
          return "(-" + arg(0) + ")";
        case UnaryOp::logical_not:
          return "(!" + arg(0) + ")";
        case UnaryOp::is_nan:
          return d_.builtin_prefix + "isnan(" + arg(0) + ")";
        case UnaryOp::abs:
          return is_float(t) ? math("fabs", t) + "(" + arg(0) + ")" : d_.builtin_prefix + "llabs(" + arg(0) + ")";
        case UnaryOp::exp:
          return math("exp", t) + "(" + arg(0) + ")";
        case UnaryOp::log:
          return math("log", t) + "(" + arg(0) + ")";
        case UnaryOp::tanh:
          return math("tanh", t) + "(" + arg(0) + ")";
        case UnaryOp::erf:
          if (t == ScalarType::f32 && !d_.erf_f32.empty()) return d_.erf_f32 + "(" + arg(0) + ")";
          return math("erf", t) + "(" + arg(0) + ")";
        case UnaryOp::sqrt:
          return math("sqrt", t) + "(" + arg(0) + ")";
        case UnaryOp::floor:
          return math("floor", t) + "(" + arg(0) + ")";
      }
      DNNC_UNREACHABLE("kernel {}: unary op {} has no C spelling", k_.name, static_cast<int>(n.unary));
    }
    case ExprKind::binary: {
      int64_t c = 0;
      if (n.binary == BinaryOp::add && n.type == ScalarType::i64 && is_int_const(n.args[1], &c) && c < 0 &&
          c != INT64_MIN)
        return fmt::format("({} - {})", arg(0), -c);
      std::string a = arg(0), b = arg(1);
      switch (n.binary) {
        case BinaryOp::min:
          return fmt::format("({1} < {0} ? {1} : {0})", a, b);  // std::min
        case BinaryOp::max:
          return fmt::format("({0} < {1} ? {1} : {0})", a, b);  // std::max
        case BinaryOp::pow:
          return fmt::format("{}({}, {})", math("pow", n.args[0].type()), a, b);
        default:
          break;
      }
      const char* op = binary_op_c_token(n.binary);
      DNNC_CHECK(op, "kernel {}: binary op {} has no C token", k_.name, static_cast<int>(n.binary));
      return fmt::format("({} {} {})", a, op, b);
    }
  }
  DNNC_UNREACHABLE("kernel {}: expression kind {} has no C form", k_.name, static_cast<int>(n.kind));
}

std::string CPrinter::store(const StmtNode& s) {
  return fmt::format("{}[{}] {}= {};", k_.params.at(static_cast<size_t>(s.param)).name, expr(s.index),
                     s.accumulate ? "+" : "", expr(s.value));
}

std::string CPrinter::for_header(const StmtNode& s) {
  return fmt::format("for (i64 {} = {}; {} < {}; ++{}) {{", s.var, expr(s.begin), s.var, expr(s.end), s.var);
}

void CPrinter::loop(std::string& out, const StmtNode& s, int indent) {
  out += pad(indent) + for_header(s) + "\n";
  block(out, s.body, indent + 1);
  out += pad(indent) + "}\n";
}

void CPrinter::block(std::string& out, const Block& b, int indent) {
  for (const Stmt& s : b) stmt(out, *s, indent);
}

void CPrinter::stmt(std::string& out, const StmtNode& s, int indent) {
  const std::string p = pad(indent);
  switch (s.kind) {
    case StmtKind::loop:
      loop(out, s, indent);
      return;
    case StmtKind::store:
      out += p + store(s) + "\n";
      return;
    case StmtKind::let:
      out += fmt::format("{}{} {} = {};\n", p, c_type_name(s.type), s.var, expr(s.value));
      return;
    case StmtKind::assign:
      out += fmt::format("{}{} = {};\n", p, s.var, expr(s.value));
      return;
    case StmtKind::if_:
      out += fmt::format("{}if ({}) {{\n", p, expr(s.cond));
      block(out, s.body, indent + 1);
      out += p + "}\n";
      return;
    case StmtKind::fail:
      out += fmt::format("{}if ({}) {}\n", p, expr(s.cond), fail_exit(s));
      return;
  }
  DNNC_UNREACHABLE("kernel {}: statement kind {} has no C form", k_.name, static_cast<int>(s.kind));
}

}  // namespace dnnc::codegen
