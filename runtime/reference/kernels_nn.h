// Reference kernels for the GEMM-like ops: linear, matmul, conv2d and conv2d's backward ops.
// T is the storage type, A the accumulator (float/float, float/double, double/double).
#pragma once
#include <array>
#include <cstdint>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

/// y = x Wᵀ + b. x: [..., in], weight: [out, in], bias: [out] or nullptr; y: [..., out].
/// Throws if the shapes disagree.
template <class T, class A> Buf<T> linear_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>* bias);

/// [M, Nc] = op(a) op(b) with op(a) = aᵀ if transpose_a (a is then stored [K, M]), likewise b.
/// Throws unless both are 2-d with matching inner sizes.
template <class T, class A>
Buf<T> matmul_forward(const Buf<T>& a, const Buf<T>& b, bool transpose_a, bool transpose_b);

struct Conv2dParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

/// PyTorch's output size of a window op along one axis: (in + 2p - d(k-1) - 1)/s + 1 (floor).
/// Throws (naming `op`) if it is below 1 or a stride/dilation is below 1.
int64_t conv_out_dim(const char* op, int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);

/// x: [B, C, H, W], weight: [O, C/groups, kh, kw], bias: [O] or nullptr; out: [B, O, Ho, Wo]
/// (cross-correlation, zero padding). Throws if the shapes or groups disagree.
template <class T, class A>
Buf<T> conv2d_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>* bias, const Conv2dParams& p);
/// dx: [B, C, H, W] with (H, W) = input_hw, from dy: [B, O, Ho, Wo]. Throws if dy's spatial
/// size is not what a forward conv of input_hw gives.
template <class T, class A>
Buf<T> conv2d_backward_input(const Buf<T>& dy, const Buf<T>& weight, const Conv2dParams& p,
                             std::array<int64_t, 2> input_hw);
/// dweight: [O, C/groups, kh, kw] with (kh, kw) = kernel, from dy and the forward input x.
template <class T, class A>
Buf<T> conv2d_backward_weight(const Buf<T>& dy, const Buf<T>& x, const Conv2dParams& p,
                              std::array<int64_t, 2> kernel);

}  // namespace dnnc::runtime::reference
