// One checking macro per CUDA library (runtime, cuBLASLt): a failed call throws
// std::runtime_error with the call's text, file and line, and the library's error name.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <stdexcept>

namespace dnnc::runtime::cuda {

/// "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version".
inline std::string cuda_error_text(cudaError_t e) {
  return fmt::format("{} ({}): {}", cudaGetErrorName(e), static_cast<int>(e), cudaGetErrorString(e));
}

inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(fmt::format("{}:{}: {} failed: {}", file, line, call, cuda_error_text(e)));
}

inline void cublas_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(fmt::format("{}:{}: {} failed: cublasStatus {}", file, line, call, static_cast<int>(s)));
}

}  // namespace dnnc::runtime::cuda

#define DNNC_CUDA_CHECK(call) ::dnnc::runtime::cuda::cuda_check((call), #call, __FILE__, __LINE__)
#define DNNC_CUBLAS_CHECK(call) ::dnnc::runtime::cuda::cublas_check((call), #call, __FILE__, __LINE__)
