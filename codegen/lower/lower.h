// Lowering: one graph of an ir::Module at a concrete batch size -> codegen::Program. Each group
// of nodes becomes kernels (KernelIR) and library calls (GEMM); reshape/flatten become aliases.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kir/program.h"
#include "ir/graph.h"

namespace dnnc::codegen {

/// Target-independent choices of the lowering (thresholds are in elements or flops).
struct LowerOptions {
  int64_t parallel_min_work = 1 << 15;    // a loop nest is parallel if it touches this many elements
  int64_t gemm_parallel_flops = 1 << 21;  // a GEMM is multi-threaded from this many flops (2mnk)
  int64_t direct_conv_max_k = 32;         // conv2d with C/groups*kh*kw up to this uses direct loops
  int64_t conv_channels_per_pass = 8;     // unrolled direct conv: out-channels summed per pass (1, 2, 4 or 8)
  bool gemm_epilogues = true;             // map ops after a GEMM in one fuse group run as its epilogue
  // Fusions only the C++ printer implements (the cuda backend turns them off):
  bool optimizer_in_gemm = true;  // SGD-momentum update fused into its weight-gradient GEMM (needs gemm_epilogues)
  bool bias_grad_in_gemm = true;  // bias-gradient column sums in an input-gradient GEMM's epilogue
  bool coschedule_gemms = true;   // independent epilogue GEMMs share one parallel region (coschedule.h)
  // The conv bias gradient (reduce_sum over N, H, W) summed inside the maxpool backward kernel,
  // whose parallel loop then runs over channels, images inside. Off: the backward runs over
  // every (image, channel) plane and the sum is a kernel of its own (the cuda backend: a
  // channel loop has too few iterations for a GPU).
  bool pool_bias_grad_fused = true;
  // Sums of per-image partial results (the conv weight gradient's dw_sum): images in the outer
  // loop (the inner loop over elements vectorizes on a CPU), or, off, elements outer and images
  // inner (a GPU spreads the elements; the cuda backend). The same additions in the same order.
  bool image_sums_outer = true;
  // reduce_sum over [R0, K, R1] keeping K (the conv bias gradient over N, H, W): one loop over
  // K summing R0 * R1 elements each, or, on, two kernels: sums over R1 for each (R0, K) row into
  // scratch, then over R0 (a GPU needs R0 * K parallel rows, not K; the cuda backend).
  bool two_stage_sums = false;
  // The fused conv(+chain)(+maxpool) forward's parallel loop over (image, out-channel) planes
  // also runs over bands of rows: one pooled row (its stride's conv rows) or, without a pool,
  // one conv row; only where a band's pooled rows read conv rows of that band alone (unpadded
  // pools with window rows <= stride). A GPU needs the items (64 planes at the seed CNN's batch
  // 4); a CPU core is better off with whole planes (the cuda backend turns it on).
  bool conv_row_bands = false;
  // A non-direct convolution's im2col columns take at most this many bytes, unless a chunk of
  // conv_min_chunk_images needs more: the batch is lowered in chunks of images (views of x and
  // y at the chunk's offset), each its own im2col and GEMM over one columns buffer, which stays
  // in cache between the two (16 MiB -> 1 MiB: cifar_cnn b128 4.62 -> 3.95 ms, resnet_mnist
  // b32 16.1 -> 13.4, vgg_cifar b64 56.4 -> 53.6). The minimum keeps a chunk's GEMMs spread
  // over the threads (one image per chunk made vgg_cifar 70 ms). 0: the whole batch at once
  // (the cuda backend: one batched GEMM, and a GPU's memory is not what limits it).
  int64_t conv_columns_bytes = int64_t{1} << 20;
  int64_t conv_min_chunk_images = 4;
  // A batchnorm2d_epilogue group (training batchnorm -> elementwise chain (-> maxpool2d)) as one
  // kernel: each image's plane of a channel normalized, run through the chain and max-pooled
  // while in cache, in the channel loop that computed the statistics. Off: batchnorm, then the
  // chain as one loop nest, then the pool (the cuda backend: a channel loop has too few
  // iterations for a GPU, and the chain and pool have a plane or an element per thread).
  bool batchnorm_epilogues = true;
};

/// The CUDA target marks every loop nest that may run in parallel (no work threshold on a GPU).
inline constexpr int64_t kCudaParallelMinWork = 1;

/// How the cuda backend lowers (also `dnnc compile --emit=cuda` and the NVRTC tests): every loop
/// nest that may run in parallel on the grid; bias-gradient sums attached to their GEMM (for
/// DRELU_BGRAD, else a column-sum kernel); not the optimizer update in its GEMM (cuBLASLt takes
/// fixed alpha/beta) nor co-scheduled GEMMs (they run one after another on the stream); one conv
/// out-channel per pass (a GPU needs the parallelism more than the input reuse; 8 spilled
/// registers on sm_80); the conv bias gradient as a kernel of its own (pool_bias_grad_fused);
/// per-image sums with the elements outermost (image_sums_outer); channel sums in two stages
/// (two_stage_sums); the fused conv forward over bands of rows (conv_row_bands); batchnorm,
/// its chain and pool as separate kernels (batchnorm_epilogues).
inline LowerOptions cuda_lower_options() {
  LowerOptions o;
  o.parallel_min_work = kCudaParallelMinWork;
  o.optimizer_in_gemm = false;
  o.bias_grad_in_gemm = true;
  o.coschedule_gemms = false;
  o.conv_channels_per_pass = 1;
  o.pool_bias_grad_fused = false;
  o.image_sums_outer = false;
  o.two_stage_sums = true;
  o.conv_row_bands = true;
  o.conv_columns_bytes = 0;
  o.batchnorm_epilogues = false;
  return o;
}

/// Lowers graph `g` (of module `m`) with the batch dim bound to `batch`. Each of pass fuse's
/// groups (Node::group) is lowered by the lowering of its kind (ir/fusion.h), reading its nodes'
/// roles; a node outside any group by its op's lowering. The Program is verified
/// (verify_program) before it is returned. Throws std::runtime_error naming the graph and node
/// if an op has no lowering, a value is not row_major, a shape is not concrete after binding the
/// batch, or `batch` < 1; InternalError for a group its kind's lowering cannot take.
Program lower_graph(const ir::Module& m, const ir::Graph& g, int64_t batch, const LowerOptions& options = {});

/// True if `op` has a CPU lowering.
bool has_lowering(const std::string& op);

}  // namespace dnnc::codegen
