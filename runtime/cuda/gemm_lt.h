// A codegen::GemmCall as a cuBLASLt matmul plan: descriptors, layouts and the chosen algorithm
// are made once (at compile time of the graph); `run` only enqueues, so it can be captured into
// a CUDA graph. Row-major C = op(A)·op(B) is computed as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so
// transposes stay flags and a per-column bias is cuBLASLt's BIAS epilogue.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "codegen/program.h"

namespace dnnc::runtime::cuda {

struct GemmOptions {
  bool tf32 = false;  // CUBLAS_COMPUTE_32F_FAST_TF32 instead of exact fp32
  size_t workspace_bytes = size_t{32} << 20;
};

class GemmPlan {
 public:
  /// Builds the plan for `g`. Throws std::runtime_error (cuBLASLt status, file, line) if
  /// cuBLASLt rejects the problem or finds no algorithm for it.
  GemmPlan(cublasLtHandle_t lt, const codegen::GemmCall& g, const GemmOptions& options);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  /// Enqueues C = op(A)·op(B) (+ bias or + C as the call says) on `stream`. `bias` is the
  /// bias buffer when the epilogue applies it (cuda_gemm_bias_epilogue), else unused: the
  /// caller has filled C with the bias and the plan accumulates (beta 1).
  void run(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c, void* workspace) const;

 private:
  cublasLtHandle_t lt_;
  codegen::GemmCall g_;
  bool epilogue_bias_ = false;
  float beta_ = 0;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace dnnc::runtime::cuda
