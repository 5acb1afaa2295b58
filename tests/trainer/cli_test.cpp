// Tests of `dnnc data synth-cifar`, `train`, `eval` and `infer` through the built binary:
// exit codes, the device line, --steps with the JSONL log, NaN reporting, --init errors.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainer_test_util.h"

#ifndef DNNC_BINARY
#error "DNNC_BINARY must name the dnnc executable"
#endif

namespace {

using Result = dnnc::test::CliResult;

// Runs `dnnc ARGS` from the repository root, capturing stdout and stderr.
Result run_dnnc(const dnnc::test::TempDir& dir, const std::string& args) {
  return dnnc::test::run_cli(DNNC_BINARY, dir, "", args);
}

// A small synthetic CIFAR-10 directory for TinyMLP.
void synth(const dnnc::test::TempDir& dir) {
  Result r = run_dnnc(dir, "data synth-cifar " + dir.file("cifar") + " --train 96 --test 40 --seed 3");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
}

}  // namespace

TEST_CASE("dnnc data synth-cifar writes the CIFAR-10 binary files", "[trainer][cli]") {
  dnnc::test::TempDir dir("cli_synth");
  synth(dir);
  CHECK(std::filesystem::file_size(dir.file("cifar/data_batch_1.bin")) == 96 * 3073);
  CHECK(std::filesystem::file_size(dir.file("cifar/test_batch.bin")) == 40 * 3073);
  Result bad = run_dnnc(dir, "data synth-cifar " + dir.file("c2") + " --train 10001");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("divisible by 2") != std::string::npos);
}

TEST_CASE("dnnc train --steps logs JSON lines, saves, and eval/infer read the checkpoint", "[trainer][cli]") {
  dnnc::test::TempDir dir("cli_train");
  synth(dir);
  std::string model = dnnc::test::kTinyMlp;
  Result r = run_dnnc(dir, "train " + model + " --data " + dir.file("cifar") + " --steps 5 --log-every 1 --log " +
                               dir.file("log.jsonl") + " --save " + dir.file("ck.safetensors") + " --device auto");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  // One line names the device auto picked and why (reference, or a faster backend if built).
  size_t device_line = r.out.find("\ndevice: ");
  REQUIRE(device_line != std::string::npos);
  CHECK(r.out.find(" (auto: ", device_line) < r.out.find('\n', device_line + 1));
  CHECK(r.out.find("stopped (--steps) after 5 steps") != std::string::npos);
  CHECK(r.out.find("test accuracy: ") != std::string::npos);
  std::istringstream log(dnnc::test::read_file(dir.file("log.jsonl")));
  std::string line;
  int steps = 0, epochs = 0;
  while (std::getline(log, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "step") {
      ++steps;
      CHECK(j["step"] == steps);
      CHECK(j["loss"].get<double>() > 0);
    } else if (j["event"] == "epoch") {
      ++epochs;
      CHECK(j.contains("test_acc"));
    }
  }
  CHECK(steps == 5);
  CHECK(epochs == 0);  // 96 images / batch 16 = 6 steps per epoch

  Result ev = run_dnnc(dir, "eval " + model + " --init " + dir.file("ck.safetensors") + " --data " + dir.file("cifar"));
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
  // eval of the saved weights gives the accuracy train printed at its end.
  auto acc_line = [](const std::string& s) {
    size_t at = s.find("test accuracy: ");
    return at == std::string::npos ? std::string() : s.substr(at, s.find(')', at) - at);
  };
  CHECK(!acc_line(ev.out).empty());
  CHECK(acc_line(ev.out) == acc_line(r.out));

  Result inf = run_dnnc(dir, "infer " + model + " --init " + dir.file("ck.safetensors") + " --images " +
                                 dir.file("cifar/test_batch.bin") + " --index 3 --count 2 --json");
  INFO(inf.out << inf.err);
  REQUIRE(inf.code == 0);
  std::istringstream lines(inf.out);
  int n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    CHECK(j["image"] == 3 + n);
    double sum = 0;
    for (double p : j["probs"]) sum += p;
    CHECK(sum == Approx(1.0).epsilon(1e-9));
    ++n;
  }
  CHECK(n == 2);
}

TEST_CASE("dnnc train with an exploding lr exits 1 naming the step", "[trainer][cli][nan]") {
  dnnc::test::TempDir dir("cli_nan");
  synth(dir);
  Result r =
      run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") + " --lr 1e12");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find("error: step ") != std::string::npos);
  CHECK(r.err.find("(epoch 1): loss is ") != std::string::npos);
}

TEST_CASE("dnnc train --device cuda without a usable GPU is an error, not a fallback", "[trainer][cli]") {
  dnnc::test::TempDir dir("cli_device");
  synth(dir);
  Result r = run_dnnc(
      dir, std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") + " --steps 1 --device cuda");
  INFO(r.out << r.err);
  if (r.code == 0 && r.out.find("device: cuda (as requested)") != std::string::npos) {
    WARN("skipped: this machine has a usable GPU, and the case is about one without");
    return;
  }
  CHECK(r.code == 1);
  CHECK(r.err.find("device 'cuda' is not available") != std::string::npos);
}

TEST_CASE("dnnc train --init with a foreign checkpoint exits 1 listing the names", "[trainer][cli]") {
  dnnc::test::TempDir dir("cli_init");
  synth(dir);
  Result r = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") +
                               " --init tests/golden/models/cifar_cnn.safetensors");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find("missing: fc1.weight, fc1.bias, fc2.weight, fc2.bias") != std::string::npos);
  CHECK(r.err.find("unexpected: ") != std::string::npos);
}
