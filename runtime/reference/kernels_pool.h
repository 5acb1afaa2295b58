// Reference kernels for 2-d max and average pooling (floor mode) and their backward ops.
// T is the storage type, A the accumulator (float/float, float/double, double/double).
#pragma once
#include <array>
#include <cstdint>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};  // already resolved: an empty stride attribute means kernel
  std::array<int64_t, 2> padding{0, 0};
};

/// x: [B, C, H, W] -> [B, C, Ho, Wo], Ho = (H + 2p - k)/s + 1. Padding never wins (it is -inf);
/// NaN propagates. Throws if x is not 4-d, the window does not fit, or padding > kernel/2
/// (PyTorch's rule).
template <class T> Buf<T> maxpool2d_forward(const Buf<T>& x, const Pool2dParams& p);
/// dx like x: each dy goes to the first maximum of its window (row-major scan), summed where
/// windows overlap. Throws if dy is not the forward output's shape.
template <class T, class A> Buf<T> maxpool2d_backward(const Buf<T>& dy, const Buf<T>& x, const Pool2dParams& p);

/// Window mean; the divisor is the window clipped to the padded input if count_include_pad,
/// else the window clipped to the input (PyTorch's avg_pool2d). Throws as maxpool2d_forward.
template <class T, class A>
Buf<T> avgpool2d_forward(const Buf<T>& x, const Pool2dParams& p, bool count_include_pad);
/// dx like x: each dy spread evenly (with the forward divisor) over its window.
template <class T, class A>
Buf<T> avgpool2d_backward(const Buf<T>& dy, const Buf<T>& x, const Pool2dParams& p, bool count_include_pad);

}  // namespace dnnc::runtime::reference
