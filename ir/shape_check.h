// Checks and formulas shared by the op shape rules (ranks, dtypes, layouts, broadcasting,
// convolution/pooling windows). Every failing check throws ir::ShapeError "op: ... expected X, found Y".
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/op_registry.h"
#include "ir/types.h"

namespace dnnc::ir {

/// "N" for the batch dimension, the number otherwise.
std::string dim_to_string(Dim d);

/// Throws ShapeError(operand) unless `t` has rank `rank`.
void expect_rank(const std::string& op, const std::string& what, const TensorType& t, int64_t rank, int operand);
/// Throws ShapeError(operand) unless `t` has rank >= `rank`.
void expect_min_rank(const std::string& op, const std::string& what, const TensorType& t, int64_t rank, int operand);
/// Throws ShapeError(operand) unless `t` has element type `dtype`.
void expect_dtype(const std::string& op, const std::string& what, const TensorType& t, DType dtype, int operand);
/// Throws ShapeError(operand) unless `t` is row_major.
void expect_row_major(const std::string& op, const std::string& what, const TensorType& t, int operand);
/// Throws ShapeError(operand) unless `t.layout` is one of `allowed`.
void expect_layout_in(const std::string& op, const std::string& what, const TensorType& t,
                      const std::vector<Layout>& allowed, int operand);
/// Throws ShapeError(operand) unless `t.shape == shape`.
void expect_shape(const std::string& op, const std::string& what, const TensorType& t, const Shape& shape, int operand);
/// Throws ShapeError(operand) unless `t` is an f32 scalar (`f32[]`).
void expect_f32_scalar(const std::string& op, const std::string& what, const TensorType& t, int operand);
/// Throws ShapeError(operand) unless `t` has the batch dimension nowhere but (maybe) at index 0.
void expect_batch_leading(const std::string& op, const std::string& what, const TensorType& t, int operand);

/// Maps `axis` in [-rank, rank) to [0, rank); throws ShapeError naming attribute `attr` otherwise.
int64_t normalize_axis(const std::string& op, const std::string& attr, int64_t axis, int64_t rank);

/// Numpy broadcasting of two shapes (the batch dim broadcasts only with itself or 1).
/// Throws ShapeError blaming operand 1 if they do not broadcast.
Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b);

/// Reads a 2-int attribute; throws ShapeError unless it has exactly 2 entries, each >= min_value.
std::array<int64_t, 2> pair_attr(const std::string& op, const Attrs& attrs, const std::string& name, int64_t min_value);

/// Pooling stride: the `stride` attribute, or `kernel` when `stride` is [] (PyTorch's default).
/// Throws ShapeError unless the result has 2 entries >= 1.
std::array<int64_t, 2> pool_stride(const std::string& op, const Attrs& attrs);

/// PyTorch's (floor) output size of a convolution/pooling window along one spatial dim:
/// (in + 2*pad - dilation*(kernel-1) - 1) / stride + 1. Throws ShapeError(operand) if < 1.
int64_t window_out_dim(const std::string& op, const char* axis, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                       int64_t dilation, int operand);

/// Output (height, width) of a 2-d pooling window (attrs kernel, stride, padding; PyTorch's floor mode
/// and its "padding at most half the kernel" rule) over x [B, C, H, W]. Throws ShapeError on bad attrs
/// or an output size < 1.
std::array<int64_t, 2> pool2d_out_hw(const std::string& op, const TensorType& x, const Attrs& attrs);

/// Output (height, width) of a 2-d convolution (attrs stride, padding, dilation) of an input of
/// spatial size (h, w) with a kernel (kh, kw). Throws ShapeError on bad attrs or an output size < 1.
std::array<int64_t, 2> conv2d_out_hw(const std::string& op, Dim h, Dim w, Dim kh, Dim kw, const Attrs& attrs);

/// Product of the dims of `s` in [begin, end) that are not the batch dim. Throws ShapeError if it
/// overflows 64 bits.
int64_t concrete_numel(const Shape& s, size_t begin, size_t end);

}  // namespace dnnc::ir
