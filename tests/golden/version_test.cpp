// The golden files' format/version check: every committed file is "dnnc-golden" version 1, and
// a mismatch fails with the command that regenerates them.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "golden_file.h"
#include "runtime/checkpoint/safetensors.h"

namespace dnnc::golden {
namespace {

TEST_CASE("every golden file has format dnnc-golden and version 1", "[golden][version]") {
  std::vector<std::string> ops = list_golden_files("ops"), models = list_golden_files("models");
  INFO("no golden files found under tests/golden: regenerate with " << kRegenerate);
  REQUIRE(!ops.empty());
  REQUIRE(!models.empty());
  std::vector<std::string> all = ops;
  all.insert(all.end(), models.begin(), models.end());
  for (const std::string& path : all) {
    std::map<std::string, std::string> metadata;
    try {
      metadata = runtime::read_safetensors_file(path).metadata;
    } catch (const std::exception& e) {
      FAIL_CHECK("golden file " << display_path(path) << " cannot be read (" << e.what() << "): regenerate with "
                                << kRegenerate);
      continue;
    }
    std::string problem = version_problem(path, metadata);
    if (!problem.empty()) FAIL_CHECK(problem);
    std::string kind = metadata.count("kind") ? metadata.at("kind") : "(none)";
    INFO(display_path(path));
    CHECK(kind == (path.find("/ops/") != std::string::npos ? "op" : "model"));
  }
}

// A scratch golden file in the build's temporary folder, removed at scope exit.
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()) + ".safetensors"))
                 .string()) {}
  ~ScratchFile() { std::remove(path.c_str()); }
};

TEST_CASE("a golden file of another version fails with the regeneration command", "[golden][version]") {
  ScratchFile f("dnnc_golden_v2");
  runtime::write_safetensors(f.path, {{"in.x", runtime::Tensor::scalar(1.0f)}},
                             {{"format", "dnnc-golden"}, {"version", "2"}, {"kind", "op"}});
  std::string want = "golden file " + f.path + " has version 2, expected 1: regenerate with " +
                     "/usr/bin/python3 tests/golden/make_golden.py";
  CHECK(version_problem(f.path, runtime::read_safetensors_file(f.path).metadata) == want);
  CHECK_THROWS_WITH(load_golden(f.path), want);
}

TEST_CASE("a file that is not a dnnc golden fails with the regeneration command", "[golden][version]") {
  ScratchFile f("dnnc_golden_format");
  runtime::write_safetensors(f.path, {{"w", runtime::Tensor::scalar(1.0f)}}, {{"version", "1"}});
  CHECK_THROWS_WITH(load_golden(f.path), "golden file " + f.path +
                                             " has format (none), expected dnnc-golden: regenerate with "
                                             "/usr/bin/python3 tests/golden/make_golden.py");
}

TEST_CASE("a missing golden file fails with the regeneration command", "[golden][version]") {
  std::string path = source_dir() + "/tests/golden/ops/no_such_case.safetensors";
  CHECK_THROWS_WITH(load_golden(path), Catch::Contains("golden file tests/golden/ops/no_such_case.safetensors cannot "
                                                       "be read") &&
                                           Catch::EndsWith("regenerate with /usr/bin/python3 "
                                                           "tests/golden/make_golden.py"));
}

}  // namespace
}  // namespace dnnc::golden
