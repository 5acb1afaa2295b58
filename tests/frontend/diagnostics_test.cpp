// Diagnostics outside the invalid-file suite: file errors, the exact CIFAR-bug message,
// and robustness (random mutations of the seed models only ever raise CompileError).
#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <sstream>

#include "frontend/frontend.h"
#include "frontend/parser.h"
#include "frontend/suggest.h"
#include "test_util.h"

using namespace dnnc;

TEST_CASE("compile_file: a missing file is a CompileError naming it, without a location", "[frontend][diag]") {
  try {
    frontend::compile_file("tests/invalid/does_not_exist.dnn");
    FAIL("no error");
  } catch (const ir::CompileError& e) {
    CHECK(e.file() == "tests/invalid/does_not_exist.dnn");
    CHECK_FALSE(e.loc().known());
    CHECK(e.message() == "cannot open file: No such file or directory");
    CHECK(ir::format_diagnostic(e, "") ==
          "tests/invalid/does_not_exist.dnn: error: cannot open file: No such file or directory\n");
  }
}

TEST_CASE("compile_file: a directory is not a readable model", "[frontend][diag]") {
  CHECK_THROWS_AS(frontend::compile_file("models"), ir::CompileError);
}

TEST_CASE("the seed CIFAR bug points at the in_features argument with expected/found", "[frontend][diag]") {
  std::ifstream in("models/cifar_cnn.dnn");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string src = ss.str();
  const std::string good = "linear(16 * 15 * 15, 10)";
  size_t at = src.find(good);
  REQUIRE(at != std::string::npos);
  src.replace(at, good.size(), "linear(16 * 6 * 6, 10)");
  try {
    frontend::compile_source(src, "cifar_bug.dnn");
    FAIL("no error");
  } catch (const ir::CompileError& e) {
    CHECK(e.loc() == ir::SourceLoc{7, 18});
    CHECK(e.message() ==
          "layer 'fc' declares in_features 576, but its input flatten(...) at 10:15 has 3600 features: "
          "expected 3600, found 576");
  }
}

TEST_CASE("dump_ast parses without lowering", "[frontend][diag]") {
  std::string text = frontend::dump_ast("model M {\n  x = undefined_op(1)\n}\n", "t.dnn");
  CHECK(text == "model M @1:7\n  assign x @2:3\n    call undefined_op @2:7\n      int 1 @2:20\n");
}

TEST_CASE("robustness: random byte edits of the seed models raise only CompileError", "[frontend][diag]") {
  std::vector<std::string> sources;
  for (const char* p :
       {"models/mnist_mlp.dnn", "models/cifar_cnn.dnn", "models/lenet5.dnn", "models/cifar_strided.dnn"})
    sources.push_back(frontend::read_source(p));
  std::mt19937 rng(12345);
  const std::string alphabet = "()[]{},:=+-*/#\"\n 0123456789eNxfc_.\x01\xff";
  int errors = 0, ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = sources[static_cast<size_t>(iter) % sources.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      size_t pos = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.erase(pos, 1 + rng() % 8); break;
        default: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    try {
      frontend::compile_source(s, "fuzz.dnn");
      ++ok;
    } catch (const ir::CompileError& e) {
      ++errors;
      // Every located error is inside the text (or at its end).
      if (e.loc().known()) CHECK(e.loc().line >= 1);
      (void)ir::format_diagnostic(e, s);
    }
  }
  CHECK(errors > 1000);
  CHECK(ok + errors == 3000);
}

TEST_CASE("suggestions: close typos, swapped letters and case differences; nothing for far names", "[frontend][diag]") {
  using frontend::closest_name;
  CHECK(closest_name("relux", {"tanh", "relu", "gelu"}) == "relu");
  CHECK(closest_name("sdg", {"sgd", "adam", "adamw"}) == "sgd");
  CHECK(closest_name("ReLU", {"relu"}) == "relu");
  CHECK(closest_name("xyz", {"relu", "tanh"}).empty());
  CHECK(closest_name("ab", {"cd"}).empty());
  CHECK(frontend::did_you_mean("imgae", {"image", "label"}) == "; did you mean 'image'?");
}

TEST_CASE("limits: sources over 1 MiB are rejected before lexing", "[frontend][diag]") {
  std::string big(static_cast<size_t>(1 << 20) + 1, ' ');
  try {
    frontend::compile_source(big, "big.dnn");
    FAIL("no error");
  } catch (const ir::CompileError& e) {
    CHECK_FALSE(e.loc().known());
    CHECK(e.message() == "source is too large for a .dnn model: 1048577 bytes, the limit is 1048576 (1 MiB)");
  }
}

TEST_CASE("limits: more than 10000 statements is an error at the first one over", "[frontend][diag]") {
  std::string src = "model M {\n  input x: f32[N, 4]\n";
  for (int i = 0; i < 10000; ++i) src += "  c" + std::to_string(i) + " = 1\n";
  src += "}\n";
  CHECK(test::error_of(src) == "10002:3 the model has more than 10000 statements; dnnc compiles small models");
}

TEST_CASE("limits: more than 10000 ops is an error at the statement that crosses it", "[frontend][diag]") {
  std::string chain = "x";
  for (int i = 0; i < 199; ++i) chain += " + x";  // 199 add nodes per statement
  std::string src = "model M {\n  input x: f32[N, 4]\n";
  for (int i = 0; i < 60; ++i) src += "  a" + std::to_string(i) + " = " + chain + "\n";
  src += "}\n";
  // 199 * 51 = 10149 > 10000 after statement a50 on line 53.
  CHECK(test::error_of(src) == "53:3 the model has more than 10000 ops; dnnc compiles small models");
}
