// Reference kernels for the injective ops: flatten, reshape, transpose (pure index remapping).
// Instantiated for float, double and int64_t.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

/// The shape of flatten(x, start_dim, end_dim) (negative dims count from the end).
/// Throws if a dim is out of range or start_dim > end_dim.
Shape flatten_shape(const Shape& x, int64_t start_dim, int64_t end_dim);
/// `shape` with its single -1 (the batch dim in IR attributes) inferred from numel(x)
/// (PyTorch's view rule). Throws if there is more than one -1 or the counts do not match.
Shape reshape_shape(const Shape& x, const std::vector<int64_t>& shape);

template <class T> Buf<T> flatten_forward(const Buf<T>& x, int64_t start_dim, int64_t end_dim);
template <class T> Buf<T> reshape_forward(const Buf<T>& x, const std::vector<int64_t>& shape);
/// out.shape[i] = x.shape[perm[i]] (torch.permute). Throws unless perm is a permutation of 0..rank-1.
template <class T> Buf<T> transpose_forward(const Buf<T>& x, const std::vector<int64_t>& perm);
/// torch.cat(xs, axis): the operands one after another along `axis` (negative counts from the
/// end). Throws unless there are 2 or more of one rank, equal off the axis.
template <class T> Buf<T> concat_forward(const std::vector<Buf<T>>& xs, int64_t axis);
/// x.narrow(axis, start, length), contiguous. Throws unless [start, start + length) is inside the axis.
template <class T> Buf<T> slice_forward(const Buf<T>& x, int64_t axis, int64_t start, int64_t length);

}  // namespace dnnc::runtime::reference
