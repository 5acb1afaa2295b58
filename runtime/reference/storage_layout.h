// Storage layouts in the reference interpreter: a value typed `{nhwc}` or `{col_major}` is kept
// in that element order (its physical shape), and read back in logical (PyTorch) order.
#pragma once
#include <vector>

#include "ir/types.h"
#include "runtime/tensor.h"

namespace dnnc::runtime::reference {

/// The storage dims of a logical shape: nhwc [N,C,H,W] -> [N,H,W,C], col_major [R,C] -> [C,R],
/// row_major unchanged. Throws std::runtime_error if the rank does not fit the layout.
std::vector<int64_t> storage_shape(const std::vector<int64_t>& logical, ir::Layout layout);

/// `logical` (row-major element order) rewritten in `layout`'s element order, with the storage
/// shape. Throws std::runtime_error if the rank does not fit the layout.
Tensor to_storage(const Tensor& logical, ir::Layout layout);

/// The inverse: a tensor stored in `layout` (storage shape) back in logical row-major order.
Tensor from_storage(const Tensor& stored, ir::Layout layout);

}  // namespace dnnc::runtime::reference
