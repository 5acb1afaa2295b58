// Reference kernels for the losses (cross_entropy, mse_loss; mean reduction) and their backward ops.
// T is the storage type, A the accumulator (float/float, float/double, double/double).
#pragma once
#include <cstdint>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

/// mean over b of (logsumexp(logits[b]) - logits[b, target[b]]), log-softmax with max
/// subtraction; a scalar `[]`. With label smoothing e (PyTorch's label_smoothing), each row's
/// term is (1 - e) * that + e * (logsumexp(logits[b]) - mean_c logits[b, c]). logits: [B, C],
/// target: [B] class indices. Throws std::runtime_error naming the index and value if a
/// target is outside [0, C), or on a shape mismatch.
template <class T, class A>
Buf<T> cross_entropy_forward(const Buf<T>& logits, const Buf<int64_t>& target, double smoothing = 0);
/// dlogits = dloss * (softmax(logits) - (1 - e) * onehot(target) - e / C) / B. dloss is a
/// scalar. Throws as forward.
template <class T, class A>
Buf<T> cross_entropy_backward(const Buf<T>& dloss, const Buf<T>& logits, const Buf<int64_t>& target,
                              double smoothing = 0);

/// mean((pred - target)²), a scalar. Throws if the shapes differ.
template <class T, class A> Buf<T> mse_loss_forward(const Buf<T>& pred, const Buf<T>& target);
/// dpred = dloss * 2 (pred - target) / numel. Throws if the shapes differ or dloss is not a scalar.
template <class T, class A> Buf<T> mse_loss_backward(const Buf<T>& dloss, const Buf<T>& pred, const Buf<T>& target);

}  // namespace dnnc::runtime::reference
