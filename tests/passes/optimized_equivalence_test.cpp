// The whole optimized pipeline (simplify, fuse, schedule) computes exactly what the
// unoptimized train step computes: 3 steps of every model on fresh random inputs, through the
// reference interpreter, compared on outputs and every updated param (rel err <= 1e-5).
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "pass_test_util.h"
#include "runtime/reference/interpreter.h"

using namespace dnnc;
using runtime::Tensor;

namespace {

std::map<std::string, Tensor> random_batch(const ir::Graph& g, int64_t batch, std::mt19937& rng) {
  std::map<std::string, Tensor> in;
  for (ir::ValueId v : g.inputs) {
    const ir::TensorType& t = g.value(v).type;
    std::vector<int64_t> shape;
    for (ir::Dim d : t.shape) shape.push_back(d == ir::kBatch ? batch : d);
    Tensor x(t.dtype, shape);
    if (t.dtype == ir::DType::i64) {
      std::uniform_int_distribution<int64_t> cls(0, 9);
      for (int64_t i = 0; i < x.numel(); ++i) x.i64()[i] = cls(rng);
    } else {
      std::normal_distribution<float> n(0.f, 1.f);
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = n(rng);
    }
    in[g.value(v).name] = std::move(x);
  }
  return in;
}

}  // namespace

TEST_CASE("the optimized train step equals the unoptimized one on every model", "[passes][equivalence]") {
  for (const auto& e : std::filesystem::directory_iterator("models")) {
    if (e.path().extension() != ".dnn") continue;
    std::string file = e.path().string();
    ir::Module plain = frontend::compile_file(file);
    test::run_passes(plain, {"infer-shapes", "autodiff", "optimizer"});
    ir::Module opt = frontend::compile_file(file);
    test::run_passes(opt);
    auto params_a = runtime::reference::init_params(plain, 7);
    auto params_b = runtime::reference::init_params(opt, 7);
    std::mt19937 rng(11);
    for (int step = 0; step < 3; ++step) {
      auto batch = random_batch(*plain.graph("train_step"), 3, rng);
      auto out_a = runtime::reference::run_reference(plain, *plain.graph("train_step"), batch, params_a);
      auto out_b = runtime::reference::run_reference(opt, *opt.graph("train_step"), batch, params_b);
      REQUIRE(out_a.size() == out_b.size());
      for (size_t i = 0; i < out_a.size(); ++i) {
        INFO(file << " step " << step << " output " << i);
        CHECK(runtime::rel_error(out_b[i], out_a[i]) <= 1e-5);
      }
    }
    for (const auto& [name, t] : params_a.tensors) {
      INFO(file << " param " << name);
      if (t.dtype() != ir::DType::f32) continue;
      REQUIRE(params_b.find(name));
      CHECK(runtime::rel_error(*params_b.find(name), t) <= 1e-5);
    }
  }
}
