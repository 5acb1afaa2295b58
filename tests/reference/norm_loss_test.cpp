// Reference kernels for batchnorm2d, layernorm, cross_entropy and mse_loss on hand-computed cases.
#include <cmath>

#include "runtime/reference/kernels_loss.h"
#include "runtime/reference/kernels_norm.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

namespace {
const double kEps = 1e-5;
double invstd(double var) { return 1.0 / std::sqrt(var + kEps); }
}  // namespace

TEST_CASE("batchnorm2d normalises per channel and updates running stats", "[reference][norm]") {
  // x [B=2, C=2, 1, 1]: channel 0 holds {1, 3} (mean 2, var 1, unbiased 2),
  // channel 1 holds {10, 20} (mean 15, var 25, unbiased 50).
  BufD x = make({2, 2, 1, 1}, {1, 10, 3, 20});
  BatchNormOut<double> r = batchnorm2d_forward<double, double>(x, make({2}, {1, 2}), make({2}, {0, 1}),
                                                               make({2}, {0, 0}), make({2}, {1, 1}), kEps, 0.1);
  require_close(r.y, make({2, 2, 1, 1}, {-invstd(1), -5 * invstd(25) * 2 + 1, invstd(1), 5 * invstd(25) * 2 + 1}), 1e-12);
  require_close(r.mean, make({2}, {2, 15}), 1e-12);
  require_close(r.invstd, make({2}, {invstd(1), invstd(25)}), 1e-12);
  require_close(r.running_mean, make({2}, {0.2, 1.5}), 1e-12);
  require_close(r.running_var, make({2}, {0.9 + 0.1 * 2, 0.9 + 0.1 * 50}), 1e-12);
}

TEST_CASE("batchnorm2d refuses a single value per channel", "[reference][norm]") {
  BufD one = make({1}, {1});
  CHECK_THROWS_WITH((batchnorm2d_forward<double, double>(make({1, 1, 1, 1}, {3}), one, one, one, one, kEps, 0.1)),
                    Catch::Contains("more than 1 value per channel"));
}

TEST_CASE("batchnorm2d_infer uses the running statistics", "[reference][norm]") {
  BufD y = batchnorm2d_infer<double, double>(make({1, 2, 1, 1}, {3, 8}), make({2}, {1, 1}), make({2}, {0, 0}),
                                             make({2}, {1, 2}), make({2}, {4, 9}), kEps);
  require_close(y, make({1, 2, 1, 1}, {2 / std::sqrt(4 + kEps), 6 / std::sqrt(9 + kEps)}), 1e-12);
}

TEST_CASE("layernorm normalises each row and returns mean and invstd of the leading dims", "[reference][norm]") {
  LayerNormOut<double> r = layernorm_forward<double, double>(make({2, 2}, {1, 3, 2, 2}), make({2}, {1, 1}),
                                                             make({2}, {0, 0.5}), {2}, kEps);
  require_close(r.y, make({2, 2}, {-invstd(1), invstd(1) + 0.5, 0, 0.5}), 1e-12);
  require_close(r.mean, make({2}, {2, 2}), 1e-12);
  require_close(r.invstd, make({2}, {invstd(1), invstd(0)}), 1e-9);
  CHECK_THROWS_AS((layernorm_forward<double, double>(make({2, 2}, {1, 2, 3, 4}), make({3}, {1, 1, 1}),
                                                     make({3}, {0, 0, 0}), {3}, kEps)),
                  std::runtime_error);
}

TEST_CASE("cross_entropy matches the closed form -log softmax[target], averaged", "[reference][loss]") {
  BufD logits = make({2, 3}, {0, 0, 0, 0, std::log(2.0), std::log(3.0)});
  Buf<int64_t> target({2}, std::vector<int64_t>{1, 2});
  // Row 0: -log(1/3); row 1: -log(3/6).
  require_close(cross_entropy_forward<double, double>(logits, target), make({}, {(std::log(3.0) + std::log(2.0)) / 2}),
                1e-12);
}

TEST_CASE("cross_entropy is stable for large logits", "[reference][loss]") {
  BufF logits = make<float>({1, 2}, {1000, 0});
  require_close(cross_entropy_forward<float, float>(logits, Buf<int64_t>({1}, std::vector<int64_t>{0})), make({}, {0}), 1e-6);
  require_close(cross_entropy_forward<float, float>(logits, Buf<int64_t>({1}, std::vector<int64_t>{1})), make({}, {1000}),
                1e-3);
}

TEST_CASE("cross_entropy names an out-of-range target", "[reference][loss]") {
  BufF logits = make<float>({2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_THROWS_WITH((cross_entropy_forward<float, float>(logits, Buf<int64_t>({2}, std::vector<int64_t>{0, 5}))),
                    Catch::Contains("target[1] = 5") && Catch::Contains("3 classes"));
  CHECK_THROWS_WITH((cross_entropy_backward<float, float>(make<float>({}, {1}), logits,
                                                          Buf<int64_t>({2}, std::vector<int64_t>{-1, 0}))),
                    Catch::Contains("target[0] = -1"));
}

TEST_CASE("cross_entropy_backward is dloss (softmax - onehot) / B", "[reference][loss]") {
  BufD d = cross_entropy_backward<double, double>(make({}, {2}), make({2, 3}, {0, 0, 0, 0, 0, 0}),
                                                  Buf<int64_t>({2}, std::vector<int64_t>{0, 2}));
  double t = 1.0 / 3;
  require_close(d, make({2, 3}, {(t - 1), t, t, t, t, (t - 1)}), 1e-12);
}

TEST_CASE("mse_loss and its backward on a small case", "[reference][loss]") {
  BufF pred = make<float>({3}, {1, 2, 3});
  BufF target = make<float>({3}, {1, 0, 0});
  require_close(mse_loss_forward<float, float>(pred, target), make({}, {13.0 / 3}), 1e-6);
  require_close(mse_loss_backward<float, float>(make<float>({}, {1.5}), pred, target), make({3}, {0, 2, 3}), 1e-6);
  CHECK_THROWS_AS((mse_loss_forward<float, float>(pred, make<float>({2}, {1, 2}))), std::runtime_error);
}
