// The cpu and cuda target descriptions and select-layout's cost formulas.
#include "passes/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dnnc::passes {

const Target& cpu_target() {
  static const Target t{.name = "cpu",
                        .activation_layouts = {ir::Layout::row_major, ir::Layout::nhwc},
                        .gemm_transpose_flags = true,  // OpenBLAS sgemm transa/transb
                        .bytes_per_us = 20e3,          // 20 GB/s: one socket's achievable DRAM stream bandwidth
                        .launch_us = 1.0,              // an OpenMP parallel region's fork/join
                        .tensor_core_channels = 0,
                        .nchw_tensor_core_passes = 0,
                        // The smallest train-step time ratio NHWC/NCHW bench/calibrate_layout.py
                        // measured over the conv models (cifar_strided b32: 1.03; others 1.53 to
                        // 2.79; docs/passes.md). The region's own ratio is at least this.
                        .nhwc_kernel_factor = 1.03};
  return t;
}

const Target& cuda_target() {
  static const Target t{.name = "cuda",
                        .activation_layouts = {ir::Layout::row_major, ir::Layout::nhwc},
                        .gemm_transpose_flags = true,   // cuBLAS / cuBLASLt CUBLAS_OP_T
                        .bytes_per_us = 3.35e6,         // H100 SXM HBM3, 3.35 TB/s
                        .launch_us = 2.5,               // a kernel launch from the host
                        .tensor_core_channels = 4,      // TF32 tensor-core convs want C, K multiples of 4
                        .nchw_tensor_core_passes = 1};  // cuDNN transposes NCHW input to NHWC and the output back
  return t;
}

const Target& find_target(const std::string& name) {
  if (name == "cpu") return cpu_target();
  if (name == "cuda") return cuda_target();
  throw std::invalid_argument(fmt::format("unknown target '{}'; expected cpu or cuda", name));
}

bool supports_activation_layout(const Target& t, ir::Layout layout) {
  return std::find(t.activation_layouts.begin(), t.activation_layouts.end(), layout) != t.activation_layouts.end();
}

double transfer_us(const Target& t, int64_t bytes) { return static_cast<double>(bytes) / t.bytes_per_us; }

double conversion_us(const Target& t, int64_t bytes) { return t.launch_us + 2 * transfer_us(t, bytes); }

double conv_layout_penalty_us(const Target& t, ir::Layout layout, int64_t in_channels, int64_t out_channels,
                              int64_t activation_bytes) {
  if (layout != ir::Layout::row_major || t.tensor_core_channels <= 0) return 0;
  if (in_channels % t.tensor_core_channels != 0 || out_channels % t.tensor_core_channels != 0) return 0;
  return t.nchw_tensor_core_passes * 2 * transfer_us(t, activation_bytes);
}

}  // namespace dnnc::passes
