// [gpu] The float64 checks of tests/golden/float64/ (float64_checks.h) on the cuda backend: each op
// case within 2x PyTorch fp32's error against float64, and the resnet_mnist trajectory, with
// cuBLASLt's own f32 GEMMs (the emulator's stand-in sums in double, so only a GPU shows these).
#include <memory>

#include "cuda_test_util.h"
#include "runtime/cuda/plugin_loader.h"
#include "tests/golden/float64_checks.h"

namespace dnnc::golden {
namespace {

[[maybe_unused]] const bool registered = [] {
  register_float64_tests("cuda", "[gpu][float64]",
                         [](const ir::Module& m, const std::string& graph, runtime::ParamStore& params, int64_t batch) {
                           runtime::cuda::CudaOptions o;
                           o.cache_dir = DNNC_TEST_CUDA_CACHE_DIR;
                           o.poison_arena = true;
                           std::shared_ptr<runtime::Backend> b = runtime::cuda::make_cuda_backend(o);
                           std::shared_ptr<runtime::Executable> exe = b->compile(m, graph, params, batch);
                           return Runner([b, exe](const std::map<std::string, runtime::Tensor>& in) {
                             return exe->run(in);
                           });
                         });
  return true;
}();

}  // namespace
}  // namespace dnnc::golden
