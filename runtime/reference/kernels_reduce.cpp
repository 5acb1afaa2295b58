// Reference kernels for reduce_sum and the softmax family, and their table entries.
#include "runtime/reference/kernels_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

int64_t normalize_axis(const char* op, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    kernel_error(op, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

namespace {

// A view of a tensor as [outer, n, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit split_at(const char* op, const Shape& s, int64_t axis) {
  int64_t a = normalize_axis(op, axis, s.size());
  AxisSplit r;
  for (int64_t i = 0; i < a; ++i) r.outer *= s[static_cast<size_t>(i)];
  r.n = s[static_cast<size_t>(a)];
  for (size_t i = static_cast<size_t>(a) + 1; i < s.size(); ++i) r.inner *= s[i];
  return r;
}

void expect_same(const char* op, const Shape& a, const Shape& b) {
  if (a != b) kernel_error(op, "dy is " + shape_str(a) + " but the saved output is " + shape_str(b));
}

}  // namespace

template <class T, class A>
Buf<T> reduce_sum_forward(const Buf<T>& x, const std::vector<int64_t>& axes, bool keepdim) {
  std::vector<bool> reduced(x.rank(), axes.empty());
  for (int64_t ax : axes) {
    int64_t a = normalize_axis("reduce_sum", ax, x.rank());
    if (reduced[static_cast<size_t>(a)]) kernel_error("reduce_sum", "axis " + std::to_string(ax) + " is repeated");
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape kept_shape;  // output shape with reduced dims as 1
  Shape out_shape;
  for (size_t d = 0; d < x.rank(); ++d) {
    kept_shape.push_back(reduced[d] ? 1 : x.shape[d]);
    if (!reduced[d] || keepdim) out_shape.push_back(reduced[d] ? 1 : x.shape[d]);
  }
  Buf<A> acc(kept_shape);
  Shape xs = row_major_strides(x.shape);
  Shape ks = row_major_strides(kept_shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, o = 0;
    for (size_t d = 0; d < x.rank(); ++d) {
      int64_t coord = rem / xs[d];
      rem -= coord * xs[d];
      if (!reduced[d]) o += coord * ks[d];
    }
    acc[o] += static_cast<A>(x[i]);
  }
  Buf<T> out = cast_buf<T>(acc);
  out.shape = out_shape;
  return out;
}

template <class T, class A>
Buf<T> softmax_forward(const Buf<T>& x, int64_t axis) {
  AxisSplit s = split_at("softmax", x.shape, axis);
  Buf<T> y(x.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + in; };
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < s.n; ++k) mx = std::max(mx, x[at(k)]);
      A sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += static_cast<A>(std::exp(x[at(k)] - mx));
      for (int64_t k = 0; k < s.n; ++k) y[at(k)] = static_cast<T>(static_cast<A>(std::exp(x[at(k)] - mx)) / sum);
    }
  return y;
}

template <class T, class A>
Buf<T> log_softmax_forward(const Buf<T>& x, int64_t axis) {
  AxisSplit s = split_at("log_softmax", x.shape, axis);
  Buf<T> y(x.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + in; };
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < s.n; ++k) mx = std::max(mx, x[at(k)]);
      A sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += static_cast<A>(std::exp(x[at(k)] - mx));
      A log_sum = std::log(sum);
      for (int64_t k = 0; k < s.n; ++k)
        y[at(k)] = static_cast<T>(static_cast<A>(x[at(k)]) - static_cast<A>(mx) - log_sum);
    }
  return y;
}

template <class T, class A>
Buf<T> softmax_backward(const Buf<T>& dy, const Buf<T>& y, int64_t axis) {
  expect_same("softmax_backward", dy.shape, y.shape);
  AxisSplit s = split_at("softmax_backward", y.shape, axis);
  Buf<T> dx(y.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + in; };
      A dot = 0;
      for (int64_t k = 0; k < s.n; ++k) dot += static_cast<A>(dy[at(k)]) * static_cast<A>(y[at(k)]);
      for (int64_t k = 0; k < s.n; ++k)
        dx[at(k)] = static_cast<T>(static_cast<A>(y[at(k)]) * (static_cast<A>(dy[at(k)]) - dot));
    }
  return dx;
}

template <class T, class A>
Buf<T> log_softmax_backward(const Buf<T>& dy, const Buf<T>& y, int64_t axis) {
  expect_same("log_softmax_backward", dy.shape, y.shape);
  AxisSplit s = split_at("log_softmax_backward", y.shape, axis);
  Buf<T> dx(y.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t k) { return (o * s.n + k) * s.inner + in; };
      A sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += static_cast<A>(dy[at(k)]);
      for (int64_t k = 0; k < s.n; ++k)
        dx[at(k)] = static_cast<T>(static_cast<A>(dy[at(k)]) - std::exp(static_cast<A>(y[at(k)])) * sum);
    }
  return dx;
}

#define DNNC_INSTANTIATE(T, A)                                                                        \
  template Buf<T> reduce_sum_forward<T, A>(const Buf<T>&, const std::vector<int64_t>&, bool);         \
  template Buf<T> softmax_forward<T, A>(const Buf<T>&, int64_t);                                      \
  template Buf<T> log_softmax_forward<T, A>(const Buf<T>&, int64_t);                                  \
  template Buf<T> softmax_backward<T, A>(const Buf<T>&, const Buf<T>&, int64_t);                      \
  template Buf<T> log_softmax_backward<T, A>(const Buf<T>&, const Buf<T>&, int64_t);
DNNC_INSTANTIATE(float, float)
DNNC_INSTANTIATE(float, double)
DNNC_INSTANTIATE(double, double)
#undef DNNC_INSTANTIATE

void register_reduce_kernels(KernelTable& t) {
  t["reduce_sum"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(reduce_sum_forward<float, A>(f32_operand(c, 0), ir::attr_ints(c.at(), "axes"),
                                                     ir::attr_bool(c.at(), "keepdim")));
    });
  };
  t["softmax"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(softmax_forward<float, A>(f32_operand(c, 0), ir::attr_int(c.at(), "axis")));
    });
  };
  t["log_softmax"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(log_softmax_forward<float, A>(f32_operand(c, 0), ir::attr_int(c.at(), "axis")));
    });
  };
  t["softmax_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(
          softmax_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), ir::attr_int(c.at(), "axis")));
    });
  };
  t["log_softmax_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(
          log_softmax_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), ir::attr_int(c.at(), "axis")));
    });
  };
}

}  // namespace dnnc::runtime::reference
