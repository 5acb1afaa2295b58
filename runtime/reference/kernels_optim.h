// Reference kernels for the optimizer updates, transcribing torch.optim.SGD / Adam / AdamW
// (single-tensor, foreach=False, CPU): tensor arithmetic in T with PyTorch's fused
// multiply-adds, Python-float coefficients computed in double and rounded to T where
// PyTorch rounds them.
#pragma once

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference {

struct SgdOptions {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

template <class T>
struct SgdOut {
  Buf<T> param;
  Buf<T> momentum_buf;  // only when momentum != 0
};

/// One SGD step. g = grad + wd·param; with momentum, buf = (step == 1) ? g :
/// momentum·buf + (1-dampening)·g and g = nesterov ? g + momentum·buf : buf; param - lr·g.
/// `step` is the step counter after this step's increment (1 on the first step);
/// `momentum_buf` may be null when momentum == 0. Throws on shape mismatches, a missing
/// momentum buffer when momentum != 0, or step < 1 with momentum.
template <class T>
SgdOut<T> sgd_update(const Buf<T>& param, const Buf<T>& grad, const Buf<T>* momentum_buf, double step,
                     const SgdOptions& o);

struct AdamOptions {
  double lr = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // false: Adam (L2 added to grad); true: AdamW (param *= 1 - lr·wd)
};

template <class T>
struct AdamOut {
  Buf<T> param, exp_avg, exp_avg_sq;
};

/// One Adam/AdamW step with `step` the counter after this step's increment (>= 1):
/// exp_avg = exp_avg·β1 + (1-β1)·g (torch 1.13's mul_/add_, not the later lerp_);
/// exp_avg_sq = exp_avg_sq·β2 + (1-β2)·g²; bias corrections
/// 1-β^step in double; param += -(lr/bc1) · exp_avg / (sqrt(exp_avg_sq)/sqrt(bc2) + eps).
/// Throws on shape mismatches or step < 1.
template <class T>
AdamOut<T> adam_update(const Buf<T>& param, const Buf<T>& grad, const Buf<T>& exp_avg, const Buf<T>& exp_avg_sq,
                       double step, const AdamOptions& o);

}  // namespace dnnc::runtime::reference
