// Reference kernels for sgd_update and adam_update, and their table entries.
// PyTorch's CPU kernels evaluate `a.add_(b, alpha=s)` as fma(b, s, a) and
// `a.addcmul_(b, c, value=s)` as fma(s*b, c, a); the std::fma calls below mirror that, which
// makes these kernels bit-identical to torch 1.13's SGD/Adam/AdamW in float (checked against
// torch on this machine).
#include "runtime/reference/kernels_optim.h"

#include <algorithm>
#include <cmath>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

namespace {

void expect_like(const char* op, const char* what, const Shape& got, const Shape& param) {
  if (got != param) kernel_error(op, std::string(what) + " is " + shape_str(got) + " but param is " + shape_str(param));
}

}  // namespace

template <class T>
SgdOut<T> sgd_update(const Buf<T>& param, const Buf<T>& grad, const Buf<T>* momentum_buf, double step,
                     const SgdOptions& o) {
  expect_like("sgd_update", "grad", grad.shape, param.shape);
  Buf<T> d_p = grad;
  if (o.weight_decay != 0) {
    T wd = static_cast<T>(o.weight_decay);
    for (int64_t i = 0; i < d_p.numel(); ++i) d_p[i] = std::fma(param[i], wd, d_p[i]);
  }
  SgdOut<T> out;
  if (o.momentum != 0) {
    if (!momentum_buf) kernel_error("sgd_update", "momentum != 0 needs a momentum buffer operand");
    expect_like("sgd_update", "momentum_buf", momentum_buf->shape, param.shape);
    if (!(step >= 1)) kernel_error("sgd_update", "step must be >= 1, found " + std::to_string(step));
    Buf<T> buf = step == 1 ? d_p : *momentum_buf;
    if (step != 1) {
      T m = static_cast<T>(o.momentum), keep = static_cast<T>(1.0 - o.dampening);
      for (int64_t i = 0; i < buf.numel(); ++i) buf[i] = std::fma(d_p[i], keep, buf[i] * m);
    }
    if (o.nesterov) {
      T m = static_cast<T>(o.momentum);
      for (int64_t i = 0; i < d_p.numel(); ++i) d_p[i] = std::fma(buf[i], m, d_p[i]);
    } else {
      d_p = buf;
    }
    out.momentum_buf = std::move(buf);
  }
  out.param = param;
  T neg_lr = static_cast<T>(-o.lr);
  for (int64_t i = 0; i < param.numel(); ++i) out.param[i] = std::fma(d_p[i], neg_lr, param[i]);
  return out;
}

template <class T>
AdamOut<T> adam_update(const Buf<T>& param, const Buf<T>& grad, const Buf<T>& exp_avg, const Buf<T>& exp_avg_sq,
                       double step, const AdamOptions& o) {
  expect_like("adam_update", "grad", grad.shape, param.shape);
  expect_like("adam_update", "exp_avg", exp_avg.shape, param.shape);
  expect_like("adam_update", "exp_avg_sq", exp_avg_sq.shape, param.shape);
  if (!(step >= 1)) kernel_error("adam_update", "step must be >= 1, found " + std::to_string(step));
  AdamOut<T> out{param, exp_avg, exp_avg_sq};
  Buf<T> g = grad;
  if (o.decoupled) {
    T decay = static_cast<T>(1.0 - o.lr * o.weight_decay);
    for (int64_t i = 0; i < param.numel(); ++i) out.param[i] = out.param[i] * decay;
  } else if (o.weight_decay != 0) {
    T wd = static_cast<T>(o.weight_decay);
    for (int64_t i = 0; i < g.numel(); ++i) g[i] = std::fma(param[i], wd, g[i]);
  }
  // torch 1.13: exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1);
  //             exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  T b1 = static_cast<T>(o.beta1), w1 = static_cast<T>(1.0 - o.beta1);
  T b2 = static_cast<T>(o.beta2), w2 = static_cast<T>(1.0 - o.beta2);
  for (int64_t i = 0; i < g.numel(); ++i) {
    out.exp_avg[i] = std::fma(g[i], w1, out.exp_avg[i] * b1);
    out.exp_avg_sq[i] = std::fma(w2 * g[i], g[i], out.exp_avg_sq[i] * b2);
  }
  double bias_correction1 = 1.0 - std::pow(o.beta1, step);
  double bias_correction2 = 1.0 - std::pow(o.beta2, step);
  T neg_step_size = static_cast<T>(-(o.lr / bias_correction1));
  T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  T eps = static_cast<T>(o.eps);
  for (int64_t i = 0; i < g.numel(); ++i) {
    T denom = std::sqrt(out.exp_avg_sq[i]) / bc2_sqrt + eps;
    out.param[i] = out.param[i] + neg_step_size * out.exp_avg[i] / denom;
  }
  return out;
}

template SgdOut<float> sgd_update(const Buf<float>&, const Buf<float>&, const Buf<float>*, double, const SgdOptions&);
template SgdOut<double> sgd_update(const Buf<double>&, const Buf<double>&, const Buf<double>*, double,
                                   const SgdOptions&);
template AdamOut<float> adam_update(const Buf<float>&, const Buf<float>&, const Buf<float>&, const Buf<float>&,
                                    double, const AdamOptions&);
template AdamOut<double> adam_update(const Buf<double>&, const Buf<double>&, const Buf<double>&,
                                     const Buf<double>&, double, const AdamOptions&);

void register_optim_kernels(KernelTable& t) {
  t["clip_coef"] = [](const KernelCall& c) {
    // torch.nn.utils.clip_grad_norm_ in float: total_norm, then max_norm / (total_norm + 1e-6)
    // clamped to at most 1.
    float total_norm = std::sqrt(static_cast<float>(scalar_operand(c, 0)));
    float coef = static_cast<float>(ir::attr_float(c.at(), "max_norm")) / (total_norm + 1e-6f);
    return one_output(Buf<float>(Shape{}, std::isnan(coef) ? coef : std::min(coef, 1.0f)));
  };
  t["sgd_update"] = [](const KernelCall& c) {
    SgdOptions o;
    o.lr = ir::attr_float(c.at(), "lr");
    o.momentum = ir::attr_float(c.at(), "momentum");
    o.dampening = ir::attr_float(c.at(), "dampening");
    o.weight_decay = ir::attr_float(c.at(), "weight_decay");
    o.nesterov = ir::attr_bool(c.at(), "nesterov");
    Buf<float> buf;
    double step = 0;
    if (o.momentum != 0) {
      if (c.num_inputs() < 4) kernel_error("sgd_update", "momentum != 0 needs operands momentum_buf and step");
      buf = f32_operand(c, 2);
      step = scalar_operand(c, 3);
    }
    if (c.num_inputs() == (o.momentum != 0 ? 5u : 3u)) o.lr = scalar_operand(c, c.num_inputs() - 1);  // scheduled
    SgdOut<float> r = sgd_update(f32_operand(c, 0), f32_operand(c, 1), o.momentum != 0 ? &buf : nullptr, step, o);
    if (o.momentum == 0) return one_output(r.param);
    return std::vector<Tensor>{to_tensor(r.param), to_tensor(r.momentum_buf)};
  };
  t["adam_update"] = [](const KernelCall& c) {
    AdamOptions o;
    o.lr = ir::attr_float(c.at(), "lr");
    o.beta1 = ir::attr_float(c.at(), "beta1");
    o.beta2 = ir::attr_float(c.at(), "beta2");
    o.eps = ir::attr_float(c.at(), "eps");
    o.weight_decay = ir::attr_float(c.at(), "weight_decay");
    o.decoupled = ir::attr_bool(c.at(), "decoupled");
    if (c.num_inputs() == 6) o.lr = scalar_operand(c, 5);  // scheduled
    AdamOut<float> r = adam_update(f32_operand(c, 0), f32_operand(c, 1), f32_operand(c, 2), f32_operand(c, 3),
                                   scalar_operand(c, 4), o);
    return std::vector<Tensor>{to_tensor(r.param), to_tensor(r.exp_avg), to_tensor(r.exp_avg_sq)};
  };
}

}  // namespace dnnc::runtime::reference
