// Buf<T>: the plain, owned, row-major array the reference kernels compute on, templated on
// the element type: storage is float, sums accumulate in the accumulator type A (double by
// default, RefOptions::fp64_accumulate; double everywhere for the gradient checks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/check.h"
#include "runtime/tensor.h"

namespace dnnc::runtime::reference {

using Shape = std::vector<int64_t>;

/// Number of elements of a concrete shape (1 for a scalar `[]`).
inline int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Row-major strides of a concrete shape.
inline Shape row_major_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

/// "[2,3]"
inline std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

/// Throws std::runtime_error("reference <op>: <msg>"): a kernel met operands it cannot take.
[[noreturn]] void kernel_error(const std::string& op, const std::string& msg);

template <class T>
struct Buf {
  Shape shape;
  std::vector<T> data;

  Buf() = default;
  /// A buffer of `s` filled with `fill`.
  explicit Buf(Shape s, T fill = T(0)) : shape(std::move(s)), data(static_cast<size_t>(shape_numel(shape)), fill) {}
  /// Asserts that `d` has exactly numel(s) elements.
  Buf(Shape s, std::vector<T> d) : shape(std::move(s)), data(std::move(d)) {
    DNNC_CHECK(static_cast<int64_t>(data.size()) == shape_numel(shape), "data size must match the shape");
  }

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  size_t rank() const { return shape.size(); }
  int64_t dim(size_t i) const { return shape.at(i); }
  T& operator[](int64_t i) { return data[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return data[static_cast<size_t>(i)]; }
};

/// Copies an f32 tensor into a Buf<T>. Asserts the tensor is f32.
template <class T>
Buf<T> to_buf(const Tensor& t) {
  Buf<T> b(t.shape());
  const float* p = t.f32();
  for (int64_t i = 0; i < b.numel(); ++i) b[i] = static_cast<T>(p[i]);
  return b;
}

/// Copies an i64 tensor (class labels) into a Buf<int64_t>. Asserts the tensor is i64.
inline Buf<int64_t> to_labels(const Tensor& t) {
  const int64_t* p = t.i64();
  return Buf<int64_t>(t.shape(), std::vector<int64_t>(p, p + t.numel()));
}

/// Rounds a Buf<T> into an f32 tensor.
template <class T>
Tensor to_tensor(const Buf<T>& b) {
  Tensor t(ir::DType::f32, b.shape);
  float* p = t.f32();
  for (int64_t i = 0; i < b.numel(); ++i) p[i] = static_cast<float>(b[i]);
  return t;
}

/// Converts between element types (e.g. an accumulator buffer back to storage precision).
template <class To, class From>
Buf<To> cast_buf(const Buf<From>& b) {
  Buf<To> out(b.shape);
  for (int64_t i = 0; i < b.numel(); ++i) out[i] = static_cast<To>(b[i]);
  return out;
}

}  // namespace dnnc::runtime::reference
