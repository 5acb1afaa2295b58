// Shared helpers for cpu backend tests: the test cache, models through the pipeline, seeded
// random inputs, and comparisons against the reference interpreter.
#pragma once
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

#include "frontend/frontend.h"
#include "passes/pass_manager.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::test {

/// Options of a cpu backend whose cache is the build tree's shared test cache.
inline runtime::cpu::CpuOptions cpu_test_options() {
  runtime::cpu::CpuOptions o;
  o.jit.cache_dir = DNNC_TEST_CACHE_DIR;
  return o;
}

inline ir::Module pipeline_model(const std::string& path) {
  ir::Module m = frontend::compile_file(path);
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::run_pipeline(m, r, {});
  return m;
}

/// Random values for every input of `g` at batch `batch`: f32 uniform in [-1, 1), i64 labels
/// uniform in [0, classes).
inline std::map<std::string, runtime::Tensor> random_inputs(const ir::Graph& g, int64_t batch, std::mt19937& rng,
                                                            int64_t classes = 10) {
  std::map<std::string, runtime::Tensor> out;
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.value(id);
    std::vector<int64_t> shape;
    for (ir::Dim d : v.type.shape) shape.push_back(d == ir::kBatch ? batch : d);
    runtime::Tensor t(v.type.dtype, shape);
    if (v.type.dtype == ir::DType::i64) {
      std::uniform_int_distribution<int64_t> d(0, classes - 1);
      for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = d(rng);
    } else {
      std::uniform_real_distribution<float> d(-1.0f, 1.0f);
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = d(rng);
    }
    out[v.name] = std::move(t);
  }
  return out;
}

/// Checks rel_error(got, want) <= tol (and equality for i64 tensors), naming `what`.
inline void check_close(const runtime::Tensor& got, const runtime::Tensor& want, const std::string& what,
                        double tol = 1e-5) {
  INFO(what << ": got " << runtime::describe(got) << ", want " << runtime::describe(want));
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (got.dtype() == ir::DType::i64) {
    for (int64_t i = 0; i < got.numel(); ++i) REQUIRE(got.i64()[i] == want.i64()[i]);
    return;
  }
  double err = runtime::rel_error(got, want);
  INFO("relative error " << err);
  CHECK(err <= tol);
}

}  // namespace dnnc::test
