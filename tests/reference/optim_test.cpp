// Reference optimizer kernels against closed forms and against torch.optim's SGD/Adam/AdamW
// formulas re-derived here in double, over several steps.
#include <cmath>

#include "runtime/reference/kernels_optim.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

namespace {

// torch.optim.SGD.step for one parameter, element by element in double.
struct SgdOracle {
  SgdOptions o;
  std::vector<double> buf;
  bool has_buf = false;
  void step(std::vector<double>& p, const std::vector<double>& grad) {
    std::vector<double> d(grad);
    for (size_t i = 0; i < p.size(); ++i) d[i] += o.weight_decay * p[i];
    if (o.momentum != 0) {
      if (!has_buf) {
        buf = d;
        has_buf = true;
      } else {
        for (size_t i = 0; i < p.size(); ++i) buf[i] = o.momentum * buf[i] + (1 - o.dampening) * d[i];
      }
      for (size_t i = 0; i < p.size(); ++i) d[i] = o.nesterov ? d[i] + o.momentum * buf[i] : buf[i];
    }
    for (size_t i = 0; i < p.size(); ++i) p[i] -= o.lr * d[i];
  }
};

// torch.optim.Adam / AdamW.step for one parameter, element by element in double.
struct AdamOracle {
  AdamOptions o;
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& grad) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (o.decoupled) p[i] *= 1 - o.lr * o.weight_decay;
      else g += o.weight_decay * p[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      double m_hat = m[i] / (1 - std::pow(o.beta1, t));
      double v_hat_sqrt = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t));
      p[i] -= o.lr * m_hat / (v_hat_sqrt + o.eps);
    }
  }
};

// Gradients that change from step to step.
std::vector<BufD> grad_sequence(std::mt19937_64& rng, int steps, const dnnc::runtime::reference::Shape& shape) {
  std::vector<BufD> gs;
  for (int s = 0; s < steps; ++s) gs.push_back(random_buf(shape, rng));
  return gs;
}

void check_sgd(const SgdOptions& o) {
  std::mt19937_64 rng(5);
  BufD p = random_buf({3, 4}, rng);
  std::vector<BufD> grads = grad_sequence(rng, 4, p.shape);
  std::vector<double> want = p.data;
  SgdOracle oracle{o, {}, false};
  BufD buf(p.shape);
  BufF p32 = cast_buf<float>(p), buf32(p.shape);
  for (int s = 0; s < 4; ++s) {
    oracle.step(want, grads[static_cast<size_t>(s)].data);
    SgdOut<double> r = sgd_update(p, grads[static_cast<size_t>(s)], o.momentum != 0 ? &buf : nullptr, s + 1, o);
    SgdOut<float> r32 = sgd_update(p32, cast_buf<float>(grads[static_cast<size_t>(s)]),
                                   o.momentum != 0 ? &buf32 : nullptr, s + 1, o);
    p = r.param;
    buf = r.momentum_buf;
    p32 = r32.param;
    buf32 = r32.momentum_buf;
    CHECK(rel_err(p, BufD(p.shape, want)) < 1e-14);
    CHECK(rel_err(p32, BufD(p.shape, want)) < 1e-6);
  }
}

void check_adam(const AdamOptions& o) {
  std::mt19937_64 rng(6);
  BufD p = random_buf({5, 2}, rng);
  std::vector<BufD> grads = grad_sequence(rng, 5, p.shape);
  std::vector<double> want = p.data;
  AdamOracle oracle{o, {}, {}, 0};
  BufD m(p.shape), v(p.shape);
  BufF p32 = cast_buf<float>(p), m32(p.shape), v32(p.shape);
  for (int s = 0; s < 5; ++s) {
    oracle.step(want, grads[static_cast<size_t>(s)].data);
    AdamOut<double> r = adam_update(p, grads[static_cast<size_t>(s)], m, v, s + 1, o);
    AdamOut<float> r32 = adam_update(p32, cast_buf<float>(grads[static_cast<size_t>(s)]), m32, v32, s + 1, o);
    p = r.param, m = r.exp_avg, v = r.exp_avg_sq;
    p32 = r32.param, m32 = r32.exp_avg, v32 = r32.exp_avg_sq;
    CHECK(rel_err(p, BufD(p.shape, want)) < 1e-13);
    CHECK(rel_err(m, BufD(p.shape, oracle.m)) < 1e-13);
    CHECK(rel_err(v, BufD(p.shape, oracle.v)) < 1e-13);
    CHECK(rel_err(p32, BufD(p.shape, want)) < 1e-6);
  }
}

}  // namespace

TEST_CASE("sgd without momentum is param - lr * grad", "[reference][optim]") {
  SgdOptions o;
  o.lr = 0.5;
  SgdOut<double> r = sgd_update(make({2}, {1, 2}), make({2}, {0.2, -4}), static_cast<const BufD*>(nullptr), 0, o);
  require_close(r.param, make({2}, {0.9, 4}), 1e-15);
}

TEST_CASE("sgd momentum copies the gradient on step 1 and accumulates after", "[reference][optim]") {
  SgdOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  BufD g = make({1}, {1});
  BufD stale = make({1}, {123});  // ignored on step 1, as PyTorch starts the buffer from the gradient
  SgdOut<double> s1 = sgd_update(make({1}, {0}), g, &stale, 1, o);
  require_close(s1.momentum_buf, make({1}, {1}), 1e-15);
  require_close(s1.param, make({1}, {-0.1}), 1e-15);
  SgdOut<double> s2 = sgd_update(s1.param, g, &s1.momentum_buf, 2, o);
  require_close(s2.momentum_buf, make({1}, {1.9}), 1e-15);
  require_close(s2.param, make({1}, {-0.1 - 0.19}), 1e-15);
  CHECK_THROWS_AS(sgd_update(make({1}, {0}), g, static_cast<const BufD*>(nullptr), 1, o), std::runtime_error);
}

TEST_CASE("sgd matches torch.optim.SGD over several steps", "[reference][optim]") {
  SECTION("momentum with dampening and weight decay") {
    check_sgd(SgdOptions{0.05, 0.9, 0.25, 0.01, false});
  }
  SECTION("nesterov with weight decay") {
    check_sgd(SgdOptions{0.1, 0.8, 0.0, 0.001, true});
  }
  SECTION("plain with weight decay") {
    check_sgd(SgdOptions{0.3, 0.0, 0.0, 0.1, false});
  }
}

TEST_CASE("adam's first step moves each weight by about lr against the gradient's sign", "[reference][optim]") {
  // exp_avg = (1-β1) g, exp_avg_sq = (1-β2) g², so the step is lr g / (|g| + eps).
  AdamOptions o;
  o.lr = 0.01;
  AdamOut<double> r = adam_update(make({3}, {1, 1, 1}), make({3}, {2, -0.5, 1e-3}), make({3}, {0, 0, 0}),
                                  make({3}, {0, 0, 0}), 1, o);
  require_close(r.param, make({3}, {1 - 0.01 * 2 / (2 + 1e-8), 1 + 0.01 * 0.5 / (0.5 + 1e-8), 1 - 0.01 * 1e-3 / (1e-3 + 1e-8)}),
                1e-14);
  CHECK_THROWS_AS(adam_update(make({1}, {1}), make({1}, {1}), make({1}, {0}), make({1}, {0}), 0, o), std::runtime_error);
}

TEST_CASE("adam matches torch.optim.Adam over several steps", "[reference][optim]") {
  check_adam(AdamOptions{0.01, 0.9, 0.999, 1e-8, 0.0, false});
  check_adam(AdamOptions{0.003, 0.8, 0.99, 1e-6, 0.05, false});
}

TEST_CASE("adamw decays the weight before the Adam step", "[reference][optim]") {
  check_adam(AdamOptions{0.01, 0.9, 0.999, 1e-8, 0.1, true});
}
