// Reference kernels for reductions along axes: reduce_sum, softmax, log_softmax and their
// backward ops. T is the storage type, A the accumulator (float/float, float/double, double/double).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

/// Maps axis in [-rank, rank) to [0, rank); throws std::runtime_error naming `op` otherwise.
int64_t normalize_axis(const char* op, int64_t axis, size_t rank);

/// Sum over `axes` (negative axes count from the end; empty means every axis), keeping them
/// as size-1 dims if `keepdim`. Throws on an out-of-range or repeated axis.
template <class T, class A> Buf<T> reduce_sum_forward(const Buf<T>& x, const std::vector<int64_t>& axes, bool keepdim);

/// exp(x - max) / Σ exp(x - max) along `axis`. Throws on a bad axis.
template <class T, class A> Buf<T> softmax_forward(const Buf<T>& x, int64_t axis);
/// x - max - log Σ exp(x - max) along `axis`.
template <class T, class A> Buf<T> log_softmax_forward(const Buf<T>& x, int64_t axis);
/// dx = y * (dy - Σ dy*y), y the softmax output. Throws if dy and y differ in shape.
template <class T, class A> Buf<T> softmax_backward(const Buf<T>& dy, const Buf<T>& y, int64_t axis);
/// dx = dy - exp(y) * Σ dy, y the log_softmax output. Throws if dy and y differ in shape.
template <class T, class A> Buf<T> log_softmax_backward(const Buf<T>& dy, const Buf<T>& y, int64_t axis);

}  // namespace dnnc::runtime::reference
