// The reference interpreter on small hand-built graphs: results, traces, update semantics,
// attribute defaults, fp64 accumulation and its input/param validation errors.
#include "runtime/reference/interpreter.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "ir/graph.h"

using namespace dnnc;
using runtime::Tensor;
using runtime::reference::ParamStore;
using runtime::reference::RefOptions;
using runtime::reference::run_reference;
using runtime::reference::ValueTrace;

namespace {

ir::TensorType f32(ir::Shape s) { return ir::TensorType{ir::DType::f32, std::move(s), ir::Layout::row_major}; }
ir::TensorType i64(ir::Shape s) { return ir::TensorType{ir::DType::i64, std::move(s), ir::Layout::row_major}; }
const ir::Dim N = ir::kBatch;

// x [N, 2] -> linear(fc.weight [3, 2], fc.bias [3]) -> relu; params set by hand.
struct TinyMlp {
  ir::Module m;
  ParamStore params;
  TinyMlp() {
    m.name = "tiny";
    m.params.push_back({"fc.weight", f32({3, 2}), ir::ParamRole::weight, {"uniform", 0.5}, {}});
    m.params.push_back({"fc.bias", f32({3}), ir::ParamRole::weight, {"zeros", 0}, {}});
    ir::Graph g;
    g.name = "forward";
    ir::ValueId x = g.add_input("x", f32({N, 2}));
    ir::ValueId w = g.param("fc.weight", f32({3, 2}));
    ir::ValueId b = g.param("fc.bias", f32({3}));
    ir::ValueId h = g.add_node("linear", {x, w, b}, {}, {f32({N, 3})}, {}, {"h"})[0];
    ir::ValueId y = g.add_node("relu", {h}, {}, {f32({N, 3})}, {}, {"y"})[0];
    g.outputs = {y};
    m.graphs.push_back(g);
    params.tensors["fc.weight"] = Tensor::from_f32({3, 2}, {1, 0, 0, 1, 1, 1});
    params.tensors["fc.bias"] = Tensor::from_f32({3}, {0.5, 0, -10});
  }
  const ir::Graph& graph() const { return m.graphs[0]; }
};

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

}  // namespace

TEST_CASE("interpreter runs a linear + relu graph", "[reference][interpreter]") {
  TinyMlp t;
  std::vector<Tensor> out = run_reference(t.m, t.graph(), {{"x", Tensor::from_f32({2, 2}, {1, 2, -3, 1})}}, t.params);
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == std::vector<int64_t>{2, 3});
  // h = [[1.5, 2, -7], [-2.5, 1, -12]] -> relu
  CHECK(values(out[0]) == std::vector<float>{1.5, 2, 0, 0, 1, 0});
}

TEST_CASE("interpreter trace holds every value by name", "[reference][interpreter]") {
  TinyMlp t;
  runtime::reference::ValueTrace trace;
  run_reference(t.m, t.graph(), {{"x", Tensor::from_f32({1, 2}, {1, 2})}}, t.params, {}, &trace);
  for (const char* name : {"x", "fc.weight", "fc.bias", "h", "y"}) CHECK(trace.count(name) == 1);
  CHECK(values(trace.at("h")) == std::vector<float>{1.5, 2, -7});
}

TEST_CASE("interpreter validates inputs: missing, dtype, shape, batch", "[reference][interpreter]") {
  ir::Module m;
  m.name = "v";
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N, 2}));
  ir::ValueId label = g.add_input("label", i64({N}));
  ir::ValueId loss = g.add_node("cross_entropy", {x, label}, {}, {f32({})}, {}, {"loss"})[0];
  g.outputs = {loss};
  ParamStore none;
  Tensor x4 = Tensor::from_f32({4, 2}, std::vector<float>(8, 0.0f));
  CHECK_THROWS_WITH(run_reference(m, g, {{"x", x4}}, none),
                    Catch::Contains("input 'label'") && Catch::Contains("not given"));
  CHECK_THROWS_WITH(
      run_reference(m, g, {{"x", x4}, {"label", Tensor::from_f32({4}, {0, 0, 0, 0})}}, none),
      Catch::Contains("input 'label'") && Catch::Contains("expected i64[N]") && Catch::Contains("f32[4]"));
  CHECK_THROWS_WITH(run_reference(m, g,
                                  {{"x", Tensor::from_f32({4, 3}, std::vector<float>(12, 0))},
                                   {"label", Tensor::from_i64({4}, {0, 0, 0, 0})}},
                                  none),
                    Catch::Contains("input 'x'") && Catch::Contains("f32[4,3]"));
  CHECK_THROWS_WITH(
      run_reference(m, g, {{"x", x4}, {"label", Tensor::from_i64({5}, {0, 0, 0, 0, 0})}}, none),
      Catch::Contains("input 'label'") && Catch::Contains("batch size 5") && Catch::Contains("'x' (batch 4)"));
}

TEST_CASE("interpreter reports a label out of range with the node and the index", "[reference][interpreter]") {
  ir::Module m;
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N, 3}));
  ir::ValueId label = g.add_input("label", i64({N}));
  g.outputs = {g.add_node("cross_entropy", {x, label}, {}, {f32({})}, {}, {"loss"})[0]};
  ParamStore none;
  CHECK_THROWS_WITH(
      run_reference(
          m, g, {{"x", Tensor::from_f32({2, 3}, std::vector<float>(6, 0))}, {"label", Tensor::from_i64({2}, {1, 7})}},
          none),
      Catch::Contains("%loss = cross_entropy") && Catch::Contains("target[1] = 7"));
}

TEST_CASE("interpreter validates params: missing and mis-shaped", "[reference][interpreter]") {
  TinyMlp t;
  std::map<std::string, Tensor> in{{"x", Tensor::from_f32({1, 2}, {1, 2})}};
  ParamStore missing = t.params;
  missing.tensors.erase("fc.bias");
  CHECK_THROWS_WITH(run_reference(t.m, t.graph(), in, missing), Catch::Contains("param 'fc.bias'"));
  ParamStore wrong = t.params;
  wrong.tensors["fc.weight"] = Tensor::from_f32({2, 3}, std::vector<float>(6, 0));
  CHECK_THROWS_WITH(run_reference(t.m, t.graph(), in, wrong), Catch::Contains("param 'fc.weight'") &&
                                                                  Catch::Contains("expected f32[3,2]") &&
                                                                  Catch::Contains("f32[2,3]"));
}

TEST_CASE("interpreter applies updates after the run; every node reads the old values", "[reference][interpreter]") {
  ir::Module m;
  m.name = "upd";
  ir::Graph g;
  g.name = "train_step";
  ir::ValueId x = g.add_input("x", f32({N, 2}));
  ir::ValueId w = g.param("w", f32({2}));
  ir::ValueId a = g.param("a", f32({1}));
  ir::ValueId b = g.param("b", f32({1}));
  ir::ValueId out = g.add_node("add", {x, w}, {}, {f32({N, 2})}, {}, {"out"})[0];
  ir::ValueId w2 = g.add_node("mul_scalar", {w}, {{"value", 2.0}}, {f32({2})}, {}, {"w2"})[0];
  ir::ValueId late = g.add_node("add", {w, w}, {}, {f32({2})}, {}, {"late"})[0];  // after w2, still old w
  g.outputs = {out, late};
  g.updates = {{"w", w2}, {"a", b}, {"b", a}};  // a and b swap: both must read the old values
  ParamStore p;
  p.tensors["w"] = Tensor::from_f32({2}, {1, 10});
  p.tensors["a"] = Tensor::from_f32({1}, {3});
  p.tensors["b"] = Tensor::from_f32({1}, {4});
  std::map<std::string, Tensor> in{{"x", Tensor::from_f32({1, 2}, {100, 200})}};
  std::vector<Tensor> r1 = run_reference(m, g, in, p);
  CHECK(values(r1[0]) == std::vector<float>{101, 210});
  CHECK(values(r1[1]) == std::vector<float>{2, 20});
  CHECK(values(p.tensors.at("w")) == std::vector<float>{2, 20});
  CHECK(values(p.tensors.at("a")) == std::vector<float>{4});
  CHECK(values(p.tensors.at("b")) == std::vector<float>{3});
  std::vector<Tensor> r2 = run_reference(m, g, in, p);
  CHECK(values(r2[0]) == std::vector<float>{102, 220});
}

TEST_CASE("interpreter fills attribute defaults from the op registry", "[reference][interpreter]") {
  ir::Module m;
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N}));
  g.outputs = {g.add_node("leaky_relu", {x}, {}, {f32({N})})[0]};
  ParamStore none;
  std::vector<Tensor> out = run_reference(m, g, {{"x", Tensor::from_f32({2}, {-1, 2})}}, none);
  CHECK(values(out[0]) == std::vector<float>{-0.01f, 2});
}

TEST_CASE("interpreter binds the batch dim of fill shapes and honours fp64 accumulation", "[reference][interpreter]") {
  ir::Module m;
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N, 1024}));
  ir::ValueId ones =
      g.add_node("fill", {}, {{"value", 0.1}, {"shape", std::vector<int64_t>{-1, 1024}}}, {f32({N, 1024})})[0];
  ir::ValueId s = g.add_node("add", {x, ones}, {}, {f32({N, 1024})})[0];
  g.outputs = {g.add_node("reduce_sum", {s}, {{"axes", std::vector<int64_t>{0, 1}}}, {f32({})})[0]};
  ParamStore none;
  std::map<std::string, Tensor> in{{"x", Tensor(ir::DType::f32, {1024, 1024})}};
  double exact = static_cast<double>(0.1f) * 1024 * 1024;
  RefOptions plain;
  plain.fp64_accumulate = false;
  double f32_sum = run_reference(m, g, in, none, plain)[0].f32()[0];
  double f64_sum = run_reference(m, g, in, none)[0].f32()[0];  // the default: double accumulators
  CHECK(std::abs(f64_sum - exact) <= exact * 1e-7);
  CHECK(std::abs(f32_sum - exact) > std::abs(f64_sum - exact));
}

TEST_CASE("interpreter rejects unknown ops and layouts that do not fit the rank", "[reference][interpreter]") {
  ir::Module m;
  ParamStore none;
  std::map<std::string, Tensor> in{{"x", Tensor::from_f32({1, 2}, {1, 2})}};
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N, 2}));
  g.outputs = {g.add_node("frobnicate", {x}, {}, {f32({N, 2})}, {}, {"z"})[0]};
  CHECK_THROWS_WITH(run_reference(m, g, in, none), Catch::Contains("frobnicate") && Catch::Contains("unknown op"));
  ir::Graph h;
  h.name = "forward";
  ir::ValueId hx = h.add_input("x", f32({N, 2}));
  h.outputs = {h.add_node("relu", {hx}, {}, {ir::TensorType{ir::DType::f32, {N, 2}, ir::Layout::nhwc}})[0]};
  CHECK_THROWS_WITH(run_reference(m, h, in, none), Catch::Contains("nhwc needs rank 4"));
}

TEST_CASE("interpreter stores a col_major value transposed and returns it in logical order",
          "[reference][interpreter]") {
  ir::Module m;
  ParamStore none;
  std::map<std::string, Tensor> in{{"x", Tensor::from_f32({2, 3}, {1, -2, 3, -4, 5, -6})}};
  ir::Graph g;
  g.name = "forward";
  ir::ValueId x = g.add_input("x", f32({N, 3}));
  g.outputs = {
      g.add_node("relu", {x}, {}, {ir::TensorType{ir::DType::f32, {N, 3}, ir::Layout::col_major}}, {}, {"y"})[0]};
  runtime::reference::ValueTrace trace;
  runtime::reference::StorageTrace stored;
  RefOptions opts;
  opts.storage_trace = &stored;
  Tensor y = run_reference(m, g, in, none, opts, &trace)[0];
  CHECK(y.shape() == std::vector<int64_t>{2, 3});
  CHECK(std::vector<float>(y.f32(), y.f32() + 6) == std::vector<float>{1, 0, 3, 0, 5, 0});
  const Tensor& s = stored.at("y");
  CHECK(s.shape() == std::vector<int64_t>{3, 2});
  CHECK(std::vector<float>(s.f32(), s.f32() + 6) == std::vector<float>{1, 0, 0, 5, 3, 0});
}
