// Target descriptions and the cost model of pass select-layout: which layouts each target's
// kernels implement, and what a layout choice costs there (bytes moved, conversions, GEMM flags).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/types.h"

namespace dnnc::passes {

/// What select-layout knows about a compilation target. The numbers are documented (with their
/// sources) in docs/passes.md.
struct Target {
  std::string name;                            // "cpu" | "cuda"
  std::vector<ir::Layout> activation_layouts;  // 4-d layouts its conv/pool/batchnorm kernels implement
  bool gemm_transpose_flags = true;            // its GEMM reads either operand transposed (BLAS trans flags)
  double bytes_per_us = 0;                     // memory bandwidth
  double launch_us = 0;                        // fixed cost of one kernel launch
  int64_t tensor_core_channels = 0;            // 0: none; else convs whose in and out channel counts are
                                               // multiples of this run on tensor cores
  double nchw_tensor_core_passes = 0;          // extra transposes (a read and a write each) of such a conv's
                                               // activations when they are NCHW (the library goes via NHWC)
  double nhwc_kernel_factor = 1;               // measured time of a region's kernels in NHWC / in NCHW
                                               // (bench/calibrate_layout.py; 1: not measured)
};

/// The cpu target: NCHW or NHWC activations; its NHWC kernels measured slower (nhwc_kernel_factor).
const Target& cpu_target();
/// The cuda target: NCHW or NHWC activations.
const Target& cuda_target();
/// "cpu" or "cuda". Throws std::invalid_argument naming the value and the known targets.
const Target& find_target(const std::string& name);

/// Whether the target's conv/pool/batchnorm kernels implement 4-d activations in `layout`.
bool supports_activation_layout(const Target& t, ir::Layout layout);

/// Microseconds to stream `bytes` through memory once.
double transfer_us(const Target& t, int64_t bytes);

/// A standalone layout conversion (or transpose) kernel of a `bytes` tensor: one launch, one
/// read and one write.
double conversion_us(const Target& t, int64_t bytes);

/// Extra microseconds a convolution (forward or either backward) with `in_channels` ->
/// `out_channels` pays for its activations (`activation_bytes`: the input and output activations it
/// reads or writes) being in `layout`: on a target with tensor cores, an eligible conv in NCHW pays
/// nchw_tensor_core_passes read+write passes over them; every other case costs nothing extra.
double conv_layout_penalty_us(const Target& t, ir::Layout layout, int64_t in_channels, int64_t out_channels,
                              int64_t activation_bytes);

}  // namespace dnnc::passes
