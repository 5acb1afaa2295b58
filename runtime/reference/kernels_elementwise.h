// Reference kernels for same-shape maps: activations and their backward ops, scalar
// arithmetic, neg, fill and dropout. Instantiated for float and double.
#pragma once
#include <cstdint>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

template <class T> Buf<T> relu_forward(const Buf<T>& x);
/// dx = dy * (x > 0). Throws if dy and x differ in shape (as do all backward maps below).
template <class T> Buf<T> relu_backward(const Buf<T>& dy, const Buf<T>& x);

template <class T> Buf<T> leaky_relu_forward(const Buf<T>& x, double negative_slope);
template <class T> Buf<T> leaky_relu_backward(const Buf<T>& dy, const Buf<T>& x, double negative_slope);

template <class T> Buf<T> tanh_forward(const Buf<T>& x);
/// dx = dy * (1 - y*y), from the forward output y.
template <class T> Buf<T> tanh_backward(const Buf<T>& dy, const Buf<T>& y);

template <class T> Buf<T> sigmoid_forward(const Buf<T>& x);
/// dx = dy * y * (1 - y), from the forward output y.
template <class T> Buf<T> sigmoid_backward(const Buf<T>& dy, const Buf<T>& y);

/// Exact GELU: x * Φ(x) = 0.5 x (1 + erf(x/√2)) (PyTorch approximate='none').
template <class T> Buf<T> gelu_forward(const Buf<T>& x);
/// dx = dy * (Φ(x) + x φ(x)).
template <class T> Buf<T> gelu_backward(const Buf<T>& dy, const Buf<T>& x);

template <class T> Buf<T> neg_forward(const Buf<T>& x);
/// x + v, x * v, x / v with v rounded to T first (as PyTorch does with a Python scalar).
template <class T> Buf<T> add_scalar_forward(const Buf<T>& x, double v);
template <class T> Buf<T> mul_scalar_forward(const Buf<T>& x, double v);
template <class T> Buf<T> div_scalar_forward(const Buf<T>& x, double v);
/// A tensor of `shape` (concrete) filled with `value`.
template <class T> Buf<T> fill_forward(const Shape& shape, double value);

/// The dropout hash: splitmix64(seed ^ (step << 32) ^ index), whose top 24 bits give a
/// uniform number in [0, 1). splitmix64(z) adds 0x9e3779b97f4a7c15 and then applies the
/// standard mix (>>30 *0xbf58476d1ce4e5b9, >>27 *0x94d049bb133111eb, >>31).
double dropout_uniform(uint64_t seed, uint64_t step, uint64_t index);

template <class T>
struct DropoutOut {
  Buf<T> y;
  Buf<T> mask;  // 0 or 1/(1-p)
};
/// Keeps element i iff dropout_uniform(seed, step, i) >= p; kept elements are scaled by
/// 1/(1-p). `step` is the train step counter (a non-negative integer held in a float).
/// Throws if p is outside [0, 1] or step is negative or not an integer.
template <class T> DropoutOut<T> dropout_forward(const Buf<T>& x, double step, double p, int64_t seed);

}  // namespace dnnc::runtime::reference
