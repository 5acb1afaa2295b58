// Helpers of the trainer tests: compiling a model with recipe overrides (as `dnnc train`
// does), synthetic data, a counting backend, temporary directories, and running the dnnc binary.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "passes/compile.h"
#include "runtime/backend.h"
#include "runtime/data/synth_cifar.h"
#include "runtime/reference/interpreter.h"
#include "tests/support/files.h"

namespace dnnc::test {

inline constexpr const char* kTinyMlp = "tests/trainer/tiny_mlp.dnn";
inline constexpr const char* kTinyBn = "tests/trainer/tiny_bn.dnn";

/// Compiles `path` through the default pipeline after replacing the recipe's lr if given.
inline ir::Module compile_for_training(const std::string& path, std::optional<double> lr = std::nullopt) {
  ir::Module m = frontend::compile_file(path);
  if (lr) m.train.optimizer.attrs["lr"] = *lr;
  passes::compile(m);
  return m;
}

/// Records the batch size of every compile and forwards to the reference backend.
class CountingBackend final : public runtime::Backend {
 public:
  std::string name() const override { return "counting"; }
  std::unique_ptr<runtime::Executable> compile(const ir::Module& m, const std::string& graph, runtime::ParamStore& p,
                                               int64_t batch) override {
    compiled.emplace_back(graph, batch);
    return inner_->compile(m, graph, p, batch);
  }
  std::vector<std::pair<std::string, int64_t>> compiled;

 private:
  std::unique_ptr<runtime::Backend> inner_ = runtime::make_reference_backend();
};

/// A fresh, empty directory under the system temp dir, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("dnnc_trainer_" + tag + "_" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// What a run of the dnnc binary gave: exit code (-1 if it did not exit), stdout, stderr.
struct CliResult {
  int code = -1;
  std::string out, err;
};

/// Runs `ENV BINARY ARGS` through the shell from the current directory (the repository root),
/// stdout and stderr captured in `dir`; `env` is a list of NAME=VALUE words, or empty.
inline CliResult run_cli(const std::string& binary, const TempDir& dir, const std::string& env,
                         const std::string& args) {
  std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  // DNNC_POISON_ARENA=1: the run is in the arena checking mode, as every backend run of the suite.
  std::string cmd = "DNNC_POISON_ARENA=1 " + env + (env.empty() ? "" : " ") + binary + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace dnnc::test
