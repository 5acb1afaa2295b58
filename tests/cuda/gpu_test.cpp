// [gpu] tests (need a GPU; skipped with the reason otherwise, see gpu_main.cpp): every model's
// train steps and inference on the cuda backend against the reference interpreter, the PyTorch
// golden 20-step trajectories, and the device-resident training loop against Executable::run.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cuda_test_util.h"
#include "ops_graph.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/cuda/plugin_api.h"
#include "runtime/cuda/plugin_loader.h"
#include "runtime/reference/interpreter.h"
#include "tests/support/inputs.h"

using namespace dnnc;

namespace {

// GPU sums run in another order than the reference's (warp/block trees, cuBLAS), so results
// agree to float rounding, not bit for bit.
constexpr double kTol = 1e-4;

runtime::cuda::CudaOptions test_options() {
  runtime::cuda::CudaOptions o;
  o.cache_dir = DNNC_TEST_CUDA_CACHE_DIR;
  o.poison_arena = true;  // the arena checking mode, as in every cpu test
  return o;
}

void check_close(const runtime::Tensor& got, const runtime::Tensor& want, const std::string& what, double tol = kTol) {
  test::check_close(got, want, what, tol);
}

void check_model(const std::string& name, int64_t batch, const runtime::cuda::CudaOptions& options = test_options()) {
  ir::Module m = test::compiled_model(name.find('/') == std::string::npos ? "models/" + name + ".dnn" : name);
  runtime::reference::ParamStore ref = runtime::reference::init_params(m, 11);
  runtime::reference::ParamStore gpu = ref;
  auto backend = runtime::cuda::make_cuda_backend(options);
  auto train = backend->compile(m, "train_step", gpu, batch);
  auto infer = backend->compile(m, "infer", gpu, batch);
  std::mt19937 rng(5);
  const ir::Graph& g = *m.graph("train_step");
  for (int step = 1; step <= 3; ++step) {
    auto inputs = test::random_inputs(g, batch, rng);
    auto want = runtime::reference::run_reference(m, g, inputs, ref);
    auto got = train->run(inputs);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      check_close(got[i], want[i], fmt::format("{} step {} output {}", name, step, i));
    for (const auto& [pname, t] : ref.tensors) {
      const runtime::Tensor* c = gpu.find(pname);
      REQUIRE(c);
      check_close(*c, t, fmt::format("{} step {} param {}", name, step, pname));
    }
  }
  const ir::Graph& ig = *m.graph("infer");
  auto inputs = test::random_inputs(ig, batch, rng);
  auto want = runtime::reference::run_reference(m, ig, inputs, ref);
  auto got = infer->run(inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i], fmt::format("{} infer output {}", name, i));
}

const runtime::Tensor& get(const runtime::SafetensorsFile& f, const std::string& name) {
  for (const auto& [n, t] : f.tensors)
    if (n == name) return t;
  FAIL("golden tensor '" << name << "' is missing");
  throw std::logic_error("unreachable");
}

// As tests/cpu/golden_test.cpp, on the cuda backend.
void check_golden(const std::string& model) {
  std::string path = "tests/golden/models/" + model + ".safetensors";
  REQUIRE(std::filesystem::exists(path));
  runtime::SafetensorsFile f = runtime::read_safetensors_file(path);
  int64_t batch = std::stoll(f.metadata["batch"]);
  int steps = std::stoi(f.metadata["steps"]);
  auto params = nlohmann::json::parse(f.metadata["params"]);
  auto runs = nlohmann::json::parse(f.metadata["trajectories"]);
  auto backend = runtime::cuda::make_cuda_backend(test_options());
  for (const auto& run_name : runs) {
    std::string run = run_name.get<std::string>();
    INFO("optimizer run " << run);
    auto opt = nlohmann::json::parse(f.metadata["optimizer." + run]);
    ir::Module m = frontend::compile_file(f.metadata["model"]);
    bool adam = opt.contains("beta1");
    m.train.optimizer.kind = adam ? (opt["decoupled"].get<bool>() ? "adamw" : "adam") : "sgd";
    m.train.optimizer.attrs.clear();
    for (auto it = opt.begin(); it != opt.end(); ++it) {
      if (it.key() == "decoupled") continue;
      if (it->is_boolean())
        m.train.optimizer.attrs[it.key()] = it->get<bool>();
      else
        m.train.optimizer.attrs[it.key()] = it->get<double>();
    }
    passes::compile(m);
    runtime::reference::ParamStore store = runtime::reference::init_params(m, 0);
    for (const auto& p : params) store.tensors[p.get<std::string>()] = get(f, "param." + p.get<std::string>());
    auto exe = backend->compile(m, "train_step", store, batch);
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) {
      std::map<std::string, runtime::Tensor> in{{"image", get(f, fmt::format("batch.{}.x", i))},
                                                {"label", get(f, fmt::format("batch.{}.y", i))}};
      std::vector<runtime::Tensor> out = exe->run(in);
      losses.push_back(out[0].f32()[0]);
      if (i == 0) {
        check_close(out[0], get(f, "step1.loss"), model + " step 1 loss", 1e-5);
        check_close(out[1], get(f, "step1.logits"), model + " step 1 logits", 1e-5);
      }
    }
    check_close(runtime::Tensor::from_f32({steps}, losses), get(f, run + ".loss"), model + " " + run + " losses");
    for (const auto& p : params) {
      std::string key = run + ".final." + p.get<std::string>();
      bool has = false;
      for (const auto& [n, t] : f.tensors) has = has || n == key;
      if (has) check_close(*store.find(p.get<std::string>()), get(f, key), model + " " + key);
    }
  }
}

}  // namespace

TEST_CASE("cuda equals reference: mnist_mlp", "[gpu]") { check_model("mnist_mlp", 6); }
TEST_CASE("cuda equals reference: mnist_mlp_adam", "[gpu]") { check_model("mnist_mlp_adam", 6); }
TEST_CASE("cuda equals reference: lenet5", "[gpu]") { check_model("lenet5", 6); }
TEST_CASE("cuda equals reference: cifar_cnn", "[gpu]") { check_model("cifar_cnn", 4); }
TEST_CASE("cuda equals reference: cifar_strided", "[gpu]") { check_model("cifar_strided", 6); }
TEST_CASE("cuda equals reference at batch 128: mnist_mlp", "[gpu]") { check_model("mnist_mlp", 128); }

// cuBLASLt's RELU_AUX_BIAS/RELU_AUX/DRELU/DRELU_BGRAD where it has them, the generated kernels
// where not (tanh; relu(a) + a), a 40-wide mask; and all of it with the epilogues off.
TEST_CASE("cuda equals reference: GEMM activation epilogues", "[gpu][epilogue]") {
  check_model("tests/cpu/models/mlp_acts.dnn", 6);
  check_model("tests/cpu/models/mlp_acts.dnn", 128);
  runtime::cuda::CudaOptions off = test_options();
  off.epilogues = runtime::cuda::CudaOptions::Epilogues::off;
  check_model("tests/cpu/models/mlp_acts.dnn", 6, off);
  check_model("mnist_mlp", 6, off);
}

// Tuning times every candidate algorithm on the arena before the first step and zeroes it
// again: the trajectory still equals the reference (within fp32 tolerance: another algorithm
// may sum in another order), epilogues and all.
TEST_CASE("cuda equals reference with tuned GEMM algorithms", "[gpu][tune]") {
  runtime::cuda::CudaOptions tune = test_options();
  tune.gemm_algo = runtime::cuda::CudaOptions::GemmAlgo::tune;
  check_model("mnist_mlp", 128, tune);
  check_model("cifar_cnn", 4, tune);
  check_model("tests/cpu/models/mlp_acts.dnn", 6, tune);
}

// Every registered op (tests/cpu/ops_graph.h: one small case of each, every result an output)
// on the cuda backend against the reference interpreter, at two optimizer steps.
TEST_CASE("cuda ops: every op equals the reference", "[gpu][ops]") {
  test::OpsModule ops = test::build_ops_module();
  const ir::Graph& g = *ops.module.graph("ops");
  runtime::reference::ParamStore params;
  auto backend = runtime::cuda::make_cuda_backend(test_options());
  auto exe = backend->compile(ops.module, "ops", params, 1);
  std::mt19937 rng(17);
  for (float step : {1.0f, 3.0f}) {
    auto inputs = test::random_op_inputs(g, rng, step);
    auto want = runtime::reference::run_reference(ops.module, g, inputs, params);
    auto got = exe->run(inputs);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      check_close(got[i], want[i], fmt::format("{} (step {})", g.value(g.outputs[i]).name, step));
  }
}

TEST_CASE("cuda matches PyTorch: mnist_mlp", "[gpu][golden]") { check_golden("mnist_mlp"); }
TEST_CASE("cuda matches PyTorch: lenet5", "[gpu][golden]") { check_golden("lenet5"); }
TEST_CASE("cuda matches PyTorch: cifar_cnn", "[gpu][golden]") { check_golden("cifar_cnn"); }
TEST_CASE("cuda matches PyTorch: cifar_strided", "[gpu][golden]") { check_golden("cifar_strided"); }

TEST_CASE("resident training equals step-by-step runs", "[gpu][resident]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const int64_t batch = 32, samples = 96, steps = 7;
  runtime::reference::ParamStore a = runtime::reference::init_params(m, 3);
  runtime::reference::ParamStore b = a;
  auto backend = runtime::cuda::make_cuda_backend(test_options());
  auto exe_a = backend->compile(m, "train_step", a, batch);
  auto exe_b = backend->compile(m, "train_step", b, batch);
  std::mt19937 rng(9);
  const ir::Graph& g = *m.graph("train_step");
  auto all = test::random_inputs(g, samples, rng);  // the dataset: `samples` rows
  std::vector<int64_t> order(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) order[static_cast<size_t>(i)] = (i * 37) % samples;
  std::vector<float> want;
  for (int64_t s = 0; s < steps; ++s) {
    std::map<std::string, runtime::Tensor> in;
    for (const auto& [name, t] : all) {
      std::vector<int64_t> shape = t.shape();
      shape[0] = batch;
      runtime::Tensor x(t.dtype(), shape);
      size_t row = t.nbytes() / static_cast<size_t>(samples);
      for (int64_t r = 0; r < batch; ++r) {
        int64_t src = order[static_cast<size_t>((s * batch + r) % samples)];
        std::memcpy(static_cast<char*>(x.data()) + r * row, static_cast<const char*>(t.data()) + src * row, row);
      }
      in[name] = std::move(x);
    }
    want.push_back(exe_a->run(in)[0].f32()[0]);
  }
  auto resident_fn = reinterpret_cast<dnnc_cuda_resident_fn>(runtime::cuda::cuda_plugin_symbol("dnnc_cuda_resident"));
  REQUIRE(resident_fn);
  runtime::cuda::ResidentTrainer* t = resident_fn(exe_b.get());
  REQUIRE(t);
  std::vector<runtime::Tensor> dataset;
  for (ir::ValueId id : g.inputs) dataset.push_back(all.at(g.value(id).name));
  t->load_dataset(dataset);
  std::vector<float> got = t->train(order, steps, 3);
  t->sync_params();
  REQUIRE(got.size() == want.size());
  check_close(runtime::Tensor::from_f32({steps}, got), runtime::Tensor::from_f32({steps}, want), "resident losses",
              1e-6);
  for (const auto& [name, ta] : a.tensors) check_close(*b.find(name), ta, "resident param " + name, 1e-6);
}
