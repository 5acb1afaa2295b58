// The C++ printer for KernelIR and codegen::Program (see cpp_printer.h for the exported ABI).
#include "codegen/cpp/cpp_printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "ir/check.h"

namespace dnnc::codegen {

std::string cpp_float_literal(float v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  std::string s = fmt::format("{:a}f", v);
  return std::signbit(v) ? "(" + s + ")" : s;
}

std::string cpp_double_literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  std::string s = fmt::format("{:a}", v);
  return std::signbit(v) ? "(" + s + ")" : s;
}

namespace {

const char* c_type(ScalarType t) {
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
  return "?";
}

// A math builtin for the float type of its argument: __builtin_expf / __builtin_exp.
std::string math_fn(const char* name, ScalarType t) {
  return std::string("__builtin_") + name + (t == ScalarType::f32 ? "f" : "");
}

std::string print(const Expr& e, const std::vector<KernelParam>& params) {
  const ExprNode& n = *e;
  auto arg = [&](size_t i) { return print(n.args[i], params); };
  switch (n.kind) {
    case ExprKind::int_const:
      if (n.type == ScalarType::u64) return fmt::format("0x{:x}ull", static_cast<uint64_t>(n.int_value));
      if (n.int_value < 0) return fmt::format("({})", n.int_value);
      return fmt::format("{}", n.int_value);
    case ExprKind::float_const:
      return n.type == ScalarType::f32 ? cpp_float_literal(static_cast<float>(n.float_value))
                                       : cpp_double_literal(n.float_value);
    case ExprKind::var:
      return n.name;
    case ExprKind::load:
      return fmt::format("{}[{}]", params.at(static_cast<size_t>(n.param)).name, arg(0));
    case ExprKind::cast:
      return fmt::format("(({}){})", c_type(n.type), arg(0));
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
          return "__builtin_isnan(" + arg(0) + ")";
        case UnaryOp::abs:
          return is_float(t) ? math_fn("fabs", t) + "(" + arg(0) + ")" : "__builtin_llabs(" + arg(0) + ")";
        case UnaryOp::exp:
          return math_fn("exp", t) + "(" + arg(0) + ")";
        case UnaryOp::log:
          return math_fn("log", t) + "(" + arg(0) + ")";
        case UnaryOp::tanh:
          return math_fn("tanh", t) + "(" + arg(0) + ")";
        case UnaryOp::erf:
          return math_fn("erf", t) + "(" + arg(0) + ")";
        case UnaryOp::sqrt:
          return math_fn("sqrt", t) + "(" + arg(0) + ")";
        case UnaryOp::floor:
          return math_fn("floor", t) + "(" + arg(0) + ")";
      }
      break;
    }
    case ExprKind::binary: {
      int64_t c = 0;
      if (n.binary == BinaryOp::add && n.type == ScalarType::i64 && is_int_const(n.args[1], &c) && c < 0 &&
          c != INT64_MIN)
        return fmt::format("({} - {})", arg(0), -c);
      std::string a = arg(0), b = arg(1);
      const char* op = binary_op_c_token(n.binary);
      switch (n.binary) {
        default:
          break;
        case BinaryOp::min:
          return fmt::format("({1} < {0} ? {1} : {0})", a, b);  // std::min
        case BinaryOp::max:
          return fmt::format("({0} < {1} ? {1} : {0})", a, b);  // std::max
        case BinaryOp::pow:
          return fmt::format("{}({}, {})", math_fn("pow", n.args[0].type()), a, b);
      }
      return fmt::format("({} {} {})", a, op, b);
    }
  }
  DNNC_UNREACHABLE("unknown expression kind");
  return "";
}

// The body of each parallel loop of a kernel becomes a function of its own, with the loop
// variable, the outer locals it reads and the kernel's buffers as __restrict__ parameters:
// gcc's OpenMP outlining passes the buffers to the parallel region through a struct, which
// loses __restrict__, so loops inside it get runtime alias checks or stay scalar (the CNN's
// pool backward ran 2.2x slower). Maps a parallel loop to the call that replaces its body.
using ParallelBodies = std::map<const StmtNode*, std::string>;

void print_block(std::string& out, const Block& block, const std::vector<KernelParam>& params, int indent,
                 const ParallelBodies* bodies = nullptr);

void print_stmt(std::string& out, const StmtNode& s, const std::vector<KernelParam>& params, int indent,
                const ParallelBodies* bodies = nullptr) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  auto e = [&](const Expr& x) { return print(x, params); };
  switch (s.kind) {
    case StmtKind::loop:
      if (s.parallel) out += pad + "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
      out += fmt::format("{}for (i64 {} = {}; {} < {}; ++{}) {{\n", pad, s.var, e(s.begin), s.var, e(s.end), s.var);
      if (auto it = bodies ? bodies->find(&s) : ParallelBodies::const_iterator(); bodies && it != bodies->end())
        out += pad + "  " + it->second + ";\n";
      else
        print_block(out, s.body, params, indent + 1, bodies);
      out += pad + "}\n";
      return;
    case StmtKind::store:
      out += fmt::format("{}{}[{}] {}= {};\n", pad, params.at(static_cast<size_t>(s.param)).name, e(s.index),
                         s.accumulate ? "+" : "", e(s.value));
      return;
    case StmtKind::let:
      out += fmt::format("{}{} {} = {};\n", pad, c_type(s.type), s.var, e(s.value));
      return;
    case StmtKind::assign:
      out += fmt::format("{}{} = {};\n", pad, s.var, e(s.value));
      return;
    case StmtKind::if_:
      out += fmt::format("{}if ({}) {{\n", pad, e(s.cond));
      print_block(out, s.body, params, indent + 1, bodies);
      out += pad + "}\n";
      return;
    case StmtKind::fail:
      out += fmt::format("{}if ({}) return {};\n", pad, e(s.cond), s.code);
      return;
  }
}

void print_block(std::string& out, const Block& block, const std::vector<KernelParam>& params, int indent,
                 const ParallelBodies* bodies) {
  for (const Stmt& s : block) print_stmt(out, *s, params, indent, bodies);
}

// The vars an expression reads, with their types.
void expr_vars(const Expr& e, std::map<std::string, ScalarType>& used) {
  if (!e) return;
  if (e->kind == ExprKind::var) used.emplace(e->name, e->type);
  for (const Expr& a : e->args) expr_vars(a, used);
}

// The vars a block reads, those it defines (lets, loop variables) and those it assigns; whether
// it can fail (a `fail` returns from the kernel, which a body function cannot).
struct BlockVars {
  std::map<std::string, ScalarType> used;
  std::set<std::string> defined, assigned;
  bool fails = false;
};
void block_vars(const Block& block, BlockVars& v) {
  for (const Stmt& st : block) {
    const StmtNode& s = *st;
    for (const Expr* x : {&s.begin, &s.end, &s.index, &s.value, &s.cond}) expr_vars(*x, v.used);
    if (s.kind == StmtKind::let || s.kind == StmtKind::loop) v.defined.insert(s.var);
    if (s.kind == StmtKind::assign) v.assigned.insert(s.var);
    if (s.kind == StmtKind::fail) v.fails = true;
    block_vars(s.body, v);
  }
}

// Emits the body function of each parallel loop in `block` (see ParallelBodies) into `out`.
void parallel_bodies(const Kernel& k, const Block& block, std::string& out, ParallelBodies& bodies) {
  for (const Stmt& st : block) {
    const StmtNode& s = *st;
    if (s.kind == StmtKind::loop && s.parallel) {
      BlockVars v;
      block_vars(s.body, v);
      bool writes_outer = false;
      for (const std::string& a : v.assigned) writes_outer = writes_outer || !v.defined.count(a);
      if (v.fails || writes_outer) continue;  // printed inline, as before
      std::string name = fmt::format("{}_p{}", k.name, bodies.size());
      std::string sig = fmt::format("static inline void {}(i64 {}", name, s.var);
      std::string call = fmt::format("{}({}", name, s.var);
      for (const auto& [var, type] : v.used) {
        if (v.defined.count(var) || var == s.var) continue;
        sig += fmt::format(", {} {}", c_type(type), var);
        call += ", " + var;
      }
      for (const KernelParam& p : k.params) {
        sig += fmt::format(", {}{}* __restrict__ {}", p.written ? "" : "const ", c_type(p.type), p.name);
        call += ", " + p.name;
      }
      out += sig + ") {\n";
      print_block(out, s.body, k.params, 1);
      out += "}\n";
      bodies.emplace(&s, call + ")");
      continue;
    }
    parallel_bodies(k, s.body, out, bodies);
  }
}

void print_comment(std::string& out, const std::vector<std::string>& lines) {
  for (const auto& l : lines) out += "// " + l + "\n";
}

std::string shape_str(const std::vector<int64_t>& s) { return "[" + fmt::format("{}", fmt::join(s, ",")) + "]"; }

const char* kPrelude = R"(typedef __INT64_TYPE__ i64;
typedef __UINT64_TYPE__ u64;

// OpenBLAS (CBLAS row-major interface); declared here so the file needs no headers.
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void cblas_sgemv(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x, int incx,
                 float beta, float* y, int incy);
void openblas_set_num_threads(int n);
}

// Threads of each OpenMP parallel region. OpenBLAS always runs single-threaded inside them,
// so the two thread pools never compete for cores.
static int dnnc_threads = 1;

extern "C" void dnnc_set_threads(int n) {
  dnnc_threads = n < 1 ? 1 : n;
  openblas_set_num_threads(1);
}

// Per-step profiling: with a hook set, dnnc_run calls it with -1 on entry and with i after
// step i. Null (the default) costs one predicted branch per step.
static void (*dnnc_tick)(int) = 0;
extern "C" void dnnc_set_profiler(void (*fn)(int)) { dnnc_tick = fn; }
#define DNNC_TICK(i) if (__builtin_expect(dnnc_tick != 0, 0)) dnnc_tick(i)

// C[m,n] = alpha op(A) op(B) + beta C (row-major); rows or columns of one go to sgemv.
static void dnnc_sgemm(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b,
                       i64 ldb, float beta, float* c, i64 ldc) {
  const int row_major = 101, no_trans = 111, trans = 112;
  if (m <= 0 || n <= 0) return;
  if (m == 1) {  // c = op(B)ᵀ · (row 0 of op(A))
    if (tb) cblas_sgemv(row_major, no_trans, n, k, alpha, b, ldb, a, ta ? lda : 1, beta, c, 1);
    else cblas_sgemv(row_major, trans, k, n, alpha, b, ldb, a, ta ? lda : 1, beta, c, 1);
    return;
  }
  if (n == 1) {  // c = op(A) · (column 0 of op(B))
    if (ta) cblas_sgemv(row_major, trans, k, m, alpha, a, lda, b, tb ? 1 : ldb, beta, c, ldc);
    else cblas_sgemv(row_major, no_trans, m, k, alpha, a, lda, b, tb ? 1 : ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(row_major, ta ? trans : no_trans, tb ? trans : no_trans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The same GEMM with its rows (or columns, if there are more) split over the threads.
static void dnnc_sgemm_split(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                             const float* b, i64 ldb, float beta, float* c, i64 ldc) {
  const int t = dnnc_threads;
  if (t <= 1) {
    dnnc_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool by_rows = m >= n;
#pragma omp parallel for num_threads(t) schedule(static)
  for (int i = 0; i < t; ++i) {
    if (by_rows) {
      i64 r0 = m * i / t, r1 = m * (i + 1) / t;
      dnnc_sgemm(ta, tb, r1 - r0, n, k, alpha, ta ? a + r0 : a + r0 * lda, lda, b, ldb, beta, c + r0 * ldc, ldc);
    } else {
      i64 c0 = n * i / t, c1 = n * (i + 1) / t;
      dnnc_sgemm(ta, tb, m, c1 - c0, k, alpha, a, lda, tb ? b + c0 * ldb : b + c0, ldb, beta, c + c0, ldc);
    }
  }
}

// Co-scheduled GEMMs (g*_group): the first row of a GEMM whose rows each weigh `w` (of the
// group's work) at work offset `x` into it; 0 before it, `m` past it.
static inline i64 dnnc_row_at(i64 x, i64 w, i64 m) {
  if (x <= 0) return 0;
  const i64 r = (x + w - 1) / w;
  return r < m ? r : m;
}

// C = alpha op(A) op(B) (beta = 0) with K split over the threads: for a small C and a long K
// (weight gradients summed over a batch). Thread 0 writes C, the others partial sums added after.
static void dnnc_sgemm_split_k(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda,
                               const float* b, i64 ldb, float* c, i64 ldc) {
  const int t = dnnc_threads;
  if (t <= 1 || k < 64 * t) {
    dnnc_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
    return;
  }
  float* part = (float*)__builtin_malloc(sizeof(float) * (t - 1) * m * n);
#pragma omp parallel for num_threads(t) schedule(static)
  for (int i = 0; i < t; ++i) {
    i64 k0 = k * i / t, k1 = k * (i + 1) / t;
    float* out = i == 0 ? c : part + (i - 1) * m * n;
    dnnc_sgemm(ta, tb, m, n, k1 - k0, alpha, ta ? a + k0 * lda : a + k0, lda, tb ? b + k0 : b + k0 * ldb, ldb, 0.0f, out,
               i == 0 ? ldc : n);
  }
  for (int i = 1; i < t; ++i)
    for (i64 r = 0; r < m; ++r)
      for (i64 j = 0; j < n; ++j) c[r * ldc + j] += part[((i - 1) * m + r) * n + j];
  __builtin_free(part);
}
)";

// What an epilogue GEMM computes, for its comment.
std::string epilogue_gemm_product(const GemmCall& g) {
  const char* ta = g.trans_a ? "ᵀ" : "";
  const char* tb = g.trans_b ? "ᵀ" : "";
  if (g.first_step >= 0)
    return fmt::format("C[{},{}] = α A{} · B{} + β C (α, β = {}, {} on the first step, else {}, {})", g.m, g.n, ta, tb,
                       g.alpha_first, g.beta_first, g.alpha, g.beta);
  return fmt::format("C[{},{}] = A{} · B{}{}", g.m, g.n, ta, tb,
                     g.bias_kind != GemmCall::Bias::none ? " + bias per column" : "");
}

// The parameters (C type, name) of an epilogue GEMM's function, in the order dnnc_run passes
// them: a, b, [bias], c, the epilogue's buffers other than c, [step], [col_sums]. `call_args`
// receives the epilogue kernel's arguments (c where the kernel takes C).
std::vector<std::pair<std::string, std::string>> epilogue_gemm_params(const Program& p, const Step& s,
                                                                      std::vector<std::string>& call_args) {
  const GemmCall& g = s.gemm;
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::vector<std::pair<std::string, std::string>> params{{"const float*", "a"}, {"const float*", "b"}};
  if (g.bias_kind != GemmCall::Bias::none) params.emplace_back("const float*", "bias");
  params.emplace_back("float*", "c");
  for (size_t e = 0; e < s.args.size(); ++e) {
    if (root_buffer(p, s.args[e]) == root_buffer(p, g.c)) {
      call_args.push_back("c");
      continue;
    }
    const KernelParam& kp = k.params.at(e);
    params.emplace_back(fmt::format("{}{}*", kp.written ? "" : "const ", c_type(kp.type)), fmt::format("e{}", e));
    call_args.push_back(params.back().second);
  }
  if (g.first_step >= 0) params.emplace_back("const float*", "step");
  if (g.col_sums >= 0) params.emplace_back("float*", "col_sums");
  return params;
}

std::string param_list(const std::vector<std::pair<std::string, std::string>>& params, const std::string& suffix) {
  std::string out;
  for (const auto& [type, name] : params)
    out += fmt::format("{}{} __restrict__ {}{}", out.empty() ? "" : ", ", type, name, suffix);
  return out;
}

// The α and β of an epilogue GEMM's product: constants, or (step-dependent scaling) the locals
// the lines appended to `out` define.
std::pair<std::string, std::string> epilogue_gemm_scaling(const GemmCall& g, std::string& out) {
  bool bias = g.bias_kind != GemmCall::Bias::none;
  if (g.first_step < 0) return {cpp_float_literal(g.alpha), cpp_float_literal(bias ? 1.0f : g.beta)};
  out += "  const bool first = step[0] == 0x1p+0f;\n";
  out +=
      fmt::format("  const float alpha = first ? {} : {}, beta = first ? {} : {};\n", cpp_float_literal(g.alpha_first),
                  cpp_float_literal(g.alpha), cpp_float_literal(g.beta_first), cpp_float_literal(g.beta));
  return {"alpha", "beta"};
}

// Rows [r0, r1) of an epilogue GEMM: bias, product, epilogue; each line indented by `pad`.
std::string epilogue_gemm_rows(const GemmCall& g, const Kernel& k, const std::vector<std::string>& call_args,
                               const std::pair<std::string, std::string>& scaling, const std::string& pad) {
  std::string out;
  if (g.bias_kind != GemmCall::Bias::none)
    out += fmt::format(
        "{1}for (i64 r = r0; r < r1; ++r)\n{1}  for (i64 j = 0; j < {0}; ++j) c[r * {0} + j] = bias[j];\n", g.n, pad);
  out += fmt::format("{}dnnc_sgemm({}, {}, r1 - r0, {}, {}, {}, a + {}, {}, b, {}, {}, c + r0 * {}, {});\n", pad,
                     g.trans_a ? "true" : "false", g.trans_b ? "true" : "false", g.n, g.k, scaling.first,
                     g.trans_a ? "r0" : fmt::format("r0 * {}", g.lda), g.lda, g.ldb, scaling.second, g.ldc, g.ldc);
  out += fmt::format("{}{}(r0 * {}, r1 * {}, {});\n", pad, k.name, g.n, g.n, fmt::join(call_args, ", "));
  return out;
}

// A GEMM with an epilogue: each thread computes a block of rows of C (bias first), then runs the
// epilogue kernel on those rows while they are in its cache. The function takes the epilogue's
// buffers after c (c itself once), then the step buffer of a step-dependent alpha/beta, then the
// column-sum buffer (each thread sums the columns of its rows into its own partial sums).
std::string gemm_epilogue_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  DNNC_CHECK(g.batch == 1 && g.ldc == g.n && g.bias_kind != GemmCall::Bias::per_row,
             "epilogue GEMMs are single, dense");
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::string out = print_kernel_cpp(k, {fmt::format("epilogue of {}: elements [begin, end) of C", name)});
  print_comment(out, s.comment);
  bool sums = g.col_sums >= 0;
  out += fmt::format("// {}, then {} on each thread's rows{}\n", epilogue_gemm_product(g), k.name,
                     sums ? ", then the column sums of C" : "");
  std::vector<std::string> call_args;
  out += fmt::format("static void {}({}) {{\n", name, param_list(epilogue_gemm_params(p, s, call_args), ""));
  auto scaling = epilogue_gemm_scaling(g, out);
  bool split = g.threads == GemmCall::Threads::split;
  out += fmt::format("  const int t = {};\n", split ? "dnnc_threads" : "1");
  if (sums)
    out += fmt::format("  float* part = t > 1 ? (float*)__builtin_malloc(sizeof(float) * (t - 1) * {}) : 0;\n", g.n);
  if (split) out += "#pragma omp parallel for num_threads(t) schedule(static)\n";
  out += "  for (int i = 0; i < t; ++i) {\n";
  out += fmt::format("    const i64 r0 = {} * i / t, r1 = {} * (i + 1) / t;\n", g.m, g.m);
  out += epilogue_gemm_rows(g, k, call_args, scaling, "    ");
  if (sums) {
    out += fmt::format("    float* sum = i == 0 ? col_sums : part + (i - 1) * {};\n", g.n);
    out += fmt::format("    for (i64 j = 0; j < {}; ++j) sum[j] = 0x0p+0f;\n", g.n);
    out += fmt::format(
        "    for (i64 r = r0; r < r1; ++r)\n      for (i64 j = 0; j < {0}; ++j) sum[j] += c[r * {0} + j];\n", g.n);
  }
  out += "  }\n";
  if (sums) {
    out += fmt::format(
        "  for (int i = 1; i < t; ++i)\n    for (i64 j = 0; j < {0}; ++j) col_sums[j] += part[(i - 1) * {0} + j];\n",
        g.n);
    out += "  __builtin_free(part);\n";
  }
  out += "}\n";
  return out;
}

// A co-scheduled GEMM's rows [r0, r1): bias, product and epilogue (no column sums).
std::string gemm_rows_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  DNNC_CHECK(g.col_sums < 0 && g.batch == 1 && g.ldc == g.n && g.bias_kind != GemmCall::Bias::per_row,
             "a co-scheduled GEMM is single and dense, without column sums or a per-row bias");
  const Kernel& k = p.kernels.at(static_cast<size_t>(g.epilogue));
  std::string out = print_kernel_cpp(k, {fmt::format("epilogue of {}: elements [begin, end) of C", name)});
  print_comment(out, s.comment);
  out += fmt::format("// {}, then {}: rows [r0, r1) of C\n", epilogue_gemm_product(g), k.name);
  std::vector<std::string> call_args;
  out += fmt::format("static void {}(i64 r0, i64 r1, {}) {{\n", name,
                     param_list(epilogue_gemm_params(p, s, call_args), ""));
  auto scaling = epilogue_gemm_scaling(g, out);
  out += epilogue_gemm_rows(g, k, call_args, scaling, "  ") + "}\n";
  return out;
}

// Co-scheduled GEMM steps [first, last]: one parallel region; the rows of all of them, weighted
// by n·k each, are split evenly over the threads, so independent GEMMs run side by side.
std::string gemm_group_function(const Program& p, size_t first, size_t last, const std::string& name) {
  std::string out, params, body;
  int64_t total = 0;
  std::vector<std::string> names;
  for (size_t i = first; i <= last; ++i) {
    const GemmCall& g = p.steps[i].gemm;
    out += "\n" + gemm_rows_function(p, p.steps[i], fmt::format("g{}_rows", i));
    names.push_back(fmt::format("g{}", i));
    std::vector<std::string> unused, args;
    auto member = epilogue_gemm_params(p, p.steps[i], unused);
    params += (params.empty() ? "" : ", ") + param_list(member, fmt::format("_{}", i));
    for (const auto& pr : member) args.push_back(fmt::format("{}_{}", pr.second, i));
    int64_t w = g.n * g.k;
    body += fmt::format("    r0 = dnnc_row_at(lo - {0}, {1}, {2});\n    r1 = dnnc_row_at(hi - {0}, {1}, {2});\n", total,
                        w, g.m);
    body += fmt::format("    if (r0 < r1) g{}_rows(r0, r1, {});\n", i, fmt::join(args, ", "));
    total += g.m * w;
  }
  out += fmt::format("\n// {} at once: their rows, weighted by n·k, split evenly over the threads\n",
                     fmt::join(names, ", "));
  out += fmt::format("static void {}({}) {{\n  const int t = dnnc_threads;\n", name, params);
  out += "#pragma omp parallel for num_threads(t) schedule(static)\n  for (int i = 0; i < t; ++i) {\n";
  out += fmt::format("    const i64 lo = {0} * i / t, hi = {0} * (i + 1) / t;\n    i64 r0, r1;\n", total);
  out += body + "  }\n}\n";
  return out;
}

std::string gemm_function(const Program& p, const Step& s, const std::string& name) {
  const GemmCall& g = s.gemm;
  if (g.epilogue >= 0) return gemm_epilogue_function(p, s, name);
  DNNC_CHECK(g.first_step < 0 && g.col_sums < 0, "step-dependent scaling and column sums need an epilogue");
  std::string out;
  print_comment(out, s.comment);
  std::string prod = fmt::format("C[{},{}] = A{} · B{}", g.m, g.n, g.trans_a ? "ᵀ" : "", g.trans_b ? "ᵀ" : "");
  if (g.batch > 1) prod += fmt::format(", {} problems{}", g.batch, g.accumulate_batches ? " summed" : "");
  if (g.bias_kind != GemmCall::Bias::none)
    prod += g.bias_kind == GemmCall::Bias::per_col ? " + bias per column" : " + bias per row";
  out += "// " + prod + "\n";
  bool bias = g.bias_kind != GemmCall::Bias::none;
  out += fmt::format(
      "static void {}(const float* __restrict__ a, const float* __restrict__ b, {}float* __restrict__ c) {{\n", name,
      bias ? "const float* __restrict__ bias, " : "");
  float beta = g.beta;
  if (bias) {
    int64_t rows = g.accumulate_batches ? g.m : g.batch * g.m;
    bool par = rows > 1 && rows * g.n >= (int64_t{1} << 15);
    if (par) out += "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
    out += fmt::format("  for (i64 r = 0; r < {}; ++r) {{\n", rows);
    out += fmt::format("    float* row = c + r / {} * {} + r % {} * {};\n", g.m, g.accumulate_batches ? 0 : g.stride_c,
                       g.m, g.ldc);
    out += fmt::format("    for (i64 j = 0; j < {}; ++j) row[j] = bias[{}];\n", g.n,
                       g.bias_kind == GemmCall::Bias::per_col ? "j" : fmt::format("r % {}", g.m));
    out += "  }\n";
    beta = 1.0f;
  }
  if (g.threads == GemmCall::Threads::split_k) {
    DNNC_CHECK(g.batch == 1 && !bias && g.beta == 0.0f, "split_k takes one problem, no bias, beta 0");
    out += fmt::format("  dnnc_sgemm_split_k({}, {}, {}, {}, {}, {}, a, {}, b, {}, c, {});\n}}\n",
                       g.trans_a ? "true" : "false", g.trans_b ? "true" : "false", g.m, g.n, g.k,
                       cpp_float_literal(g.alpha), g.lda, g.ldb, g.ldc);
    return out;
  }
  bool split = g.threads == GemmCall::Threads::split;
  const char* fn = split ? "dnnc_sgemm_split" : "dnnc_sgemm";
  auto call = [&](const std::string& ia, const std::string& ib, const std::string& ic, const std::string& beta_s) {
    return fmt::format("{}({}, {}, {}, {}, {}, {}, a{}, {}, b{}, {}, {}, c{}, {});", fn, g.trans_a ? "true" : "false",
                       g.trans_b ? "true" : "false", g.m, g.n, g.k, cpp_float_literal(g.alpha), ia, g.lda, ib, g.ldb,
                       beta_s, ic, g.ldc);
  };
  if (g.batch == 1) {
    out += "  " + call("", "", "", cpp_float_literal(beta)) + "\n";
  } else {
    auto off = [](int64_t stride) { return stride == 0 ? std::string() : fmt::format(" + bi * {}", stride); };
    if (g.threads == GemmCall::Threads::over_batch) {
      fn = "dnnc_sgemm";
      out += "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
    }
    out += fmt::format("  for (i64 bi = 0; bi < {}; ++bi) {{\n", g.batch);
    std::string beta_s = g.accumulate_batches && !bias
                             ? fmt::format("bi == 0 ? {} : {}", cpp_float_literal(beta), cpp_float_literal(1.0f))
                             : cpp_float_literal(g.accumulate_batches ? 1.0f : beta);
    out += "    " + call(off(g.stride_a), off(g.stride_b), off(g.stride_c), beta_s) + "\n";
    out += "  }\n";
  }
  out += "}\n";
  (void)p;
  return out;
}

}  // namespace

std::string print_expr_cpp(const Expr& e, const std::vector<KernelParam>& params) { return print(e, params); }

std::string print_kernel_cpp(const Kernel& k, const std::vector<std::string>& comment) {
  std::string out;
  ParallelBodies bodies;
  parallel_bodies(k, k.body, out, bodies);
  print_comment(out, comment);
  out += fmt::format("static int {}(", k.name);
  for (size_t i = 0; i < k.index_params.size(); ++i) out += fmt::format("{}i64 {}", i ? ", " : "", k.index_params[i]);
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& p = k.params[i];
    out += fmt::format("{}{}{}* __restrict__ {}", i || !k.index_params.empty() ? ", " : "", p.written ? "" : "const ",
                       c_type(p.type), p.name);
  }
  out += ") {\n";
  print_block(out, k.body, k.params, 1, &bodies);
  out += "  return 0;\n}\n";
  return out;
}

std::string print_program_cpp(const Program& p) {
  std::string out = fmt::format("// Generated by dnnc: model {}, graph {}, batch {}. Do not edit.\n", p.module_name,
                                p.graph_name, p.batch);
  out += kPrelude;
  std::vector<std::string> fn_names(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    out += "\n";
    if (s.kind == Step::Kind::kernel) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.kernel));
      fn_names[i] = k.name;
      out += print_kernel_cpp(k, s.comment);
    } else if (s.with_next || (i > 0 && p.steps[i - 1].with_next)) {
      if (i > 0 && p.steps[i - 1].with_next) continue;  // printed with the group's first step
      size_t last = i;
      while (p.steps[last].with_next) ++last;
      fn_names[i] = fmt::format("g{}_group", i);
      out += gemm_group_function(p, i, last, fn_names[i]);
    } else {
      fn_names[i] = fmt::format("g{}_gemm", i);
      out += gemm_function(p, s, fn_names[i]);
    }
  }

  out += "\nextern \"C\" int dnnc_run(void** buffers) {\n";
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    // Params may be updated in place (an optimizer step writing its param's storage).
    bool ro = b.kind == BufferKind::input ||
              (b.kind == BufferKind::alias && p.buffers[static_cast<size_t>(b.alias_of)].kind == BufferKind::input);
    std::string type = fmt::format("{}{}*", ro ? "const " : "", c_type(b.dtype));
    std::string note = fmt::format("{} {}{}", buffer_kind_name(b.kind), scalar_type_name(b.dtype), shape_str(b.shape));
    if (!b.value_name.empty()) note += " " + b.value_name;
    if (b.kind == BufferKind::alias)
      out += fmt::format("  {} {} = {};  // {}\n", type, b.name, p.buffers[static_cast<size_t>(b.alias_of)].name, note);
    else
      out += fmt::format("  {} {} = ({})buffers[{}];  // {}\n", type, b.name, type, i, note);
  }
  out += "  DNNC_TICK(-1);\n";
  int error_base = 0;
  std::string group_args;  // the arguments so far of a co-scheduled group starting at group_first
  size_t group_first = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (i > 0 && !p.steps[i - 1].with_next) out += fmt::format("  DNNC_TICK({});\n", i - 1);
    std::string args;
    if (s.kind == Step::Kind::kernel) {
      for (size_t a = 0; a < s.args.size(); ++a)
        args += (a ? ", " : "") + p.buffers.at(static_cast<size_t>(s.args[a])).name;
      const Kernel& k = p.kernels[static_cast<size_t>(s.kernel)];
      if (k.errors.empty()) {
        out += fmt::format("  {}({});\n", fn_names[i], args);
      } else {
        out += fmt::format("  if (int e = {}({})) return {} + e;\n", fn_names[i], args, error_base);
        error_base += static_cast<int>(k.errors.size());
      }
      continue;
    }
    const GemmCall& g = s.gemm;
    args = p.buffers.at(static_cast<size_t>(g.a)).name + ", " + p.buffers.at(static_cast<size_t>(g.b)).name + ", ";
    if (g.bias_kind != GemmCall::Bias::none) args += p.buffers.at(static_cast<size_t>(g.bias)).name + ", ";
    args += p.buffers.at(static_cast<size_t>(g.c)).name;
    if (g.epilogue >= 0)
      for (int b : s.args)
        if (root_buffer(p, b) != root_buffer(p, g.c)) args += ", " + p.buffers.at(static_cast<size_t>(b)).name;
    if (g.first_step >= 0) args += ", " + p.buffers.at(static_cast<size_t>(g.first_step)).name;
    if (g.col_sums >= 0) args += ", " + p.buffers.at(static_cast<size_t>(g.col_sums)).name;
    // A co-scheduled group is one call, made at its last member; the profiler ticks of its
    // other members follow it, so the whole group's time shows on its first step.
    if (s.with_next) {
      if (group_args.empty()) group_first = i;
      group_args += args + ", ";
      continue;
    }
    if (!group_args.empty()) {
      out += fmt::format("  {}({});\n", fn_names[group_first], group_args + args);
      for (size_t t = group_first; t < i; ++t) out += fmt::format("  DNNC_TICK({});\n", t);
      group_args.clear();
      continue;
    }
    out += fmt::format("  {}({});\n", fn_names[i], args);
  }
  if (!p.steps.empty()) out += fmt::format("  DNNC_TICK({});\n", p.steps.size() - 1);
  out += "  return 0;\n}\n";
  return out;
}

}  // namespace dnnc::codegen
