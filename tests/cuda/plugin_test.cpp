// The core's view of the cuda plugin: it is found in the build tree, and where no GPU can be
// used (no driver, no device) `--device auto` falls back to the cpu with the plugin's reason
// and `--device cuda` fails with it. On a machine with a usable GPU, both pick cuda.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "cuda_test_util.h"
#include "runtime/backends.h"
#include "runtime/cuda/plugin_loader.h"

using namespace dnnc;

TEST_CASE("the cuda plugin loads; device selection falls back with the plugin's reason", "[cuda][plugin]") {
  test::use_build_tree_plugin();
  runtime::BackendRegistry registry;
  runtime::register_builtin_backends(registry);
  std::string why = runtime::cuda::cuda_backend_unavailable_reason();
  INFO("reason: " << why);
  // The plugin itself was found and is ours: the reason, if any, comes from its probe.
  CHECK(why.find("no CUDA plugin") == std::string::npos);
  CHECK(why.find("cannot load") == std::string::npos);
  CHECK(runtime::cuda::cuda_plugin_symbol("dnnc_cuda_create") != nullptr);
  if (why.empty()) {
    runtime::BackendChoice c = runtime::select_backend(registry, "auto");
    CHECK(c.backend->name() == "cuda");
    return;
  }
  CHECK((why.find("cudaGetDeviceCount failed: ") == 0 || why == "no CUDA device found" ||
         why == "no usable NVIDIA driver (cudaErrorInsufficientDriver)"));
  runtime::BackendChoice c = runtime::select_backend(registry, "auto");
  CHECK(c.backend->name() != "cuda");
  CHECK(c.message.find("cuda: " + why) != std::string::npos);
  try {
    runtime::select_backend(registry, "cuda");
    FAIL("--device cuda succeeded without a usable GPU");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "device 'cuda' is not available: " + why);
  }
}

TEST_CASE("without a driver the probe names cudaErrorInsufficientDriver", "[cuda][plugin][nodriver]") {
  // This machine kind has the toolkit but no driver: the reason must say exactly that. Where
  // libcuda.so.1 exists the driver is present and this case does not apply.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) driver = dlopen("libcuda.so.1", RTLD_LAZY);
  if (driver) {
    WARN("skipped: libcuda.so.1 is present (a driver is installed)");
    return;
  }
  test::use_build_tree_plugin();
  std::string why = runtime::cuda::cuda_backend_unavailable_reason();
  CHECK(why == "no usable NVIDIA driver (cudaErrorInsufficientDriver)");
}
