// Reference kernels for batchnorm2d (training and inference) and layernorm, forward and backward.
// T is the storage type, A the accumulator (float/float, float/double, double/double).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

template <class T>
struct BatchNormOut {
  Buf<T> y;             // like x
  Buf<T> mean;          // [C] batch mean
  Buf<T> invstd;        // [C] 1/sqrt(biased batch var + eps)
  Buf<T> running_mean;  // [C] (1-m)·running_mean + m·mean
  Buf<T> running_var;   // [C] (1-m)·running_var + m·unbiased batch var
};

template <class T>
struct NormGrads {
  Buf<T> dx, dweight, dbias;
};

/// Training-mode batch norm over (B, H, W) per channel, as torch.nn.functional.batch_norm
/// with training=True. x: [B, C, H, W]; weight, bias, running stats: [C]. Throws on a shape
/// mismatch or if a channel has only one value (PyTorch refuses that too).
template <class T, class A>
BatchNormOut<T> batchnorm2d_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias,
                                    const Buf<T>& running_mean, const Buf<T>& running_var, double eps,
                                    double momentum);
/// Inference batch norm with the running statistics. Throws on a shape mismatch.
template <class T, class A>
Buf<T> batchnorm2d_infer(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias, const Buf<T>& running_mean,
                         const Buf<T>& running_var, double eps);
/// Training-mode backward from the saved batch mean and invstd: dx like x, dweight and dbias [C].
template <class T, class A>
NormGrads<T> batchnorm2d_backward(const Buf<T>& dy, const Buf<T>& x, const Buf<T>& weight, const Buf<T>& mean,
                                  const Buf<T>& invstd);

template <class T>
struct LayerNormOut {
  Buf<T> y;       // like x
  Buf<T> mean;    // the leading dims of x (those before normalized_shape)
  Buf<T> invstd;  // same shape as mean
};

/// Normalizes over the trailing dims equal to `normalized_shape` (biased variance), then
/// scales by weight and shifts by bias (both of normalized_shape). Throws on a shape mismatch.
template <class T, class A>
LayerNormOut<T> layernorm_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias,
                                  const std::vector<int64_t>& normalized_shape, double eps);
/// dx like x; dweight, dbias of normalized_shape. Throws on a shape mismatch.
template <class T, class A>
NormGrads<T> layernorm_backward(const Buf<T>& dy, const Buf<T>& x, const Buf<T>& weight, const Buf<T>& mean,
                                const Buf<T>& invstd, const std::vector<int64_t>& normalized_shape);

}  // namespace dnnc::runtime::reference
