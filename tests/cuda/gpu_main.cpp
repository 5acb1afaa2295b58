// Main of the [gpu] tests: where the cuda backend cannot run (no plugin, driver or GPU) every
// test exits with 77, which CTest reports as skipped, after printing why. Listing tests (for
// CTest's discovery) works everywhere.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstring>
#include <iostream>

#include "cuda_test_util.h"
#include "runtime/cuda/plugin_loader.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--list", 6) == 0) listing = true;
  if (!listing) {
    dnnc::test::use_build_tree_plugin();
    std::string why = dnnc::runtime::cuda::cuda_backend_unavailable_reason();
    if (!why.empty()) {
      std::cout << "SKIPPED [gpu]: the cuda backend cannot run here: " << why << "\n";
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
