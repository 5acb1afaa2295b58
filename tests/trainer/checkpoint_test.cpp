// Tests of dnnc checkpoints: PyTorch state_dict names and order, --init from PyTorch's
// initial params (tests/golden), exact save/load round trips, and the errors for files that
// do not fit the model.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runtime/checkpoint/safetensors.h"
#include "runtime/trainer/checkpoint_io.h"
#include "trainer_test_util.h"

using namespace dnnc;
using namespace dnnc::runtime;

namespace {

const Tensor& get(const SafetensorsFile& f, const std::string& name) {
  for (const auto& [n, t] : f.tensors)
    if (n == name) return t;
  FAIL("golden file has no tensor " << name);
  throw std::logic_error("unreachable");
}

// The `param.<key>` tensors of a golden model file as a state_dict.
NamedTensors golden_state_dict(const SafetensorsFile& f) {
  NamedTensors out;
  for (const auto& [n, t] : f.tensors)
    if (n.starts_with("param.")) out.emplace_back(n.substr(6), t);
  return out;
}

std::vector<std::string> names_of(const NamedTensors& ts) {
  std::vector<std::string> out;
  for (const auto& [n, t] : ts) out.push_back(n);
  return out;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("state_dict names and order are PyTorch's", "[trainer][checkpoint]") {
  for (const char* model : {"mnist_mlp", "lenet5", "cifar_cnn"}) {
    INFO(model);
    SafetensorsFile golden = read_safetensors_file(std::string("tests/golden/models/") + model + ".safetensors");
    auto torch_names = nlohmann::json::parse(golden.metadata.at("params")).get<std::vector<std::string>>();
    ir::Module m = test::compile_for_training(golden.metadata.at("model"));
    ParamStore params = reference::init_params(m, 1);
    CHECK(names_of(state_dict(m, params)) == torch_names);
  }
}

TEST_CASE("PyTorch's initial params load with --init and give PyTorch's logits and losses",
          "[trainer][checkpoint][golden]") {
  SafetensorsFile golden = read_safetensors_file("tests/golden/models/mnist_mlp.safetensors");
  auto sgd = nlohmann::json::parse(golden.metadata.at("optimizer.sgd"));
  ir::Module m = test::compile_for_training("models/mnist_mlp.dnn", sgd.at("lr").get<double>());
  REQUIRE(std::get<double>(m.train.optimizer.attrs.at("momentum")) == sgd.at("momentum").get<double>());
  ParamStore params = reference::init_params(m, 1);
  load_state_dict(m, golden_state_dict(golden), "golden", params);

  auto backend = make_reference_backend();
  auto infer = backend->compile(m, "infer", params, 32);
  std::vector<Tensor> logits = infer->run({{"image", get(golden, "batch.0.x")}});
  CHECK(rel_error(logits[0], get(golden, "step1.logits")) < 1e-5);

  auto step = backend->compile(m, "train_step", params, 32);
  const Tensor& want = get(golden, "sgd.loss");
  std::vector<float> losses;
  for (int i = 0; i < 20; ++i) {
    std::string b = "batch." + std::to_string(i);
    losses.push_back(step->run({{"image", get(golden, b + ".x")}, {"label", get(golden, b + ".y")}})[0].f32()[0]);
  }
  CHECK(rel_error(Tensor::from_f32({20}, losses), want) < 1e-4);
  for (const auto& [name, t] : state_dict(m, params)) {
    INFO(name);
    CHECK(rel_error(t, get(golden, "sgd.final." + name)) < 1e-4);
  }
}

TEST_CASE("a checkpoint round-trips every param bit for bit", "[trainer][checkpoint]") {
  ir::Module m = test::compile_for_training(test::kTinyBn);
  ParamStore params = reference::init_params(m, 5);
  // Make the optimizer state and buffers non-trivial.
  for (auto& [name, t] : params.tensors)
    if (t.dtype() == ir::DType::f32)
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] += 0.25f * static_cast<float>(i % 7) + 0.5f;
  params.tensors["bn1.num_batches_tracked"].i64()[0] = 17;
  test::TempDir dir("roundtrip");
  std::string path = dir.file("ck.safetensors");
  save_checkpoint(path, m, params, {1, 3, 11}, {8, 3, true});

  // The state_dict file: weights and buffers only, in PyTorch order.
  SafetensorsFile sd = read_safetensors_file(path);
  CHECK(sd.metadata.at("format") == "dnnc-checkpoint");
  CHECK(sd.metadata.at("kind") == "state_dict");
  CHECK(names_of(sd.tensors) == std::vector<std::string>{"bn1.bias", "bn1.num_batches_tracked", "bn1.running_mean",
                                                         "bn1.running_var", "bn1.weight", "conv1.bias", "conv1.weight",
                                                         "fc.bias", "fc.weight"});
  ParamStore init = reference::init_params(m, 6);
  load_state_dict_file(m, path, init);
  for (const auto& [name, t] : state_dict(m, params)) {
    INFO(name);
    CHECK(bit_equal(*init.find(name), t));
  }

  // The training-state file: everything, including Adam's moments and the step counter.
  ParamStore resumed;
  CHECK(load_checkpoint(path, m, {8, 3, true}, resumed) == TrainPosition{1, 3, 11});
  REQUIRE(resumed.tensors.size() == m.params.size());
  for (const ir::Param& p : m.params) {
    INFO(p.name);
    CHECK(bit_equal(*resumed.find(p.name), *params.find(p.name)));
  }
  CHECK(resumed.find("fc.weight.exp_avg_sq"));
  CHECK(resumed.find("dnnc.step"));
}

TEST_CASE("loading a state_dict lists every missing, unexpected and mis-shaped tensor", "[trainer][checkpoint]") {
  ir::Module m = test::compile_for_training("models/mnist_mlp.dnn");
  ParamStore params = reference::init_params(m, 1);
  NamedTensors sd = state_dict(m, params);
  NamedTensors bad;
  for (auto& [name, t] : sd) {
    if (name == "fc2.bias") continue;  // missing
    if (name == "fc3.weight") {
      bad.emplace_back(name, Tensor(ir::DType::f32, {10, 255}));  // mis-shaped
      continue;
    }
    bad.emplace_back(name == "fc1.weight" ? "layer1.weight" : name, t);  // renamed: missing + unexpected
  }
  ParamStore before = params;
  try {
    load_state_dict(m, bad, "bad.safetensors", params);
    FAIL("a mismatched state_dict was accepted");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("bad.safetensors: does not match model MnistMLP") != std::string::npos);
    CHECK(what.find("missing: fc1.weight, fc2.bias") != std::string::npos);
    CHECK(what.find("unexpected: layer1.weight") != std::string::npos);
    CHECK(what.find("fc3.weight (expected f32[10,256], found f32[10,255])") != std::string::npos);
  }
  for (const auto& [name, t] : before.tensors) CHECK(bit_equal(*params.find(name), t));  // untouched
}

TEST_CASE("a training-state file is not a state_dict, and --init says so", "[trainer][checkpoint]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  ParamStore params = reference::init_params(m, 1);
  test::TempDir dir("init_state");
  std::string path = dir.file("ck.safetensors");
  save_checkpoint(path, m, params, {}, {16, 7, true});
  CHECK_THROWS_WITH(load_state_dict_file(m, training_state_path(path), params),
                    Catch::Contains("ck.train.safetensors: this is the training-state file") &&
                        Catch::Contains("give " + path + " instead"));
}

TEST_CASE("a state_dict of another model is refused unless allowed, and says what differs", "[trainer][checkpoint]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  ParamStore params = reference::init_params(m, 1);
  test::TempDir dir("other_model");
  std::string path = dir.file("ck.safetensors");
  save_checkpoint(path, m, params, {}, {16, 7, true});
  SafetensorsFile saved = read_safetensors_file(path);
  CHECK(saved.metadata.at("source") == test::kTinyMlp);
  CHECK(saved.metadata.at("normalize") == "mean (0.5, 0.5, 0.5) std (0.5, 0.5, 0.5)");

  ir::Module renamed = test::compile_for_training("tests/trainer/tiny_mlp_renamed.dnn");
  ParamStore other = reference::init_params(renamed, 2);
  ParamStore before = other;
  CHECK_THROWS_WITH(load_state_dict_file(renamed, path, other),
                    Catch::Contains("saved from model TinyMLP (tests/trainer/tiny_mlp.dnn), not TinyMLPRenamed") &&
                        Catch::Contains("differs: input normalization") && Catch::Contains("--allow-other-model"));
  for (const auto& [name, t] : before.tensors) CHECK(bit_equal(*other.find(name), t));  // untouched
  std::vector<std::string> warnings = load_state_dict_file(renamed, path, other, {.allow_other_model = true});
  REQUIRE(warnings.size() == 2);
  CHECK_THAT(warnings[0], Catch::Contains("checkpoint of model TinyMLP") && Catch::EndsWith("(--allow-other-model)"));
  CHECK_THAT(warnings[1], Catch::Contains("input normalization: the checkpoint's model used mean (0.5, 0.5, 0.5)"));
  CHECK(bit_equal(*other.find("fc1.weight"), *params.find("fc1.weight")));

  // The same model name with a changed normalization loads, with a warning.
  ir::Module edited = test::compile_for_training(test::kTinyMlp);
  edited.train.data.mean = {0.4, 0.4, 0.4};
  ParamStore edited_params = reference::init_params(edited, 3);
  warnings = load_state_dict_file(edited, path, edited_params);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("this one uses mean (0.4, 0.4, 0.4) std (0.5, 0.5, 0.5)"));

  // Without dnnc's metadata (a PyTorch file) only names and shapes decide.
  std::string plain = dir.file("torch.safetensors");
  write_safetensors(plain, state_dict(m, params), {});
  ParamStore from_torch = reference::init_params(renamed, 4);
  CHECK(load_state_dict_file(renamed, plain, from_torch).empty());
  CHECK(bit_equal(*from_torch.find("fc2.weight"), *params.find("fc2.weight")));
}

TEST_CASE("resume refuses a checkpoint of another batch size, seed or model", "[trainer][checkpoint]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  ParamStore params = reference::init_params(m, 1);
  test::TempDir dir("resume_mismatch");
  std::string path = dir.file("run.safetensors");
  save_checkpoint(path, m, params, {1, 0, 4}, {16, 7, true});
  CHECK_THROWS_WITH(load_checkpoint(path, m, {32, 7, true}, params),
                    Catch::Contains("the checkpoint's batch size is 16, this run's is 32"));
  CHECK_THROWS_WITH(load_checkpoint(path, m, {16, 8, true}, params),
                    Catch::Contains("the checkpoint's seed is 7, this run's is 8"));
  ir::Module other = test::compile_for_training(test::kTinyBn);
  ParamStore other_params = reference::init_params(other, 1);
  CHECK_THROWS_WITH(load_checkpoint(path, other, {16, 7, true}, other_params),
                    Catch::Contains("the checkpoint's model is TinyMLP, this run's is TinyBN"));
  CHECK_THROWS_WITH(load_checkpoint(dir.file("absent.safetensors"), m, {16, 7, true}, params),
                    Catch::Contains("absent.train.safetensors"));
}

TEST_CASE("training_state_path puts .train before the extension", "[trainer][checkpoint]") {
  CHECK(training_state_path("run/mlp.safetensors") == "run/mlp.train.safetensors");
  CHECK(training_state_path("mlp.ckpt") == "mlp.ckpt.train.safetensors");
}
