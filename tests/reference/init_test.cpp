// init_params: InitSpec kinds, determinism per seed, per-param independence, bounds and errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/reference/interpreter.h"

using namespace dnnc;
using runtime::Tensor;
using runtime::reference::init_params;

namespace {
ir::Param param(const std::string& name, ir::Shape shape, std::string kind, double bound = 0,
                ir::DType dt = ir::DType::f32) {
  return ir::Param{name, ir::TensorType{dt, std::move(shape), ir::Layout::row_major}, ir::ParamRole::weight,
                   ir::InitSpec{std::move(kind), bound}, {}};
}
std::vector<float> values(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }
}  // namespace

TEST_CASE("init_params draws uniform values inside the bound with uniform statistics", "[reference][init]") {
  ir::Module m;
  m.params = {param("fc.weight", {100, 100}, "uniform", 0.25)};
  Tensor w = init_params(m, 7).tensors.at("fc.weight");
  REQUIRE(w.shape() == std::vector<int64_t>{100, 100});
  double sum = 0, sq = 0;
  for (float v : values(w)) {
    REQUIRE(std::abs(v) <= 0.25f);
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  double n = 10000, mean = sum / n;
  CHECK(std::abs(mean) < 0.01);                            // σ(mean) = 0.25/√3/100 ≈ 0.0014
  CHECK(std::abs(sq / n - 0.25 * 0.25 / 3) < 0.002);       // variance of U(-b, b) is b²/3
}

TEST_CASE("init_params is deterministic per seed and differs across seeds", "[reference][init]") {
  ir::Module m;
  m.params = {param("a", {64}, "uniform", 1.0)};
  CHECK(values(init_params(m, 1).tensors.at("a")) == values(init_params(m, 1).tensors.at("a")));
  CHECK(values(init_params(m, 1).tensors.at("a")) != values(init_params(m, 2).tensors.at("a")));
}

TEST_CASE("a param's initial values do not depend on the other params", "[reference][init]") {
  ir::Module one, two;
  one.params = {param("fc2.weight", {8, 4}, "uniform", 0.5)};
  two.params = {param("fc1.weight", {16, 8}, "uniform", 0.5), param("fc2.weight", {8, 4}, "uniform", 0.5)};
  CHECK(values(init_params(one, 3).tensors.at("fc2.weight")) == values(init_params(two, 3).tensors.at("fc2.weight")));
  // Same shape and seed, different names: different draws.
  ir::Module twins;
  twins.params = {param("p", {32}, "uniform", 0.5), param("q", {32}, "uniform", 0.5)};
  auto s = init_params(twins, 3);
  CHECK(values(s.tensors.at("p")) != values(s.tensors.at("q")));
}

TEST_CASE("init_params fills zeros and ones, in f32 and i64", "[reference][init]") {
  ir::Module m;
  m.params = {param("bn.running_mean", {3}, "zeros"), param("bn.running_var", {3}, "ones"),
              param("bn.num_batches_tracked", {}, "zeros", 0, ir::DType::i64), param("counter", {2}, "ones", 0, ir::DType::i64)};
  auto s = init_params(m, 0);
  CHECK(values(s.tensors.at("bn.running_mean")) == std::vector<float>{0, 0, 0});
  CHECK(values(s.tensors.at("bn.running_var")) == std::vector<float>{1, 1, 1});
  CHECK(s.tensors.at("bn.num_batches_tracked").dtype() == ir::DType::i64);
  CHECK(s.tensors.at("bn.num_batches_tracked").i64()[0] == 0);
  CHECK(s.tensors.at("counter").i64()[1] == 1);
}

TEST_CASE("init_params names the param it cannot initialise", "[reference][init]") {
  ir::Module m;
  m.params = {param("odd", {2}, "normal", 1.0)};
  CHECK_THROWS_WITH(init_params(m, 0), Catch::Contains("'odd'") && Catch::Contains("normal"));
  m.params = {param("batchy", {ir::kBatch, 2}, "zeros")};
  CHECK_THROWS_WITH(init_params(m, 0), Catch::Contains("'batchy'"));
  m.params = {param("labels", {2}, "uniform", 1.0, ir::DType::i64)};
  CHECK_THROWS_WITH(init_params(m, 0), Catch::Contains("'labels'") && Catch::Contains("f32"));
}

TEST_CASE("params too large for this machine's memory fail before allocating, naming the largest", "[reference][init]") {
  ir::Module m;
  m.name = "Huge";
  // 2e9 x 512 floats = 3.73 TiB: no overflow, just more than any machine here has.
  m.params = {param("fc1.weight", {512, 784}, "zeros"), param("fc2.weight", {2000000000, 512}, "uniform", 0.1)};
  try {
    init_params(m, 1);
    FAIL("init_params returned");
  } catch (const runtime::OutOfMemory& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains("model Huge: its 2 parameters and optimizer state need 3.73 TiB") &&
                        Catch::Contains("of memory is available; the largest is 'fc2.weight' f32[2000000000,512] (3.73 TiB)"));
  }
}

TEST_CASE("a tensor whose byte count overflows is an OutOfMemory error, not a crash", "[reference][init]") {
  CHECK_THROWS_AS(Tensor(ir::DType::f32, {int64_t{1} << 40, int64_t{1} << 30}), runtime::OutOfMemory);
  CHECK(runtime::format_bytes(512) == "512 B");
  CHECK(runtime::format_bytes(2.5 * 1024 * 1024) == "2.50 MiB");
}
