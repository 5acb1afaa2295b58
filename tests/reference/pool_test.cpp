// Reference kernels for maxpool2d/avgpool2d forward and backward on hand-computed cases,
// including ties and padding.
#include <limits>

#include "runtime/reference/kernels_pool.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

namespace {
Pool2dParams pool(int64_t k, int64_t s, int64_t p = 0) {
  Pool2dParams r;
  r.kernel = {k, k};
  r.stride = {s, s};
  r.padding = {p, p};
  return r;
}
}  // namespace

TEST_CASE("maxpool2d takes each window's max (floor mode)", "[reference][pool]") {
  BufF x = make<float>({1, 1, 4, 5}, {1, 5, 2, 0, 9, 3, 4, 8, 6, 9, 0, 1, 2, 3, 9, 7, 2, 5, 4, 9});
  // 2x2 windows, stride 2: the last column is dropped (floor mode).
  require_close(maxpool2d_forward(x, pool(2, 2)), make({1, 1, 2, 2}, {5, 8, 7, 5}));
}

TEST_CASE("maxpool2d backward routes ties to the first max in row-major order", "[reference][pool]") {
  BufF x = make<float>({1, 1, 2, 4}, {3, 3, 1, 7, 3, 3, 7, 2});
  BufF dy = make<float>({1, 1, 1, 2}, {10, 20});
  require_close(maxpool2d_backward<float, float>(dy, x, pool(2, 2)), make({1, 1, 2, 4}, {10, 0, 0, 20, 0, 0, 0, 0}));
}

TEST_CASE("maxpool2d backward sums where overlapping windows share a max", "[reference][pool]") {
  BufF x = make<float>({1, 1, 1, 3}, {0, 5, 1});
  Pool2dParams p;
  p.kernel = {1, 2};
  p.stride = {1, 1};
  p.padding = {0, 0};
  require_close(maxpool2d_forward(x, p), make({1, 1, 1, 2}, {5, 5}));
  require_close(maxpool2d_backward<float, float>(make<float>({1, 1, 1, 2}, {1, 2}), x, p), make({1, 1, 1, 3}, {0, 3, 0}));
}

TEST_CASE("maxpool2d padding never wins over negative inputs", "[reference][pool]") {
  BufF x = make<float>({1, 1, 2, 2}, {-1, -2, -3, -4});
  require_close(maxpool2d_forward(x, pool(2, 2, 1)), make({1, 1, 2, 2}, {-1, -2, -3, -4}));
  CHECK_THROWS_AS(maxpool2d_forward(x, pool(2, 2, 2)), std::runtime_error);  // padding > kernel/2
}

TEST_CASE("maxpool2d propagates NaN", "[reference][pool]") {
  BufF x = make<float>({1, 1, 2, 2}, {1, std::numeric_limits<double>::quiet_NaN(), 5, 2});
  CHECK(std::isnan(maxpool2d_forward(x, pool(2, 2))[0]));
}

TEST_CASE("avgpool2d divides by the padded or the clipped window", "[reference][pool]") {
  BufF x = make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  require_close(avgpool2d_forward<float, float>(x, pool(2, 2), true), make({1, 1, 1, 1}, {2.5}));
  // Padding 1: each 2x2 window holds one real element.
  require_close(avgpool2d_forward<float, float>(x, pool(2, 2, 1), true), make({1, 1, 2, 2}, {0.25, 0.5, 0.75, 1}));
  require_close(avgpool2d_forward<float, float>(x, pool(2, 2, 1), false), make({1, 1, 2, 2}, {1, 2, 3, 4}));
}

TEST_CASE("avgpool2d backward spreads dy with the forward divisor", "[reference][pool]") {
  BufF x = make<float>({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Pool2dParams p;
  p.kernel = {2, 2};
  p.stride = {1, 1};
  p.padding = {0, 0};
  // Two overlapping windows share the middle column.
  require_close(avgpool2d_backward<float, float>(make<float>({1, 1, 1, 2}, {4, 8}), x, p, true),
                make({1, 1, 2, 3}, {1, 3, 2, 1, 3, 2}));
  require_close(avgpool2d_backward<float, float>(make<float>({1, 1, 2, 2}, {4, 4, 4, 4}),
                                                 make<float>({1, 1, 2, 2}, {0, 0, 0, 0}), pool(2, 2, 1), false),
                make({1, 1, 2, 2}, {4, 4, 4, 4}));
}
