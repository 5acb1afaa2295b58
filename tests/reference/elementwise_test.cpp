// Reference kernels for maps, scalar ops, fill and dropout on small hand-computed cases.
#include <cmath>

#include "runtime/reference/kernels_elementwise.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

TEST_CASE("relu and leaky_relu clamp negatives", "[reference][elementwise]") {
  BufF x = make<float>({5}, {-2, -0.5, 0, 0.5, 2});
  require_close(relu_forward(x), make({5}, {0, 0, 0, 0.5, 2}));
  require_close(leaky_relu_forward(x, 0.1), make({5}, {-0.2, -0.05, 0, 0.5, 2}));
}

TEST_CASE("relu and leaky_relu backward use x > 0 (zero counts as negative)", "[reference][elementwise]") {
  BufF x = make<float>({4}, {-1, 0, 1e-3, 3});
  BufF dy = make<float>({4}, {2, 2, 2, 2});
  require_close(relu_backward(dy, x), make({4}, {0, 0, 2, 2}));
  require_close(leaky_relu_backward(dy, x, 0.25), make({4}, {0.5, 0.5, 2, 2}));
  CHECK_THROWS_AS(relu_backward(dy, make<float>({3}, {1, 2, 3})), std::runtime_error);
}

TEST_CASE("tanh and sigmoid at known points", "[reference][elementwise]") {
  // tanh(ln 2) = (2 - 1/2)/(2 + 1/2) = 0.6; sigmoid(ln 3) = 3/4.
  require_close(tanh_forward(make({2}, {std::log(2.0), 0})), make({2}, {0.6, 0}), 1e-12);
  require_close(sigmoid_forward(make({3}, {std::log(3.0), 0, -std::log(3.0)})), make({3}, {0.75, 0.5, 0.25}), 1e-12);
  BufF extreme = sigmoid_forward(make<float>({2}, {-200, 200}));
  CHECK(extreme[0] == 0.0f);
  CHECK(extreme[1] == 1.0f);
}

TEST_CASE("tanh and sigmoid backward from the forward output", "[reference][elementwise]") {
  BufD dy = make({2}, {2, -1});
  require_close(tanh_backward(dy, make({2}, {0.5, -0.5})), make({2}, {2 * 0.75, -0.75}), 1e-12);
  require_close(sigmoid_backward(dy, make({2}, {0.25, 0.5})), make({2}, {2 * 0.1875, -0.25}), 1e-12);
}

TEST_CASE("gelu is the exact erf form", "[reference][elementwise]") {
  // Φ(1) = 0.8413447460685429 (standard normal table), so gelu(±1) = ±Φ(±1).
  require_close(gelu_forward(make({3}, {0, 1, -1})), make({3}, {0, 0.8413447460685429, -0.15865525393145707}), 1e-12);
  // gelu'(0) = Φ(0) + 0 = 0.5; gelu'(1) = Φ(1) + φ(1), φ(1) = 0.24197072451914337.
  require_close(gelu_backward(make({2}, {1, 1}), make({2}, {0, 1})), make({2}, {0.5, 0.8413447460685429 + 0.24197072451914337}),
                1e-12);
}

TEST_CASE("scalar arithmetic, neg and fill", "[reference][elementwise]") {
  BufF x = make<float>({3}, {1, -2, 4});
  require_close(add_scalar_forward(x, 0.5), make({3}, {1.5, -1.5, 4.5}));
  require_close(mul_scalar_forward(x, -3), make({3}, {-3, 6, -12}));
  require_close(div_scalar_forward(x, 4), make({3}, {0.25, -0.5, 1}));
  require_close(neg_forward(x), make({3}, {-1, 2, -4}));
  BufF f = fill_forward<float>({2, 3}, 1.25);
  require_close(f, make({2, 3}, {1.25, 1.25, 1.25, 1.25, 1.25, 1.25}));
  CHECK_THROWS_AS(fill_forward<float>({2, -1}, 0), std::runtime_error);
}

TEST_CASE("dropout's hash is splitmix64 with its top 24 bits as the uniform", "[reference][dropout]") {
  // splitmix64's first output for state 0 is 0xe220a8397b1dcdaf (the generator's published
  // test vector), so (seed 0, step 0, index 0) draws 0xe220a8 / 2^24.
  CHECK(dropout_uniform(0, 0, 0) == static_cast<double>(0xe220a8) / 16777216.0);
  // seed ^ (step << 32) ^ index: (seed 1, step 0, index 0) is the same draw as (seed 0, index 1).
  CHECK(dropout_uniform(1, 0, 0) == dropout_uniform(0, 0, 1));
  CHECK(dropout_uniform(0, 1, 0) == dropout_uniform(uint64_t{1} << 32, 0, 0));
}

TEST_CASE("dropout keeps about 1-p of the elements, scaled by 1/(1-p)", "[reference][dropout]") {
  const int64_t n = 200000;
  BufF x(dnnc::runtime::reference::Shape{n}, 3.0f);
  DropoutOut<float> r = dropout_forward(x, 7, 0.3, 42);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool is_kept = r.mask[i] != 0.0f;
    kept += is_kept;
    if (is_kept) REQUIRE(r.mask[i] == static_cast<float>(1.0 / 0.7));
    REQUIRE(r.y[i] == x[i] * r.mask[i]);
  }
  CHECK(std::abs(static_cast<double>(kept) / n - 0.7) < 0.005);
}

TEST_CASE("dropout is a deterministic function of (seed, step, index)", "[reference][dropout]") {
  BufF x(dnnc::runtime::reference::Shape{1000}, 1.0f);
  DropoutOut<float> a = dropout_forward(x, 3, 0.5, 9);
  DropoutOut<float> b = dropout_forward(x, 3, 0.5, 9);
  DropoutOut<float> c = dropout_forward(x, 4, 0.5, 9);
  DropoutOut<float> d = dropout_forward(x, 3, 0.5, 10);
  CHECK(a.mask.data == b.mask.data);
  CHECK(a.mask.data != c.mask.data);
  CHECK(a.mask.data != d.mask.data);
}

TEST_CASE("dropout with p = 0 keeps everything and p = 1 drops everything", "[reference][dropout]") {
  BufF x = make<float>({4}, {1, 2, 3, 4});
  CHECK(dropout_forward(x, 1, 0.0, 5).y.data == x.data);
  require_close(dropout_forward(x, 1, 1.0, 5).y, make({4}, {0, 0, 0, 0}));
  CHECK_THROWS_AS(dropout_forward(x, 1, 1.5, 5), std::runtime_error);
  CHECK_THROWS_AS(dropout_forward(x, 1.5, 0.5, 5), std::runtime_error);
}
