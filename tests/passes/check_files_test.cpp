// CHECK-style pass tests: each tests/passes/check/*.ir holds an input module, the passes to run
// (`// RUN: passes=...`) and the CHECK lines the printed result must match.
#include <catch2/catch.hpp>
#include <filesystem>

#include "ir/verifier.h"
#include "pass_test_util.h"
#include "tests/support/filecheck.h"

using namespace dnnc;

TEST_CASE("CHECK-style pass tests in tests/passes/check", "[passes][filecheck]") {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/passes/check")) {
    if (e.path().extension() != ".ir") continue;
    ++files;
    std::string path = e.path().string();
    INFO(path);
    test::CheckFile f = test::parse_check_file(test::read_file(path));
    REQUIRE_FALSE(f.passes.empty());
    REQUIRE_FALSE(f.checks.empty());
    ir::Module m = ir::parse_module(f.input, path);
    ir::verify(m);
    test::run_passes(m, f.passes, f.target);
    std::string out = ir::print(m);
    std::string problem = test::filecheck(out, f.checks);
    INFO("output:\n" << out);
    CHECK(problem == "");
  }
  CHECK(files >= 4);
}

TEST_CASE("filecheck itself fails on a missing line, a wrong next line and a forbidden line", "[filecheck]") {
  std::string out = "a\nb\nc\n";
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK-NEXT", "b"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK-NEXT", "c"}}) != "");
  CHECK(test::filecheck(out, {{"CHECK", "z"}}) != "");
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK-NOT", "b"}, {"CHECK", "c"}}) != "");
}
