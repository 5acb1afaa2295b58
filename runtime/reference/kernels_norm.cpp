// Reference kernels for batchnorm2d and layernorm (forward, inference, backward), and their
// table entries.
#include "runtime/reference/kernels_norm.h"

#include <algorithm>
#include <cmath>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

namespace {

void expect_shape(const char* op, const char* what, const Shape& got, const Shape& want) {
  if (got != want) kernel_error(op, std::string(what) + " is " + shape_str(got) + ", expected " + shape_str(want));
}

// x: [B, C, H, W] -> (C, H*W, B) with every per-channel operand checked to be [C].
struct BnDims {
  int64_t b, c, hw;
};

BnDims bn_dims(const char* op, const Shape& x, std::initializer_list<const Shape*> per_channel) {
  if (x.size() != 4) kernel_error(op, "expected x [B,C,H,W], found " + shape_str(x));
  for (const Shape* s : per_channel) expect_shape(op, "a per-channel operand", *s, Shape{x[1]});
  return {x[0], x[1], x[2] * x[3]};
}

// Splits x into rows of the trailing normalized_shape; checks the affine params.
struct LnDims {
  int64_t rows, d;
  Shape lead;
};

LnDims ln_dims(const char* op, const Shape& x, const std::vector<int64_t>& ns, const Shape& weight) {
  if (ns.empty() || ns.size() > x.size() || !std::equal(ns.begin(), ns.end(), x.end() - static_cast<ptrdiff_t>(ns.size())))
    kernel_error(op, "x " + shape_str(x) + " does not end in normalized_shape " + shape_str(ns));
  expect_shape(op, "weight", weight, ns);
  LnDims d{0, shape_numel(ns), Shape(x.begin(), x.end() - static_cast<ptrdiff_t>(ns.size()))};
  d.rows = shape_numel(d.lead);
  return d;
}

// Batchnorm's sums over a channel's B·H·W values accumulate in double and are rounded once:
// exact to fp32 however long the channel (a running fp32 sum over 10^5 values is off by about
// 1e-4 relative), so the reference is a fixed point the backends' blocked fp32 sums (each
// vector lane summing every VL-th value of an image's plane) are held to.
using Sum = double;

}  // namespace

template <class T, class A>
BatchNormOut<T> batchnorm2d_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias,
                                    const Buf<T>& running_mean, const Buf<T>& running_var, double eps,
                                    double momentum) {
  BnDims d = bn_dims("batchnorm2d", x.shape, {&weight.shape, &bias.shape, &running_mean.shape, &running_var.shape});
  int64_t n = d.b * d.hw;
  if (n <= 1) kernel_error("batchnorm2d", "expected more than 1 value per channel when training, found x " + shape_str(x.shape));
  Shape cs{d.c};
  BatchNormOut<T> out{Buf<T>(x.shape), Buf<T>(cs), Buf<T>(cs), Buf<T>(cs), Buf<T>(cs)};
  auto idx = [&](int64_t b, int64_t c, int64_t i) { return (b * d.c + c) * d.hw + i; };
  A m = static_cast<A>(momentum);
  for (int64_t c = 0; c < d.c; ++c) {
    Sum s = 0;
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) s += static_cast<Sum>(x[idx(b, c, i)]);
    A sum = static_cast<A>(s);
    A mean = sum / static_cast<A>(n);
    Sum vs = 0;
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) {
        A dev = static_cast<A>(x[idx(b, c, i)]) - mean;
        vs += static_cast<Sum>(dev * dev);
      }
    A var_sum = static_cast<A>(vs);
    A invstd = A(1) / std::sqrt(var_sum / static_cast<A>(n) + static_cast<A>(eps));
    out.mean[c] = static_cast<T>(mean);
    out.invstd[c] = static_cast<T>(invstd);
    out.running_mean[c] = static_cast<T>(m * mean + (A(1) - m) * static_cast<A>(running_mean[c]));
    out.running_var[c] =
        static_cast<T>(m * (var_sum / static_cast<A>(n - 1)) + (A(1) - m) * static_cast<A>(running_var[c]));
    A alpha = invstd * static_cast<A>(weight[c]);
    A beta = static_cast<A>(bias[c]) - mean * alpha;
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) out.y[idx(b, c, i)] = static_cast<T>(static_cast<A>(x[idx(b, c, i)]) * alpha + beta);
  }
  return out;
}

template <class T, class A>
Buf<T> batchnorm2d_infer(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias, const Buf<T>& running_mean,
                         const Buf<T>& running_var, double eps) {
  BnDims d = bn_dims("batchnorm2d_infer", x.shape, {&weight.shape, &bias.shape, &running_mean.shape, &running_var.shape});
  Buf<T> y(x.shape);
  for (int64_t c = 0; c < d.c; ++c) {
    A alpha = static_cast<A>(weight[c]) / std::sqrt(static_cast<A>(running_var[c]) + static_cast<A>(eps));
    A beta = static_cast<A>(bias[c]) - static_cast<A>(running_mean[c]) * alpha;
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) {
        int64_t k = (b * d.c + c) * d.hw + i;
        y[k] = static_cast<T>(static_cast<A>(x[k]) * alpha + beta);
      }
  }
  return y;
}

template <class T, class A>
NormGrads<T> batchnorm2d_backward(const Buf<T>& dy, const Buf<T>& x, const Buf<T>& weight, const Buf<T>& mean,
                                  const Buf<T>& invstd) {
  BnDims d = bn_dims("batchnorm2d_backward", x.shape, {&weight.shape, &mean.shape, &invstd.shape});
  expect_shape("batchnorm2d_backward", "dy", dy.shape, x.shape);
  int64_t n = d.b * d.hw;
  NormGrads<T> g{Buf<T>(x.shape), Buf<T>(Shape{d.c}), Buf<T>(Shape{d.c})};
  auto idx = [&](int64_t b, int64_t c, int64_t i) { return (b * d.c + c) * d.hw + i; };
  for (int64_t c = 0; c < d.c; ++c) {
    A mu = static_cast<A>(mean[c]), is = static_cast<A>(invstd[c]);
    Sum s = 0, sd = 0;
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) {
        s += static_cast<Sum>(dy[idx(b, c, i)]);
        sd += static_cast<Sum>((static_cast<A>(x[idx(b, c, i)]) - mu) * static_cast<A>(dy[idx(b, c, i)]));
      }
    A sum = static_cast<A>(s), dotp = static_cast<A>(sd);
    A k = dotp * is * is / static_cast<A>(n);
    A grad_mean = sum / static_cast<A>(n);
    A w = static_cast<A>(weight[c]);
    for (int64_t b = 0; b < d.b; ++b)
      for (int64_t i = 0; i < d.hw; ++i) {
        int64_t j = idx(b, c, i);
        A proj = (static_cast<A>(x[j]) - mu) * k;
        g.dx[j] = static_cast<T>((static_cast<A>(dy[j]) - grad_mean - proj) * is * w);
      }
    g.dweight[c] = static_cast<T>(dotp * is);
    g.dbias[c] = static_cast<T>(sum);
  }
  return g;
}

template <class T, class A>
LayerNormOut<T> layernorm_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>& bias,
                                  const std::vector<int64_t>& normalized_shape, double eps) {
  LnDims d = ln_dims("layernorm", x.shape, normalized_shape, weight.shape);
  expect_shape("layernorm", "bias", bias.shape, normalized_shape);
  LayerNormOut<T> out{Buf<T>(x.shape), Buf<T>(d.lead), Buf<T>(d.lead)};
  for (int64_t r = 0; r < d.rows; ++r) {
    const T* row = x.data.data() + r * d.d;
    A sum = 0;
    for (int64_t j = 0; j < d.d; ++j) sum += static_cast<A>(row[j]);
    A mean = sum / static_cast<A>(d.d);
    A var = 0;
    for (int64_t j = 0; j < d.d; ++j) var += (static_cast<A>(row[j]) - mean) * (static_cast<A>(row[j]) - mean);
    A invstd = A(1) / std::sqrt(var / static_cast<A>(d.d) + static_cast<A>(eps));
    out.mean[r] = static_cast<T>(mean);
    out.invstd[r] = static_cast<T>(invstd);
    for (int64_t j = 0; j < d.d; ++j)
      out.y[r * d.d + j] = static_cast<T>((static_cast<A>(row[j]) - mean) * invstd * static_cast<A>(weight[j]) +
                                          static_cast<A>(bias[j]));
  }
  return out;
}

template <class T, class A>
NormGrads<T> layernorm_backward(const Buf<T>& dy, const Buf<T>& x, const Buf<T>& weight, const Buf<T>& mean,
                                const Buf<T>& invstd, const std::vector<int64_t>& normalized_shape) {
  LnDims d = ln_dims("layernorm_backward", x.shape, normalized_shape, weight.shape);
  expect_shape("layernorm_backward", "dy", dy.shape, x.shape);
  expect_shape("layernorm_backward", "mean", mean.shape, d.lead);
  expect_shape("layernorm_backward", "invstd", invstd.shape, d.lead);
  Buf<A> dw(normalized_shape), db(normalized_shape);
  Buf<T> dx(x.shape);
  for (int64_t r = 0; r < d.rows; ++r) {
    A mu = static_cast<A>(mean[r]), is = static_cast<A>(invstd[r]);
    A mean_g = 0, mean_gx = 0;  // means over the row of g = dy*w and g*xhat
    for (int64_t j = 0; j < d.d; ++j) {
      int64_t k = r * d.d + j;
      A xhat = (static_cast<A>(x[k]) - mu) * is;
      A g = static_cast<A>(dy[k]) * static_cast<A>(weight[j]);
      mean_g += g;
      mean_gx += g * xhat;
      dw[j] += static_cast<A>(dy[k]) * xhat;
      db[j] += static_cast<A>(dy[k]);
    }
    mean_g /= static_cast<A>(d.d);
    mean_gx /= static_cast<A>(d.d);
    for (int64_t j = 0; j < d.d; ++j) {
      int64_t k = r * d.d + j;
      A xhat = (static_cast<A>(x[k]) - mu) * is;
      A g = static_cast<A>(dy[k]) * static_cast<A>(weight[j]);
      dx[k] = static_cast<T>(is * (g - mean_g - xhat * mean_gx));
    }
  }
  return {dx, cast_buf<T>(dw), cast_buf<T>(db)};
}

#define DNNC_INSTANTIATE(T, A)                                                                                    \
  template BatchNormOut<T> batchnorm2d_forward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&, const Buf<T>&,  \
                                                     const Buf<T>&, double, double);                              \
  template Buf<T> batchnorm2d_infer<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&, const Buf<T>&,             \
                                          const Buf<T>&, double);                                                 \
  template NormGrads<T> batchnorm2d_backward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&, const Buf<T>&,    \
                                                   const Buf<T>&);                                                \
  template LayerNormOut<T> layernorm_forward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&,                   \
                                                   const std::vector<int64_t>&, double);                          \
  template NormGrads<T> layernorm_backward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&, const Buf<T>&,      \
                                                 const Buf<T>&, const std::vector<int64_t>&);
DNNC_INSTANTIATE(float, float)
DNNC_INSTANTIATE(float, double)
DNNC_INSTANTIATE(double, double)
#undef DNNC_INSTANTIATE

// ---- kernel table entries -------------------------------------------------------------------

namespace {
std::vector<Tensor> grads_out(const NormGrads<float>& g) {
  return {to_tensor(g.dx), to_tensor(g.dweight), to_tensor(g.dbias)};
}
}  // namespace

void register_norm_kernels(KernelTable& t) {
  t["batchnorm2d"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      BatchNormOut<float> r = batchnorm2d_forward<float, A>(
          f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2), f32_operand(c, 3), f32_operand(c, 4),
          ir::attr_float(c.at(), "eps"), ir::attr_float(c.at(), "momentum"));
      return std::vector<Tensor>{to_tensor(r.y), to_tensor(r.mean), to_tensor(r.invstd), to_tensor(r.running_mean),
                                 to_tensor(r.running_var)};
    });
  };
  t["batchnorm2d_infer"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(batchnorm2d_infer<float, A>(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2),
                                                    f32_operand(c, 3), f32_operand(c, 4),
                                                    ir::attr_float(c.at(), "eps")));
    });
  };
  t["batchnorm2d_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return grads_out(batchnorm2d_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2),
                                                      f32_operand(c, 3), f32_operand(c, 4)));
    });
  };
  t["layernorm"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      LayerNormOut<float> r =
          layernorm_forward<float, A>(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2),
                                      ir::attr_ints(c.at(), "normalized_shape"), ir::attr_float(c.at(), "eps"));
      return std::vector<Tensor>{to_tensor(r.y), to_tensor(r.mean), to_tensor(r.invstd)};
    });
  };
  t["layernorm_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return grads_out(layernorm_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2),
                                                    f32_operand(c, 3), f32_operand(c, 4),
                                                    ir::attr_ints(c.at(), "normalized_shape")));
    });
  };
}

}  // namespace dnnc::runtime::reference
