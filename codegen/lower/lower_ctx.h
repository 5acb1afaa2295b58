// Internal to codegen: the state of lowering one graph (buffers by value, the program being
// built) and the per-family lowering tables. Not part of the public codegen API.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/lower/lower.h"
#include "ir/attrs.h"

namespace dnnc::codegen {

using Dims = std::vector<int64_t>;

/// Row-major strides of a concrete shape.
Dims strides_of(const Dims& shape);
/// Whether `strides` (empty: contiguous) index a tensor of `shape` at its own element: equal to
/// the row-major strides in every dim of extent > 1 (a dim of extent 1 is never stepped, so
/// its stride, 0 for a broadcast, does not matter).
bool at_element(const Dims& strides, const Dims& shape);
int64_t product(const Dims& shape);

class LowerCtx;

/// A kernel under construction together with the program buffer bound to each of its params.
class KernelDraft {
 public:
  KernelDraft(LowerCtx& ctx, const std::string& name);
  /// Adds a param bound to program buffer `buffer` (read only / written); returns its index.
  int read(int buffer);
  int write(int buffer);
  KernelBuilder kb;
  std::vector<int> args;

 private:
  int add(int buffer, bool written);
  LowerCtx& ctx_;
};

class LowerCtx {
 public:
  LowerCtx(const ir::Module& m, const ir::Graph& g, int64_t batch, const LowerOptions& o);

  const ir::Module& module;
  const ir::Graph& graph;
  int64_t batch;
  LowerOptions options;
  Program prog;

  /// Concrete shape / element count of a value.
  Dims shape(ir::ValueId v) const;
  int64_t numel(ir::ValueId v) const;
  /// Whether `v` is a 4-d activation stored channels-last (select-layout's `{nhwc}`).
  bool nhwc(ir::ValueId v) const;
  /// Per logical dim, how far apart consecutive elements of `v` are in its storage: row-major
  /// strides, or for an `{nhwc}` value [B, C, H, W] (stored [B, H, W, C]) {H*W*C, 1, W*C, C}.
  Dims strides(ir::ValueId v) const;
  /// The buffer holding value `v` (asserts it was created).
  int buffer(ir::ValueId v) const;
  bool has_buffer(ir::ValueId v) const { return value_buffer_.at(static_cast<size_t>(v)) >= 0; }
  /// Creates the buffer of node result `v` (returns the existing one if `v` has one already).
  /// An update value written in place (see `in_place`) becomes an alias of its param.
  int define(ir::ValueId v);
  /// Makes `v` live in existing buffer `buffer` (a GEMM result in the buffer of its epilogue's result).
  void share_buffer(ir::ValueId v, int buffer);
  /// Update values written straight into their param's storage: value -> param buffer.
  std::map<ir::ValueId, int> in_place;
  /// Makes node result `v` an alias of `src`'s storage (reshape, flatten).
  void define_alias(ir::ValueId v, ir::ValueId src);
  /// A scratch buffer of `numel` f32 elements.
  int scratch(const std::string& base, int64_t numel);
  /// An alias of `buffer`'s storage starting `offset` elements in, of shape `shape` (a chunk of
  /// the batch).
  int view(int buffer, int64_t offset, const Dims& shape);

  /// Appends a kernel step (comment = the current group's IR lines); returns the kernel's index.
  int emit(KernelDraft&& d);
  /// Appends a step running kernel `kernel` (an index emit returned) again, on buffers `args`
  /// (of the sizes its params have).
  void emit_again(int kernel, std::vector<int> args);
  void emit_gemm(const GemmCall& call);
  /// Makes `d` (a kernel with index_params begin, end) the epilogue of the last step, a GEMM.
  void attach_epilogue(KernelDraft&& d);
  /// The storage a buffer views (itself unless it is an alias).
  int root(int buffer) const;

  /// Whether a loop nest touching `work` elements should run on several threads.
  bool parallel(int64_t work) const { return work >= options.parallel_min_work; }
  /// A kernel name for node `n`: "k<step>_<op>".
  std::string kernel_name(const std::string& op) const;

  std::vector<std::string> comment;  // IR text of the group being lowered
  [[noreturn]] void fail(const ir::Node& n, const std::string& msg) const;
  std::string node_text(const ir::Node& n) const;

 private:
  std::string unique_name(const std::string& base);
  std::vector<int> value_buffer_;
  std::vector<std::string> names_;
};

/// Lowers one node; attrs are the node's attributes completed with the registry's defaults.
using LowerFn = std::function<void(LowerCtx&, const ir::Node&, const ir::Attrs&)>;
using LowerTable = std::map<std::string, LowerFn>;

// ---- map (elementwise) ops: fusable into one loop nest -------------------------------------

/// What a map op computes at one element: its results from its operands' values there.
struct MapEnv {
  std::vector<Expr> in;         // operand values at this element
  Expr index;                   // the flat (row-major) index of the element in the output
  std::vector<Expr> hoisted;    // values the op's `setup` computed once before the loops
  KernelBuilder* kb = nullptr;  // for naming a value used twice (kb->let)
};

struct MapOp {
  /// Per operand: its strides in terms of the output's dims (0 where broadcast). Empty: the
  /// operand has the output's shape (contiguous).
  std::vector<Dims> operand_strides;
  /// Runs once before the loops (scalars read from operands of one element, error checks).
  /// `scalars[i]` is operand i's single value if every stride of it is 0, else empty.
  std::function<std::vector<Expr>(KernelBuilder&, const std::vector<Expr>& scalars)> setup;
  std::function<std::vector<Expr>(const MapEnv&)> body;
  /// Whether `body` reads MapEnv::index (dropout's mask hashes the element's logical index).
  bool reads_index = false;
};

/// Whether `op` is a map op (lowered by lower_map_group).
bool is_map_op(const std::string& op);
/// Fills `out` with the map form of node `n`; returns false (out untouched) if `n` is not a map op.
bool map_op_of(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& attrs, MapOp* out);

/// Lowers `nodes` (map ops whose results all have the shape of the first node's first result)
/// as one loop nest. Values used only inside the group are not stored. With `gemm_result`
/// (the value of the GEMM step just emitted, read at each element before anything is stored),
/// the kernel becomes that GEMM's epilogue: one flat loop over an element range [begin, end),
/// no threads of its own (the caller checked that every other operand is contiguous or a scalar
/// and that no op has a setup).
void lower_map_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, ir::ValueId gemm_result = ir::kNoValue);

/// Whether node n is a map op all of whose results have shape `out` and which reads every value
/// of `run` (computed earlier in the same loop nest) at its own element.
bool joins_run(const LowerCtx& ctx, const ir::Node& n, const Dims& out, const std::vector<const ir::Node*>& run);
/// Whether operand i of map op `op` with output shape `out` is read at the output's element.
bool reads_at_element(const MapOp& op, size_t i, const Dims& out);

/// A linear_epilogue / matmul_epilogue group as one GEMM step with an epilogue (lower_gemm.cpp):
/// if nodes[i] is the GEMM and the map ops after it read its result at their own element and
/// read other operands contiguously or as scalars, with no setup, lowers the GEMM into the
/// buffer of the run's first stored result and the run as its epilogue, then a bias-gradient
/// sum of the result as the GEMM's column sums (LowerOptions::bias_grad_in_gemm). Returns the
/// number of nodes lowered (0: the chain cannot be an epilogue; nothing emitted).
size_t lower_gemm_epilogue(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i,
                           const std::function<void(const ir::Node&)>& lower_one);

/// Fused conv/pool groups (lower_conv_fused.cpp): conv2d -> elementwise chain -> maxpool2d, and
/// maxpool2d_backward -> elementwise chain -> bias-grad sum, starting at nodes[i]. Returns the
/// number of nodes lowered (0: not such a pattern; nothing emitted).
size_t lower_conv_pool_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i);

/// A conv2d_backward_input_epilogue group (lower_conv_backward_input.cpp): if nodes[i] is an
/// NCHW conv2d_backward_input whose col2im gathers (stride 1) and an elementwise chain on dx
/// follows whose links are read only inside, runs the chain at col2im's stores. Returns the
/// number of nodes lowered (0: nothing emitted).
size_t lower_conv_backward_input_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i);

/// A batchnorm2d_epilogue group as one kernel (lower_norm.cpp, LowerOptions::batchnorm_epilogues):
/// if nodes[i] is a training batchnorm2d on NCHW f32 values followed by an elementwise chain on y
/// and/or a maxpool2d of the chain's end, and only the chain's end and the pooled result are read
/// after the group, lowers them together and returns how many nodes it took (0: nothing emitted).
size_t lower_batchnorm_group(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i);

void register_map_lowerings(LowerTable& t);
void register_reduce_lowerings(LowerTable& t);
void register_gemm_lowerings(LowerTable& t);
void register_conv_lowerings(LowerTable& t);
void register_pool_lowerings(LowerTable& t);
void register_norm_lowerings(LowerTable& t);
void register_concat_lowerings(LowerTable& t);

// ---- fusions across groups (lower_fused.cpp) -------------------------------------------------

/// SGD-momentum updates (LowerOptions::optimizer_in_gemm) whose weight gradient is a matmul
/// used by nothing else: update node -> that matmul. Needs `in_place` computed.
std::map<const ir::Node*, const ir::Node*> plan_optimizer_gemms(const LowerCtx& ctx);
/// Lowers `update` together with `gemm` (its planned matmul, skipped where it stood): a step
/// check kernel (once per step buffer in `checked_steps`), then the GEMM into the momentum
/// buffer with the update as its epilogue.
void lower_optimizer_gemm(LowerCtx& ctx, const ir::Node& update, const ir::Node& gemm,
                          const std::function<void(const ir::Node&)>& lower_one, std::set<int>& checked_steps);

/// Pass fuse's softmax_xent group as one kernel (lower_reduce.cpp): if nodes[i] is cross_entropy
/// followed by (optionally) the constant dloss `fill`, its cross_entropy_backward and
/// (optionally) the bias gradient reduce_sum over the batch, lowers them as one pass over the
/// logits and returns how many nodes it took (0: not this pattern).
size_t lower_softmax_xent(LowerCtx& ctx, const std::vector<const ir::Node*>& nodes, size_t i);

/// What lowering a graph's groups shares: the context, the per-node lowering, and the
/// weight-gradient GEMMs fused into their optimizer update (lower_fused.cpp).
struct GroupLowering {
  LowerCtx& ctx;
  std::function<void(const ir::Node&)> lower_one;
  std::map<const ir::Node*, const ir::Node*> fused_updates;  // update -> its weight-gradient matmul
  std::set<const ir::Node*> deferred;                        // those matmuls (lowered with their update)
  std::set<int> checked_steps;
};

/// Lowers one of pass fuse's groups (lower_groups.cpp) by the lowering of its `kind` (ir/fusion.h;
/// "" for a node outside any group), reading its nodes' roles. A group its kind's lowering
/// cannot take is an InternalError naming it.
void lower_group(GroupLowering& gl, const std::string& kind, const std::vector<const ir::Node*>& nodes);

/// Node n's attributes completed with the registry's defaults (ctx.fail on an unknown op or bad attrs).
ir::Attrs completed_attrs(const LowerCtx& ctx, const ir::Node& n);

/// Whether value v is read by a node outside `inside`, or is a graph output or update.
bool used_outside(const ir::Graph& g, ir::ValueId v, const std::vector<const ir::Node*>& inside);

/// floor(a / s) for s > 0 and a >= min_a (C's / truncates toward zero; this shifts a first).
Expr floordiv(Expr a, int64_t s, int64_t min_a);

}  // namespace dnnc::codegen
