// Tests of `dnnc data synth-cifar`, `train`, `eval` and `infer` through the built binary:
// exit codes, the device line, --steps with the JSONL log, NaN reporting, --init errors.
#include <fmt/format.h>

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
  std::string line, last_line;
  int steps = 0, epochs = 0;
  while (std::getline(log, line)) {
    last_line = line;
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
  // The last line records the stop and its evaluation: the accuracy the summary prints.
  auto last = nlohmann::json::parse(last_line);
  CHECK(last["event"] == "stop");
  CHECK(last["epoch"] == 1);
  CHECK(last["batch"] == 5);
  CHECK(last["step"] == 5);
  CHECK(r.out.find(fmt::format("test accuracy: {:.4f} ({}/{})", last["test_acc"].get<double>(),
                               last["test_correct"].get<int>(), last["test_total"].get<int>())) != std::string::npos);

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

TEST_CASE("a checkpoint of another model is refused by --init, eval and infer unless --allow-other-model",
          "[trainer][cli][usage]") {
  dnnc::test::TempDir dir("cli_other_model");
  synth(dir);
  const std::string data = " --data " + dir.file("cifar");
  Result saved = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + data + " --steps 2 --save " +
                                   dir.file("ck.safetensors"));
  INFO(saved.out << saved.err);
  REQUIRE(saved.code == 0);
  const std::string other = "tests/trainer/tiny_mlp_renamed.dnn", ck = " --init " + dir.file("ck.safetensors");
  const std::string refusal = dir.file("ck.safetensors") +
                              ": saved from model TinyMLP (tests/trainer/tiny_mlp.dnn), not TinyMLPRenamed "
                              "(tests/trainer/tiny_mlp_renamed.dnn)\n  differs: input normalization: the "
                              "checkpoint's model used mean (0.5, 0.5, 0.5) std (0.5, 0.5, 0.5), this one uses "
                              "mean (0.49, 0.48, 0.45) std (0.25, 0.24, 0.26)\n  evaluate it with the model that "
                              "trained it, or pass --allow-other-model to load it anyway\n";
  for (const std::string& args :
       {"eval " + other + ck + data, "infer " + other + ck + " --images " + dir.file("cifar/test_batch.bin"),
        "train " + other + ck + data + " --steps 1"}) {
    Result r = run_dnnc(dir, args);
    INFO(args << "\n" << r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.err == "dnnc: error: " + refusal);
    CHECK(r.out.find("test accuracy") == std::string::npos);
  }
  Result allowed = run_dnnc(dir, "eval " + other + ck + data + " --allow-other-model");
  INFO(allowed.out << allowed.err);
  CHECK(allowed.code == 0);
  CHECK(allowed.err.find("dnnc: warning: " + dir.file("ck.safetensors") +
                         ": checkpoint of model TinyMLP (tests/trainer/tiny_mlp.dnn), loaded into model TinyMLPRenamed") !=
        std::string::npos);
  CHECK(allowed.out.find("test accuracy: ") != std::string::npos);
  Result same = run_dnnc(dir, std::string("eval ") + dnnc::test::kTinyMlp + ck + data);
  CHECK(same.code == 0);
  CHECK(same.err.empty());
  Result stray = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + data + " --allow-other-model");
  CHECK(stray.code == 2);
  CHECK(stray.err.find("--allow-other-model applies to --init only") != std::string::npos);
}

TEST_CASE("eval --init of the training-state file names the state_dict file to give instead", "[trainer][cli][usage]") {
  dnnc::test::TempDir dir("cli_train_state");
  synth(dir);
  const std::string data = " --data " + dir.file("cifar");
  REQUIRE(run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + data + " --steps 1 --save " +
                            dir.file("ck.safetensors"))
              .code == 0);
  Result r = run_dnnc(dir, std::string("eval ") + dnnc::test::kTinyMlp + data + " --init " +
                               dir.file("ck.train.safetensors"));
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err == "dnnc: error: " + dir.file("ck.train.safetensors") +
                     ": this is the training-state file that --save writes for --resume (weights and optimizer "
                     "state); give " +
                     dir.file("ck.safetensors") + " instead, or continue the run with dnnc train --resume\n");
}

TEST_CASE("resuming a finished run says so and how to train on", "[trainer][cli][usage]") {
  dnnc::test::TempDir dir("cli_resume_done");
  synth(dir);
  const std::string train = std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar");
  const std::string ck = dir.file("ck.safetensors");
  REQUIRE(run_dnnc(dir, train + " --epochs 1 --save " + ck).code == 0);  // 96 images / 16 = 6 steps
  Result done = run_dnnc(dir, train + " --epochs 1 --resume " + ck + " --save " + ck);
  INFO(done.out << done.err);
  CHECK(done.code == 1);
  CHECK(done.err == "dnnc: error: " + ck +
                        ": this run is finished: it trained 1 epoch of 1 (6 steps); to train on, pass --epochs N "
                        "with N > 1\n");
  Result more = run_dnnc(dir, train + " --epochs 2 --resume " + ck + " --save " + ck);
  INFO(more.out << more.err);
  CHECK(more.code == 0);
  CHECK(more.out.find("resume: from " + ck + " after epoch 1 (step 6)\n") != std::string::npos);
  CHECK(more.out.find("done after 12 steps") != std::string::npos);
}

TEST_CASE("the data set comes from the train block, --dataset, or the files of --data", "[trainer][cli][data]") {
  dnnc::test::TempDir dir("cli_data_source");
  synth(dir);
  const std::string model = "tests/trainer/no_data.dnn";
  Result none = run_dnnc(dir, "train " + model);
  INFO(none.out << none.err);
  CHECK(none.code == 2);
  CHECK(none.err.find("model NoData names no data set") != std::string::npos);
  CHECK(none.err.find("pass --data DIR (the format is inferred from its files) or --dataset NAME") != std::string::npos);

  Result inferred = run_dnnc(dir, "train " + model + " --steps 2 --data " + dir.file("cifar"));
  INFO(inferred.out << inferred.err);
  CHECK(inferred.code == 0);
  CHECK(inferred.out.find("data: cifar10 (format inferred from the files) from " + dir.file("cifar") +
                          ": 96 train, 40 test images") != std::string::npos);

  Result empty = run_dnnc(dir, "train " + model + " --data " + dir.path.string());
  CHECK(empty.code == 1);
  CHECK(empty.err.find("cannot tell its data set: it holds no MNIST-format IDX files") != std::string::npos);

  // --dataset replaces the block's data set (and its default folder).
  Result fashion = run_dnnc(dir, "train " + model + " --dataset fashion_mnist --data " + dir.file("nowhere"));
  CHECK(fashion.code == 1);
  CHECK(fashion.err.find("fashion_mnist data folder " + dir.file("nowhere") +
                         " does not exist; put Fashion-MNIST's IDX files there (Debian's package "
                         "dataset-fashion-mnist installs them in /usr/share/datasets/fashion-mnist)") !=
        std::string::npos);
  Result bad = run_dnnc(dir, "train " + model + " --dataset fashion");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--dataset: fashion not in {mnist,fashion_mnist,cifar10}") != std::string::npos);
}

TEST_CASE("fashion_mnist is found at the Debian package's path, or the error names the package",
          "[trainer][cli][data]") {
  dnnc::test::TempDir dir("cli_fashion");
  std::error_code ec;
  bool installed = std::filesystem::is_directory("/usr/share/datasets/fashion-mnist", ec);
  // The seed MLP on Fashion-MNIST: a few steps on the real images, or the missing package named.
  Result r = run_dnnc(dir, "train models/mnist_mlp.dnn --dataset fashion_mnist --steps 3");
  INFO(r.out << r.err);
  if (!installed) {
    CHECK(r.code == 1);
    CHECK(r.err.find("fashion_mnist data folder /usr/share/datasets/fashion-mnist does not exist; install Debian's "
                     "package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)") != std::string::npos);
    return;
  }
  CHECK(r.code == 0);
  CHECK(r.out.find("data: fashion_mnist from /usr/share/datasets/fashion-mnist: 60000 train, 10000 test images") !=
        std::string::npos);
}

namespace {

// The values of attribute `attr` of every element of class group `group` in an SVG from render_svg.
std::vector<std::string> svg_values(const std::string& svg, const std::string& group, const std::string& attr) {
  std::vector<std::string> out;
  size_t g = svg.find("<g class=\"" + group + "\">");
  if (g == std::string::npos) return out;
  size_t end = svg.find("</g>", g);
  for (size_t at = svg.find(attr + "=\"", g); at < end; at = svg.find(attr + "=\"", at + 1)) {
    size_t v = at + attr.size() + 2;
    out.push_back(svg.substr(v, svg.find('"', v) - v));
  }
  return out;
}

std::string g6(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

TEST_CASE("train --plot and dnnc plot draw the log's points, and the SVG renders", "[trainer][cli][plot]") {
  dnnc::test::TempDir dir("cli_plot");
  synth(dir);
  // 8 steps: epoch 1 (6 steps) with its evaluation, then a stop inside epoch 2.
  Result r = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") +
                               " --steps 8 --log-every 1 --log " + dir.file("run.jsonl") + " --plot " +
                               dir.file("plots/train.svg"));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("plot: " + dir.file("plots/train.svg")) != std::string::npos);
  Result p = run_dnnc(dir, "plot " + dir.file("run.jsonl") + " -o " + dir.file("log.svg"));
  INFO(p.out << p.err);
  REQUIRE(p.code == 0);
  CHECK(p.out == "wrote " + dir.file("log.svg") + ": 8 step losses, 2 evaluations, up to step 8\n");

  std::vector<std::string> steps, losses, eval_steps, accs, epoch_losses;
  std::istringstream log(dnnc::test::read_file(dir.file("run.jsonl")));
  std::string line;
  while (std::getline(log, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "step") {
      steps.push_back(std::to_string(j["step"].get<int>()));
      losses.push_back(g6(j["loss"].get<double>()));
    } else {
      eval_steps.push_back(std::to_string(j["step"].get<int>()));
      accs.push_back(g6(j["test_acc"].get<double>()));
      if (j["event"] == "epoch") epoch_losses.push_back(g6(j["loss"].get<double>()));
    }
  }
  REQUIRE(steps.size() == 8);
  REQUIRE(accs.size() == 2);
  for (const char* svg_file : {"plots/train.svg", "log.svg"}) {
    INFO(svg_file);
    std::string svg = dnnc::test::read_file(dir.file(svg_file));
    CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg_values(svg, "step-points", "data-step") == steps);
    CHECK(svg_values(svg, "acc-points", "data-step") == eval_steps);
    CHECK(svg_values(svg, "acc-points", "data-acc") == accs);
    CHECK(svg_values(svg, "epoch-loss", "data-loss") == epoch_losses);
    // train --plot keeps the exact step losses; the log rounds nothing either.
    CHECK(svg_values(svg, "step-points", "data-loss") == losses);
  }
  // It renders: rsvg-convert (librsvg2-bin, installed by scripts/install-deps.sh) turns it into a PNG.
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    WARN("skipped the rendering check: no rsvg-convert");
    return;
  }
  std::string png = dir.file("log.png");
  REQUIRE(std::system(("rsvg-convert " + dir.file("log.svg") + " -o " + png).c_str()) == 0);
  std::string bytes = dnnc::test::read_file(png);
  CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(bytes.size() > 2000);
}

TEST_CASE("dnnc plot refuses what is not a dnnc log, naming the line", "[trainer][cli][plot]") {
  dnnc::test::TempDir dir("cli_plot_bad");
  std::ofstream(dir.file("bad.jsonl")) << "{\"event\":\"step\",\"step\":1,\"loss\":2.3}\nnot json\n";
  Result bad = run_dnnc(dir, "plot " + dir.file("bad.jsonl"));
  CHECK(bad.code == 1);
  CHECK(bad.err.find(dir.file("bad.jsonl") + ":2: not a line of a dnnc log") != std::string::npos);
  std::ofstream(dir.file("empty.jsonl")) << "";
  Result empty = run_dnnc(dir, "plot " + dir.file("empty.jsonl"));
  CHECK(empty.code == 1);
  CHECK(empty.err.find("the log has no step or epoch lines to plot") != std::string::npos);
  Result self = run_dnnc(dir, "plot " + dir.file("bad.jsonl") + " -o " + dir.file("bad.jsonl"));
  CHECK(self.code == 2);
}

TEST_CASE("a scheduled run logs each step's lr, and --resume continues the schedule", "[trainer][cli][schedule]") {
  dnnc::test::TempDir dir("cli_schedule");
  synth(dir);  // 96 training images: 3 batches of 32 per epoch
  const std::string model = "tests/trainer/tiny_mlp_scheduled.dnn", data = " --data " + dir.file("cifar");
  auto lrs_of = [&](const std::string& log) {
    std::vector<double> lrs;
    std::istringstream in(dnnc::test::read_file(log));
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["event"] == "step") lrs.push_back(j["lr"].get<double>());
    }
    return lrs;
  };
  Result full = run_dnnc(dir, "train " + model + data + " --log-every 1 --log " + dir.file("full.jsonl") +
                                  " --device cpu");
  INFO(full.out << full.err);
  REQUIRE(full.code == 0);
  CHECK(full.out.find("multistep schedule (gamma 0.5, milestones [1,2])") != std::string::npos);
  CHECK(full.out.find("gradients clipped to norm 1") != std::string::npos);
  const std::vector<double> want = {0.08, 0.08, 0.08, 0.04, 0.04, 0.04, 0.02, 0.02, 0.02};
  CHECK(lrs_of(dir.file("full.jsonl")) == want);

  Result a = run_dnnc(dir, "train " + model + data + " --steps 4 --save " + dir.file("ck.safetensors") +
                               " --log-every 1 --log " + dir.file("resumed.jsonl") + " --device cpu");
  INFO(a.out << a.err);
  REQUIRE(a.code == 0);
  Result b = run_dnnc(dir, "train " + model + data + " --resume " + dir.file("ck.safetensors") + " --save " +
                               dir.file("ck.safetensors") + " --log-every 1 --log " + dir.file("resumed.jsonl") +
                               " --device cpu");
  INFO(b.out << b.err);
  REQUIRE(b.code == 0);
  CHECK(lrs_of(dir.file("resumed.jsonl")) == want);
  // The same final accuracy line as the uninterrupted run: the resumed run is the same run.
  auto last_line = [](const std::string& out) { return out.substr(out.rfind("test accuracy: ")); };
  CHECK(last_line(b.out) == last_line(full.out));
}
