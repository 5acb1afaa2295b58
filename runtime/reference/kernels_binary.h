// Reference kernels for the broadcasting binary ops add/sub/mul/div (numpy broadcasting).
#pragma once
#include <string>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

/// The numpy broadcast of two concrete shapes (aligned at the right; a dim broadcasts if it
/// is 1). Throws std::runtime_error naming `op` and both shapes if they do not broadcast.
Shape broadcast_shape(const std::string& op, const Shape& a, const Shape& b);

/// a ∘ b over the broadcast shape. Throw if a and b do not broadcast.
template <class T> Buf<T> add_forward(const Buf<T>& a, const Buf<T>& b);
template <class T> Buf<T> sub_forward(const Buf<T>& a, const Buf<T>& b);
template <class T> Buf<T> mul_forward(const Buf<T>& a, const Buf<T>& b);
template <class T> Buf<T> div_forward(const Buf<T>& a, const Buf<T>& b);

}  // namespace dnnc::runtime::reference
