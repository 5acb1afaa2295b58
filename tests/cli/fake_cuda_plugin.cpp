// A stand-in for libdnnc_cuda.so that needs no GPU, for tests of the core's path to the plugin
// (runtime/cuda/plugin_api.h): it reports a usable device unless $DNNC_FAKE_CUDA_UNAVAILABLE
// holds a reason, and on creation prints the options it received to stderr, so a test of
// `dnnc train --device cuda --tf32` sees what reached the plugin. Its backend compiles nothing.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "runtime/backend.h"
#include "runtime/cuda/plugin_api.h"

namespace {

class FakeCudaBackend : public dnnc::runtime::Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::unique_ptr<dnnc::runtime::Executable> compile(const dnnc::ir::Module&, const std::string&,
                                                     dnnc::runtime::ParamStore&, int64_t) override {
    throw std::runtime_error("fake cuda plugin: compile is not implemented");
  }
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int dnnc_cuda_plugin_abi(void) { return DNNC_CUDA_PLUGIN_ABI; }

__attribute__((visibility("default"))) const char* dnnc_cuda_probe(void) {
  const char* why = std::getenv("DNNC_FAKE_CUDA_UNAVAILABLE");
  return why ? why : "";
}

__attribute__((visibility("default"))) dnnc::runtime::Backend* dnnc_cuda_create(const dnnc_cuda_options* options,
                                                                                const char** error) {
  if (!options) {
    *error = "fake cuda plugin: no options";
    return nullptr;
  }
  std::fprintf(stderr, "fake cuda plugin: create(tf32=%d)\n", options->tf32);
  return new FakeCudaBackend();
}
}
