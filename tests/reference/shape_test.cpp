// Reference kernels for flatten, reshape and transpose on hand-computed cases.
#include "runtime/reference/kernels_shape.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

TEST_CASE("flatten merges start_dim..end_dim and keeps the data", "[reference][shape]") {
  BufF x = make<float>({2, 3, 2, 2}, std::vector<double>(24, 1.0));
  CHECK(flatten_forward(x, 1, -1).shape == dnnc::runtime::reference::Shape{2, 12});
  CHECK(flatten_forward(x, 1, 2).shape == dnnc::runtime::reference::Shape{2, 6, 2});
  CHECK(flatten_forward(x, 1, 2).data == x.data);
  CHECK_THROWS_AS(flatten_forward(x, 2, 1), std::runtime_error);
}

TEST_CASE("reshape infers its single -1 and rejects mismatched counts", "[reference][shape]") {
  BufF x = make<float>({4, 6}, std::vector<double>(24, 2.0));
  CHECK(reshape_forward(x, {-1, 2, 3}).shape == dnnc::runtime::reference::Shape{4, 2, 3});
  CHECK(reshape_forward(x, {24}).shape == dnnc::runtime::reference::Shape{24});
  CHECK_THROWS_AS(reshape_forward(x, {5, -1}), std::runtime_error);
  CHECK_THROWS_AS(reshape_forward(x, {-1, -1}), std::runtime_error);
  CHECK_THROWS_AS(reshape_forward(x, {4, 5}), std::runtime_error);
}

TEST_CASE("transpose permutes dims as torch.permute", "[reference][shape]") {
  // x[i][j][k] = 100 i + 10 j + k, shape [2, 3, 2]; out = x.permute(2, 0, 1), shape [2, 2, 3].
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) v.push_back(100 * i + 10 * j + k);
  BufD out = transpose_forward(make({2, 3, 2}, v), {2, 0, 1});
  require_close(out, make({2, 2, 3}, {0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121}));
  Buf<int64_t> labels({2, 2}, std::vector<int64_t>{1, 2, 3, 4});
  CHECK(transpose_forward(labels, {1, 0}).data == std::vector<int64_t>{1, 3, 2, 4});
  CHECK_THROWS_AS(transpose_forward(make({2, 2}, {1, 2, 3, 4}), {0, 0}), std::runtime_error);
}
