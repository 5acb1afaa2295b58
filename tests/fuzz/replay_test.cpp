// Replays every committed fuzz input (tests/fuzz/corpus/<target>/ and the crash reproducers in
// tests/fuzz/regressions/<target>/) through the fuzz target bodies, in the normal build: a fixed
// crash that comes back fails here (as an abort or a sanitizer report) even without libFuzzer.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> out;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path("tests/fuzz") / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every fuzz target has seed inputs and a regressions folder", "[fuzz]") {
  for (const auto& t : dnnc::fuzz::all_targets()) {
    INFO("target " << t.name);
    CHECK(fs::is_directory(fs::path("tests/fuzz/corpus") / t.name));
    CHECK(fs::is_directory(fs::path("tests/fuzz/regressions") / t.name));
    CHECK(inputs_of(t.name).size() >= 2);
  }
}

TEST_CASE("the committed fuzz inputs replay without a finding", "[fuzz]") {
  size_t replayed = 0;
  for (const auto& t : dnnc::fuzz::all_targets()) {
    for (const fs::path& p : inputs_of(t.name)) {
      // A finding aborts the process; name the input first so the log says which one.
      dnnc::fuzz::set_current_input(p.string());
      const std::vector<uint8_t> bytes = read_bytes(p);
      t.run(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  dnnc::fuzz::set_current_input("");
  CHECK(replayed >= 10);
}
