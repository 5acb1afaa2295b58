// Tests of the backend registry and `--device` selection (runtime/backends.h).
#include "runtime/backends.h"

#include <catch2/catch.hpp>

using namespace dnnc::runtime;

namespace {

BackendFactory fake(const std::string& name, const std::string& unavailable) {
  return {name, [unavailable] { return unavailable; }, [] { return make_reference_backend(); }};
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
