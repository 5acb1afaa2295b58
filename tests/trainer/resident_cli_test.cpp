// `dnnc train --device cuda` through the cuda plugin's ResidentTrainer, on a machine without a
// GPU: the fake plugin (tests/cli/fake_cuda_plugin.cpp, with DNNC_FAKE_CUDA_BACKEND=reference)
// wraps the reference interpreter and runs the batches `order` selects step by step, so every
// run here must give exactly what `--device reference` gives: the same step and epoch losses,
// the same test accuracy, byte-identical checkpoints, the same NaN report.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/trainer/checkpoint_io.h"
#include "trainer_test_util.h"

#ifndef DNNC_BINARY
#error "DNNC_BINARY must name the dnnc executable"
#endif
#ifndef DNNC_FAKE_CUDA_PLUGIN_DIR
#error "DNNC_FAKE_CUDA_PLUGIN_DIR must name the fake cuda plugin's directory"
#endif

namespace {

using Result = dnnc::test::CliResult;

// The fake cuda plugin, wrapping the reference backend.
const std::string kFakeCuda =
    std::string("DNNC_PLUGIN_DIR=") + DNNC_FAKE_CUDA_PLUGIN_DIR + " DNNC_FAKE_CUDA_BACKEND=reference";

// Runs `ENV dnnc ARGS` from the repository root, capturing stdout and stderr.
Result run_dnnc(const dnnc::test::TempDir& dir, const std::string& env, const std::string& args) {
  return dnnc::test::run_cli(DNNC_BINARY, dir, env, args);
}

// 96 synthetic CIFAR-10 training images: at --batch 20, 4 full batches and one of 16 per epoch.
void synth(const dnnc::test::TempDir& dir) {
  Result r = run_dnnc(dir, "", "data synth-cifar " + dir.file("cifar") + " --train 96 --test 40 --seed 3");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
}

// `train` of TinyMLP at batch 20 with a step line per step in `name`.jsonl and a checkpoint in
// `name`.safetensors.
std::string train_args(const dnnc::test::TempDir& dir, const std::string& name, const std::string& extra) {
  return std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") +
         " --batch 20 --log-every 1 --log " + dir.file(name + ".jsonl") + " --save " + dir.file(name + ".safetensors") +
         " " + extra;
}

// The log without the timings: step lines (epoch, batch, step, loss), epoch lines (epoch, step,
// loss, test accuracy).
std::vector<std::string> log_lines(const std::string& path) {
  std::istringstream in(dnnc::test::read_file(path));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("samples_per_s");
    j.erase("seconds");
    lines.push_back(j.dump());
  }
  return lines;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void check_same_checkpoint(const dnnc::test::TempDir& dir, const std::string& a, const std::string& b) {
  std::string sa = dir.file(a + ".safetensors"), sb = dir.file(b + ".safetensors");
  std::vector<std::pair<std::string, std::string>> files = {
      {sa, sb}, {dnnc::runtime::training_state_path(sa), dnnc::runtime::training_state_path(sb)}};
  for (const auto& [fa, fb] : files) {
    INFO(fa << " vs " << fb);
    std::string ca = dnnc::test::read_file(fa), cb = dnnc::test::read_file(fb);
    CHECK(!ca.empty());
    CHECK(ca == cb);
  }
}

}  // namespace

TEST_CASE("dnnc train --device cuda trains device-resident, exactly as --device reference",
          "[trainer][cli][resident]") {
  dnnc::test::TempDir dir("cli_resident");
  synth(dir);
  Result ref = run_dnnc(dir, "", train_args(dir, "ref", "--device reference"));
  INFO(ref.out << ref.err);
  REQUIRE(ref.code == 0);
  Result cuda = run_dnnc(dir, kFakeCuda, train_args(dir, "cuda", "--device cuda --metrics-every 3"));
  INFO(cuda.out << cuda.err);
  REQUIRE(cuda.code == 0);
  CHECK_THAT(cuda.out, Catch::Contains("device: cuda (as requested)") && Catch::Contains("done after 10 steps"));

  // The dataset went to the "device" once; per epoch the 4 full batches ran as train calls of
  // at most --metrics-every steps, and only the partial batch of 16 through Executable::run.
  CHECK(count(cuda.err, "fake cuda plugin: load_dataset(96 samples)") == 1);
  CHECK(count(cuda.err, "fake cuda plugin: train(steps=3, metrics_every=3)") == 2);
  CHECK(count(cuda.err, "fake cuda plugin: train(steps=1, metrics_every=3)") == 2);
  CHECK(count(cuda.err, "fake cuda plugin: train(") == 4);
  CHECK(count(cuda.err, "fake cuda plugin: run(train_step, batch=16)") == 2);
  CHECK(count(cuda.err, "fake cuda plugin: run(train_step, batch=20)") == 0);

  std::vector<std::string> want = log_lines(dir.file("ref.jsonl"));
  CHECK(want.size() == 12);  // 10 steps, 2 epochs
  CHECK(log_lines(dir.file("cuda.jsonl")) == want);
  auto accuracy = [](const std::string& s) {
    size_t at = s.find("test accuracy: ");
    return at == std::string::npos ? std::string() : s.substr(at);
  };
  CHECK(!accuracy(ref.out).empty());
  CHECK(accuracy(cuda.out) == accuracy(ref.out));
  check_same_checkpoint(dir, "ref", "cuda");
}

TEST_CASE("dnnc train --device cuda: --steps stops inside a resident chunk, --resume continues it exactly",
          "[trainer][cli][resident]") {
  dnnc::test::TempDir dir("cli_resident_steps");
  synth(dir);
  Result ref = run_dnnc(dir, "", train_args(dir, "ref", "--device reference --steps 2"));
  INFO(ref.out << ref.err);
  REQUIRE(ref.code == 0);
  Result cuda = run_dnnc(dir, kFakeCuda, train_args(dir, "cuda", "--device cuda --steps 2"));
  INFO(cuda.out << cuda.err);
  REQUIRE(cuda.code == 0);
  CHECK_THAT(cuda.out, Catch::Contains("stopped (--steps) after 2 steps"));
  CHECK(count(cuda.err, "fake cuda plugin: train(steps=2, metrics_every=50)") == 1);
  CHECK(count(cuda.err, "fake cuda plugin: train(") == 1);
  CHECK(log_lines(dir.file("cuda.jsonl")) == log_lines(dir.file("ref.jsonl")));
  check_same_checkpoint(dir, "ref", "cuda");

  // Resuming at batch 2 of epoch 1: the first train call starts at the third batch.
  Result ref2 =
      run_dnnc(dir, "", train_args(dir, "ref2", "--device reference --resume " + dir.file("ref.safetensors")));
  INFO(ref2.out << ref2.err);
  REQUIRE(ref2.code == 0);
  Result cuda2 =
      run_dnnc(dir, kFakeCuda,
               train_args(dir, "cuda2", "--device cuda --metrics-every 3 --resume " + dir.file("cuda.safetensors")));
  INFO(cuda2.out << cuda2.err);
  REQUIRE(cuda2.code == 0);
  CHECK(count(cuda2.err, "fake cuda plugin: train(steps=2, metrics_every=3)") == 1);
  CHECK(count(cuda2.err, "fake cuda plugin: train(") == 3);
  CHECK(log_lines(dir.file("cuda2.jsonl")) == log_lines(dir.file("ref2.jsonl")));
  check_same_checkpoint(dir, "ref2", "cuda2");

  // And both equal an uninterrupted run.
  Result whole = run_dnnc(dir, "", train_args(dir, "whole", "--device reference"));
  REQUIRE(whole.code == 0);
  check_same_checkpoint(dir, "whole", "cuda2");
}

TEST_CASE("dnnc train --device cuda reports a non-finite resident loss as the step-by-step path does",
          "[trainer][cli][resident][nan]") {
  dnnc::test::TempDir dir("cli_resident_nan");
  synth(dir);
  // lr 1e20: step 3 of the first train call (4 steps) has loss nan and every param is non-finite
  // right after it (step 4 of the call runs on). lr 325: step 10,
  // the partial batch of epoch 2 (after two epochs of train calls), is inf with every param
  // still finite.
  struct Case {
    const char* lr;
    const char* error;
  };
  for (const Case& c : {Case{"1e20",
                             "error: step 3 (epoch 1): loss is nan; non-finite after this step's update: "
                             "fc1.weight, fc1.bias, fc2.weight, fc2.bias, fc1.weight.momentum_buffer, "
                             "fc1.bias.momentum_buffer, fc2.weight.momentum_buffer, fc2.bias.momentum_buffer\n"},
                        Case{"325", "error: step 10 (epoch 2): loss is inf; every parameter is still finite\n"}}) {
    std::string lr = std::string(" --lr ") + c.lr;
    Result ref = run_dnnc(dir, "", train_args(dir, "ref", "--device reference" + lr));
    INFO(ref.out << ref.err);
    REQUIRE(ref.code == 1);
    Result cuda = run_dnnc(dir, kFakeCuda, train_args(dir, "cuda", "--device cuda" + lr));
    INFO(cuda.out << cuda.err);
    CHECK(cuda.code == 1);
    CHECK(count(cuda.err, "fake cuda plugin: train(steps=4, metrics_every=50)") >= 1);
    CHECK_THAT(ref.err, Catch::EndsWith(c.error));
    CHECK_THAT(cuda.err, Catch::EndsWith(c.error));
    CHECK(log_lines(dir.file("cuda.jsonl")) == log_lines(dir.file("ref.jsonl")));
  }
}
