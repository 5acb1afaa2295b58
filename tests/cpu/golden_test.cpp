// The cpu backend against PyTorch (tests/golden/models/*.safetensors, see tests/golden/README.md):
// from PyTorch's initial params, the first step's logits and loss, every stored optimizer run's
// 20-step loss trajectory and (sgd, adam) the final params.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cpu_test_util.h"
#include "runtime/checkpoint/safetensors.h"

using namespace dnnc;

namespace {

const char* kRegenerate = "/usr/bin/python3 tests/golden/make_golden.py";

const runtime::Tensor& get(const runtime::SafetensorsFile& f, const std::string& name) {
  for (const auto& [n, t] : f.tensors)
    if (n == name) return t;
  FAIL("golden tensor '" << name << "' is missing (regenerate: " << kRegenerate << ")");
  throw std::logic_error("unreachable");
}

bool has(const runtime::SafetensorsFile& f, const std::string& name) {
  for (const auto& [n, t] : f.tensors)
    if (n == name) return true;
  return false;
}

void check_golden(const std::string& model) {
  std::string path = "tests/golden/models/" + model + ".safetensors";
  INFO("golden " << path << " (regenerate: " << kRegenerate << ")");
  REQUIRE(std::filesystem::exists(path));
  runtime::SafetensorsFile f = runtime::read_safetensors_file(path);
  REQUIRE(f.metadata["format"] == "dnnc-golden");
  REQUIRE(f.metadata["version"] == "1");
  int64_t batch = std::stoll(f.metadata["batch"]);
  int steps = std::stoi(f.metadata["steps"]);
  auto params = nlohmann::json::parse(f.metadata["params"]);
  auto runs = nlohmann::json::parse(f.metadata["trajectories"]);
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
      if (it.key() == "clip_grad_norm") {  // the train config's, not the optimizer's
        m.train.clip_grad_norm = it->get<double>();
        continue;
      }
      if (it->is_boolean())
        m.train.optimizer.attrs[it.key()] = it->get<bool>();
      else
        m.train.optimizer.attrs[it.key()] = it->get<double>();
    }
    passes::compile(m);
    runtime::reference::ParamStore store = runtime::reference::init_params(m, 0);
    for (const auto& p : params) store.tensors[p.get<std::string>()] = get(f, "param." + p.get<std::string>());

    runtime::cpu::CpuBackend backend(test::cpu_test_options());
    auto exe = backend.compile(m, "train_step", store, batch);
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) {
      std::map<std::string, runtime::Tensor> in{{"image", get(f, "batch." + std::to_string(i) + ".x")},
                                                {"label", get(f, "batch." + std::to_string(i) + ".y")}};
      std::vector<runtime::Tensor> out = exe->run(in);
      losses.push_back(out[0].f32()[0]);
      if (i == 0) {
        test::check_close(out[0], get(f, "step1.loss"), model + " step 1 loss");
        test::check_close(out[1], get(f, "step1.logits"), model + " step 1 logits");
      }
    }
    test::check_close(runtime::Tensor::from_f32({steps}, losses), get(f, run + ".loss"), model + " " + run + " losses",
                      1e-4);
    for (const auto& p : params) {
      std::string key = run + ".final." + p.get<std::string>();
      if (has(f, key)) test::check_close(*store.find(p.get<std::string>()), get(f, key), model + " " + key, 1e-4);
    }
  }
}

}  // namespace

TEST_CASE("cpu matches PyTorch: mnist_mlp", "[cpu][golden]") { check_golden("mnist_mlp"); }
TEST_CASE("cpu matches PyTorch: lenet5", "[cpu][golden]") { check_golden("lenet5"); }
TEST_CASE("cpu matches PyTorch: cifar_cnn", "[cpu][golden]") { check_golden("cifar_cnn"); }
TEST_CASE("cpu matches PyTorch: cifar_strided", "[cpu][golden]") { check_golden("cifar_strided"); }
