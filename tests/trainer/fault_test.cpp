// Fault tests of `dnnc train`/`eval`/`infer` through the built binary: a run SIGKILLed in the
// middle of a checkpoint save keeps its previous checkpoint and resumes to exactly the losses and
// weights of an uninterrupted run; checkpoints and data files that do not fit are clear errors
// (exit 1) naming the file, the tensor and the shapes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runtime/checkpoint/safetensors.h"
#include "trainer_test_util.h"

#ifndef DNNC_BINARY
#error "DNNC_BINARY must name the dnnc executable"
#endif

namespace fs = std::filesystem;
using dnnc::test::TempDir;

namespace {

// Starts `dnnc ARGS` (stdout and stderr to files in `dir`) with `env` added; returns its pid.
pid_t spawn_dnnc(const TempDir& dir, const std::string& args, const std::map<std::string, std::string>& env,
                 const std::string& tag) {
  const std::string cmd =
      "DNNC_POISON_ARENA=1 exec " + std::string(DNNC_BINARY) + " " + args + " >" + dir.file(tag + ".out") + " 2>" +
      dir.file(tag + ".err");
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

using Result = dnnc::test::CliResult;

Result run_dnnc(const TempDir& dir, const std::string& args, const std::string& tag = "run") {
  const pid_t pid = spawn_dnnc(dir, args, {}, tag);
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = dnnc::test::read_file(dir.file(tag + ".out"));
  r.err = dnnc::test::read_file(dir.file(tag + ".err"));
  return r;
}

void synth(const TempDir& dir) {
  Result r = run_dnnc(dir, "data synth-cifar " + dir.file("cifar") + " --train 96 --test 40 --seed 3");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
}

// step -> loss of the "step" lines of a JSONL log; a step logged twice (a killed run's steps,
// redone after --resume) keeps its last value.
std::map<int64_t, double> step_losses(const std::string& path) {
  std::map<int64_t, double> out;
  std::istringstream in(dnnc::test::read_file(path));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "step") out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

bool same_tensors(const dnnc::runtime::NamedTensors& a, const dnnc::runtime::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& [na, ta] = a[i];
    const auto& [nb, tb] = b[i];
    if (na != nb || ta.dtype() != tb.dtype() || ta.shape() != tb.shape() || ta.nbytes() != tb.nbytes()) return false;
    if (std::memcmp(ta.data(), tb.data(), ta.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("dnnc train killed during a save keeps the previous checkpoint and resumes like an unbroken run",
          "[trainer][fault]") {
  TempDir dir("fault_kill");
  synth(dir);
  const std::string train = std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") +
                            " --epochs 3 --device reference --log-every 1";
  // The uninterrupted run: 3 epochs of 6 steps, a checkpoint at each epoch end.
  Result full = run_dnnc(dir, train + " --save " + dir.file("full.safetensors") + " --log " + dir.file("full.jsonl"));
  INFO(full.out << full.err);
  REQUIRE(full.code == 0);

  // The same run, every save paused halfway through its tensor data; killed in its second save.
  const std::string ck = dir.file("ck.safetensors");
  const std::string ck_train = dir.file("ck.train.safetensors");
  const pid_t pid = spawn_dnnc(dir, train + " --save " + ck + " --log " + dir.file("ck.jsonl"),
                               {{"DNNC_TEST_SLOW_SAVE_MS", "1500"}}, "killed");
  REQUIRE(pid > 0);
  const std::string partial = ck_train + ".tmp." + std::to_string(pid);
  bool in_second_save = false;
  for (int i = 0; i < 24000 && !in_second_save; ++i) {  // up to 120 s (slow sanitizer builds)
    // ck.safetensors is written last in a save: once it exists, a new temp file is save two.
    in_second_save = fs::exists(ck) && fs::exists(partial);
    if (!in_second_save) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO(dnnc::test::read_file(dir.file("killed.out")) << dnnc::test::read_file(dir.file("killed.err")));
  REQUIRE(in_second_save);
  CHECK(WIFSIGNALED(status));
  CHECK(fs::exists(partial));  // the partial write is in the temporary file, not the checkpoint

  // Both files of the first save are whole and say "end of epoch 1".
  auto state = dnnc::runtime::read_safetensors_file(ck_train);
  CHECK(state.metadata.at("epoch") == "1");
  CHECK(state.metadata.at("batch_in_epoch") == "0");
  CHECK(state.metadata.at("step") == "6");
  CHECK(dnnc::runtime::read_safetensors_file(ck).metadata.at("epoch") == "1");

  Result resumed =
      run_dnnc(dir, train + " --resume " + ck + " --save " + ck + " --log " + dir.file("ck.jsonl"), "resumed");
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(resumed.out.find("resume: from " + ck + " after epoch 1 (step 6)") != std::string::npos);

  const auto want = step_losses(dir.file("full.jsonl"));
  const auto got = step_losses(dir.file("ck.jsonl"));
  REQUIRE(want.size() == 18);
  CHECK(got == want);  // bit-identical losses, step by step
  CHECK(
      same_tensors(dnnc::runtime::read_safetensors(ck), dnnc::runtime::read_safetensors(dir.file("full.safetensors"))));
  CHECK(same_tensors(dnnc::runtime::read_safetensors(ck_train),
                     dnnc::runtime::read_safetensors(dir.file("full.train.safetensors"))));
}

TEST_CASE("dnnc eval --init with a checkpoint of other shapes names each tensor and both shapes", "[trainer][fault]") {
  TempDir dir("fault_shapes");
  synth(dir);
  using dnnc::runtime::Tensor;
  dnnc::runtime::NamedTensors ts;
  ts.emplace_back("fc1.weight", Tensor::from_f32({32, 100}, std::vector<float>(3200, 0.f)));
  ts.emplace_back("fc1.bias", Tensor::from_f32({32}, std::vector<float>(32, 0.f)));
  ts.emplace_back("fc2.weight", Tensor::from_f32({10, 32}, std::vector<float>(320, 0.f)));
  ts.emplace_back("fc2.bias", Tensor::from_f32({11}, std::vector<float>(11, 0.f)));
  dnnc::runtime::write_safetensors(dir.file("bad.safetensors"), ts);
  Result r = run_dnnc(dir, std::string("eval ") + dnnc::test::kTinyMlp + " --device reference --init " +
                               dir.file("bad.safetensors") + " --data " + dir.file("cifar"));
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find(dir.file("bad.safetensors") + ": does not match model TinyMLP") != std::string::npos);
  CHECK(r.err.find("fc1.weight (expected f32[32,192], found f32[32,100])") != std::string::npos);
  CHECK(r.err.find("fc2.bias (expected f32[10], found f32[11])") != std::string::npos);
}

TEST_CASE("dnnc train --resume with a training state of other shapes names the tensor and both shapes",
          "[trainer][fault]") {
  TempDir dir("fault_resume_shapes");
  synth(dir);
  const std::string train =
      std::string("train ") + dnnc::test::kTinyMlp + " --data " + dir.file("cifar") + " --device reference --steps 2";
  Result first = run_dnnc(dir, train + " --save " + dir.file("ck.safetensors"));
  INFO(first.out << first.err);
  REQUIRE(first.code == 0);
  // Rewrite the training state with one optimizer-state tensor of the wrong shape.
  const std::string state_path = dir.file("ck.train.safetensors");
  auto state = dnnc::runtime::read_safetensors_file(state_path);
  bool replaced = false;
  for (auto& [name, t] : state.tensors) {
    if (name.rfind("fc2.bias.", 0) == 0 && t.shape() == std::vector<int64_t>{10}) {
      t = dnnc::runtime::Tensor::from_f32({2, 5}, std::vector<float>(10, 0.f));
      replaced = true;
      INFO("replaced " << name);
      break;
    }
  }
  REQUIRE(replaced);
  dnnc::runtime::write_safetensors(state_path, state.tensors, state.metadata);
  Result r = run_dnnc(dir, train + " --resume " + dir.file("ck.safetensors"), "resume");
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find(state_path + ": does not match model TinyMLP") != std::string::npos);
  CHECK(r.err.find("(expected f32[10], found f32[2,5])") != std::string::npos);

  // A training state that is cut short is refused too, and the file is named.
  const std::string bytes = dnnc::test::read_file(state_path);
  std::ofstream(state_path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size() / 2);
  Result cut = run_dnnc(dir, train + " --resume " + dir.file("ck.safetensors"), "cut");
  INFO(cut.out << cut.err);
  CHECK(cut.code == 1);
  CHECK(cut.err.find(state_path + ": ") != std::string::npos);
}

TEST_CASE("hostile data and checkpoint files are refused with exit 1 naming the file", "[trainer][fault]") {
  TempDir dir("fault_files");
  synth(dir);
  SECTION("a safetensors header length past the end of the file") {
    std::string bad(16, '\0');
    bad[5] = 1;  // 2^40
    std::ofstream(dir.file("bad.safetensors"), std::ios::binary).write(bad.data(), bad.size());
    Result r = run_dnnc(dir, std::string("eval ") + dnnc::test::kTinyMlp + " --device reference --init " +
                                 dir.file("bad.safetensors") + " --data " + dir.file("cifar"));
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find("header length 1099511627776 runs past the end of the file (16 bytes)") != std::string::npos);
  }
  SECTION("a CIFAR-10 batch cut in the middle of a record") {
    fs::resize_file(dir.file("cifar/data_batch_1.bin"), 96 * 3073 - 100);
    Result r = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + " --device reference --steps 1 --data " +
                                 dir.file("cifar"));
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find(dir.file("cifar/data_batch_1.bin") + ": size 294908 bytes is not a non-zero multiple") !=
          std::string::npos);
  }
  SECTION("an IDX file whose header claims more images than it holds") {
    std::string idx = {0, 0, 8, 3, 0, 0, 0, 9, 0, 0, 0, 28, 0, 0, 0, 28};
    idx += std::string(28 * 28 * 2, '\x01');
    std::ofstream(dir.file("images.idx"), std::ios::binary).write(idx.data(), idx.size());
    // The weights are read before the images: they must exist.
    Result saved = run_dnnc(dir, std::string("train ") + dnnc::test::kTinyMlp + " --device reference --steps 1 --data " +
                                     dir.file("cifar") + " --save " + dir.file("ck.safetensors"));
    REQUIRE(saved.code == 0);
    Result r = run_dnnc(dir, std::string("infer ") + dnnc::test::kTinyMlp + " --device reference --init " +
                                 dir.file("ck.safetensors") + " --images " + dir.file("images.idx"));
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find(dir.file("images.idx") +
                     ": header (dims 9x28x28) means 7072 bytes in all, but the file holds 1584 bytes") !=
          std::string::npos);
  }
}
