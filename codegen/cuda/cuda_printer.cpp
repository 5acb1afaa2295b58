// The CUDA C printer (cuda_printer.h): maps each KernelIR kernel onto a grid, a warp per
// iteration or one block, proving from the IR which loops may be spread over threads.
#include "codegen/cuda/cuda_printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "codegen/c/c_printer.h"
#include "codegen/cuda/cuda_mapping.h"
#include "ir/check.h"

namespace dnnc::codegen {

const CDialect& cuda_dialect() {
  static const CDialect d{
      .builtin_prefix = "",
      .neg_i64_suffix = "LL",
      .inf_f32 = "__int_as_float(0x7f800000)",
      .neg_inf_f32 = "__int_as_float(0xff800000)",
      .nan_f32 = "__int_as_float(0x7fffffff)",
      .inf_f64 = "__longlong_as_double(0x7ff0000000000000LL)",
      .neg_inf_f64 = "__longlong_as_double(0xfff0000000000000ULL)",
      .nan_f64 = "__longlong_as_double(0x7ff8000000000000LL)",
  };
  return d;
}

std::string cuda_float_literal(float v) { return c_float_literal(v, cuda_dialect()); }
std::string cuda_double_literal(double v) { return c_double_literal(v, cuda_dialect()); }

namespace {

using loops::Reduction;

// ---- printing --------------------------------------------------------------------------------

// Who executes a team region: every thread of a warp or of the block runs the same statements
// with the same values; `lane` numbers them 0..size-1.
struct Team {
  std::string lane, size, sync;
  bool block = false;
};

const Team kWarp{"dnnc_lane", "32", "__syncwarp();", false};
const Team kBlock{"(i64)threadIdx.x", "(i64)blockDim.x", "__syncthreads();", true};

// The comment printed beside a barrier.
const char* sync_comment(CudaSync s) {
  switch (s) {
    case CudaSync::lane0_stores:
      return "  // lane 0's stores before the team writes";
    case CudaSync::before_overwrite:
      return "  // earlier reads before the team overwrites";
    case CudaSync::before_lane0:
      return "  // the team's reads before lane 0 writes";
    case CudaSync::after:
    case CudaSync::end_of_iteration:
      return "";
  }
  return "";
}

// Renders one kernel as the `__global__` function its CudaKernelPlan describes. It decides
// nothing: the mapping, every loop's role and every barrier come from the plan.
class KernelPrinter : public CPrinter {
 public:
  KernelPrinter(const Kernel& k, const CudaKernelPlan& plan) : CPrinter(k, cuda_dialect()), plan_(plan) {
    types_of(k.body);
  }

  std::string print(const std::vector<std::string>& comment) {
    std::string out;
    for (const auto& l : comment) out += "// " + l + "\n";
    out += fmt::format("// mapping: {}\n", cuda_mapping_name(plan_.mapping));
    // No __launch_bounds__: with it ptxas spilled a few bytes in nested divergent loops (seen
    // for sm_90); any kernel of <= 255 registers launches with kCudaBlock threads anyway.
    out += fmt::format("extern \"C\" __global__ void {}(", k_.name);
    for (const std::string& ip : k_.index_params) out += fmt::format("const i64 {}, ", ip);
    for (const KernelParam& p : k_.params) out += c_param_decl(p) + ", ";
    out += "int* __restrict__ dnnc_err, int dnnc_err_base) {\n";
    out += "  if (*(volatile int*)dnnc_err) return;  // an earlier kernel failed\n";
    if (plan_.launch.shared_bytes) out += "  __shared__ u64 dnnc_smem[32];\n";
    print_body(out);
    out += "}\n";
    return out;
  }

 private:
  void types_of(const Block& b) {
    for (const Stmt& s : b) {
      if (s->kind == StmtKind::let) types_[s->var] = s->type;
      if (s->kind == StmtKind::loop) types_[s->var] = ScalarType::i64;
      types_of(s->body);
    }
  }

  // float4 lanes (print_vec4): loads and stores at the loop index go through per-lane locals.
  std::string load(const ExprNode& n) override {
    if (n.args[0]->kind == ExprKind::var) {
      auto it = load_override_.find({n.param, n.args[0]->name});
      if (it != load_override_.end()) return it->second;
    }
    return CPrinter::load(n);
  }

  std::string store(const StmtNode& s) override {
    if (s.index->kind == ExprKind::var && !s.accumulate) {
      auto it = store_override_.find({s.param, s.index->name});
      if (it != store_override_.end()) return fmt::format("{} = {};", it->second, expr(s.value));
    }
    return CPrinter::store(s);
  }

  // The first failure wins the error flag; the thread leaves the kernel.
  std::string fail_exit(const StmtNode& s) override {
    return fmt::format("{{ atomicCAS(dnnc_err, 0, dnnc_err_base + {}); return; }}", s.code);
  }

  std::string identity(BinaryOp op, ScalarType t) {
    if (op == BinaryOp::add) return t == ScalarType::f32 ? "0.0f" : t == ScalarType::f64 ? "0.0" : "0";
    bool mx = op == BinaryOp::max;  // identity of max is the lowest value
    switch (t) {
      case ScalarType::f32:
        return cuda_float_literal(mx ? -INFINITY : INFINITY);
      case ScalarType::f64:
        return cuda_double_literal(mx ? -INFINITY : INFINITY);
      case ScalarType::i64:
        return mx ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
      case ScalarType::u64:
        return mx ? "0ull" : "0xffffffffffffffffull";
      case ScalarType::boolean:
        break;
    }
    DNNC_UNREACHABLE("no reduction over bool");
  }

  static std::string combine(BinaryOp op, const std::string& a, const std::string& b) {
    if (op == BinaryOp::add) return fmt::format("({} + {})", a, b);
    if (op == BinaryOp::max) return fmt::format("({0} < {1} ? {1} : {0})", a, b);
    return fmt::format("({1} < {0} ? {1} : {0})", a, b);
  }

  // A reduction nest split over the team: each thread folds a strided part of the innermost
  // loop, the team combines the parts with shuffles (and shared memory across warps).
  void print_reduction(std::string& out, const Reduction& r, int indent, const Team& team) {
    std::string p = pad(indent);
    auto it = types_.find(r.var);
    DNNC_CHECK(it != types_.end() && it->second != ScalarType::boolean, "reduction into undeclared {}", r.var);
    ScalarType t = it->second;
    std::string part = fmt::format("dnnc_part{}", reductions_++);
    const char* op_name = r.op == BinaryOp::add ? "dnnc_op_add" : r.op == BinaryOp::max ? "dnnc_op_max" : "dnnc_op_min";
    out += fmt::format("{}{{  // {} = {} over the {}\n", p, r.var, binary_op_name(r.op), team.block ? "block" : "warp");
    out += fmt::format("{}  {} {} = {};\n", p, c_type_name(t), part, identity(r.op, t));
    int depth = indent + 1;
    for (size_t i = 0; i < r.loops.size(); ++i) {
      const StmtNode& l = *r.loops[i];
      if (i + 1 == r.loops.size())
        out += fmt::format("{}for (i64 {} = {} + {}; {} < {}; {} += {}) {{\n", pad(depth), l.var, expr(l.begin),
                           team.lane, l.var, expr(l.end), l.var, team.size);
      else
        out += pad(depth) + for_header(l) + "\n";
      ++depth;
    }
    out += fmt::format("{}{} = {};\n", pad(depth), part, combine(r.op, part, expr(r.term)));
    for (size_t i = r.loops.size(); i-- > 0;) out += pad(--depth) + "}\n";
    if (team.block)
      out += fmt::format("{}  {} = dnnc_block_allreduce({}, {}(), dnnc_smem);\n", p, part, part, op_name);
    else
      out += fmt::format("{}  {} = dnnc_warp_allreduce({}, {}());\n", p, part, part, op_name);
    out += fmt::format("{}  {} = {};\n", p, r.var, combine(r.op, r.var, part));
    out += p + "}\n";
  }

  void syncs(std::string& out, const std::string& p, const Team& team, const std::vector<CudaSync>& v) {
    for (CudaSync s : v) out += p + (s == CudaSync::end_of_iteration ? "  " : "") + team.sync + sync_comment(s) + "\n";
  }

  // A team region: loops run as the plan says (spread over the lanes, split as a reduction or
  // run by every lane), stores the plan gives lane 0 are lane 0's, barriers where it puts them.
  void team_block(std::string& out, const Block& b, int indent, const Team& team) {
    const std::string p = pad(indent);
    for (const Stmt& sp : b) {
      const StmtNode& s = *sp;
      const CudaTeamStmt& t = plan_.at(s);
      syncs(out, p, team, t.before);
      switch (s.kind) {
        case StmtKind::loop:
          if (t.role == CudaLoopRole::reduction) {
            print_reduction(out, *t.reduction, indent, team);
          } else if (t.role == CudaLoopRole::spread) {
            out += fmt::format("{}for (i64 {} = {} + {}; {} < {}; {} += {}) {{\n", p, s.var, expr(s.begin), team.lane,
                               s.var, expr(s.end), s.var, team.size);
            block(out, s.body, indent + 1);
            out += p + "}\n";
          } else {
            out += p + for_header(s) + "\n";
            team_block(out, s.body, indent + 1, team);
            syncs(out, p, team, t.after);  // end_of_iteration: inside the body
            out += p + "}\n";
            continue;
          }
          break;
        case StmtKind::store:
          if (t.lane0)
            out += fmt::format("{}if ({} == 0) {}\n", p, team.lane, store(s));
          else
            stmt(out, s, indent);
          break;
        case StmtKind::if_:
          out += fmt::format("{}if ({}) {{\n", p, expr(s.cond));
          team_block(out, s.body, indent + 1, team);
          out += p + "}\n";
          break;
        default:
          stmt(out, s, indent);
          break;
      }
      syncs(out, p, team, t.after);
    }
  }

  void print_vec4(std::string& out, const StmtNode& l) {
    int64_t n = 0;
    is_int_const(l.end, &n);
    out += fmt::format("  for (i64 dnnc_q = dnnc_tid; dnnc_q < {}; dnnc_q += dnnc_nthreads) {{\n", n / 4);
    for (int p : plan_.vec4_loads) {
      const std::string& name = k_.params[static_cast<size_t>(p)].name;
      out += fmt::format("    const float4 dnnc_l_{0} = reinterpret_cast<const float4*>({0})[dnnc_q];\n", name);
    }
    for (int p : plan_.vec4_stores)
      out += fmt::format("    float4 dnnc_s_{};\n", k_.params[static_cast<size_t>(p)].name);
    for (const char* c : {"x", "y", "z", "w"}) {
      int lane = c[0] == 'x' ? 0 : c[0] == 'y' ? 1 : c[0] == 'z' ? 2 : 3;
      load_override_.clear();
      store_override_.clear();
      for (int p : plan_.vec4_loads)
        load_override_[{p, l.var}] = fmt::format("dnnc_l_{}.{}", k_.params[static_cast<size_t>(p)].name, c);
      for (int p : plan_.vec4_stores)
        store_override_[{p, l.var}] = fmt::format("dnnc_s_{}.{}", k_.params[static_cast<size_t>(p)].name, c);
      out += fmt::format("    {{\n      const i64 {} = dnnc_q * 4 + {};\n", l.var, lane);
      block(out, l.body, 3);
      out += "    }\n";
    }
    load_override_.clear();
    store_override_.clear();
    for (int p : plan_.vec4_stores)
      out += fmt::format("    reinterpret_cast<float4*>({0})[dnnc_q] = dnnc_s_{0};\n",
                         k_.params[static_cast<size_t>(p)].name);
    out += "  }\n";
    if (n % 4) {
      out += fmt::format("  for (i64 {0} = {1} + dnnc_tid; {0} < {2}; {0} += dnnc_nthreads) {{\n", l.var, n / 4 * 4, n);
      block(out, l.body, 2);
      out += "  }\n";
    }
  }

  void print_body(std::string& out) {
    if (plan_.mapping == CudaMapping::block) {
      team_block(out, k_.body, 1, kBlock);
      return;
    }
    const StmtNode& l = *plan_.grid_loop;
    out += "  const i64 dnnc_tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    out += "  const i64 dnnc_nthreads = (i64)gridDim.x * blockDim.x;\n";
    for (const Stmt& s : k_.body)
      if (s.get() != &l) stmt(out, *s, 1);  // every thread, same values
    switch (plan_.mapping) {
      case CudaMapping::grid_warp:
        out += "  const int dnnc_lane = threadIdx.x & 31;\n";
        out += fmt::format("  for (i64 {0} = {1} + (dnnc_tid >> 5); {0} < {2}; {0} += (dnnc_nthreads >> 5)) {{\n",
                           l.var, expr(l.begin), expr(l.end));
        team_block(out, l.body, 2, kWarp);
        out += "  }\n";
        return;
      case CudaMapping::grid_vec4:
        print_vec4(out, l);
        return;
      case CudaMapping::grid_thread:
        out += fmt::format("  for (i64 {0} = {1} + dnnc_tid; {0} < {2}; {0} += dnnc_nthreads) {{\n", l.var,
                           expr(l.begin), expr(l.end));
        block(out, l.body, 2);
        out += "  }\n";
        return;
      case CudaMapping::block:
        break;
    }
  }

  const CudaKernelPlan& plan_;
  std::map<std::string, ScalarType> types_;
  std::map<std::pair<int, std::string>, std::string> load_override_, store_override_;
  int reductions_ = 0;
};

const char* kPrelude = R"(typedef long long i64;
typedef unsigned long long u64;

// Reduction operators: max/min are exactly std::max/std::min (a < b ? b : a), as on the CPU.
struct dnnc_op_add {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct dnnc_op_max {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct dnnc_op_min {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};

// Every lane of the warp gets op over the 32 lanes' values (butterfly; commutative ops give
// every lane the same bits).
template <class T, class Op> __device__ __forceinline__ T dnnc_warp_allreduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return __shfl_sync(0xffffffffu, v, 0);  // lane 0's: max/min with a NaN is not commutative
}

// Every thread of the block gets op over the block's values; all threads read the per-warp
// results in the same order, so they agree bit for bit. `smem`: 32 slots of 8 bytes.
template <class T, class Op> __device__ __forceinline__ T dnnc_block_allreduce(T v, Op op, u64* smem) {
  v = dnnc_warp_allreduce(v, op);
  __syncthreads();  // the slots may still be read by a previous reduction
  if ((threadIdx.x & 31) == 0) reinterpret_cast<T*>(smem)[threadIdx.x >> 5] = v;
  __syncthreads();
  v = reinterpret_cast<T*>(smem)[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); ++w) v = op(v, reinterpret_cast<T*>(smem)[w]);
  return v;
}
)";

// The opening of a hand-written kernel of a GEMM step: `in` read, `out` written (f32 buffers),
// the error flag; it returns at once if an earlier kernel failed.
std::string gemm_kernel_head(const std::string& name, const char* in, const char* out) {
  return fmt::format(
             "extern \"C\" __global__ void {}(const float* __restrict__ {}, float* __restrict__ {}, "
             "int* __restrict__ dnnc_err, int dnnc_err_base) {{\n",
             name, in, out) +
         "  if (*(volatile int*)dnnc_err) return;\n";
}

std::string bias_kernel(const Program& p, size_t step, CudaKernel& info) {
  const GemmCall& g = p.steps[step].gemm;
  int64_t rows = g.accumulate_batches ? g.m : g.batch * g.m;
  int64_t stride = g.accumulate_batches ? 0 : g.stride_c;
  std::string out;
  for (const auto& l : p.steps[step].comment) out += "// " + l + "\n";
  out += fmt::format("// bias {} of GEMM step {}: C = bias, then the GEMM accumulates (beta 1)\n",
                     g.bias_kind == GemmCall::Bias::per_col ? "per column" : "per row", step);
  out += gemm_kernel_head(info.name, "bias", "c");
  out += "  const i64 dnnc_tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  out += "  const i64 dnnc_nthreads = (i64)gridDim.x * blockDim.x;\n";
  out += fmt::format("  for (i64 e = dnnc_tid; e < {}; e += dnnc_nthreads) {{\n", rows * g.n);
  out += fmt::format("    const i64 r = e / {}, j = e % {};\n", g.n, g.n);
  out += fmt::format("    c[r / {} * {} + r % {} * {} + j] = bias[{}];\n", g.m, stride, g.m, g.ldc,
                     g.bias_kind == GemmCall::Bias::per_col ? "j" : fmt::format("r % {}", g.m));
  out += "  }\n}\n";
  info.mapping = CudaMapping::grid_thread;
  info.launch.grid = cuda_blocks_for(rows * g.n);
  info.launch.block = kCudaBlock;
  info.min_bytes = 4 * ((g.bias_kind == GemmCall::Bias::per_col ? g.n : g.m) + rows * g.n);
  return out;
}

// Column sums of GEMM step `step`'s C after its epilogue (GemmCall::col_sums, a bias
// gradient): one thread per column, rows in order, in double (docs/ops.md, "Accuracy of sums").
std::string col_sums_kernel(const Program& p, size_t step, CudaKernel& info) {
  const GemmCall& g = p.steps[step].gemm;
  std::string out = fmt::format("// {}\n", p.steps[step].comment.back());
  out += fmt::format("// column sums of C of GEMM step {} after its epilogue\n", step);
  out += gemm_kernel_head(info.name, "c", "sums");
  out += "  const i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  out += fmt::format("  if (j >= {}) return;\n", g.n);
  out += "  double s = 0.0;\n";
  out += fmt::format("  for (i64 r = 0; r < {}; ++r) s += (double)c[r * {} + j];\n", g.m, g.ldc);
  out += "  sums[j] = (float)s;\n}\n";
  info.mapping = CudaMapping::grid_thread;
  info.launch.grid = cuda_blocks_for(g.n);
  info.launch.block = kCudaBlock;
  info.min_bytes = 4 * (g.m * g.n + g.n);
  return out;
}

}  // namespace

CudaProgram print_program_cuda(const Program& p) {
  // The cuda backend binds every alias at its root's address (cuda_lower_options lowers no
  // chunked views: conv_columns_bytes 0).
  for (const Buffer& b : p.buffers)
    DNNC_CHECK(b.kind != BufferKind::alias || b.alias_offset == 0,
               "the CUDA printer was given {} as a view at offset {} (lower with cuda_lower_options())", b.name,
               b.alias_offset);
  CudaProgram cp;
  cp.source = fmt::format("// Generated by dnnc: model {}, graph {}, batch {} (CUDA, for NVRTC). Do not edit.\n",
                          p.module_name, p.graph_name, p.batch);
  cp.source += kPrelude;
  cp.step_kernel.assign(p.steps.size(), -1);
  cp.step_epilogue.assign(p.steps.size(), -1);
  cp.step_col_sums.assign(p.steps.size(), -1);
  plan_cuda_gemm_acts(p, cp.step_act, cp.relu_masks);
  int error_base = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    CudaKernel info;
    info.step = static_cast<int>(i);
    if (s.kind == Step::Kind::kernel) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.kernel));
      CheckScope scope("CUDA printer, kernel " + k.name);
      DNNC_CHECK(k.index_params.empty(), "a kernel step's kernel takes index params");
      info.name = k.name;
      info.args = s.args;
      info.error_base = error_base;
      const CudaKernelPlan plan = plan_cuda_kernel(k);
      info.mapping = plan.mapping;
      info.launch = plan.launch;
      info.min_bytes = plan.min_bytes;
      cp.source += "\n" + KernelPrinter(k, plan).print(s.comment);
      error_base += static_cast<int>(k.errors.size());
    } else if (s.kind == Step::Kind::gemm) {
      const GemmCall& g = s.gemm;
      CheckScope scope(fmt::format("CUDA printer, GEMM step {}", i));
      DNNC_CHECK(g.first_step < 0,
                 "a step-dependent alpha/beta (lower with LowerOptions::optimizer_in_gemm off, cuda_lower_options)");
      if (int e = g.epilogue; e >= 0) {
        // A map over C after the product (KernelIR's GEMM epilogue): its own launch over all of C.
        const Kernel& k = p.kernels.at(static_cast<size_t>(e));
        DNNC_CHECK(k.index_params.size() == 2, "GEMM epilogue {} takes {} index params, not 2", k.name,
                   k.index_params.size());
        CudaKernel ep;
        ep.step = static_cast<int>(i);
        ep.name = k.name;
        ep.args = s.args;
        ep.scalars = {0, g.batch * g.m * g.n};
        ep.error_base = error_base;
        const CudaKernelPlan plan = plan_cuda_kernel(k, g.batch * g.m * g.n);
        ep.mapping = plan.mapping;
        ep.launch = plan.launch;
        ep.min_bytes = plan.min_bytes;
        cp.source += "\n" + KernelPrinter(k, plan).print(s.comment);
        // program_errors numbers the errors of kernel steps only (as the C++ printer's dnnc_run
        // does): an epilogue runs inside a GEMM's threads there and may not fail.
        DNNC_CHECK(k.errors.empty(), "GEMM epilogue {} has checks that can fail", k.name);
        cp.step_epilogue[i] = static_cast<int>(cp.kernels.size());
        cp.kernels.push_back(std::move(ep));
      }
      if (g.col_sums >= 0) {
        CudaKernel cs;
        cs.step = static_cast<int>(i);
        cs.name = fmt::format("g{}_col_sums", i);
        cs.args = {g.c, g.col_sums};
        cs.error_base = error_base;
        cp.source += "\n" + col_sums_kernel(p, i, cs);
        cp.step_col_sums[i] = static_cast<int>(cp.kernels.size());
        cp.kernels.push_back(std::move(cs));
      }
      if (g.bias_kind == GemmCall::Bias::none || cuda_gemm_bias_epilogue(g)) continue;
      info.name = fmt::format("g{}_bias", i);
      info.gemm_bias = true;
      info.args = {g.bias, g.c};
      cp.source += "\n" + bias_kernel(p, i, info);
    } else {
      DNNC_UNREACHABLE("step {} of {}.{} has an unknown kind {}", i, p.module_name, p.graph_name,
                       static_cast<int>(s.kind));
    }
    cp.step_kernel[i] = static_cast<int>(cp.kernels.size());
    cp.kernels.push_back(std::move(info));
  }
  return cp;
}

std::string print_cuda_file(const Program& p) {
  CudaProgram cp = print_program_cuda(p);
  std::string head = fmt::format("// {}.{} at batch {}: {} kernels; launch order:\n", p.module_name, p.graph_name,
                                 p.batch, cp.kernels.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& st = p.steps[s];
    int k = cp.step_kernel[s];
    if (st.kind == Step::Kind::gemm) {
      const GemmCall& g = st.gemm;
      if (k >= 0) head += fmt::format("//   {} (bias fill)\n", cp.kernels[k].name);
      const CudaGemmAct& act = cp.step_act[s];
      std::string epilogue = cuda_lt_act_name(act.act, cuda_gemm_bias_epilogue(g));
      if (act.mask >= 0) epilogue += fmt::format(" mask {}", act.mask);
      head +=
          fmt::format("//   cuBLASLt GEMM m={} n={} k={}{}{}{} epilogue {}\n", g.m, g.n, g.k, g.trans_a ? " A^T" : "",
                      g.trans_b ? " B^T" : "", g.batch > 1 ? fmt::format(" batch={}", g.batch) : "", epilogue);
      // Kernels the cuBLASLt epilogue replaces run only where cuBLASLt has no algorithm for it.
      const char* instead = act.act != CudaLtAct::none ? ", unless cuBLASLt does it" : "";
      if (cp.step_epilogue[s] >= 0)
        head += fmt::format("//   {} (epilogue{})\n", cp.kernels[cp.step_epilogue[s]].name, instead);
      if (cp.step_col_sums[s] >= 0)
        head += fmt::format("//   {} (column sums{})\n", cp.kernels[cp.step_col_sums[s]].name,
                            act.act == CudaLtAct::drelu_bgrad ? instead : "");
    } else if (k >= 0) {
      const CudaKernel& ck = cp.kernels[k];
      head += fmt::format("//   {} <<<{}, {}>>> ({})\n", ck.name, ck.launch.grid, ck.launch.block,
                          cuda_mapping_name(ck.mapping));
    }
  }
  return head + "\n" + cp.source;
}

}  // namespace dnnc::codegen
