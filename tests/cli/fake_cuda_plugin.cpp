// A stand-in for libdnnc_cuda.so that needs no GPU, for tests of the core's path to the plugin
// (runtime/cuda/plugin_api.h): it reports a usable device unless $DNNC_FAKE_CUDA_UNAVAILABLE
// holds a reason, and on creation prints the options it received to stderr, so a test of
// `dnnc train --device cuda --tf32` sees what reached the plugin. Its backend compiles nothing,
// unless $DNNC_FAKE_CUDA_BACKEND=reference: then it wraps the reference interpreter, keeps its
// own "device" copy of the params like the real plugin (uploaded at every run and train call,
// written back by run and sync_params only), and exports `dnnc_cuda_resident` with a
// ResidentTrainer that runs the batches `order` selects step by step. It prints one stderr line
// per load_dataset, train and train_step run, so tests see which path the trainer took.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/plugin_api.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace {

using dnnc::runtime::Executable;
using dnnc::runtime::ParamStore;
using dnnc::runtime::Tensor;

// An executable of the wrapped reference backend, bound to a private copy of the params.
class FakeCudaExecutable final : public Executable, public dnnc::runtime::cuda::ResidentTrainer {
 public:
  FakeCudaExecutable(const dnnc::ir::Module& m, const std::string& graph, ParamStore& host, int64_t batch)
      : host_(host), device_(host), graph_(graph), batch_(batch) {
    const dnnc::ir::Graph* g = m.graph(graph);
    if (!g) throw std::runtime_error("fake cuda plugin: no graph " + graph);
    for (dnnc::ir::ValueId id : g->inputs) inputs_.push_back(g->value(id).name);
    inner_ = dnnc::runtime::make_reference_backend()->compile(m, graph, device_, batch);
  }

  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    if (graph_ == "train_step") std::fprintf(stderr, "fake cuda plugin: run(train_step, batch=%lld)\n", ll(batch_));
    device_.tensors = host_.tensors;
    std::vector<Tensor> out = inner_->run(inputs);
    host_.tensors = device_.tensors;
    return out;
  }

  void load_dataset(const std::vector<Tensor>& inputs) override {
    if (inputs.size() != inputs_.size()) throw std::runtime_error("fake cuda plugin: dataset has the wrong tensors");
    for (const Tensor& t : inputs)
      if (t.rank() < 1 || t.dim(0) != inputs[0].dim(0))
        throw std::runtime_error("fake cuda plugin: dataset tensors have different sample counts");
    dataset_ = inputs;
    std::fprintf(stderr, "fake cuda plugin: load_dataset(%lld samples)\n", ll(samples()));
  }

  std::vector<float> train(const std::vector<int64_t>& order, int64_t steps, int64_t metrics_every) override {
    std::fprintf(stderr, "fake cuda plugin: train(steps=%lld, metrics_every=%lld)\n", ll(steps), ll(metrics_every));
    if (dataset_.empty()) throw std::runtime_error("fake cuda plugin: train: no dataset loaded");
    const int64_t n = samples();
    if (static_cast<int64_t>(order.size()) != n)
      throw std::runtime_error("fake cuda plugin: train: order is not a permutation of the samples");
    std::vector<bool> seen(static_cast<size_t>(n));
    for (int64_t i : order) {
      if (i < 0 || i >= n || seen[static_cast<size_t>(i)])
        throw std::runtime_error("fake cuda plugin: train: order is not a permutation of the samples");
      seen[static_cast<size_t>(i)] = true;
    }
    device_.tensors = host_.tensors;  // as the real plugin: every call uploads the params
    std::vector<float> losses;
    for (int64_t s = 0; s < steps; ++s) {
      std::map<std::string, Tensor> in;
      for (size_t k = 0; k < dataset_.size(); ++k) {
        const Tensor& t = dataset_[k];
        std::vector<int64_t> shape = t.shape();
        shape[0] = batch_;
        Tensor x(t.dtype(), shape);
        size_t row = t.nbytes() / static_cast<size_t>(n);
        for (int64_t r = 0; r < batch_; ++r) {
          int64_t src = order[static_cast<size_t>((s * batch_ + r) % n)];
          std::memcpy(static_cast<char*>(x.data()) + r * row, static_cast<const char*>(t.data()) + src * row, row);
        }
        in.emplace(inputs_[k], std::move(x));
      }
      std::vector<Tensor> out = inner_->run(in);
      losses.push_back(out.at(0).f32()[0]);
    }
    return losses;
  }

  void sync_params() override { host_.tensors = device_.tensors; }

  bool is_train_step() const { return graph_ == "train_step"; }

 private:
  static long long ll(int64_t v) { return static_cast<long long>(v); }
  int64_t samples() const { return dataset_.empty() ? 0 : dataset_[0].dim(0); }

  ParamStore& host_;
  ParamStore device_;
  std::string graph_;
  int64_t batch_;
  std::vector<std::string> inputs_;
  std::unique_ptr<Executable> inner_;
  std::vector<Tensor> dataset_;
};

class FakeCudaBackend : public dnnc::runtime::Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::unique_ptr<Executable> compile(const dnnc::ir::Module& m, const std::string& graph, ParamStore& params,
                                      int64_t batch) override {
    const char* wrap = std::getenv("DNNC_FAKE_CUDA_BACKEND");
    if (!wrap || std::string(wrap) != "reference")
      throw std::runtime_error("fake cuda plugin: compile is not implemented");
    return std::make_unique<FakeCudaExecutable>(m, graph, params, batch);
  }
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int dnnc_cuda_plugin_abi(void) { return DNNC_CUDA_PLUGIN_ABI; }

__attribute__((visibility("default"))) bool dnnc_cuda_probe(std::string* why) {
  const char* w = std::getenv("DNNC_FAKE_CUDA_UNAVAILABLE");
  if (w && *w) *why = w;
  return !(w && *w);
}

__attribute__((visibility("default"))) dnnc::runtime::Backend* dnnc_cuda_create(
    const dnnc::runtime::cuda::CudaOptions* options, std::string* error) {
  if (!options) {
    *error = "fake cuda plugin: no options";
    return nullptr;
  }
  static const char* const kEpilogues[] = {"on", "off", "log"};
  static const char* const kAlgos[] = {"heuristic", "tune"};
  std::fprintf(stderr, "fake cuda plugin: create(tf32=%d, epilogues=%s, gemm_algo=%s)\n", options->tf32 ? 1 : 0,
               kEpilogues[static_cast<int>(options->epilogues)], kAlgos[static_cast<int>(options->gemm_algo)]);
  return new FakeCudaBackend();
}

__attribute__((visibility("default"))) dnnc::runtime::cuda::ResidentTrainer* dnnc_cuda_resident(
    dnnc::runtime::Executable* exe) {
  auto* e = dynamic_cast<FakeCudaExecutable*>(exe);
  return e && e->is_train_step() ? e : nullptr;
}
}
