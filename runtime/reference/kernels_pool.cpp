// Reference kernels for maxpool2d/avgpool2d forward and backward, and their table entries.
#include "runtime/reference/kernels_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/reference/kernel_table.h"
#include "runtime/reference/kernels_nn.h"

namespace dnnc::runtime::reference {

namespace {

struct PoolDims {
  int64_t b, c, h, w, ho, wo;
};

PoolDims pool_dims(const char* op, const Shape& x, const Pool2dParams& p) {
  if (x.size() != 4) kernel_error(op, "expected x [B,C,H,W], found " + shape_str(x));
  for (int i = 0; i < 2; ++i)
    if (p.padding[static_cast<size_t>(i)] * 2 > p.kernel[static_cast<size_t>(i)])
      kernel_error(op, "padding must be at most half the kernel size");
  PoolDims d{x[0], x[1], x[2], x[3], 0, 0};
  d.ho = conv_out_dim(op, d.h, p.kernel[0], p.stride[0], p.padding[0], 1);
  d.wo = conv_out_dim(op, d.w, p.kernel[1], p.stride[1], p.padding[1], 1);
  return d;
}

void expect_dy(const char* op, const Shape& dy, const PoolDims& d) {
  Shape want{d.b, d.c, d.ho, d.wo};
  if (dy != want) kernel_error(op, "dy is " + shape_str(dy) + ", expected " + shape_str(want));
}

// Index (within the [H, W] plane) of the first maximum of output cell (oh, ow); a NaN counts
// as a new maximum wherever it appears (PyTorch's CPU kernel: `val > maxval || isnan(val)`).
template <class T>
int64_t argmax_in_window(const T* plane, const PoolDims& d, const Pool2dParams& p, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
  int64_t h1 = std::min(h0 + p.kernel[0], d.h), w1 = std::min(w0 + p.kernel[1], d.w);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  int64_t best = h0 * d.w + w0;
  T best_val = -std::numeric_limits<T>::infinity();
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw) {
      T v = plane[ih * d.w + iw];
      if (v > best_val || std::isnan(v)) {
        best_val = v;
        best = ih * d.w + iw;
      }
    }
  return best;
}

// The clipped window of output cell (oh, ow) and its divisor, as PyTorch's avg_pool2d.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const PoolDims& d, const Pool2dParams& p, bool count_include_pad, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
  int64_t h1 = std::min(h0 + p.kernel[0], d.h + p.padding[0]);
  int64_t w1 = std::min(w0 + p.kernel[1], d.w + p.padding[1]);
  int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, d.h);
  w1 = std::min(w1, d.w);
  int64_t divisor = count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

}  // namespace

template <class T>
Buf<T> maxpool2d_forward(const Buf<T>& x, const Pool2dParams& p) {
  PoolDims d = pool_dims("maxpool2d", x.shape, p);
  Buf<T> y(Shape{d.b, d.c, d.ho, d.wo});
  for (int64_t bc = 0; bc < d.b * d.c; ++bc) {
    const T* plane = x.data.data() + bc * d.h * d.w;
    for (int64_t oh = 0; oh < d.ho; ++oh)
      for (int64_t ow = 0; ow < d.wo; ++ow) y[(bc * d.ho + oh) * d.wo + ow] = plane[argmax_in_window(plane, d, p, oh, ow)];
  }
  return y;
}

template <class T, class A>
Buf<T> maxpool2d_backward(const Buf<T>& dy, const Buf<T>& x, const Pool2dParams& p) {
  PoolDims d = pool_dims("maxpool2d_backward", x.shape, p);
  expect_dy("maxpool2d_backward", dy.shape, d);
  Buf<A> dx(x.shape);
  for (int64_t bc = 0; bc < d.b * d.c; ++bc) {
    const T* plane = x.data.data() + bc * d.h * d.w;
    for (int64_t oh = 0; oh < d.ho; ++oh)
      for (int64_t ow = 0; ow < d.wo; ++ow)
        dx[bc * d.h * d.w + argmax_in_window(plane, d, p, oh, ow)] += static_cast<A>(dy[(bc * d.ho + oh) * d.wo + ow]);
  }
  return cast_buf<T>(dx);
}

template <class T, class A>
Buf<T> avgpool2d_forward(const Buf<T>& x, const Pool2dParams& p, bool count_include_pad) {
  PoolDims d = pool_dims("avgpool2d", x.shape, p);
  Buf<T> y(Shape{d.b, d.c, d.ho, d.wo});
  for (int64_t bc = 0; bc < d.b * d.c; ++bc)
    for (int64_t oh = 0; oh < d.ho; ++oh)
      for (int64_t ow = 0; ow < d.wo; ++ow) {
        AvgWindow win = avg_window(d, p, count_include_pad, oh, ow);
        A sum = 0;
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
          for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += static_cast<A>(x[(bc * d.h + ih) * d.w + iw]);
        y[(bc * d.ho + oh) * d.wo + ow] = win.divisor > 0 ? static_cast<T>(sum / static_cast<A>(win.divisor)) : T(0);
      }
  return y;
}

template <class T, class A>
Buf<T> avgpool2d_backward(const Buf<T>& dy, const Buf<T>& x, const Pool2dParams& p, bool count_include_pad) {
  PoolDims d = pool_dims("avgpool2d_backward", x.shape, p);
  expect_dy("avgpool2d_backward", dy.shape, d);
  Buf<A> dx(x.shape);
  for (int64_t bc = 0; bc < d.b * d.c; ++bc)
    for (int64_t oh = 0; oh < d.ho; ++oh)
      for (int64_t ow = 0; ow < d.wo; ++ow) {
        AvgWindow win = avg_window(d, p, count_include_pad, oh, ow);
        if (win.divisor <= 0) continue;
        A g = static_cast<A>(dy[(bc * d.ho + oh) * d.wo + ow]) / static_cast<A>(win.divisor);
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
          for (int64_t iw = win.w0; iw < win.w1; ++iw) dx[(bc * d.h + ih) * d.w + iw] += g;
      }
  return cast_buf<T>(dx);
}

template Buf<float> maxpool2d_forward(const Buf<float>&, const Pool2dParams&);
template Buf<double> maxpool2d_forward(const Buf<double>&, const Pool2dParams&);
#define DNNC_INSTANTIATE(T, A)                                                                     \
  template Buf<T> maxpool2d_backward<T, A>(const Buf<T>&, const Buf<T>&, const Pool2dParams&);    \
  template Buf<T> avgpool2d_forward<T, A>(const Buf<T>&, const Pool2dParams&, bool);              \
  template Buf<T> avgpool2d_backward<T, A>(const Buf<T>&, const Buf<T>&, const Pool2dParams&, bool);
DNNC_INSTANTIATE(float, float)
DNNC_INSTANTIATE(float, double)
DNNC_INSTANTIATE(double, double)
#undef DNNC_INSTANTIATE

// ---- kernel table entries -------------------------------------------------------------------

namespace {
Pool2dParams pool_params(const KernelCall& c) {
  Pool2dParams p;
  p.kernel = attr_pair(c.op, c.at(), "kernel");
  p.stride = ir::attr_ints(c.at(), "stride").empty() ? p.kernel : attr_pair(c.op, c.at(), "stride");
  p.padding = attr_pair(c.op, c.at(), "padding");
  return p;
}
}  // namespace

void register_pool_kernels(KernelTable& t) {
  t["maxpool2d"] = [](const KernelCall& c) { return one_output(maxpool2d_forward(f32_operand(c, 0), pool_params(c))); };
  t["maxpool2d_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(maxpool2d_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), pool_params(c)));
    });
  };
  t["avgpool2d"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(avgpool2d_forward<float, A>(f32_operand(c, 0), pool_params(c),
                                                    ir::attr_bool(c.at(), "count_include_pad")));
    });
  };
  t["avgpool2d_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(avgpool2d_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), pool_params(c),
                                                     ir::attr_bool(c.at(), "count_include_pad")));
    });
  };
}

}  // namespace dnnc::runtime::reference
