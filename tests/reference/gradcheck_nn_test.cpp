// Finite-difference checks in double of the GEMM, convolution, pooling and normalisation
// gradients: linear (via matmul + reduce_sum), matmul with transposes, conv2d backward
// input/weight, maxpool/avgpool backward, batchnorm2d/layernorm backward.
#include <algorithm>
#include <cmath>

#include "runtime/reference/kernels_nn.h"
#include "runtime/reference/kernels_norm.h"
#include "runtime/reference/kernels_pool.h"
#include "runtime/reference/kernels_reduce.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;
using S = dnnc::runtime::reference::Shape;

namespace {
const double kTol = 1e-7;
}  // namespace

TEST_CASE("gradcheck: linear's dx, dW, db are matmul and reduce_sum of dy", "[reference][gradcheck]") {
  std::mt19937_64 rng(21);
  BufD x = random_buf({4, 3}, rng), w = random_buf({5, 3}, rng), b = random_buf({5}, rng);
  BufD dy = random_buf({4, 5}, rng);
  BufD dx = matmul_forward<double, double>(dy, w, false, false);  // dy W
  BufD dw = matmul_forward<double, double>(dy, x, true, false);   // dyᵀ x
  BufD db = reduce_sum_forward<double, double>(dy, {0}, false);
  CHECK(rel_err(dx, numeric_grad(x, [&](const BufD& v) { return dot(dy, linear_forward<double, double>(v, w, &b)); })) < kTol);
  CHECK(rel_err(dw, numeric_grad(w, [&](const BufD& v) { return dot(dy, linear_forward<double, double>(x, v, &b)); })) < kTol);
  CHECK(rel_err(db, numeric_grad(b, [&](const BufD& v) { return dot(dy, linear_forward<double, double>(x, w, &v)); })) < kTol);
}

TEST_CASE("gradcheck: matmul with every transpose combination", "[reference][gradcheck]") {
  std::mt19937_64 rng(22);
  const int64_t m = 3, k = 4, n = 2;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("transpose_a " << ta << ", transpose_b " << tb);
      BufD a = random_buf(ta ? S{k, m} : S{m, k}, rng), b = random_buf(tb ? S{n, k} : S{k, n}, rng);
      BufD dy = random_buf({m, n}, rng);
      // The stored operand's gradient, each written as one matmul of (dy, other operand).
      BufD da = ta ? matmul_forward<double, double>(b, dy, tb, true) : matmul_forward<double, double>(dy, b, false, !tb);
      BufD db = tb ? matmul_forward<double, double>(dy, a, true, ta) : matmul_forward<double, double>(a, dy, !ta, false);
      CHECK(rel_err(da, numeric_grad(a, [&](const BufD& v) { return dot(dy, matmul_forward<double, double>(v, b, ta, tb)); })) <
            kTol);
      CHECK(rel_err(db, numeric_grad(b, [&](const BufD& v) { return dot(dy, matmul_forward<double, double>(a, v, ta, tb)); })) <
            kTol);
    }
}

TEST_CASE("gradcheck: conv2d backward input, weight and bias", "[reference][gradcheck]") {
  struct Case {
    const char* name;
    S x, w;
    Conv2dParams p;
  };
  const Case cases[] = {
      {"plain", {2, 2, 5, 4}, {3, 2, 3, 2}, {}},
      {"stride 2, padding 1", {1, 2, 6, 5}, {2, 2, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 1}},
      {"dilation (2,1), padding (2,1), stride (1,2)", {1, 1, 7, 6}, {2, 1, 3, 2}, {{1, 2}, {2, 1}, {2, 1}, 1}},
      {"groups 2, stride 2", {2, 4, 5, 5}, {6, 2, 2, 2}, {{2, 2}, {0, 1}, {1, 1}, 2}},
  };
  std::mt19937_64 rng(23);
  for (const Case& c : cases) {
    INFO(c.name);
    BufD x = random_buf(c.x, rng), w = random_buf(c.w, rng), bias = random_buf({c.w[0]}, rng);
    BufD y = conv2d_forward<double, double>(x, w, &bias, c.p);
    BufD dy = random_buf(y.shape, rng);
    BufD dx = conv2d_backward_input<double, double>(dy, w, c.p, {c.x[2], c.x[3]});
    BufD dw = conv2d_backward_weight<double, double>(dy, x, c.p, {c.w[2], c.w[3]});
    BufD db = reduce_sum_forward<double, double>(dy, {0, 2, 3}, false);
    CHECK(rel_err(dx, numeric_grad(x, [&](const BufD& v) { return dot(dy, conv2d_forward<double, double>(v, w, &bias, c.p)); })) <
          kTol);
    CHECK(rel_err(dw, numeric_grad(w, [&](const BufD& v) { return dot(dy, conv2d_forward<double, double>(x, v, &bias, c.p)); })) <
          kTol);
    CHECK(rel_err(db, numeric_grad(bias, [&](const BufD& v) { return dot(dy, conv2d_forward<double, double>(x, w, &v, c.p)); })) <
          kTol);
  }
}

TEST_CASE("gradcheck: maxpool2d and avgpool2d backward", "[reference][gradcheck]") {
  struct Case {
    const char* name;
    Pool2dParams p;
  };
  const Case cases[] = {
      {"2x2 stride 2", {{2, 2}, {2, 2}, {0, 0}}},
      {"3x3 stride 2 padding 1 (overlapping)", {{3, 3}, {2, 2}, {1, 1}}},
      {"2x3 stride (1,2) padding (1,0)", {{2, 3}, {1, 2}, {1, 0}}},
  };
  std::mt19937_64 rng(24);
  for (const Case& c : cases) {
    INFO(c.name);
    // Distinct values spaced well apart so no perturbation changes a window's argmax.
    BufD x({2, 2, 5, 6});
    std::vector<double> vals;
    for (int64_t i = 0; i < x.numel(); ++i) vals.push_back(0.1 * static_cast<double>(i));
    std::shuffle(vals.begin(), vals.end(), rng);
    x.data = vals;
    BufD dy_max = random_buf(maxpool2d_forward(x, c.p).shape, rng);
    CHECK(rel_err(maxpool2d_backward<double, double>(dy_max, x, c.p),
                  numeric_grad(x, [&](const BufD& v) { return dot(dy_max, maxpool2d_forward(v, c.p)); })) < kTol);
    for (bool include_pad : {true, false}) {
      INFO("count_include_pad " << include_pad);
      BufD dy = random_buf(avgpool2d_forward<double, double>(x, c.p, include_pad).shape, rng);
      CHECK(rel_err(avgpool2d_backward<double, double>(dy, x, c.p, include_pad), numeric_grad(x, [&](const BufD& v) {
              return dot(dy, avgpool2d_forward<double, double>(v, c.p, include_pad));
            })) < kTol);
    }
  }
}

TEST_CASE("gradcheck: batchnorm2d backward (training mode)", "[reference][gradcheck]") {
  std::mt19937_64 rng(25);
  BufD x = random_buf({3, 2, 2, 3}, rng, -2, 2), w = random_buf({2}, rng, 0.5, 1.5), b = random_buf({2}, rng);
  BufD rm = random_buf({2}, rng), rv = random_buf({2}, rng, 0.5, 1.5);
  BufD dy = random_buf(x.shape, rng);
  auto y_of = [&](const BufD& xv, const BufD& wv, const BufD& bv) {
    return batchnorm2d_forward<double, double>(xv, wv, bv, rm, rv, 1e-5, 0.1).y;
  };
  BatchNormOut<double> fwd = batchnorm2d_forward<double, double>(x, w, b, rm, rv, 1e-5, 0.1);
  NormGrads<double> g = batchnorm2d_backward<double, double>(dy, x, w, fwd.mean, fwd.invstd);
  CHECK(rel_err(g.dx, numeric_grad(x, [&](const BufD& v) { return dot(dy, y_of(v, w, b)); })) < kTol);
  CHECK(rel_err(g.dweight, numeric_grad(w, [&](const BufD& v) { return dot(dy, y_of(x, v, b)); })) < kTol);
  CHECK(rel_err(g.dbias, numeric_grad(b, [&](const BufD& v) { return dot(dy, y_of(x, w, v)); })) < kTol);
}

TEST_CASE("gradcheck: layernorm backward over one and two trailing dims", "[reference][gradcheck]") {
  std::mt19937_64 rng(26);
  for (const std::vector<int64_t>& ns : {std::vector<int64_t>{4}, std::vector<int64_t>{3, 4}}) {
    INFO("normalized_shape rank " << ns.size());
    BufD x = random_buf({2, 3, 4}, rng, -2, 2), w = random_buf(ns, rng, 0.5, 1.5), b = random_buf(ns, rng);
    BufD dy = random_buf(x.shape, rng);
    auto y_of = [&](const BufD& xv, const BufD& wv, const BufD& bv) {
      return layernorm_forward<double, double>(xv, wv, bv, ns, 1e-5).y;
    };
    LayerNormOut<double> fwd = layernorm_forward<double, double>(x, w, b, ns, 1e-5);
    NormGrads<double> g = layernorm_backward<double, double>(dy, x, w, fwd.mean, fwd.invstd, ns);
    CHECK(rel_err(g.dx, numeric_grad(x, [&](const BufD& v) { return dot(dy, y_of(v, w, b)); })) < kTol);
    CHECK(rel_err(g.dweight, numeric_grad(w, [&](const BufD& v) { return dot(dy, y_of(x, v, b)); })) < kTol);
    CHECK(rel_err(g.dbias, numeric_grad(b, [&](const BufD& v) { return dot(dy, y_of(x, w, v)); })) < kTol);
  }
}
