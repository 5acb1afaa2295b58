// The C++ printer for KernelIR and codegen::Program (see cpp_printer.h for the exported ABI): the
// C-family renderer (codegen/c) with C++'s spellings, OpenMP parallel loops whose bodies become
// functions of their own, and the translation unit around the kernels and GEMM steps.
#include "codegen/cpp/cpp_printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "codegen/c/c_printer.h"
#include "codegen/cpp/cpp_gemm.h"
#include "ir/check.h"

namespace dnnc::codegen {

const CDialect& cpp_dialect() {
  static const CDialect d{
      .builtin_prefix = "__builtin_",
      .neg_i64_suffix = "",
      .inf_f32 = "__builtin_inff()",
      .neg_inf_f32 = "(-__builtin_inff())",
      .nan_f32 = "__builtin_nanf(\"\")",
      .inf_f64 = "__builtin_inf()",
      .neg_inf_f64 = "(-__builtin_inf())",
      .nan_f64 = "__builtin_nan(\"\")",
      .erf_f32 = "dnnc_erff",
  };
  return d;
}

std::string cpp_float_literal(float v) { return c_float_literal(v, cpp_dialect()); }
std::string cpp_double_literal(double v) { return c_double_literal(v, cpp_dialect()); }

namespace {

// The body of each parallel loop of a kernel becomes a function of its own, with the loop
// variable, the outer locals it reads and the kernel's buffers as __restrict__ parameters:
// gcc's OpenMP outlining passes the buffers to the parallel region through a struct, which
// loses __restrict__, so loops inside it get runtime alias checks or stay scalar (the CNN's
// pool backward ran 2.2x slower). Maps a parallel loop to the call that replaces its body.
using ParallelBodies = std::map<const StmtNode*, std::string>;

bool expr_reads_var(const Expr& e, const std::string& v) {
  if (!e) return false;
  if (e->kind == ExprKind::var && e->name == v) return true;
  for (const Expr& a : e->args)
    if (expr_reads_var(a, v)) return true;
  return false;
}

// The f32 and f64 sums of an innermost sequential loop whose body only declares locals and adds terms to
// locals declared outside it (`s = s + term`, term not reading s; no stores, ifs or checks): the
// loop is printed `#pragma omp simd reduction(+:...)`, so each sum is accumulated in one partial
// sum per vector lane, added to s after the loop: vectorized, and blocked (each lane sums every
// VL-th term), which is also more accurate than one running sum. Empty if the loop is not such.
std::vector<std::string> simd_sums(const StmtNode& loop) {
  std::vector<std::string> sums;
  std::set<std::string> inner;
  for (const Stmt& st : loop.body) {
    if (st->kind == StmtKind::let) {
      inner.insert(st->var);
      continue;
    }
    if (st->kind != StmtKind::assign || inner.count(st->var)) return {};
    const Expr& v = st->value;
    if (v->kind != ExprKind::binary || v->binary != BinaryOp::add ||
        (v->type != ScalarType::f32 && v->type != ScalarType::f64))
      return {};
    const Expr& lhs = v->args[0];
    if (lhs->kind != ExprKind::var || lhs->name != st->var || expr_reads_var(v->args[1], st->var)) return {};
    if (std::find(sums.begin(), sums.end(), st->var) != sums.end()) return {};
    sums.push_back(st->var);
  }
  return sums;
}

// A kernel's statements in C++: a failed check returns its code; a parallel loop is an OpenMP
// `parallel for` whose body is the call in `bodies` where it has one; a sum loop (simd_sums) an
// OpenMP simd reduction.
class CppKernelPrinter : public CPrinter {
 public:
  explicit CppKernelPrinter(const Kernel& k, const ParallelBodies* bodies = nullptr)
      : CPrinter(k, cpp_dialect()), bodies_(bodies) {}

 protected:
  std::string fail_exit(const StmtNode& s) override { return fmt::format("return {};", s.code); }

  void loop(std::string& out, const StmtNode& s, int indent) override {
    const std::string p = pad(indent);
    if (s.parallel) out += p + "#pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n";
    if (!s.parallel)
      if (auto sums = simd_sums(s); !sums.empty())
        out += p + fmt::format("#pragma omp simd reduction(+:{})\n", fmt::join(sums, ","));
    out += p + for_header(s) + "\n";
    if (auto it = bodies_ ? bodies_->find(&s) : ParallelBodies::const_iterator(); bodies_ && it != bodies_->end())
      out += p + "  " + it->second + ";\n";
    else
      block(out, s.body, indent + 1);
    out += p + "}\n";
  }

 private:
  const ParallelBodies* bodies_;
};

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
        sig += fmt::format(", {} {}", c_type_name(type), var);
        call += ", " + var;
      }
      for (const KernelParam& p : k.params) {
        sig += ", " + c_param_decl(p);
        call += ", " + p.name;
      }
      out += sig + ") {\n";
      CppKernelPrinter(k).block(out, s.body, 1);
      out += "}\n";
      bodies.emplace(&s, call + ")");
      continue;
    }
    parallel_bodies(k, s.body, out, bodies);
  }
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

// A large unit is split into parts (DNNC_PARTS, defined on the second line) that the JIT
// compiles side by side, each with -DDNNC_PART=i, and links into one library. Compiled without
// -DDNNC_PART the file is the whole unit. Part 0 (or the whole unit) defines what follows and
// dnnc_run; the others see declarations.
#ifndef DNNC_PART
#define DNNC_PART -1
#endif
#define DNNC_HIDDEN __attribute__((visibility("hidden")))

// Threads of each OpenMP parallel region (OpenBLAS always runs single-threaded inside them, so
// the two thread pools never compete for cores), and the per-step profiling hook: with a hook
// set, dnnc_run calls it with -1 on entry and with i after step i. Null (the default) costs one
// predicted branch per step.
#if DNNC_PART <= 0
DNNC_HIDDEN int dnnc_threads = 1;
DNNC_HIDDEN void (*dnnc_tick)(int) = 0;
extern "C" void dnnc_set_threads(int n) {
  dnnc_threads = n < 1 ? 1 : n;
  openblas_set_num_threads(1);
}
extern "C" void dnnc_set_profiler(void (*fn)(int)) { dnnc_tick = fn; }
#else
extern DNNC_HIDDEN int dnnc_threads;
extern DNNC_HIDDEN void (*dnnc_tick)(int);
#endif
#define DNNC_TICK(i) if (__builtin_expect(dnnc_tick != 0, 0)) dnnc_tick(i)

// Step functions (kernels, GEMM steps) stay out of line: each runs once per step, and GCC
// inlining them and their OpenMP regions into dnnc_run made a chunked resnet_mnist train step
// compile in 4.7 s instead of 2.5-4.0 s. They are hidden, not static, so that dnnc_run can
// call those of other parts.
#define DNNC_STEP __attribute__((noinline)) DNNC_HIDDEN

// erf(a) without branches or library calls, so loops over it vectorize (glibc's erff is scalar;
// gelu over 256k values took 1 ms): Norbert Juffa's approximation, a polynomial in a² for
// |a| <= 0.927734375, else 1 - exp(polynomial in |a|). Within 1 ulp of glibc's erff for every
// float (tests/cpu/erf_test.cpp checks them all); NaN in, NaN out. dnnc_expm_neg is exp(x) for
// x <= 0 (clamped at -87, where erf is already 1): range reduction by ln 2, degree-6 polynomial.
static inline float dnnc_expm_neg(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float k = __builtin_rintf(x * 0x1.715476p+0f);
  float r = __builtin_fmaf(k, -0x1.62e400p-1f, x);
  r = __builtin_fmaf(k, -0x1.7f7d1cp-20f, r);
  float p = 0x1.6c16c2p-10f;
  p = __builtin_fmaf(p, r, 0x1.111112p-7f);
  p = __builtin_fmaf(p, r, 0x1.555556p-5f);
  p = __builtin_fmaf(p, r, 0x1.555556p-3f);
  p = __builtin_fmaf(p, r, 0x1p-1f);
  p = __builtin_fmaf(p, r, 0x1p+0f);
  p = __builtin_fmaf(p, r, 0x1p+0f);
  int bits;
  __builtin_memcpy(&bits, &p, 4);
  bits += (int)k << 23;
  __builtin_memcpy(&p, &bits, 4);
  return p;
}
static inline float dnnc_erff(float a) {
  const float t = __builtin_fabsf(a), s = a * a, tc = t < 4.0f ? t : 4.0f;
  float r = __builtin_fmaf(-1.72853470e-5f, tc, 3.83197126e-4f);
  const float u = __builtin_fmaf(-3.88396438e-3f, tc, 2.42546219e-2f);
  r = __builtin_fmaf(r, tc * tc, u);
  r = __builtin_fmaf(r, tc, -1.06777877e-1f);
  r = __builtin_fmaf(r, tc, -6.34846687e-1f);
  r = __builtin_fmaf(r, tc, -1.28717512e-1f);
  r = __builtin_fmaf(r, tc, -tc);
  const float big = __builtin_copysignf(1.0f - dnnc_expm_neg(r), a);
  float q = -5.96761703e-4f;
  q = __builtin_fmaf(q, s, 4.99119423e-3f);
  q = __builtin_fmaf(q, s, -2.67681349e-2f);
  q = __builtin_fmaf(q, s, 1.12819925e-1f);
  q = __builtin_fmaf(q, s, -3.76125336e-1f);
  q = __builtin_fmaf(q, s, 1.28379166e-1f);
  const float small = __builtin_fmaf(q, a, a);
  return a != a ? a : (t > 0.927734375f ? big : small);
}
)";

}  // namespace

const char* cpp_prelude() { return kPrelude; }

std::string print_expr_cpp(const Expr& e, const Kernel& k) { return CppKernelPrinter(k).expr(e); }

std::string print_kernel_cpp(const Kernel& k, const std::vector<std::string>& comment) {
  CheckScope scope("C++ printer, kernel " + k.name);
  std::string out;
  ParallelBodies bodies;
  parallel_bodies(k, k.body, out, bodies);
  print_cpp_comment(out, comment);
  out += fmt::format("DNNC_STEP int {}(", k.name);
  for (size_t i = 0; i < k.index_params.size(); ++i) out += fmt::format("{}i64 {}", i ? ", " : "", k.index_params[i]);
  for (size_t i = 0; i < k.params.size(); ++i)
    out += (i || !k.index_params.empty() ? ", " : "") + c_param_decl(k.params[i]);
  out += ") {\n";
  CppKernelPrinter(k, &bodies).block(out, k.body, 1);
  out += "  return 0;\n}\n";
  return out;
}

namespace {

// One step function of a unit (a kernel, a GEMM step or group, with its helpers and comment),
// or a comment standing for a step that calls an earlier function.
struct UnitChunk {
  std::string text;
  std::string fn;     // the function dnnc_run calls; empty for a comment
  bool gemm = false;  // calls the GEMM helpers (cpp_gemm_helpers)
};

// The declaration of `fn` in `text`: its signature line ("DNNC_STEP <type> fn(...) {").
std::string step_declaration(const std::string& text, const std::string& fn) {
  size_t at = 0;
  while ((at = text.find("DNNC_STEP ", at)) != std::string::npos) {
    size_t eol = text.find('\n', at);
    std::string line = text.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
    if ((at == 0 || text[at - 1] == '\n') && line.find(" " + fn + "(") != std::string::npos && line.size() > 2 &&
        line.compare(line.size() - 2, 2, " {") == 0)
      return line.substr(0, line.size() - 2) + ";";
    at += 10;
  }
  DNNC_UNREACHABLE("step function {} has no one-line signature to declare", fn);
}

// Splitting, by the bytes of source as the measure of g++ -O3's time (measured on the train
// steps of resnet_mnist and lenet5, one function at a time): kernels 30-50 kB/s plus about 20 ms
// (kFnBytes) each; dnnc_run, straight-line calls, three times faster; the GEMM helpers 0.1-0.35 s
// (kGemmHelperBytes) for the first GEMM step of a part, little for the others, so the GEMM steps
// stay together, in one part. Parts of about kPartBytes (1-1.5 s) each, at most kMaxParts.
constexpr size_t kPartBytes = 64000, kGemmHelperBytes = 16000, kFnBytes = 1000;
constexpr int kMaxParts = 8;

// The part of each chunk: the kernels, and the GEMM steps as one item, longest first onto the
// least loaded part; dnnc_run is always in part 0.
std::vector<int> assign_parts(const std::vector<UnitChunk>& chunks, size_t run_bytes, int* parts_out) {
  std::vector<std::pair<size_t, std::vector<size_t>>> items;  // (weight, chunks)
  std::vector<size_t> gemms;
  size_t gemm_weight = kGemmHelperBytes, total = run_bytes / 3;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].fn.empty()) continue;  // a comment: printed in part 0's place, costs nothing
    size_t w = chunks[i].text.size() + kFnBytes;
    if (chunks[i].gemm) {
      gemms.push_back(i);
      gemm_weight += w;
    } else {
      items.push_back({w, {i}});
    }
    total += w;
  }
  if (!gemms.empty()) {
    items.push_back({gemm_weight, gemms});
    total += kGemmHelperBytes;
  }
  int parts = static_cast<int>(std::min<size_t>(kMaxParts, std::max<size_t>(1, (total + kPartBytes - 1) / kPartBytes)));
  *parts_out = parts;
  std::vector<int> part(chunks.size(), 0);
  if (parts == 1) return part;
  std::stable_sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<size_t> load(static_cast<size_t>(parts), 0);
  load[0] = run_bytes / 3;
  for (const auto& [w, members] : items) {
    size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[best] += w;
    for (size_t i : members) part[i] = static_cast<int>(best);
  }
  return part;
}

// dnnc_run: the buffer pointers, then one call per step (a group: one call at its last member).
std::string print_run_function(const Program& p, const std::vector<std::string>& fn_names) {
  std::string out;
  out += "extern \"C\" int dnnc_run(void** buffers) {\n";
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    // Params may be updated in place (an optimizer step writing its param's storage).
    bool ro = b.kind == BufferKind::input ||
              (b.kind == BufferKind::alias && p.buffers[static_cast<size_t>(b.alias_of)].kind == BufferKind::input);
    std::string type = fmt::format("{}{}*", ro ? "const " : "", c_type_name(b.dtype));
    std::string note = fmt::format("{} {}{}", buffer_kind_name(b.kind), scalar_type_name(b.dtype), shape_str(b.shape));
    if (!b.value_name.empty()) note += " " + b.value_name;
    if (b.kind == BufferKind::alias)
      out += fmt::format("  {} {} = {}{};  // {}\n", type, b.name, p.buffers[static_cast<size_t>(b.alias_of)].name,
                         b.alias_offset ? fmt::format(" + {}", b.alias_offset) : std::string(), note);
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
    if (s.kind == Step::Kind::kernel) {
      std::string args;
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
    std::string args = cpp_gemm_call_args(p, s);
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

}  // namespace

std::string print_program_cpp(const Program& p) {
  CheckScope scope("C++ printer, program " + p.graph_name);
  std::vector<std::string> fn_names(p.steps.size());
  std::vector<UnitChunk> chunks;
  std::map<std::string, std::string> gemm_fns;  // GEMM function text (named dnnc_gemm_fn) -> its name
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.kind == Step::Kind::kernel) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.kernel));
      fn_names[i] = k.name;
      bool printed = false;  // a kernel several steps run (LowerCtx::emit_again) is printed once
      for (size_t j = 0; j < i; ++j) printed |= p.steps[j].kind == Step::Kind::kernel && p.steps[j].kernel == s.kernel;
      if (!printed) chunks.push_back({print_kernel_cpp(k, s.comment), k.name, false});
    } else if (s.with_next || (i > 0 && p.steps[i - 1].with_next)) {
      if (i > 0 && p.steps[i - 1].with_next) continue;  // printed with the group's first step
      size_t last = i;
      while (p.steps[last].with_next) ++last;
      fn_names[i] = fmt::format("g{}_group", i);
      chunks.push_back({cpp_gemm_group_function(p, i, last, fn_names[i]), fn_names[i], true});
    } else {
      // A GEMM whose function would read exactly like an earlier one's (the chunks of a
      // convolution: same shapes, other buffers, passed as arguments) calls that one: chunked
      // convolutions would otherwise double the unit's size and compile time.
      CheckScope scope(fmt::format("C++ printer, GEMM step {}", i));
      Step bare = s;
      bare.comment.clear();
      std::string key = cpp_gemm_function(p, bare, "dnnc_gemm_fn");
      auto [it, fresh] = gemm_fns.emplace(key, fmt::format("g{}_gemm", i));
      fn_names[i] = it->second;
      if (fresh) chunks.push_back({cpp_gemm_function(p, s, fn_names[i]), fn_names[i], true});
      else chunks.push_back({fmt::format("// step {}: {} again\n", i, fn_names[i]), "", false});
    }
  }
  std::string run = print_run_function(p, fn_names);

  int parts = 1;
  std::vector<int> part = assign_parts(chunks, run.size(), &parts);
  std::string out = fmt::format("// Generated by dnnc: model {}, graph {}, batch {}. Do not edit.\n", p.module_name,
                                p.graph_name, p.batch);
  if (parts > 1) out += fmt::format("#define DNNC_PARTS {}\n", parts);
  out += kPrelude;
  out += "\n";
  out += cpp_gemm_helpers();
  for (size_t c = 0; c < chunks.size(); ++c) {
    out += "\n";
    if (parts == 1 || chunks[c].fn.empty()) {
      out += chunks[c].text;
      continue;
    }
    out += fmt::format("#if DNNC_PART < 0 || DNNC_PART == {}\n{}#elif DNNC_PART == 0\n{}\n#endif\n", part[c],
                       chunks[c].text, step_declaration(chunks[c].text, chunks[c].fn));
  }
  out += "\n";
  if (parts > 1) out += "#if DNNC_PART <= 0\n" + run + "#endif\n";
  else out += run;
  return out;
}

}  // namespace dnnc::codegen
