// Reference kernels for linear, matmul and conv2d on tiny inputs computed by hand.
#include "runtime/reference/kernels_nn.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

TEST_CASE("linear computes x Wᵀ + b over leading dims", "[reference][nn]") {
  BufF w = make<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  BufF b = make<float>({3}, {0.5, 0, -1});
  BufF x = make<float>({2, 1, 2}, {1, 2, -1, 4});
  require_close(linear_forward<float, float>(x, w, &b), make({2, 1, 3}, {1.5, 2, 2, -0.5, 4, 2}));
  require_close(linear_forward<float, double>(x, w, nullptr), make({2, 1, 3}, {1, 2, 3, -1, 4, 3}));
  CHECK_THROWS_AS((linear_forward<float, float>(make<float>({1, 3}, {1, 2, 3}), w, &b)), std::runtime_error);
}

TEST_CASE("matmul reads each side transposed when asked", "[reference][nn]") {
  BufF a = make<float>({2, 2}, {1, 2, 3, 4});
  BufF b = make<float>({2, 2}, {5, 6, 7, 8});
  require_close(matmul_forward<float, float>(a, b, false, false), make({2, 2}, {19, 22, 43, 50}));
  require_close(matmul_forward<float, float>(a, b, true, false), make({2, 2}, {26, 30, 38, 44}));
  require_close(matmul_forward<float, float>(a, b, false, true), make({2, 2}, {17, 23, 39, 53}));
  require_close(matmul_forward<float, float>(a, b, true, true), make({2, 2}, {23, 31, 34, 46}));
}

TEST_CASE("matmul of non-square operands and mismatched inner sizes", "[reference][nn]") {
  BufF a = make<float>({1, 3}, {1, 2, 3});
  BufF b = make<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  require_close(matmul_forward<float, float>(a, b, false, false), make({1, 2}, {4, 5}));
  CHECK_THROWS_AS((matmul_forward<float, float>(a, b, true, false)), std::runtime_error);
}

namespace {
// x = 1..9 as [1, 1, 3, 3]; w = [[1, 0], [0, -1]] as [1, 1, 2, 2]: y = x[i,j] - x[i+1,j+1].
BufF x33() { return make<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }
BufF w22() { return make<float>({1, 1, 2, 2}, {1, 0, 0, -1}); }
}  // namespace

TEST_CASE("conv2d is a cross-correlation plus bias", "[reference][conv]") {
  BufF bias = make<float>({1}, {1});
  require_close(conv2d_forward<float, float>(x33(), w22(), nullptr, {}), make({1, 1, 2, 2}, {-4, -4, -4, -4}));
  require_close(conv2d_forward<float, float>(x33(), w22(), &bias, {}), make({1, 1, 2, 2}, {-3, -3, -3, -3}));
}

TEST_CASE("conv2d with stride and zero padding", "[reference][conv]") {
  Conv2dParams p;
  p.stride = {2, 2};
  p.padding = {1, 1};
  // Windows start at (-1,-1), (-1,1), (1,-1), (1,1): y = x[r,c] (top-left) - x[r+1,c+1].
  require_close(conv2d_forward<float, float>(x33(), w22(), nullptr, p), make({1, 1, 2, 2}, {-1, -3, -7, -4}));
}

TEST_CASE("conv2d with dilation spreads the taps", "[reference][conv]") {
  Conv2dParams p;
  p.dilation = {2, 2};
  require_close(conv2d_forward<float, float>(x33(), w22(), nullptr, p), make({1, 1, 1, 1}, {1 - 9}));
  // Dilation 2 along H only: y[0, j] = x[0, j] - x[2, j+1].
  p.dilation = {2, 1};
  require_close(conv2d_forward<float, float>(x33(), w22(), nullptr, p), make({1, 1, 1, 2}, {1 - 8, 2 - 9}));
}

TEST_CASE("conv2d with groups keeps channels apart", "[reference][conv]") {
  BufF x = make<float>({1, 2, 1, 1}, {2, 3});
  Conv2dParams p;
  p.groups = 2;
  require_close(conv2d_forward<float, float>(x, make<float>({2, 1, 1, 1}, {10, 100}), nullptr, p),
                make({1, 2, 1, 1}, {20, 300}));
  // Without groups, every output channel sees both inputs.
  require_close(conv2d_forward<float, float>(x, make<float>({2, 2, 1, 1}, {10, 100, 1, 1}), nullptr, {}),
                make({1, 2, 1, 1}, {320, 5}));
  CHECK_THROWS_AS((conv2d_forward<float, float>(x, make<float>({2, 2, 1, 1}, {1, 1, 1, 1}), nullptr, p)),
                  std::runtime_error);
}

TEST_CASE("conv2d backward ops scatter and gather through the same taps", "[reference][conv]") {
  // y = x[i,j] - x[i+1,j+1] with dy = 1 everywhere: dx[i,j] = (#windows with (i,j) top-left)
  // - (#windows with (i,j) bottom-right); dw[0,0] = sum of top-left taps, dw[1,1] likewise.
  BufF dy = make<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  require_close(conv2d_backward_input<float, float>(dy, w22(), {}, {3, 3}),
                make({1, 1, 3, 3}, {1, 1, 0, 1, 0, -1, 0, -1, -1}));
  require_close(conv2d_backward_weight<float, float>(dy, x33(), {}, {2, 2}),
                make({1, 1, 2, 2}, {1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9}));
  CHECK_THROWS_AS((conv2d_backward_input<float, float>(dy, w22(), {}, {4, 4})), std::runtime_error);
}
