// Runs every tests/invalid/NAME.dnn through compile_file and compares the full diagnostic
// (format_diagnostic: location line, source line, caret) with NAME.expected byte for byte.
// DNNC_UPDATE_EXPECTED=1 rewrites the .expected files (review the diff before committing).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/frontend.h"
#include "tests/support/files.h"

using namespace dnnc;
namespace fs = std::filesystem;

namespace {

const char* kDir = "tests/invalid";

std::string read_all(const fs::path& p) { return dnnc::test::read_file(p.string()); }

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A line diff: "-" expected, "+" actual (LCS-based, fine for a few lines).
std::string line_diff(const std::string& expected, const std::string& actual) {
  auto a = lines_of(expected), b = lines_of(actual);
  std::vector<std::vector<size_t>> lcs(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out += "  " + a[i++] + "\n";
      ++j;
    } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out += "+ " + b[j++] + "\n";
    } else {
      out += "- " + a[i++] + "\n";
    }
  }
  return out;
}

// The diagnostic compile_file reports for `path`, or "" if it compiles.
std::string diagnostic_for(const std::string& path) {
  std::string source = read_all(path);
  try {
    frontend::compile_file(path);
  } catch (const ir::CompileError& e) {
    return ir::format_diagnostic(e, source);
  }
  return "";
}

std::vector<std::string> invalid_inputs() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kDir))
    if (entry.path().extension() == ".dnn") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("invalid inputs: each tests/invalid/*.dnn fails with exactly its .expected diagnostic",
          "[frontend][invalid]") {
  std::vector<std::string> names = invalid_inputs();
  REQUIRE(names.size() >= 30);
  bool update = std::getenv("DNNC_UPDATE_EXPECTED") != nullptr;
  for (const auto& name : names) {
    std::string path = std::string(kDir) + "/" + name + ".dnn";
    fs::path expected_path = std::string(kDir) + "/" + name + ".expected";
    std::string actual = diagnostic_for(path);
    if (update && !actual.empty()) std::ofstream(expected_path, std::ios::binary) << actual;
    DYNAMIC_SECTION(name) {
      INFO("input: " << path);
      REQUIRE_FALSE(actual.empty());
      REQUIRE(fs::exists(expected_path));
      std::string expected = read_all(expected_path);
      INFO("diff (- expected, + actual):\n" << line_diff(expected, actual));
      CHECK(actual == expected);
    }
  }
}

TEST_CASE("invalid inputs: every .expected file has its .dnn input", "[frontend][invalid]") {
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".expected") continue;
    fs::path input = entry.path();
    input.replace_extension(".dnn");
    INFO(entry.path().string());
    CHECK(fs::exists(input));
  }
}
