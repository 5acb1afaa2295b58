// The NVRTC output cache: a second load is a hit without compiling, a corrupt entry is rebuilt,
// and the key changes with the source, the options and the arch.
#include "runtime/cuda/kernel_cache.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace dnnc::runtime::cuda;
namespace fs = std::filesystem;

TEST_CASE("kernel cache: miss, hit, corrupt entry rebuilt", "[cuda][cache]") {
  fs::path dir = fs::temp_directory_path() / ("dnnc-cuda-cache-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string src = "extern \"C\" __global__ void k_cache(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  {
    KernelCache c(dir.string());
    CachedImage a = c.load(src, "cache_test", "sm_80", {});
    CHECK(!a.hit);
    CHECK(a.cubin);
    CHECK(c.compiles() == 1);
    CachedImage b = c.load(src, "cache_test", "sm_80", {});
    CHECK(b.hit);
    CHECK(b.image == a.image);
    CHECK(c.compiles() == 1);
    CHECK(c.key(src, "sm_90", {}) != a.key);
    CHECK(c.key(src, "sm_80", {"--fmad=false"}) != a.key);
    CHECK(c.key(src + " ", "sm_80", {}) != a.key);
    CachedImage p = c.load(src, "cache_test", "compute_80", {});
    CHECK(!p.cubin);
    std::string ptx(p.image.begin(), p.image.end());
    CHECK(ptx.find(".entry k_cache") != std::string::npos);
    CHECK(ptx.find('\0') == std::string::npos);
    // Truncate the CUBIN: detected by the .meta check and rebuilt.
    fs::resize_file(dir / (a.key + ".cubin"), 10);
    CachedImage r = c.load(src, "cache_test", "sm_80", {});
    CHECK(!r.hit);
    CHECK(r.image == a.image);
    CHECK(c.rebuilds() == 1);
  }
  KernelCache fresh(dir.string());  // another process, same directory
  CHECK(fresh.load(src, "cache_test", "sm_80", {}).hit);
  fs::remove_all(dir);
}
