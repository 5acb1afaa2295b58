// Reference kernels for broadcasting binary ops, reduce_sum and the softmax family on
// hand-computed cases.
#include <cmath>

#include "runtime/reference/kernels_binary.h"
#include "runtime/reference/kernels_reduce.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

TEST_CASE("add broadcasts a row over a matrix", "[reference][binary]") {
  BufF a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  BufF b = make<float>({3}, {10, 20, 30});
  require_close(add_forward(a, b), make({2, 3}, {11, 22, 33, 14, 25, 36}));
  require_close(sub_forward(b, a), make({2, 3}, {9, 18, 27, 6, 15, 24}));
}

TEST_CASE("mul of a column and a row is their outer product", "[reference][binary]") {
  BufF col = make<float>({2, 1}, {2, 3});
  BufF row = make<float>({1, 3}, {1, 10, 100});
  require_close(mul_forward(col, row), make({2, 3}, {2, 20, 200, 3, 30, 300}));
  require_close(div_forward(row, col), make({2, 3}, {0.5, 5, 50, 1.0 / 3, 10.0 / 3, 100.0 / 3}), 1e-5);
}

TEST_CASE("a scalar tensor broadcasts against anything", "[reference][binary]") {
  BufF s = make<float>({}, {2});
  BufF x = make<float>({2, 2}, {1, 2, 3, 4});
  require_close(mul_forward(x, s), make({2, 2}, {2, 4, 6, 8}));
  CHECK(broadcast_shape("add", {4, 1, 3}, {2, 1}) == dnnc::runtime::reference::Shape{4, 2, 3});
}

TEST_CASE("binary ops reject shapes that do not broadcast", "[reference][binary]") {
  CHECK_THROWS_WITH(add_forward(make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), make<float>({2}, {1, 2})),
                    Catch::Contains("[2,3]") && Catch::Contains("[2]"));
}

TEST_CASE("reduce_sum over one axis, several axes, negative axes and keepdim", "[reference][reduce]") {
  // x[i][j][k] = 100 i + 10 j + k, shape [2, 2, 3]
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) v.push_back(100 * i + 10 * j + k);
  BufF x = make<float>({2, 2, 3}, v);
  require_close(reduce_sum_forward<float, float>(x, {0}, false), make({2, 3}, {100, 102, 104, 120, 122, 124}));
  require_close(reduce_sum_forward<float, float>(x, {-1}, false), make({2, 2}, {3, 33, 303, 333}));
  require_close(reduce_sum_forward<float, float>(x, {0, 2}, true), make({1, 2, 1}, {306, 366}));
  require_close(reduce_sum_forward<float, double>(x, {0, 1, 2}, false), make({}, {672}));
  CHECK_THROWS_AS((reduce_sum_forward<float, float>(x, {3}, false)), std::runtime_error);
  CHECK_THROWS_AS((reduce_sum_forward<float, float>(x, {1, -2}, false)), std::runtime_error);
}

TEST_CASE("fp64 accumulation makes a long float sum exact", "[reference][reduce]") {
  BufF x(dnnc::runtime::reference::Shape{1 << 20}, 0.1f);
  double exact = static_cast<double>(0.1f) * (1 << 20);
  double f32 = reduce_sum_forward<float, float>(x, {0}, false)[0];
  double f64 = reduce_sum_forward<float, double>(x, {0}, false)[0];
  CHECK(std::abs(f64 - exact) <= exact * 1e-7);
  CHECK(std::abs(f32 - exact) > std::abs(f64 - exact));
}

TEST_CASE("softmax of logs gives the normalised weights and rows sum to 1", "[reference][softmax]") {
  BufD x = make({2, 3}, {0, std::log(2.0), std::log(3.0), 5, 5, 5});
  BufD y = softmax_forward<double, double>(x, -1);
  require_close(y, make({2, 3}, {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3}), 1e-12);
  BufD by_col = softmax_forward<double, double>(x, 0);
  for (int j = 0; j < 3; ++j) CHECK(std::abs(by_col[j] + by_col[3 + j] - 1.0) < 1e-12);
}

TEST_CASE("softmax and log_softmax do not overflow on large logits", "[reference][softmax]") {
  BufF x = make<float>({1, 2}, {1000, 1001});
  double e = std::exp(1.0);
  require_close(softmax_forward<float, float>(x, 1), make({1, 2}, {1 / (1 + e), e / (1 + e)}), 1e-6);
  require_close(log_softmax_forward<float, float>(x, 1), make({1, 2}, {-std::log(1 + e), 1 - std::log(1 + e)}), 1e-5);
}

TEST_CASE("log_softmax is the log of softmax along a middle axis", "[reference][softmax]") {
  std::mt19937_64 rng(11);
  BufD x = random_buf({2, 4, 3}, rng, -3, 3);
  BufD ls = log_softmax_forward<double, double>(x, 1);
  BufD s = softmax_forward<double, double>(x, 1);
  for (int64_t i = 0; i < s.numel(); ++i) REQUIRE(std::abs(std::log(s[i]) - ls[i]) < 1e-12);
  CHECK_THROWS_AS((softmax_forward<double, double>(x, 3)), std::runtime_error);
}
