// Finite-difference checks in double of the backward ops of activations, the softmax family,
// the losses, reduce_sum and broadcasting binary ops: each analytic gradient (from the
// backward kernel, with a random upstream dy) against central differences of Σ dy·forward.
#include <cmath>

#include "runtime/reference/kernels_binary.h"
#include "runtime/reference/kernels_elementwise.h"
#include "runtime/reference/kernels_loss.h"
#include "runtime/reference/kernels_reduce.h"
#include "runtime/reference/kernels_shape.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;
using S = dnnc::runtime::reference::Shape;

namespace {

const double kTol = 1e-7;

// Random values with |x| >= margin, so kinks at 0 (relu, leaky_relu) are never crossed by h.
BufD away_from_zero(S shape, std::mt19937_64& rng, double margin = 0.05) {
  BufD x = random_buf(std::move(shape), rng, -2, 2);
  for (auto& v : x.data)
    if (std::abs(v) < margin) v = v < 0 ? -margin : margin;
  return x;
}

// Σ over the dims of `grad` that `target` broadcast along, reshaped to `target` (autodiff's
// "sum to shape" for a broadcast operand).
BufD sum_to(const BufD& grad, const S& target) {
  size_t off = grad.rank() - target.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < grad.rank(); ++d)
    if (d < off || target[d - off] == 1) axes.push_back(static_cast<int64_t>(d));
  if (axes.empty()) return grad;
  return reshape_forward(reduce_sum_forward<double, double>(grad, axes, true), target);
}

}  // namespace

TEST_CASE("gradcheck: relu and leaky_relu away from 0", "[reference][gradcheck]") {
  std::mt19937_64 rng(1);
  BufD x = away_from_zero({3, 5}, rng);
  BufD dy = random_buf(x.shape, rng);
  CHECK(rel_err(relu_backward(dy, x), numeric_grad(x, [&](const BufD& v) { return dot(dy, relu_forward(v)); })) < kTol);
  CHECK(rel_err(leaky_relu_backward(dy, x, 0.2),
                numeric_grad(x, [&](const BufD& v) { return dot(dy, leaky_relu_forward(v, 0.2)); })) < kTol);
}

TEST_CASE("gradcheck: tanh, sigmoid (from y) and gelu (from x)", "[reference][gradcheck]") {
  std::mt19937_64 rng(2);
  BufD x = random_buf({4, 3}, rng, -3, 3);
  BufD dy = random_buf(x.shape, rng);
  CHECK(rel_err(tanh_backward(dy, tanh_forward(x)),
                numeric_grad(x, [&](const BufD& v) { return dot(dy, tanh_forward(v)); })) < kTol);
  CHECK(rel_err(sigmoid_backward(dy, sigmoid_forward(x)),
                numeric_grad(x, [&](const BufD& v) { return dot(dy, sigmoid_forward(v)); })) < kTol);
  CHECK(rel_err(gelu_backward(dy, x), numeric_grad(x, [&](const BufD& v) { return dot(dy, gelu_forward(v)); })) < kTol);
}

TEST_CASE("gradcheck: softmax and log_softmax along each axis", "[reference][gradcheck]") {
  std::mt19937_64 rng(3);
  BufD x = random_buf({2, 3, 4}, rng, -2, 2);
  BufD dy = random_buf(x.shape, rng);
  for (int64_t axis : {0, 1, -1}) {
    INFO("axis " << axis);
    BufD y = softmax_forward<double, double>(x, axis);
    CHECK(rel_err(softmax_backward<double, double>(dy, y, axis), numeric_grad(x, [&](const BufD& v) {
            return dot(dy, softmax_forward<double, double>(v, axis));
          })) < kTol);
    BufD ly = log_softmax_forward<double, double>(x, axis);
    CHECK(rel_err(log_softmax_backward<double, double>(dy, ly, axis), numeric_grad(x, [&](const BufD& v) {
            return dot(dy, log_softmax_forward<double, double>(v, axis));
          })) < kTol);
  }
}

TEST_CASE("gradcheck: cross_entropy with respect to the logits", "[reference][gradcheck]") {
  std::mt19937_64 rng(4);
  BufD logits = random_buf({5, 4}, rng, -3, 3);
  Buf<int64_t> target({5}, std::vector<int64_t>{0, 3, 1, 1, 2});
  const double dloss = 0.7;
  for (double smoothing : {0.0, 0.1, 1.0}) {
    INFO("label_smoothing " << smoothing);
    BufD analytic = cross_entropy_backward<double, double>(make({}, {dloss}), logits, target, smoothing);
    BufD numeric = numeric_grad(logits, [&](const BufD& v) {
      return dloss * cross_entropy_forward<double, double>(v, target, smoothing)[0];
    });
    CHECK(rel_err(analytic, numeric) < kTol);
  }
}

TEST_CASE("gradcheck: mse_loss with respect to the prediction", "[reference][gradcheck]") {
  std::mt19937_64 rng(5);
  BufD pred = random_buf({3, 4}, rng), target = random_buf({3, 4}, rng);
  const double dloss = -1.3;
  BufD analytic = mse_loss_backward<double, double>(make({}, {dloss}), pred, target);
  BufD numeric = numeric_grad(pred, [&](const BufD& v) { return dloss * mse_loss_forward<double, double>(v, target)[0]; });
  CHECK(rel_err(analytic, numeric) < kTol);
}

TEST_CASE("gradcheck: reduce_sum's gradient is dy broadcast back", "[reference][gradcheck]") {
  std::mt19937_64 rng(6);
  BufD x = random_buf({2, 3, 4}, rng);
  for (bool keepdim : {false, true}) {
    BufD dy = random_buf(keepdim ? S{2, 1, 4} : S{2, 4}, rng);
    BufD dy_kept = reshape_forward(dy, {2, 1, 4});
    BufD analytic = mul_forward(BufD(x.shape, 1.0), dy_kept);
    BufD numeric =
        numeric_grad(x, [&](const BufD& v) { return dot(dy, reduce_sum_forward<double, double>(v, {1}, keepdim)); });
    CHECK(rel_err(analytic, numeric) < kTol);
  }
}

TEST_CASE("gradcheck: broadcasting add, sub, mul, div via sum-to-shape", "[reference][gradcheck]") {
  std::mt19937_64 rng(7);
  BufD a = random_buf({2, 1, 3}, rng, 0.5, 2);
  BufD b = random_buf({4, 1}, rng, 0.5, 2);  // broadcasts to [2, 4, 3]
  BufD dy = random_buf({2, 4, 3}, rng);
  auto check = [&](auto fwd, const BufD& da, const BufD& db) {
    BufD na = numeric_grad(a, [&](const BufD& v) { return dot(dy, fwd(v, b)); });
    BufD nb = numeric_grad(b, [&](const BufD& v) { return dot(dy, fwd(a, v)); });
    CHECK(rel_err(da, na) < kTol);
    CHECK(rel_err(db, nb) < kTol);
  };
  SECTION("add") { check([](const BufD& x, const BufD& y) { return add_forward(x, y); }, sum_to(dy, a.shape), sum_to(dy, b.shape)); }
  SECTION("sub") {
    check([](const BufD& x, const BufD& y) { return sub_forward(x, y); }, sum_to(dy, a.shape),
          sum_to(neg_forward(dy), b.shape));
  }
  SECTION("mul") {
    check([](const BufD& x, const BufD& y) { return mul_forward(x, y); }, sum_to(mul_forward(dy, b), a.shape),
          sum_to(mul_forward(dy, a), b.shape));
  }
  SECTION("div") {
    // d(a/b)/da = 1/b; d(a/b)/db = -a/b².
    BufD db = neg_forward(div_forward(mul_forward(dy, a), mul_forward(b, b)));
    check([](const BufD& x, const BufD& y) { return div_forward(x, y); }, sum_to(div_forward(dy, b), a.shape),
          sum_to(db, b.shape));
  }
}
