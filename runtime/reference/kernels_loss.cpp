// Reference kernels for cross_entropy and mse_loss (forward and backward), and their table entries.
#include "runtime/reference/kernels_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

namespace {

void check_ce(const char* op, const Shape& logits, const Buf<int64_t>& target) {
  if (logits.size() != 2 || target.shape != Shape{logits[0]})
    kernel_error(op, "expected logits [B,C] and target [B], found " + shape_str(logits) + " and " + shape_str(target.shape));
  for (int64_t b = 0; b < target.numel(); ++b)
    if (target[b] < 0 || target[b] >= logits[1])
      kernel_error(op, "target[" + std::to_string(b) + "] = " + std::to_string(target[b]) + " is out of range for " +
                           std::to_string(logits[1]) + " classes");
}

void check_scalar(const char* op, const Shape& dloss) {
  if (shape_numel(dloss) != 1) kernel_error(op, "dloss must be a scalar, found " + shape_str(dloss));
}

}  // namespace

template <class T, class A>
Buf<T> cross_entropy_forward(const Buf<T>& logits, const Buf<int64_t>& target, double smoothing) {
  check_ce("cross_entropy", logits.shape, target);
  int64_t b_size = logits.dim(0), c_size = logits.dim(1);
  // PyTorch: (1 - e) * nll + e * mean over classes of -log_softmax, per row.
  const A e = static_cast<A>(smoothing);
  A total = 0;
  for (int64_t b = 0; b < b_size; ++b) {
    const T* row = logits.data.data() + b * c_size;
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < c_size; ++c) mx = std::max(mx, row[c]);
    A sum = 0, row_sum = 0;
    for (int64_t c = 0; c < c_size; ++c) {
      sum += static_cast<A>(std::exp(row[c] - mx));
      row_sum += static_cast<A>(row[c]);
    }
    A lse = std::log(sum) + static_cast<A>(mx);
    A nll = lse - static_cast<A>(row[target[b]]);
    total += e == 0 ? nll : (A(1) - e) * nll + e * (lse - row_sum / static_cast<A>(c_size));
  }
  return Buf<T>(Shape{}, static_cast<T>(total / static_cast<A>(b_size)));
}

template <class T, class A>
Buf<T> cross_entropy_backward(const Buf<T>& dloss, const Buf<T>& logits, const Buf<int64_t>& target,
                              double smoothing) {
  check_ce("cross_entropy_backward", logits.shape, target);
  check_scalar("cross_entropy_backward", dloss.shape);
  int64_t b_size = logits.dim(0), c_size = logits.dim(1);
  A scale = static_cast<A>(dloss[0]) / static_cast<A>(b_size);
  // The target distribution: (1 - e) on the label plus e / C everywhere.
  const A e = static_cast<A>(smoothing), hit = A(1) - e, spread = e / static_cast<A>(c_size);
  Buf<T> dx(logits.shape);
  for (int64_t b = 0; b < b_size; ++b) {
    const T* row = logits.data.data() + b * c_size;
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < c_size; ++c) mx = std::max(mx, row[c]);
    A sum = 0;
    for (int64_t c = 0; c < c_size; ++c) sum += static_cast<A>(std::exp(row[c] - mx));
    for (int64_t c = 0; c < c_size; ++c) {
      A p = static_cast<A>(std::exp(row[c] - mx)) / sum;
      dx[b * c_size + c] = static_cast<T>(scale * (p - (c == target[b] ? hit : A(0)) - spread));
    }
  }
  return dx;
}

template <class T, class A>
Buf<T> mse_loss_forward(const Buf<T>& pred, const Buf<T>& target) {
  if (pred.shape != target.shape)
    kernel_error("mse_loss", "pred is " + shape_str(pred.shape) + " but target is " + shape_str(target.shape));
  A sum = 0;
  for (int64_t i = 0; i < pred.numel(); ++i) {
    A d = static_cast<A>(pred[i]) - static_cast<A>(target[i]);
    sum += d * d;
  }
  return Buf<T>(Shape{}, static_cast<T>(sum / static_cast<A>(pred.numel())));
}

template <class T, class A>
Buf<T> mse_loss_backward(const Buf<T>& dloss, const Buf<T>& pred, const Buf<T>& target) {
  if (pred.shape != target.shape)
    kernel_error("mse_loss_backward", "pred is " + shape_str(pred.shape) + " but target is " + shape_str(target.shape));
  check_scalar("mse_loss_backward", dloss.shape);
  A scale = A(2) * static_cast<A>(dloss[0]) / static_cast<A>(pred.numel());
  Buf<T> dx(pred.shape);
  for (int64_t i = 0; i < pred.numel(); ++i)
    dx[i] = static_cast<T>(scale * (static_cast<A>(pred[i]) - static_cast<A>(target[i])));
  return dx;
}

#define DNNC_INSTANTIATE(T, A)                                                                          \
  template Buf<T> cross_entropy_forward<T, A>(const Buf<T>&, const Buf<int64_t>&, double);              \
  template Buf<T> cross_entropy_backward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<int64_t>&, double); \
  template Buf<T> mse_loss_forward<T, A>(const Buf<T>&, const Buf<T>&);                                 \
  template Buf<T> mse_loss_backward<T, A>(const Buf<T>&, const Buf<T>&, const Buf<T>&);
DNNC_INSTANTIATE(float, float)
DNNC_INSTANTIATE(float, double)
DNNC_INSTANTIATE(double, double)
#undef DNNC_INSTANTIATE

void register_loss_kernels(KernelTable& t) {
  t["cross_entropy"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(cross_entropy_forward<float, A>(f32_operand(c, 0), i64_operand(c, 1),
                                                        ir::attr_float(c.at(), "label_smoothing")));
    });
  };
  t["cross_entropy_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(cross_entropy_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), i64_operand(c, 2),
                                                         ir::attr_float(c.at(), "label_smoothing")));
    });
  };
  t["mse_loss"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(mse_loss_forward<float, A>(f32_operand(c, 0), f32_operand(c, 1)));
    });
  };
  t["mse_loss_backward"] = [](const KernelCall& c) {
    return with_accumulator(c.fp64_accumulate, [&]<class A>() {
      return one_output(mse_loss_backward<float, A>(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2)));
    });
  };
}

}  // namespace dnnc::runtime::reference
