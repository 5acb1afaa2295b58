// The golden comparison helper itself: it passes equal tensors and flags relative errors above the
// tolerance, all-zero goldens (absolute error), shape differences and NaNs, with a useful report.
#include <catch2/catch.hpp>

#include <cmath>

#include "compare.h"

namespace dnnc::golden {
namespace {

runtime::Tensor f32(std::vector<int64_t> shape, std::vector<float> v) { return runtime::Tensor::from_f32(shape, v); }

TEST_CASE("compare_tensors passes a tensor within the relative tolerance", "[golden][compare]") {
  runtime::Tensor want = f32({2, 2}, {1.0f, -2.0f, 3.0f, 4.0f});
  runtime::Tensor got = f32({2, 2}, {1.0f, -2.0f, 3.0f, 4.00001f});
  Comparison c = compare_tensors("t", got, want, 1e-5);
  CHECK(c.ok);
  CHECK_FALSE(c.zero_ref);
  CHECK(c.error == Approx(1e-5 / std::sqrt(30.0)).epsilon(0.05));
}

TEST_CASE("compare_tensors reports the first mismatches and the largest difference", "[golden][compare]") {
  runtime::Tensor want = f32({4}, {1.0f, 2.0f, 3.0f, 4.0f});
  runtime::Tensor got = f32({4}, {1.0f, 2.5f, 3.0f, 3.0f});
  Comparison c = compare_tensors("case out.y", got, want, 1e-5);
  CHECK_FALSE(c.ok);
  CHECK(c.max_abs == 1.0);
  CHECK(c.max_abs_at == 3);
  CHECK_THAT(c.report, Catch::StartsWith("case out.y: rel err"));
  CHECK_THAT(c.report, Catch::Contains("[1] got 2.5, expected 2"));
  CHECK_THAT(c.report, Catch::Contains("[3] got 3, expected 4"));
  CHECK_THAT(c.report, Catch::Contains("largest abs difference 1 at [3]"));
}

TEST_CASE("compare_tensors uses the absolute error for an all-zero golden", "[golden][compare]") {
  runtime::Tensor want = f32({3}, {0.0f, 0.0f, 0.0f});
  CHECK(compare_tensors("z", f32({3}, {0.0f, 1e-7f, 0.0f}), want, 1e-5).ok);
  Comparison c = compare_tensors("z", f32({3}, {0.0f, 1e-3f, 0.0f}), want, 1e-5);
  CHECK(c.zero_ref);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.report, Catch::Contains("abs err (golden is all zero)"));
}

TEST_CASE("compare_tensors fails on a shape or dtype difference and on NaN", "[golden][compare]") {
  runtime::Tensor want = f32({2, 2}, {1, 2, 3, 4});
  Comparison shape = compare_tensors("s", f32({4}, {1, 2, 3, 4}), want, 1e-5);
  CHECK_FALSE(shape.ok);
  CHECK(shape.report == "s: got f32[4], expected f32[2,2]");
  CHECK_FALSE(compare_tensors("d", runtime::Tensor::from_i64({2, 2}, {1, 2, 3, 4}), want, 1e-5).ok);
  Comparison nan = compare_tensors("n", f32({2, 2}, {1, NAN, 3, 4}), want, 1e-5);
  CHECK_FALSE(nan.ok);
  CHECK(nan.max_abs_at == 1);
}

}  // namespace
}  // namespace dnnc::golden
