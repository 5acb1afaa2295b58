// The text form of the kernel IR (kir_printer.h).
#include "codegen/kir/kir_printer.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>

#include "ir/check.h"

namespace dnnc::codegen {

namespace {

std::string float_text(double v, ScalarType t) {
  const char* type = t == ScalarType::f32 ? "f32" : "f64";
  if (std::isnan(v)) return fmt::format("{}(nan)", type);
  if (std::isinf(v)) return fmt::format("{}({}inf)", type, v < 0 ? "-" : "");
  std::string s = t == ScalarType::f32 ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return t == ScalarType::f32 ? s + "f" : s;
}

// C precedence, higher binds tighter.
int precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::mul:
    case BinaryOp::div:
    case BinaryOp::mod:
      return 10;
    case BinaryOp::add:
    case BinaryOp::sub:
      return 9;
    case BinaryOp::shl:
    case BinaryOp::shr:
      return 8;
    case BinaryOp::lt:
    case BinaryOp::le:
    case BinaryOp::gt:
    case BinaryOp::ge:
      return 7;
    case BinaryOp::eq:
    case BinaryOp::ne:
      return 6;
    case BinaryOp::bit_xor:
      return 5;
    case BinaryOp::logical_and:
      return 4;
    case BinaryOp::logical_or:
      return 3;
    case BinaryOp::min:
    case BinaryOp::max:
    case BinaryOp::pow:
      return 100;  // printed as calls
  }
  return 0;
}

class KirPrinter {
 public:
  KirPrinter(const Kernel& k, const KirNotes& notes) : k_(k), notes_(notes) {}

  // `e` in a context of precedence `ctx` (0: anywhere); `right` if it is a right operand.
  std::string expr(const Expr& e, int ctx = 0, bool right = false) {
    const ExprNode& n = *e;
    switch (n.kind) {
      case ExprKind::int_const:
        if (n.type == ScalarType::u64) return fmt::format("0x{:x}u", static_cast<uint64_t>(n.int_value));
        return n.int_value < 0 && ctx > 0 ? fmt::format("({})", n.int_value) : fmt::format("{}", n.int_value);
      case ExprKind::float_const:
        return float_text(n.float_value, n.type);
      case ExprKind::var:
        return n.name;
      case ExprKind::load:
        return fmt::format("{}[{}]", k_.params.at(static_cast<size_t>(n.param)).name, expr(n.args[0]));
      case ExprKind::cast:
        return fmt::format("{}({})", scalar_type_name(n.type), expr(n.args[0]));
      case ExprKind::select:
        return fmt::format("select({}, {}, {})", expr(n.args[0]), expr(n.args[1]), expr(n.args[2]));
      case ExprKind::unary:
        if (n.unary == UnaryOp::neg) return "-" + expr(n.args[0], 11);
        if (n.unary == UnaryOp::logical_not) return "!" + expr(n.args[0], 11);
        return fmt::format("{}({})", n.unary == UnaryOp::is_nan ? "isnan" : unary_op_name(n.unary), expr(n.args[0]));
      case ExprKind::binary: {
        if (n.binary == BinaryOp::min || n.binary == BinaryOp::max || n.binary == BinaryOp::pow)
          return fmt::format("{}({}, {})", binary_op_name(n.binary), expr(n.args[0]), expr(n.args[1]));
        const int p = precedence(n.binary);
        // i64 `x + (-c)` (how the builders fold `x - c`) reads as `x - c`.
        int64_t c = 0;
        std::string s =
            n.binary == BinaryOp::add && n.type == ScalarType::i64 && is_int_const(n.args[1], &c) && c < 0 &&
                    c != INT64_MIN
                ? fmt::format("{} - {}", expr(n.args[0], p), -c)
                : fmt::format("{} {} {}", expr(n.args[0], p), binary_op_c_token(n.binary), expr(n.args[1], p, true));
        // Left to right, as C groups them: a right operand of the same precedence keeps its
        // parentheses (floating-point sums are not associative).
        const bool parens = p < ctx || (p == ctx && right);
        return parens ? "(" + s + ")" : s;
      }
    }
    DNNC_UNREACHABLE("kernel {}: expression kind {}", k_.name, static_cast<int>(n.kind));
  }

  void block(std::string& out, const Block& b, int indent) {
    for (const Stmt& s : b) stmt(out, *s, indent);
  }

  std::string note(const StmtNode& s) {
    if (!notes_) return "";
    std::string n = notes_(k_, &s);
    return n.empty() ? "" : "  // " + n;
  }

  void stmt(std::string& out, const StmtNode& s, int indent) {
    const std::string pad(static_cast<size_t>(indent) * 2, ' ');
    switch (s.kind) {
      case StmtKind::loop:
        out += fmt::format("{}for {} in [{}, {}){} {{{}\n", pad, s.var, expr(s.begin), expr(s.end),
                           s.parallel ? " parallel" : "", note(s));
        block(out, s.body, indent + 1);
        out += pad + "}\n";
        return;
      case StmtKind::store:
        out += fmt::format("{}{}[{}] {}= {}{}\n", pad, k_.params.at(static_cast<size_t>(s.param)).name, expr(s.index),
                           s.accumulate ? "+" : "", expr(s.value), note(s));
        return;
      case StmtKind::let:
        out += fmt::format("{}let {} {} = {}{}\n", pad, scalar_type_name(s.type), s.var, expr(s.value), note(s));
        return;
      case StmtKind::assign:
        out += fmt::format("{}{} = {}{}\n", pad, s.var, expr(s.value), note(s));
        return;
      case StmtKind::if_:
        out += fmt::format("{}if {} {{{}\n", pad, expr(s.cond), note(s));
        block(out, s.body, indent + 1);
        out += pad + "}\n";
        return;
      case StmtKind::fail: {
        const size_t i = static_cast<size_t>(s.code - 1);
        out += fmt::format("{}fail {} if {}  // \"{}\"\n", pad, s.code, expr(s.cond),
                           i < k_.errors.size() ? k_.errors[i] : "?");
        return;
      }
    }
    DNNC_UNREACHABLE("kernel {}: statement kind {}", k_.name, static_cast<int>(s.kind));
  }

  std::string kernel(int indent) {
    const std::string pad(static_cast<size_t>(indent) * 2, ' ');
    std::string out;
    if (notes_) {
      std::string head = notes_(k_, nullptr);
      size_t at = 0;
      while (at < head.size()) {
        size_t nl = head.find('\n', at);
        if (nl == std::string::npos) nl = head.size();
        out += pad + "// " + head.substr(at, nl - at) + "\n";
        at = nl + 1;
      }
    }
    std::vector<std::string> params;
    for (const std::string& ip : k_.index_params) params.push_back(ip + ": i64");
    for (const KernelParam& p : k_.params)
      params.push_back(
          fmt::format("{}: {}[{}]{}", p.name, scalar_type_name(p.type), p.numel, p.written ? " written" : ""));
    out += fmt::format("{}kernel {}({}) {{\n", pad, k_.name, fmt::join(params, ", "));
    block(out, k_.body, indent + 1);
    out += pad + "}\n";
    return out;
  }

 private:
  const Kernel& k_;
  const KirNotes& notes_;
};

std::string buffer_ref(int b) { return b < 0 ? "-" : fmt::format("%{}", b); }

// The GEMM call of a step on one line: operands, sizes, then every flag that is not a default.
std::string gemm_text(const Program& p, const Step& s) {
  const GemmCall& g = s.gemm;
  std::string out =
      fmt::format("gemm {} = {}{} * {}{} m={} n={} k={} lda={} ldb={} ldc={}", buffer_ref(g.c), buffer_ref(g.a),
                  g.trans_a ? "^T" : "", buffer_ref(g.b), g.trans_b ? "^T" : "", g.m, g.n, g.k, g.lda, g.ldb, g.ldc);
  if (g.batch != 1 || g.stride_a || g.stride_b || g.stride_c)
    out += fmt::format(" batch={} strides={},{},{}", g.batch, g.stride_a, g.stride_b, g.stride_c);
  if (g.accumulate_batches) out += " summed";
  if (g.alpha != 1.0f || g.beta != 0.0f) out += fmt::format(" alpha={} beta={}", g.alpha, g.beta);
  if (g.bias >= 0)
    out += fmt::format(" bias={} {}", buffer_ref(g.bias),
                       g.bias_kind == GemmCall::Bias::per_col   ? "per_col"
                       : g.bias_kind == GemmCall::Bias::per_row ? "per_row"
                                                                : "none");
  if (g.first_step >= 0)
    out += fmt::format(" first_step={} (alpha={} beta={})", buffer_ref(g.first_step), g.alpha_first, g.beta_first);
  if (g.col_sums >= 0) out += " col_sums=" + buffer_ref(g.col_sums);
  if (g.act != GemmCall::Act::none) out += fmt::format(" act={}", gemm_act_name(g.act));
  if (g.act_mask >= 0) out += " mask=" + buffer_ref(g.act_mask);
  static const char* kThreads[] = {"single", "split", "split_k", "over_batch"};
  out += fmt::format(" threads={}", kThreads[static_cast<int>(g.threads)]);
  if (s.with_next) out += " with_next";
  (void)p;
  return out;
}

std::string args_text(const std::vector<int>& args) {
  std::vector<std::string> a;
  for (int b : args) a.push_back(buffer_ref(b));
  return fmt::format("{}", fmt::join(a, ", "));
}

}  // namespace

std::string print_expr_kir(const Expr& e, const Kernel& k) {
  KirNotes none;
  return KirPrinter(k, none).expr(e);
}

std::string print_kernel_kir(const Kernel& k, int indent, const KirNotes& notes) {
  return KirPrinter(k, notes).kernel(indent);
}

std::string print_kir(const Program& p, const KirNotes& notes) {
  std::string out = fmt::format("// kernel IR of {}.{} at batch {}\n", p.module_name, p.graph_name, p.batch);
  out += fmt::format("program {}.{} batch {}\n", p.module_name, p.graph_name, p.batch);
  if (p.arena.planned)
    out += fmt::format("arena {} bytes (naive {}, max-live {})\n", p.arena.bytes, p.arena.naive_bytes,
                       p.arena.max_live_bytes);
  out += "\n";
  const std::vector<BufferLife> life = buffer_lives(p);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    out += fmt::format("buffer %{} {}: {}", i, b.name, buffer_kind_name(b.kind));
    if (b.kind == BufferKind::alias) out += " of " + buffer_ref(b.alias_of);
    if (b.kind == BufferKind::alias && b.alias_offset != 0) out += fmt::format(" + {}", b.alias_offset);
    out += fmt::format(" {}[{}]", scalar_type_name(b.dtype), fmt::join(b.shape, ","));
    if (!b.value_name.empty()) out += fmt::format(" \"{}\"", b.value_name);
    if (b.offset >= 0) out += fmt::format(" at {} live {}..{}", b.offset, life[i].first, life[i].last);
    out += "\n";
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    out += "\n";
    if (s.kind == Step::Kind::kernel) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.kernel));
      out += fmt::format("step {}: {}({})\n", i, k.name, args_text(s.args));
      for (const std::string& c : s.comment) out += "  // " + c + "\n";
      out += print_kernel_kir(k, 1, notes);
      continue;
    }
    out += fmt::format("step {}: {}\n", i, gemm_text(p, s));
    for (const std::string& c : s.comment) out += "  // " + c + "\n";
    if (s.gemm.epilogue >= 0) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.gemm.epilogue));
      out += fmt::format("  epilogue {}({})\n", k.name, args_text(s.args));
      out += print_kernel_kir(k, 1, notes);
    }
  }
  out += "\noutputs " + args_text(p.outputs) + "\n";
  for (const auto& [name, b] : p.updates) out += fmt::format("update \"{}\" = {}\n", name, buffer_ref(b));
  return out;
}

}  // namespace dnnc::codegen
