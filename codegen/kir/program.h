// codegen::Program: one graph lowered for one concrete batch size — its buffers, the steps that
// run in order (KernelIR kernels and GEMM library calls) and the param updates it makes.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kir/kernel_ir.h"

namespace dnnc::codegen {

enum class BufferKind : uint8_t {
  input,         // a graph input, given by the caller (read only)
  param,         // a module param read by the graph, by name (read only during the run)
  intermediate,  // a node result (graph outputs and update values included)
  scratch,       // temporary storage of a step (im2col columns)
  alias,         // the same storage as buffer `alias_of`, seen with another shape (reshape, flatten)
};
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  std::string name;        // C identifier in the generated code, unique in the program
  std::string value_name;  // the IR value (param name for params); empty for scratch
  BufferKind kind = BufferKind::intermediate;
  ScalarType dtype = ScalarType::f32;
  std::vector<int64_t> shape;  // concrete
  int alias_of = -1;           // kind == alias: the buffer whose storage this is (never an alias)
  int64_t alias_offset = 0;    // kind == alias: where in alias_of's storage it starts (elements; a chunk of the batch)
  /// intermediate and scratch buffers: bytes from the base of the program's activation arena
  /// (plan_memory, codegen/lower/plan_memory.h); -1 before planning and for every other kind.
  int64_t offset = -1;
  int64_t numel() const;
  /// numel() times the element size.
  int64_t bytes() const;
};

/// Whether a buffer lives in the activation arena: intermediates and scratch (not inputs,
/// params, or aliases, which use their root's storage).
bool in_arena(const Buffer& b);

/// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, for `batch` independent
/// problems whose operands start `stride_*` elements apart (stride 0: the same matrix). With
/// `accumulate_batches`, all problems write the same C (stride_c == 0) and their products are
/// summed (a reduction over the batch, as in a weight gradient). `bias` (a buffer id or -1) is
/// added before the product: per column (linear: bias[N]) or per row (conv: bias[M]).
struct GemmCall {
  enum class Bias : uint8_t { none, per_col, per_row };
  int a = -1, b = -1, c = -1;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool accumulate_batches = false;
  int bias = -1;
  Bias bias_kind = Bias::none;
  /// Threading: split each problem's rows or columns over the threads (split), its inner
  /// dimension K with per-thread partial sums added at the end (split_k: small C, long K; only
  /// for batch 1 without bias), or run the independent problems of a batch on different threads
  /// (over_batch); single-threaded when the work is small.
  enum class Threads : uint8_t { single, split, split_k, over_batch };
  Threads threads = Threads::single;
  /// A map kernel (index into Program::kernels, -1: none) run on C right after the product,
  /// by the thread that computed it, on each finished block of rows while it is in cache: its
  /// index_params are the element range [begin, end) of C, its buffers are the step's `args`.
  /// Only with ldc == n; a split GEMM then always splits rows. With batch > 1 (a convolution's
  /// images: stride_c == m·n, single or over_batch threads, no first_step or col_sums) it runs
  /// on each problem's [bi·m·n, (bi+1)·m·n) after that problem's product.
  int epilogue = -1;
  /// Step-dependent scaling (an optimizer update fused into its weight-gradient GEMM, C being
  /// the momentum buffer): when buffer `first_step` (an f32 scalar, the optimizer step) holds
  /// 1, the product uses alpha_first/beta_first instead of alpha/beta. -1: fixed alpha, beta.
  /// Needs an epilogue (which applies the update to the param).
  int first_step = -1;
  float alpha_first = 1.0f, beta_first = 0.0f;
  /// Buffer [n] receiving the column sums of C after the epilogue (a bias gradient: reduce_sum
  /// over axis 0 of the epilogue's result): per-thread partial sums over its rows while they
  /// are in cache, added at the end. -1: none. Needs an epilogue.
  int col_sums = -1;
  /// The epilogue's work when it is exactly one activation that a GEMM library can apply itself
  /// (cuBLASLt's RELU and DRELU epilogues, chosen by the CUDA printer; the C++ printer always
  /// runs the epilogue kernel): relu: C = max(C, 0); relu_backward: C where buffer `act_mask`
  /// (the forward relu's input or output) is > 0, else 0. none: no epilogue, or any other one.
  enum class Act : uint8_t { none, relu, relu_backward };
  Act act = Act::none;
  int act_mask = -1;
};
const char* gemm_act_name(GemmCall::Act a);

struct Step {
  enum class Kind : uint8_t { kernel, gemm };
  Kind kind = Kind::kernel;
  std::vector<std::string> comment;  // the IR nodes this step computes, one line each
  int kernel = -1;                   // kind == kernel: index into Program::kernels
  std::vector<int> args;             // the buffer bound to each param of the kernel (or of the GEMM's epilogue)
  GemmCall gemm;                     // kind == gemm
  /// kind == gemm: this GEMM and the next step (also a GEMM) run at once, in one parallel region
  /// with their rows split over the threads by work; set by coschedule_gemms (coschedule.h).
  bool with_next = false;
};

/// The activation arena of a program (plan_memory): one block holding every intermediate and
/// scratch buffer at its Buffer::offset; params, inputs and optimizer state live outside it.
struct ArenaPlan {
  int64_t bytes = 0;           // the block's size: every offset + size fits
  int64_t naive_bytes = 0;     // every arena buffer in storage of its own (aligned)
  int64_t max_live_bytes = 0;  // max over steps of the (aligned) bytes live at once: a lower bound
  bool planned = false;
};

/// Offsets and sizes in the arena are multiples of this (cuBLAS's and vector loads' alignment).
inline constexpr int64_t kArenaAlign = 256;

struct Program {
  std::string module_name, graph_name;
  int64_t batch = 1;
  ArenaPlan arena;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<int> outputs;                          // buffer of each graph output, in order
  std::vector<std::pair<std::string, int>> updates;  // param name <- buffer, in graph order
};

/// The storage buffer `b` views: `b` itself, or the buffer an alias is of.
int root_buffer(const Program& p, int b);

/// Steps that run at once (a `with_next` chain) share one time; times count from 0 in step
/// order. Returns each step's time.
std::vector<int> step_times(const Program& p);

/// When an arena buffer holds a live value: from the first to the last time a step reads or
/// writes it, both inclusive; graph outputs and update values are live to `end` (the number of
/// times: they are read after the run). first < 0 for a buffer no step touches.
struct BufferLife {
  int first = -1, last = -1;
};
/// Per buffer id (meaningful for arena buffers; alias accesses count for their root).
std::vector<BufferLife> buffer_lives(const Program& p);

/// `x` rounded up to a multiple of kArenaAlign.
int64_t arena_align(int64_t x);

/// The buffers (alias roots) a step reads and writes. C of a GEMM counts as both; every kernel
/// argument counts as read (a written one may be read too).
struct StepAccess {
  std::set<int> reads, writes;
};
StepAccess step_access(const Program& p, const Step& s);

/// True if two steps can run in either order or at once: neither writes what the other reads
/// or writes.
bool independent(const StepAccess& x, const StepAccess& y);

/// The messages a run can fail with, in the order the generated `dnnc_run` numbers them: its
/// return value r > 0 means errors(program)[r - 1] (each names the step's IR node).
std::vector<std::string> program_errors(const Program& p);

}  // namespace dnnc::codegen
