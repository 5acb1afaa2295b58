// Helpers of the trainer tests: compiling a model with recipe overrides (as `dnnc train`
// does), synthetic data, a counting backend, and temporary directories.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "passes/pass_manager.h"
#include "runtime/backend.h"
#include "runtime/data/synth_cifar.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::test {

inline constexpr const char* kTinyMlp = "tests/trainer/tiny_mlp.dnn";
inline constexpr const char* kTinyBn = "tests/trainer/tiny_bn.dnn";

/// Compiles `path` through the default pipeline after replacing the recipe's lr if given.
inline ir::Module compile_for_training(const std::string& path, std::optional<double> lr = std::nullopt) {
  ir::Module m = frontend::compile_file(path);
  if (lr) m.train.optimizer.attrs["lr"] = *lr;
  passes::PassRegistry registry;
  passes::register_all_passes(registry);
  passes::run_pipeline(m, registry, {});
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

}  // namespace dnnc::test
