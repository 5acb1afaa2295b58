// Tests of the backend registry and `--device` selection (runtime/backends.h).
#include "runtime/backends.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace dnnc::runtime;

namespace {

BackendFactory fake(const std::string& name, const std::string& unavailable) {
  return {name, [unavailable] { return unavailable; }, [](const BackendOptions&) { return make_reference_backend(); }};
}

// A fake that records the options each creation received.
BackendFactory recording(const std::string& name, std::vector<BackendOptions>& seen) {
  return {name, [] { return std::string(); },
          [&seen](const BackendOptions& o) {
            seen.push_back(o);
            return make_reference_backend();
          }};
}

}  // namespace

TEST_CASE("the built-in registry has the reference backend, and auto finds it", "[trainer][device]") {
  BackendRegistry registry;
  register_builtin_backends(registry);
  REQUIRE(registry.find("reference"));
  BackendChoice c = select_backend(registry, "reference");
  CHECK(c.backend->name() == "reference");
  CHECK(c.message == "device: reference (as requested)");
  BackendChoice a = select_backend(registry, "auto");
  REQUIRE(a.backend);
  CHECK(a.message.starts_with("device: " + a.backend->name() + " (auto: "));
}

TEST_CASE("auto prefers cuda, then cpu, then reference, and says why it skipped one", "[trainer][device]") {
  BackendRegistry registry;
  registry.add(fake("reference", ""));
  registry.add(fake("cpu", ""));
  registry.add(fake("cuda", "no CUDA device found"));
  BackendChoice c = select_backend(registry, "auto");
  CHECK(c.message == "device: cpu (auto: cuda: no CUDA device found)");
  BackendRegistry only_ref;
  only_ref.add(fake("reference", ""));
  CHECK(select_backend(only_ref, "auto").message ==
        "device: reference (auto: cuda: no CUDA plugin in this build; cpu: no cpu backend in this build)");
}

TEST_CASE("a named device that is missing or unavailable is an error with the reason", "[trainer][device]") {
  BackendRegistry registry;
  registry.add(fake("reference", ""));
  registry.add(fake("cuda", "no CUDA device found"));
  CHECK_THROWS_WITH(select_backend(registry, "cuda"), "device 'cuda' is not available: no CUDA device found");
  CHECK_THROWS_WITH(select_backend(registry, "cpu"), "device 'cpu' is not available: no cpu backend in this build");
  CHECK_THROWS_AS(select_backend(registry, "tpu"), std::invalid_argument);
  BackendRegistry empty;
  CHECK_THROWS_WITH(select_backend(empty, "auto"), Catch::Contains("no device is available"));
}

TEST_CASE("selection hands the options to the chosen factory and names cuda's GEMM mode", "[trainer][device]") {
  std::vector<BackendOptions> cuda_seen, cpu_seen;
  BackendRegistry registry;
  registry.add(recording("cuda", cuda_seen));
  registry.add(recording("cpu", cpu_seen));
  BackendOptions tf32;
  tf32.tf32 = true;
  CHECK(select_backend(registry, "cuda", tf32).message == "device: cuda (as requested), TF32 GEMMs");
  CHECK(select_backend(registry, "auto", tf32).message == "device: cuda (auto: the preferred one), TF32 GEMMs");
  CHECK(select_backend(registry, "cuda").message == "device: cuda (as requested), exact fp32 GEMMs");
  REQUIRE(cuda_seen.size() == 3);
  CHECK(cuda_seen[0].tf32);
  CHECK(cuda_seen[1].tf32);
  CHECK(!cuda_seen[2].tf32);
  // Other backends get the options too (and ignore them); their line has no GEMM mode.
  CHECK(select_backend(registry, "cpu", tf32).message == "device: cpu (as requested)");
  REQUIRE(cpu_seen.size() == 1);
  CHECK(cpu_seen[0].tf32);
  CHECK(cuda_seen.size() == 3);
}
