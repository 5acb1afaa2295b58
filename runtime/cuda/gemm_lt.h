// A codegen::GemmCall as a cuBLASLt matmul plan: descriptors, layouts and the chosen algorithm
// are made once (at compile time of the graph); `run` only enqueues, so it can be captured into
// a CUDA graph. Row-major C = op(A)·op(B) is computed as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so
// transposes stay flags, a per-column bias is cuBLASLt's BIAS epilogue, and a bias gradient
// (column sums of C) is its BGRAD of Cᵀ's rows.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "codegen/cuda/cuda_gemm.h"
#include "codegen/cuda/cuda_printer.h"
#include "codegen/kir/program.h"

namespace dnnc::runtime::cuda {

struct GemmOptions {
  bool tf32 = false;  // CUBLAS_COMPUTE_32F_FAST_TF32 instead of exact fp32
  size_t workspace_bytes = size_t{32} << 20;
  /// Ask cuBLASLt for the activation epilogues the CUDA printer planned (codegen::CudaLtAct);
  /// off: every activation runs as its generated kernel ($DNNC_CUBLASLT_EPILOGUES=off).
  bool activation_epilogues = true;
  /// How many algorithms to ask cuBLASLt's heuristic for: the plan runs the first unless
  /// tune() times them all ($DNNC_CUBLASLT_ALGO=tune).
  int candidates = 1;
};

/// One candidate algorithm's time in tune(): its rank in the heuristic's list and the median
/// of the timed runs (negative: cuBLASLt refused to run it).
struct GemmAlgoTime {
  int rank = 0;
  float us = -1.0f;
};

/// The activation epilogue asked of a plan, with its device buffers (fixed for the plan's life:
/// cuBLASLt's heuristic reads their alignment).
struct GemmActRequest {
  codegen::CudaLtAct act = codegen::CudaLtAct::none;
  void* mask = nullptr;    // relu_aux: written; drelu, drelu_bgrad: read (a CudaReluMask)
  int64_t mask_ld = 0;     // bits
  float* bgrad = nullptr;  // drelu_bgrad: receives C's column sums
};

class GemmPlan {
 public:
  /// Builds the plan for `g` with the first of `act` and its fallbacks (relu_aux → relu → none,
  /// drelu_bgrad → drelu → none) for which cuBLASLt has an algorithm. Throws std::runtime_error
  /// (cuBLASLt status, file, line) if cuBLASLt rejects even the plain product.
  GemmPlan(cublasLtHandle_t lt, const codegen::GemmCall& g, const GemmOptions& options, const GemmActRequest& act = {});
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  /// Enqueues C = op(A)·op(B) (+ bias or + C as the call says, then the activation) on
  /// `stream`. `bias` is the bias buffer when the epilogue applies it (cuda_gemm_bias_epilogue),
  /// else unused: the caller has filled C with the bias and the plan accumulates (beta 1).
  void run(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c, void* workspace) const;

  /// Times each candidate algorithm on `stream` with these buffers (which it overwrites: C, and
  /// the activation mask or bias gradient of the epilogue) as a CUDA graph of `reps` matmuls,
  /// and keeps the fastest. Synchronizes the stream. Returns every candidate's time per matmul,
  /// in heuristic order.
  std::vector<GemmAlgoTime> tune(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c,
                                 void* workspace, int reps);
  /// The chosen algorithm's rank in the heuristic's list (0 unless tune() found a faster one).
  int chosen() const { return chosen_; }

  /// The activation epilogue cuBLASLt runs (none: the caller launches the generated kernels).
  codegen::CudaLtAct act() const { return act_; }
  /// The epilogues asked for and not available, in order (for the log).
  const std::vector<codegen::CudaLtAct>& refused() const { return refused_; }
  bool bias_epilogue() const { return epilogue_bias_; }

 private:
  // Descriptors for `act`; false (nothing kept) if cuBLASLt has no algorithm for it.
  bool build(codegen::CudaLtAct act, const GemmActRequest& req, const GemmOptions& options);
  void destroy();
  cublasStatus_t enqueue(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c,
                         void* workspace) const;

  cublasLtHandle_t lt_;
  codegen::GemmCall g_;
  codegen::LtProblem p_;
  bool epilogue_bias_ = false;
  codegen::CudaLtAct act_ = codegen::CudaLtAct::none;
  std::vector<codegen::CudaLtAct> refused_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
  std::vector<cublasLtMatmulHeuristicResult_t> candidates_;  // heuristic order, all runnable
  int chosen_ = 0;
};

}  // namespace dnnc::runtime::cuda
