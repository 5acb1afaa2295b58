// Reference kernels for same-shape maps (activations, scalar arithmetic, fill, dropout) and
// their entries in the kernel table.
#include "runtime/reference/kernels_elementwise.h"

#include <cmath>
#include <numbers>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

namespace {

template <class T, class F>
Buf<T> map1(const Buf<T>& x, F f) {
  Buf<T> y(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = f(x[i]);
  return y;
}

template <class T, class F>
Buf<T> map2(const char* op, const Buf<T>& dy, const Buf<T>& x, F f) {
  if (dy.shape != x.shape)
    kernel_error(op, "dy is " + shape_str(dy.shape) + " but the saved operand is " + shape_str(x.shape));
  Buf<T> dx(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) dx[i] = f(dy[i], x[i]);
  return dx;
}

template <class T>
T normal_cdf(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
}

template <class T>
T normal_pdf(T x) {
  return std::exp(T(-0.5) * x * x) * T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
}

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

template <class T>
Buf<T> relu_forward(const Buf<T>& x) {
  return map1(x, [](T v) { return v > T(0) ? v : T(0); });
}
template <class T>
Buf<T> relu_backward(const Buf<T>& dy, const Buf<T>& x) {
  return map2("relu_backward", dy, x, [](T g, T v) { return v > T(0) ? g : T(0); });
}

template <class T>
Buf<T> leaky_relu_forward(const Buf<T>& x, double negative_slope) {
  T s = static_cast<T>(negative_slope);
  return map1(x, [s](T v) { return v > T(0) ? v : v * s; });
}
template <class T>
Buf<T> leaky_relu_backward(const Buf<T>& dy, const Buf<T>& x, double negative_slope) {
  T s = static_cast<T>(negative_slope);
  return map2("leaky_relu_backward", dy, x, [s](T g, T v) { return v > T(0) ? g : g * s; });
}

template <class T>
Buf<T> tanh_forward(const Buf<T>& x) {
  return map1(x, [](T v) { return std::tanh(v); });
}
template <class T>
Buf<T> tanh_backward(const Buf<T>& dy, const Buf<T>& y) {
  return map2("tanh_backward", dy, y, [](T g, T v) { return g * (T(1) - v * v); });
}

template <class T>
Buf<T> sigmoid_forward(const Buf<T>& x) {
  return map1(x, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
}
template <class T>
Buf<T> sigmoid_backward(const Buf<T>& dy, const Buf<T>& y) {
  return map2("sigmoid_backward", dy, y, [](T g, T v) { return g * v * (T(1) - v); });
}

template <class T>
Buf<T> gelu_forward(const Buf<T>& x) {
  return map1(x, [](T v) { return v * normal_cdf(v); });
}
template <class T>
Buf<T> gelu_backward(const Buf<T>& dy, const Buf<T>& x) {
  return map2("gelu_backward", dy, x, [](T g, T v) { return g * (normal_cdf(v) + v * normal_pdf(v)); });
}

template <class T>
Buf<T> neg_forward(const Buf<T>& x) {
  return map1(x, [](T v) { return -v; });
}
template <class T>
Buf<T> add_scalar_forward(const Buf<T>& x, double v) {
  T s = static_cast<T>(v);
  return map1(x, [s](T a) { return a + s; });
}
template <class T>
Buf<T> mul_scalar_forward(const Buf<T>& x, double v) {
  T s = static_cast<T>(v);
  return map1(x, [s](T a) { return a * s; });
}
template <class T>
Buf<T> div_scalar_forward(const Buf<T>& x, double v) {
  T s = static_cast<T>(v);
  return map1(x, [s](T a) { return a / s; });
}
template <class T>
Buf<T> fill_forward(const Shape& shape, double value) {
  for (int64_t d : shape)
    if (d < 0) kernel_error("fill", "shape " + shape_str(shape) + " has a negative dimension");
  return Buf<T>(shape, static_cast<T>(value));
}

double dropout_uniform(uint64_t seed, uint64_t step, uint64_t index) {
  uint64_t h = splitmix64(seed ^ (step << 32) ^ index);
  return static_cast<double>(h >> 40) * 0x1.0p-24;
}

template <class T>
DropoutOut<T> dropout_forward(const Buf<T>& x, double step, double p, int64_t seed) {
  if (!(p >= 0.0 && p <= 1.0)) kernel_error("dropout", "p must be in [0, 1], found " + std::to_string(p));
  if (!(step >= 0.0) || std::floor(step) != step)
    kernel_error("dropout", "step must be a non-negative integer, found " + std::to_string(step));
  T keep_scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  DropoutOut<T> out{Buf<T>(x.shape), Buf<T>(x.shape)};
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool keep = dropout_uniform(static_cast<uint64_t>(seed), static_cast<uint64_t>(step), static_cast<uint64_t>(i)) >= p;
    out.mask[i] = keep ? keep_scale : T(0);
    out.y[i] = x[i] * out.mask[i];
  }
  return out;
}

#define DNNC_INSTANTIATE(T)                                                                \
  template Buf<T> relu_forward(const Buf<T>&);                                             \
  template Buf<T> relu_backward(const Buf<T>&, const Buf<T>&);                             \
  template Buf<T> leaky_relu_forward(const Buf<T>&, double);                               \
  template Buf<T> leaky_relu_backward(const Buf<T>&, const Buf<T>&, double);               \
  template Buf<T> tanh_forward(const Buf<T>&);                                             \
  template Buf<T> tanh_backward(const Buf<T>&, const Buf<T>&);                             \
  template Buf<T> sigmoid_forward(const Buf<T>&);                                          \
  template Buf<T> sigmoid_backward(const Buf<T>&, const Buf<T>&);                          \
  template Buf<T> gelu_forward(const Buf<T>&);                                             \
  template Buf<T> gelu_backward(const Buf<T>&, const Buf<T>&);                             \
  template Buf<T> neg_forward(const Buf<T>&);                                              \
  template Buf<T> add_scalar_forward(const Buf<T>&, double);                               \
  template Buf<T> mul_scalar_forward(const Buf<T>&, double);                               \
  template Buf<T> div_scalar_forward(const Buf<T>&, double);                               \
  template Buf<T> fill_forward(const Shape&, double);                                      \
  template DropoutOut<T> dropout_forward(const Buf<T>&, double, double, int64_t);
DNNC_INSTANTIATE(float)
DNNC_INSTANTIATE(double)
#undef DNNC_INSTANTIATE

// ---- kernel table entries -------------------------------------------------------------------

namespace {
using F = float;
Buf<F> in_f(const KernelCall& c, size_t i) { return f32_operand(c, i); }
std::vector<Tensor> one(const Buf<F>& b) { return one_output(b); }
}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  t["relu"] = [](const KernelCall& c) { return one(relu_forward(in_f(c, 0))); };
  t["tanh"] = [](const KernelCall& c) { return one(tanh_forward(in_f(c, 0))); };
  t["sigmoid"] = [](const KernelCall& c) { return one(sigmoid_forward(in_f(c, 0))); };
  t["gelu"] = [](const KernelCall& c) { return one(gelu_forward(in_f(c, 0))); };
  t["neg"] = [](const KernelCall& c) { return one(neg_forward(in_f(c, 0))); };
  t["leaky_relu"] = [](const KernelCall& c) {
    return one(leaky_relu_forward(in_f(c, 0), ir::attr_float(c.at(), "negative_slope")));
  };
  t["add_scalar"] = [](const KernelCall& c) {
    return one(add_scalar_forward(in_f(c, 0), ir::attr_float(c.at(), "value")));
  };
  t["mul_scalar"] = [](const KernelCall& c) {
    return one(mul_scalar_forward(in_f(c, 0), ir::attr_float(c.at(), "value")));
  };
  t["div_scalar"] = [](const KernelCall& c) {
    return one(div_scalar_forward(in_f(c, 0), ir::attr_float(c.at(), "value")));
  };
  t["increment"] = [](const KernelCall& c) {
    Buf<int64_t> x = i64_operand(c, 0);
    Tensor out(ir::DType::i64, x.shape);
    for (int64_t i = 0; i < x.numel(); ++i) out.i64()[i] = x[i] + 1;
    return std::vector<Tensor>{std::move(out)};
  };
  t["fill"] = [](const KernelCall& c) {
    if (c.output_shapes.size() != 1) kernel_error("fill", "expected one output shape");
    return one(fill_forward<F>(c.output_shapes[0], ir::attr_float(c.at(), "value")));
  };
  t["relu_backward"] = [](const KernelCall& c) { return one(relu_backward(in_f(c, 0), in_f(c, 1))); };
  t["tanh_backward"] = [](const KernelCall& c) { return one(tanh_backward(in_f(c, 0), in_f(c, 1))); };
  t["sigmoid_backward"] = [](const KernelCall& c) { return one(sigmoid_backward(in_f(c, 0), in_f(c, 1))); };
  t["gelu_backward"] = [](const KernelCall& c) { return one(gelu_backward(in_f(c, 0), in_f(c, 1))); };
  t["leaky_relu_backward"] = [](const KernelCall& c) {
    return one(leaky_relu_backward(in_f(c, 0), in_f(c, 1), ir::attr_float(c.at(), "negative_slope")));
  };
  t["dropout"] = [](const KernelCall& c) {
    DropoutOut<F> r = dropout_forward(in_f(c, 0), scalar_operand(c, 1),
                                      ir::attr_float(c.at(), "p"), ir::attr_int(c.at(), "seed"));
    return std::vector<Tensor>{to_tensor(r.y), to_tensor(r.mask)};
  };
}

}  // namespace dnnc::runtime::reference
