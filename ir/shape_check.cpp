// Shared checks and window formulas for the op shape rules.
#include "ir/shape_check.h"

#include <fmt/format.h>

#include <algorithm>

namespace dnnc::ir {

std::string dim_to_string(Dim d) { return d == kBatch ? "N" : std::to_string(d); }

void expect_rank(const std::string& op, const std::string& what, const TensorType& t, int64_t rank, int operand) {
  if (t.rank() == rank) return;
  throw ShapeError(fmt::format("{}: {} must have rank {}; expected rank {}, found rank {} ({})", op, what, rank, rank,
                               t.rank(), to_string(t)),
                   operand);
}

void expect_min_rank(const std::string& op, const std::string& what, const TensorType& t, int64_t rank, int operand) {
  if (t.rank() >= rank) return;
  throw ShapeError(fmt::format("{}: {} must have rank >= {}; expected rank >= {}, found rank {} ({})", op, what, rank,
                               rank, t.rank(), to_string(t)),
                   operand);
}

void expect_dtype(const std::string& op, const std::string& what, const TensorType& t, DType dtype, int operand) {
  if (t.dtype == dtype) return;
  throw ShapeError(fmt::format("{}: {} has the wrong element type; expected {}, found {}", op, what, dtype_name(dtype),
                               dtype_name(t.dtype)),
                   operand);
}

void expect_row_major(const std::string& op, const std::string& what, const TensorType& t, int operand) {
  expect_layout_in(op, what, t, {Layout::row_major}, operand);
}

void expect_layout_in(const std::string& op, const std::string& what, const TensorType& t,
                      const std::vector<Layout>& allowed, int operand) {
  if (std::find(allowed.begin(), allowed.end(), t.layout) != allowed.end()) return;
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) names += (i ? " or " : "") + std::string(layout_name(allowed[i]));
  throw ShapeError(
      fmt::format("{}: {} has an unsupported layout; expected {}, found {}", op, what, names, layout_name(t.layout)),
      operand);
}

void expect_shape(const std::string& op, const std::string& what, const TensorType& t, const Shape& shape,
                  int operand) {
  if (t.shape == shape) return;
  throw ShapeError(fmt::format("{}: {} has the wrong shape; expected {}, found {}", op, what, shape_to_string(shape),
                               shape_to_string(t.shape)),
                   operand);
}

void expect_f32_scalar(const std::string& op, const std::string& what, const TensorType& t, int operand) {
  expect_dtype(op, what, t, DType::f32, operand);
  expect_shape(op, what, t, {}, operand);
}

void expect_batch_leading(const std::string& op, const std::string& what, const TensorType& t, int operand) {
  for (size_t i = 1; i < t.shape.size(); ++i)
    if (t.shape[i] == kBatch)
      throw ShapeError(fmt::format("{}: {} has the batch dim at index {}; expected it only at index 0, found {}", op,
                                   what, i, shape_to_string(t.shape)),
                       operand);
}

int64_t normalize_axis(const std::string& op, const std::string& attr, int64_t axis, int64_t rank) {
  int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (axis < lo || axis > hi)
    throw ShapeError(fmt::format("{}: attribute '{}' is out of range; expected a value in [{}, {}], found {}", op, attr,
                                 lo, hi, axis));
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Align from the right; a missing dim acts like 1.
    Dim da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    Dim db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw ShapeError(
          fmt::format("{}: shapes {} and {} are not broadcastable at dim {} (counted from the right); "
                      "expected {} or 1, found {}",
                      op, shape_to_string(a), shape_to_string(b), n - i, dim_to_string(da), dim_to_string(db)),
          1);
    }
  }
  return out;
}

std::array<int64_t, 2> pair_attr(const std::string& op, const Attrs& attrs, const std::string& name,
                                 int64_t min_value) {
  const auto& v = attr_ints(attrs, name);
  if (v.size() != 2)
    throw ShapeError(fmt::format("{}: attribute '{}' must have 2 entries; expected 2, found {}", op, name, v.size()));
  for (int64_t x : v)
    if (x < min_value)
      throw ShapeError(fmt::format("{}: attribute '{}' entries must be >= {}; expected >= {}, found {}", op, name,
                                   min_value, min_value, x));
  return {v[0], v[1]};
}

std::array<int64_t, 2> pool_stride(const std::string& op, const Attrs& attrs) {
  if (attr_ints(attrs, "stride").empty()) return pair_attr(op, attrs, "kernel", 1);
  return pair_attr(op, attrs, "stride", 1);
}

int64_t window_out_dim(const std::string& op, const char* axis, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                       int64_t dilation, int operand) {
  if (in == kBatch)
    throw ShapeError(fmt::format("{}: the {} dim cannot be the batch dim; expected a size, found N", op, axis),
                     operand);
  if (kernel < 1)
    throw ShapeError(fmt::format("{}: the kernel {} must be >= 1; expected >= 1, found {}", op, axis, kernel), 1);
  // Attribute values come from user text: a span or padded size past 64 bits is an error, not UB.
  int64_t span = 0, twice_pad = 0, padded = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) || __builtin_add_overflow(span, 1, &span) ||
      __builtin_mul_overflow(pad, 2, &twice_pad) || __builtin_add_overflow(in, twice_pad, &padded))
    throw ShapeError(fmt::format("{}: the window or padding of the {} is too large (input {}, kernel {}, dilation {}, "
                                 "padding {}): the size overflows 64 bits",
                                 op, axis, in, kernel, dilation, pad),
                     operand);
  if (padded < span)
    throw ShapeError(fmt::format("{}: window of {} (kernel {}, dilation {}) is larger than the padded input {} "
                                 "{} (input {} + 2*padding {}); expected padded {} >= {}, found {}",
                                 op, span, kernel, dilation, axis, padded, in, pad, axis, span, padded),
                     operand);
  return (padded - span) / stride + 1;
}

std::array<int64_t, 2> pool2d_out_hw(const std::string& op, const TensorType& x, const Attrs& attrs) {
  auto kernel = pair_attr(op, attrs, "kernel", 1);
  auto stride = pool_stride(op, attrs);
  auto pad = pair_attr(op, attrs, "padding", 0);
  for (int i = 0; i < 2; ++i)
    if (pad[i] > kernel[i] / 2)  // 2 * pad > kernel, without overflow
      throw ShapeError(fmt::format("{}: padding should be at most half of the kernel size; expected <= {}, found {}",
                                   op, kernel[i] / 2, pad[i]));
  return {window_out_dim(op, "height", x.shape[2], kernel[0], stride[0], pad[0], 1, 0),
          window_out_dim(op, "width", x.shape[3], kernel[1], stride[1], pad[1], 1, 0)};
}

std::array<int64_t, 2> conv2d_out_hw(const std::string& op, Dim h, Dim w, Dim kh, Dim kw, const Attrs& attrs) {
  auto stride = pair_attr(op, attrs, "stride", 1);
  auto pad = pair_attr(op, attrs, "padding", 0);
  auto dil = pair_attr(op, attrs, "dilation", 1);
  return {window_out_dim(op, "height", h, kh, stride[0], pad[0], dil[0], 0),
          window_out_dim(op, "width", w, kw, stride[1], pad[1], dil[1], 0)};
}

int64_t concrete_numel(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i)
    if (s[i] != kBatch && __builtin_mul_overflow(n, s[i], &n))
      throw ShapeError(fmt::format("shape {} has too many elements: the count overflows 64 bits", shape_to_string(s)));
  return n;
}

}  // namespace dnnc::ir
