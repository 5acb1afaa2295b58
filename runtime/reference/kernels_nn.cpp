// Reference kernels for linear, matmul and conv2d (forward and backward), and their table entries.
#include "runtime/reference/kernels_nn.h"

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

template <class T, class A>
Buf<T> linear_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>* bias) {
  if (x.rank() < 1 || weight.rank() != 2 || x.shape.back() != weight.dim(1))
    kernel_error("linear", "x " + shape_str(x.shape) + " does not match weight " + shape_str(weight.shape));
  int64_t in = weight.dim(1), out = weight.dim(0);
  if (bias && bias->shape != Shape{out})
    kernel_error("linear", "bias is " + shape_str(bias->shape) + ", expected [" + std::to_string(out) + "]");
  int64_t rows = shape_numel(Shape(x.shape.begin(), x.shape.end() - 1));
  Shape ys = x.shape;
  ys.back() = out;
  Buf<T> y(ys);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      A acc = bias ? static_cast<A>((*bias)[o]) : A(0);
      for (int64_t k = 0; k < in; ++k) acc += static_cast<A>(x[r * in + k]) * static_cast<A>(weight[o * in + k]);
      y[r * out + o] = static_cast<T>(acc);
    }
  return y;
}

template <class T, class A>
Buf<T> matmul_forward(const Buf<T>& a, const Buf<T>& b, bool transpose_a, bool transpose_b) {
  if (a.rank() != 2 || b.rank() != 2)
    kernel_error("matmul", "operands must be 2-d, found " + shape_str(a.shape) + " and " + shape_str(b.shape));
  int64_t m = transpose_a ? a.dim(1) : a.dim(0);
  int64_t k = transpose_a ? a.dim(0) : a.dim(1);
  int64_t kb = transpose_b ? b.dim(1) : b.dim(0);
  int64_t n = transpose_b ? b.dim(0) : b.dim(1);
  if (k != kb)
    kernel_error("matmul", "inner sizes differ: a " + shape_str(a.shape) + (transpose_a ? "ᵀ" : "") + ", b " +
                               shape_str(b.shape) + (transpose_b ? "ᵀ" : ""));
  auto at_a = [&](int64_t i, int64_t j) { return transpose_a ? a[j * m + i] : a[i * k + j]; };
  auto at_b = [&](int64_t i, int64_t j) { return transpose_b ? b[j * k + i] : b[i * n + j]; };
  Buf<T> c(Shape{m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      A acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += static_cast<A>(at_a(i, l)) * static_cast<A>(at_b(l, j));
      c[i * n + j] = static_cast<T>(acc);
    }
  return c;
}

int64_t conv_out_dim(const char* op, int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  if (stride < 1 || dilation < 1 || kernel < 1 || pad < 0)
    kernel_error(op, "kernel, stride and dilation must be >= 1 and padding >= 0");
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t out = (in + 2 * pad - span) / stride + 1;
  if (in + 2 * pad < span || out < 1)
    kernel_error(op, "window of " + std::to_string(span) + " does not fit an input of " + std::to_string(in) +
                         " with padding " + std::to_string(pad));
  return out;
}

namespace {

// Sizes of one convolution, checked.
struct ConvDims {
  int64_t b, c, h, w, o, cg, og, kh, kw, ho, wo;
};

ConvDims conv_dims(const char* op, const Shape& x, const Shape& wt, const Conv2dParams& p) {
  if (x.size() != 4 || wt.size() != 4)
    kernel_error(op, "expected x [B,C,H,W] and weight [O,C/g,kh,kw], found " + shape_str(x) + " and " + shape_str(wt));
  if (p.groups < 1 || wt[0] % p.groups != 0 || x[1] != wt[1] * p.groups)
    kernel_error(op, "x " + shape_str(x) + " and weight " + shape_str(wt) + " disagree for groups=" +
                         std::to_string(p.groups));
  ConvDims d{x[0], x[1], x[2], x[3], wt[0], wt[1], wt[0] / p.groups, wt[2], wt[3], 0, 0};
  d.ho = conv_out_dim(op, d.h, d.kh, p.stride[0], p.padding[0], p.dilation[0]);
  d.wo = conv_out_dim(op, d.w, d.kw, p.stride[1], p.padding[1], p.dilation[1]);
  return d;
}

// Visits every (b, o, oh, ow, ci, ki, kj, ih, iw) term of the convolution sum that lands
// inside the input; ci is the absolute input channel, cw the channel within the group.
template <class F>
void for_each_tap(const ConvDims& d, const Conv2dParams& p, F f) {
  for (int64_t b = 0; b < d.b; ++b)
    for (int64_t o = 0; o < d.o; ++o) {
      int64_t g = o / d.og;
      for (int64_t oh = 0; oh < d.ho; ++oh)
        for (int64_t ow = 0; ow < d.wo; ++ow)
          for (int64_t cw = 0; cw < d.cg; ++cw)
            for (int64_t ki = 0; ki < d.kh; ++ki) {
              int64_t ih = oh * p.stride[0] - p.padding[0] + ki * p.dilation[0];
              if (ih < 0 || ih >= d.h) continue;
              for (int64_t kj = 0; kj < d.kw; ++kj) {
                int64_t iw = ow * p.stride[1] - p.padding[1] + kj * p.dilation[1];
                if (iw < 0 || iw >= d.w) continue;
                int64_t ci = g * d.cg + cw;
                int64_t x_idx = ((b * d.c + ci) * d.h + ih) * d.w + iw;
                int64_t w_idx = ((o * d.cg + cw) * d.kh + ki) * d.kw + kj;
                int64_t y_idx = ((b * d.o + o) * d.ho + oh) * d.wo + ow;
                f(x_idx, w_idx, y_idx);
              }
            }
    }
}

}  // namespace

template <class T, class A>
Buf<T> conv2d_forward(const Buf<T>& x, const Buf<T>& weight, const Buf<T>* bias, const Conv2dParams& p) {
  ConvDims d = conv_dims("conv2d", x.shape, weight.shape, p);
  if (bias && bias->shape != Shape{d.o})
    kernel_error("conv2d", "bias is " + shape_str(bias->shape) + ", expected [" + std::to_string(d.o) + "]");
  Buf<A> acc(Shape{d.b, d.o, d.ho, d.wo});
  if (bias)
    for (int64_t i = 0; i < acc.numel(); ++i) acc[i] = static_cast<A>((*bias)[(i / (d.ho * d.wo)) % d.o]);
  for_each_tap(d, p, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[yi] += static_cast<A>(x[xi]) * static_cast<A>(weight[wi]);
  });
  return cast_buf<T>(acc);
}

template <class T, class A>
Buf<T> conv2d_backward_input(const Buf<T>& dy, const Buf<T>& weight, const Conv2dParams& p,
                             std::array<int64_t, 2> input_hw) {
  if (dy.rank() != 4 || weight.rank() != 4)
    kernel_error("conv2d_backward_input", "expected dy [B,O,Ho,Wo] and weight [O,C/g,kh,kw], found " +
                                              shape_str(dy.shape) + " and " + shape_str(weight.shape));
  Shape xs{dy.dim(0), weight.dim(1) * p.groups, input_hw[0], input_hw[1]};
  ConvDims d = conv_dims("conv2d_backward_input", xs, weight.shape, p);
  if (dy.shape != Shape{d.b, d.o, d.ho, d.wo})
    kernel_error("conv2d_backward_input", "dy is " + shape_str(dy.shape) + ", expected " +
                                              shape_str(Shape{d.b, d.o, d.ho, d.wo}));
  Buf<A> acc(xs);
  for_each_tap(d, p, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[xi] += static_cast<A>(dy[yi]) * static_cast<A>(weight[wi]);
  });
  return cast_buf<T>(acc);
}

template <class T, class A>
Buf<T> conv2d_backward_weight(const Buf<T>& dy, const Buf<T>& x, const Conv2dParams& p,
                              std::array<int64_t, 2> kernel) {
  if (dy.rank() != 4 || x.rank() != 4 || p.groups < 1 || x.dim(1) % p.groups != 0)
    kernel_error("conv2d_backward_weight", "expected dy [B,O,Ho,Wo] and x [B,C,H,W] with C divisible by groups, found " +
                                               shape_str(dy.shape) + " and " + shape_str(x.shape));
  Shape ws{dy.dim(1), x.dim(1) / p.groups, kernel[0], kernel[1]};
  ConvDims d = conv_dims("conv2d_backward_weight", x.shape, ws, p);
  if (dy.shape != Shape{d.b, d.o, d.ho, d.wo})
    kernel_error("conv2d_backward_weight", "dy is " + shape_str(dy.shape) + ", expected " +
                                               shape_str(Shape{d.b, d.o, d.ho, d.wo}));
  Buf<A> acc(ws);
  for_each_tap(d, p, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[wi] += static_cast<A>(dy[yi]) * static_cast<A>(x[xi]);
  });
  return cast_buf<T>(acc);
}

#define DNNC_INSTANTIATE(T, A)                                                                                 \
  template Buf<T> linear_forward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>*);                          \
  template Buf<T> matmul_forward<T, A>(const Buf<T>&, const Buf<T>&, bool, bool);                             \
  template Buf<T> conv2d_forward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>*, const Conv2dParams&);     \
  template Buf<T> conv2d_backward_input<T, A>(const Buf<T>&, const Buf<T>&, const Conv2dParams&,              \
                                              std::array<int64_t, 2>);                                        \
  template Buf<T> conv2d_backward_weight<T, A>(const Buf<T>&, const Buf<T>&, const Conv2dParams&,             \
                                               std::array<int64_t, 2>);
DNNC_INSTANTIATE(float, float)
DNNC_INSTANTIATE(float, double)
DNNC_INSTANTIATE(double, double)
#undef DNNC_INSTANTIATE

// ---- kernel table entries -------------------------------------------------------------------

namespace {
Conv2dParams conv_params(const KernelCall& c) {
  Conv2dParams p;
  p.stride = attr_pair(c.op, c.at(), "stride");
  p.padding = attr_pair(c.op, c.at(), "padding");
  p.dilation = attr_pair(c.op, c.at(), "dilation");
  p.groups = ir::attr_int(c.at(), "groups");
  return p;
}
}  // namespace

void register_nn_kernels(KernelTable& t) {
  t["linear"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      Buf<float> bias;
      if (c.num_inputs() > 2) bias = f32_operand(c, 2);
      return one_output(
          linear_forward<float, A>(f32_operand(c, 0), f32_operand(c, 1), c.num_inputs() > 2 ? &bias : nullptr));
    });
  };
  t["matmul"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(matmul_forward<float, A>(f32_operand(c, 0), f32_operand(c, 1),
                                                 ir::attr_bool(c.at(), "transpose_a"),
                                                 ir::attr_bool(c.at(), "transpose_b")));
    });
  };
  t["conv2d"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      Buf<float> bias;
      if (c.num_inputs() > 2) bias = f32_operand(c, 2);
      return one_output(conv2d_forward<float, A>(f32_operand(c, 0), f32_operand(c, 1),
                                                 c.num_inputs() > 2 ? &bias : nullptr, conv_params(c)));
    });
  };
  t["conv2d_backward_input"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(conv2d_backward_input<float, A>(f32_operand(c, 0), f32_operand(c, 1), conv_params(c),
                                                        attr_pair(c.op, c.at(), "input_hw")));
    });
  };
  t["conv2d_backward_weight"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(conv2d_backward_weight<float, A>(f32_operand(c, 0), f32_operand(c, 1), conv_params(c),
                                                         attr_pair(c.op, c.at(), "kernel")));
    });
  };
}

}  // namespace dnnc::runtime::reference
