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
#include "codegen/cuda/cuda_loop_analysis.h"
#include "ir/check.h"

namespace dnnc::codegen {

const char* cuda_mapping_name(CudaMapping m) {
  switch (m) {
    case CudaMapping::grid_thread:
      return "grid_thread";
    case CudaMapping::grid_vec4:
      return "grid_vec4";
    case CudaMapping::grid_warp:
      return "grid_warp";
    case CudaMapping::block:
      return "block";
  }
  return "?";
}

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

using namespace cuda_loops;

// ---- printing --------------------------------------------------------------------------------

// Who executes a uniform region: every thread of a warp or of the block runs the same
// statements with the same values; `lane` numbers them 0..size-1.
struct Team {
  std::string lane, size, sync;
  bool block = false;
};

const Team kWarp{"dnnc_lane", "32", "__syncwarp();", false};
const Team kBlock{"(i64)threadIdx.x", "(i64)blockDim.x", "__syncthreads();", true};

class KernelPrinter : public CPrinter {
 public:
  KernelPrinter(const Kernel& k, int error_base) : CPrinter(k, cuda_dialect()), error_base_(error_base) {
    Effects fx = effects(k.body);
    for (const StmtNode* s : fx.stores) written_.insert(s->param);
    for (const ExprNode* l : fx.loads) loaded_.insert(l->param);
    types_of(k.body);
  }

  // The whole `__global__` function; sets mapping and launch.
  std::string print(const std::vector<std::string>& comment, CudaKernel& info) {
    std::string body = print_body(info);
    std::string out;
    for (const auto& l : comment) out += "// " + l + "\n";
    out += fmt::format("// mapping: {}\n", cuda_mapping_name(info.mapping));
    // No __launch_bounds__: with it ptxas spilled a few bytes in nested divergent loops (seen
    // for sm_90); any kernel of <= 255 registers launches with kCudaBlock threads anyway.
    out += fmt::format("extern \"C\" __global__ void {}(", k_.name);
    for (const std::string& ip : k_.index_params) out += fmt::format("const i64 {}, ", ip);
    for (const KernelParam& p : k_.params) out += c_param_decl(p) + ", ";
    out += "int* __restrict__ dnnc_err, int dnnc_err_base) {\n";
    out += "  if (*(volatile int*)dnnc_err) return;  // an earlier kernel failed\n";
    if (uses_smem_) out += "  __shared__ u64 dnnc_smem[32];\n";
    out += body;
    out += "}\n";
    info.launch.shared_bytes = uses_smem_ ? 32 * 8 : 0;
    info.min_bytes = 0;
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const KernelParam& p = k_.params[i];
      int64_t bytes =
          p.numel * (p.type == ScalarType::i64 || p.type == ScalarType::u64 || p.type == ScalarType::f64 ? 8 : 4);
      info.min_bytes +=
          (loaded_.count(static_cast<int>(i)) ? bytes : 0) + (written_.count(static_cast<int>(i)) ? bytes : 0);
    }
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
    std::string pad(static_cast<size_t>(indent) * 2, ' ');
    auto it = types_.find(r.var);
    DNNC_CHECK(it != types_.end() && it->second != ScalarType::boolean, "reduction into undeclared {}", r.var);
    ScalarType t = it->second;
    std::string part = fmt::format("dnnc_part{}", reductions_++);
    const char* op_name = r.op == BinaryOp::add ? "dnnc_op_add" : r.op == BinaryOp::max ? "dnnc_op_max" : "dnnc_op_min";
    out +=
        fmt::format("{}{{  // {} = {} over the {}\n", pad, r.var, binary_op_name(r.op), team.block ? "block" : "warp");
    out += fmt::format("{}  {} {} = {};\n", pad, c_type_name(t), part, identity(r.op, t));
    int depth = indent + 1;
    for (size_t i = 0; i < r.loops.size(); ++i) {
      const StmtNode& l = *r.loops[i];
      std::string lp(static_cast<size_t>(depth) * 2, ' ');
      if (i + 1 == r.loops.size())
        out += fmt::format("{}for (i64 {} = {} + {}; {} < {}; {} += {}) {{\n", lp, l.var, expr(l.begin), team.lane,
                           l.var, expr(l.end), l.var, team.size);
      else
        out +=
            fmt::format("{}for (i64 {} = {}; {} < {}; ++{}) {{\n", lp, l.var, expr(l.begin), l.var, expr(l.end), l.var);
      ++depth;
    }
    out += fmt::format("{}{} = {};\n", std::string(static_cast<size_t>(depth) * 2, ' '), part,
                       combine(r.op, part, expr(r.term)));
    for (size_t i = r.loops.size(); i-- > 0;) out += std::string(static_cast<size_t>(--depth) * 2, ' ') + "}\n";
    if (team.block) {
      uses_smem_ = true;
      out += fmt::format("{}  {} = dnnc_block_allreduce({}, {}(), dnnc_smem);\n", pad, part, part, op_name);
    } else {
      out += fmt::format("{}  {} = dnnc_warp_allreduce({}, {}());\n", pad, part, part, op_name);
    }
    out += fmt::format("{}  {} = {};\n", pad, r.var, combine(r.op, r.var, part));
    out += pad + "}\n";
  }

  // A spread loop that stores to a buffer the kernel reads: lanes that run ahead would
  // overwrite elements other lanes (lane 0 above all, making the team's stores) have not read
  // yet, e.g. scratch reused by each iteration of an enclosing loop. A barrier first, unless
  // one was just printed.
  void sync_before_overwrite(std::string& out, const std::string& pad, const Team& team, const StmtNode& loop) {
    bool overwrites = false;
    for (const StmtNode* st : effects(loop.body).stores) overwrites |= loaded_.count(st->param) > 0;
    if (overwrites && !just_synced(out, team))
      out += pad + team.sync + "  // earlier reads before the team overwrites\n";
  }

  // True if the last line printed is a team barrier (with or without a comment).
  static bool just_synced(const std::string& out, const Team& team) {
    if (out.empty() || out.back() != '\n') return false;
    size_t start = out.rfind('\n', out.size() - 2);
    start = start == std::string::npos ? 0 : start + 1;
    size_t first = out.find_first_not_of(' ', start);
    return first != std::string::npos && out.compare(first, team.sync.size(), team.sync) == 0;
  }

  void sync_pending(std::string& out, const std::string& pad, const Team& team) {
    if (!pending_) return;
    out += pad + team.sync + "  // lane 0's stores before the team writes\n";
    pending_ = false;
  }

  // Code every thread of `team` runs with the same values: loops the IR proves independent
  // are spread over the team, reductions are split, other stores are made by lane 0; a team
  // barrier follows every spread loop and every store.
  void uniform_block(std::string& out, const Block& b, int indent, const Team& team) {
    std::string pad(static_cast<size_t>(indent) * 2, ' ');
    for (const Stmt& sp : b) {
      const StmtNode& s = *sp;
      switch (s.kind) {
        case StmtKind::loop: {
          if (auto r = reduction_nest(s)) {
            sync_pending(out, pad, team);
            print_reduction(out, *r, indent, team);
            break;
          }
          // Spread the loop over the team, unless it is a strided loop around an inner loop
          // that can be spread with unit stride (coalesced accesses) instead (coalesced_inner).
          bool inner_better = !unit_stride(s) && coalesced_inner(s) != nullptr;
          if (!inner_better && distributable(s)) {
            sync_pending(out, pad, team);
            sync_before_overwrite(out, pad, team, s);
            out += fmt::format("{}for (i64 {} = {} + {}; {} < {}; {} += {}) {{\n", pad, s.var, expr(s.begin), team.lane,
                               s.var, expr(s.end), s.var, team.size);
            block(out, s.body, indent + 1);
            out += pad + "}\n" + pad + team.sync + "\n";
            pending_ = false;
            break;
          }
          out += fmt::format("{}for (i64 {} = {}; {} < {}; ++{}) {{\n", pad, s.var, expr(s.begin), s.var, expr(s.end),
                             s.var);
          uniform_block(out, s.body, indent + 1, team);
          // Lane 0's stores of this iteration before the next iteration's spread loops.
          if (pending_) {
            out += pad + "  " + team.sync + "\n";
            pending_ = false;
          }
          out += pad + "}\n";
          break;
        }
        case StmtKind::store:
          // Lane 0 makes every such store, in program order, so it needs no barrier for its own
          // later reads; the others only see the buffer again through loads (barrier now) or
          // through a spread loop (barrier before it, see sync_pending).
          // The team's reads of a buffer the kernel reads before lane 0 overwrites it.
          if (loaded_.count(s.param) && !just_synced(out, team))
            out += pad + team.sync + "  // the team's reads before lane 0 writes\n";
          out += fmt::format("{}if ({} == 0) {}\n", pad, team.lane, store(s));
          if (loaded_.count(s.param))
            out += pad + team.sync + "\n";
          else
            pending_ = true;
          break;
        case StmtKind::let:
        case StmtKind::assign:
        case StmtKind::fail:
          stmt(out, s, indent);
          break;
        case StmtKind::if_:
          out += fmt::format("{}if ({}) {{\n", pad, expr(s.cond));
          uniform_block(out, s.body, indent + 1, team);
          out += pad + "}\n";
          break;
        default:
          DNNC_UNREACHABLE("statement kind {}", static_cast<int>(s.kind));
      }
    }
  }

  static int64_t extent_of(const StmtNode& l) {
    int64_t b = 0, e = 0;
    if (is_int_const(l.begin, &b) && is_int_const(l.end, &e)) return std::max<int64_t>(e - b, 0);
    return int64_t{1} << 20;  // unknown: enough blocks to fill any GPU
  }

  static int64_t blocks_for(int64_t threads) {
    return std::clamp<int64_t>((threads + kCudaBlock - 1) / kCudaBlock, 1, kCudaMaxGrid);
  }

  // The single top-level loop a grid can share, if the kernel has the shape `prefix; loop`
  // where the prefix stores nothing and reads nothing the kernel writes.
  const StmtNode* grid_loop() const {
    if (k_.body.empty() || k_.body.back()->kind != StmtKind::loop) return nullptr;
    const StmtNode& l = *k_.body.back();
    if (!l.parallel && !distributable(l)) return nullptr;
    Block prefix(k_.body.begin(), k_.body.end() - 1);
    Effects fx = effects(prefix);
    if (!fx.stores.empty()) return nullptr;
    for (const ExprNode* ld : fx.loads)
      if (written_.count(ld->param)) return nullptr;
    if (mentions(l.begin, l.var) || mentions(l.end, l.var)) return nullptr;
    return &l;
  }

  // True if, in statement order, no load of a buffer follows a store to it (a buffer updated
  // in place is read before it is written), so float4 loads done first see the same values.
  static bool reads_before_writes(const Block& b, std::set<int>& stored) {
    for (const Stmt& sp : b) {
      const StmtNode& s = *sp;
      std::vector<const ExprNode*> loads;
      for (const Expr* e : {&s.begin, &s.end, &s.index, &s.value, &s.cond}) loads_of(*e, loads);
      for (const ExprNode* l : loads)
        if (stored.count(l->param)) return false;
      if (s.kind == StmtKind::store) stored.insert(s.param);
      if (!reads_before_writes(s.body, stored)) return false;
    }
    return true;
  }

  // float4 form of a flat loop: every access at the loop index is to an f32 buffer, a buffer
  // both read and written (in place) is read only at the loop index and before it is written,
  // and every store is at the loop index.
  bool vectorizable(const StmtNode& l) const {
    int64_t b = -1, e = 0;
    if (!is_int_const(l.begin, &b) || b != 0 || !is_int_const(l.end, &e) || e < 4) return false;
    Effects fx = effects(l.body);
    if (fx.has_loop || fx.has_fail || fx.stores.empty()) return false;
    // Every store at the top of the body: one under an `if` would leave its float4 lane unset.
    size_t top_stores = 0;
    for (const Stmt& st : l.body) top_stores += st->kind == StmtKind::store;
    if (top_stores != fx.stores.size()) return false;
    std::set<int> stored;
    for (const StmtNode* s : fx.stores) {
      if (s->accumulate || s->index->kind != ExprKind::var || s->index->name != l.var) return false;
      if (k_.params[static_cast<size_t>(s->param)].type != ScalarType::f32) return false;
      stored.insert(s->param);
    }
    for (const ExprNode* ld : fx.loads) {
      bool at_i = ld->args[0]->kind == ExprKind::var && ld->args[0]->name == l.var;
      if (!at_i) {
        if (stored.count(ld->param)) return false;
        continue;
      }
      if (k_.params[static_cast<size_t>(ld->param)].type != ScalarType::f32) return false;
    }
    std::set<int> seen;
    return reads_before_writes(l.body, seen);
  }

  void print_vec4(std::string& out, const StmtNode& l) {
    int64_t n = 0;
    is_int_const(l.end, &n);
    Effects fx = effects(l.body);
    std::set<int> loaded, stored;
    for (const ExprNode* ld : fx.loads)
      if (ld->args[0]->kind == ExprKind::var && ld->args[0]->name == l.var) loaded.insert(ld->param);
    for (const StmtNode* s : fx.stores) stored.insert(s->param);
    out += fmt::format("  for (i64 dnnc_q = dnnc_tid; dnnc_q < {}; dnnc_q += dnnc_nthreads) {{\n", n / 4);
    for (int p : loaded) {
      const std::string& name = k_.params[static_cast<size_t>(p)].name;
      out += fmt::format("    const float4 dnnc_l_{0} = reinterpret_cast<const float4*>({0})[dnnc_q];\n", name);
    }
    for (int p : stored) out += fmt::format("    float4 dnnc_s_{};\n", k_.params[static_cast<size_t>(p)].name);
    for (const char* c : {"x", "y", "z", "w"}) {
      int lane = c[0] == 'x' ? 0 : c[0] == 'y' ? 1 : c[0] == 'z' ? 2 : 3;
      load_override_.clear();
      store_override_.clear();
      for (int p : loaded)
        load_override_[{p, l.var}] = fmt::format("dnnc_l_{}.{}", k_.params[static_cast<size_t>(p)].name, c);
      for (int p : stored)
        store_override_[{p, l.var}] = fmt::format("dnnc_s_{}.{}", k_.params[static_cast<size_t>(p)].name, c);
      out += fmt::format("    {{\n      const i64 {} = dnnc_q * 4 + {};\n", l.var, lane);
      block(out, l.body, 3);
      out += "    }\n";
    }
    load_override_.clear();
    store_override_.clear();
    for (int p : stored)
      out += fmt::format("    reinterpret_cast<float4*>({0})[dnnc_q] = dnnc_s_{0};\n",
                         k_.params[static_cast<size_t>(p)].name);
    out += "  }\n";
    if (n % 4) {
      out += fmt::format("  for (i64 {0} = {1} + dnnc_tid; {0} < {2}; {0} += dnnc_nthreads) {{\n", l.var, n / 4 * 4, n);
      block(out, l.body, 2);
      out += "  }\n";
    }
  }

  std::string print_body(CudaKernel& info) {
    std::string out;
    int block_threads = kCudaBlock;
    if (const StmtNode* l = grid_loop()) {
      out += "  const i64 dnnc_tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
      out += "  const i64 dnnc_nthreads = (i64)gridDim.x * blockDim.x;\n";
      Block prefix(k_.body.begin(), k_.body.end() - 1);
      for (const Stmt& s : prefix) stmt(out, *s, 1);  // every thread, same values
      int64_t n = extent_of(*l);
      if (effects(l->body).has_loop) {
        info.mapping = CudaMapping::grid_warp;
        // Few warps: fewer per block, so that they spread over the SMs instead of filling a
        // few of them (64 warps in blocks of 8 ran on 8 of an H200's 132 SMs).
        const int64_t per_block = std::clamp<int64_t>((n + kCudaSpreadSMs - 1) / kCudaSpreadSMs, 1, kCudaBlock / 32);
        block_threads = static_cast<int>(per_block * 32);
        info.launch.grid = std::clamp<int64_t>((n + per_block - 1) / per_block, 1, kCudaMaxGrid);
        out += "  const int dnnc_lane = threadIdx.x & 31;\n";
        out += fmt::format("  for (i64 {0} = {1} + (dnnc_tid >> 5); {0} < {2}; {0} += (dnnc_nthreads >> 5)) {{\n",
                           l->var, expr(l->begin), expr(l->end));
        uniform_block(out, l->body, 2, kWarp);
        out += "  }\n";
      } else if (vectorizable(*l)) {
        info.mapping = CudaMapping::grid_vec4;
        info.launch.grid = blocks_for((n + 3) / 4);
        print_vec4(out, *l);
      } else {
        info.mapping = CudaMapping::grid_thread;
        info.launch.grid = blocks_for(n);
        out += fmt::format("  for (i64 {0} = {1} + dnnc_tid; {0} < {2}; {0} += dnnc_nthreads) {{\n", l->var,
                           expr(l->begin), expr(l->end));
        block(out, l->body, 2);
        out += "  }\n";
      }
    } else {
      info.mapping = CudaMapping::block;
      info.launch.grid = 1;
      uniform_block(out, k_.body, 1, kBlock);
    }
    info.launch.block = block_threads;
    (void)error_base_;
    return out;
  }

  int error_base_;
  std::set<int> written_, loaded_;
  bool pending_ = false;  // lane 0 stored without a team barrier since
  std::map<std::string, ScalarType> types_;
  std::map<std::pair<int, std::string>, std::string> load_override_, store_override_;
  bool uses_smem_ = false;
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
  info.launch.grid = std::clamp<int64_t>((rows * g.n + kCudaBlock - 1) / kCudaBlock, 1, kCudaMaxGrid);
  info.launch.block = kCudaBlock;
  info.min_bytes = 4 * ((g.bias_kind == GemmCall::Bias::per_col ? g.n : g.m) + rows * g.n);
  return out;
}

// Column sums of GEMM step `step`'s C after its epilogue (GemmCall::col_sums, a bias
// gradient): one thread per column, rows in order.
std::string col_sums_kernel(const Program& p, size_t step, CudaKernel& info) {
  const GemmCall& g = p.steps[step].gemm;
  std::string out = fmt::format("// {}\n", p.steps[step].comment.back());
  out += fmt::format("// column sums of C of GEMM step {} after its epilogue\n", step);
  out += gemm_kernel_head(info.name, "c", "sums");
  out += "  const i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
  out += fmt::format("  if (j >= {}) return;\n", g.n);
  out += "  float s = 0.0f;\n";
  out += fmt::format("  for (i64 r = 0; r < {}; ++r) s += c[r * {} + j];\n", g.m, g.ldc);
  out += "  sums[j] = s;\n}\n";
  info.mapping = CudaMapping::grid_thread;
  info.launch.grid = (g.n + kCudaBlock - 1) / kCudaBlock;
  info.launch.block = kCudaBlock;
  info.min_bytes = 4 * (g.m * g.n + g.n);
  return out;
}

}  // namespace

CudaProgram print_program_cuda(const Program& p) {
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
      KernelPrinter kp(k, error_base);
      cp.source += "\n" + kp.print(s.comment, info);
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
        KernelPrinter kp(k, error_base);
        cp.source += "\n" + kp.print(s.comment, ep);
        if (ep.mapping != CudaMapping::block)
          ep.launch.grid = std::clamp<int64_t>((g.batch * g.m * g.n + kCudaBlock - 1) / kCudaBlock, 1, kCudaMaxGrid);
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

}  // namespace dnnc::codegen
