// Tests of IR parser diagnostics: malformed text is reported at its line:col with "expected X, found Y".
#include <catch2/catch.hpp>

#include "ir/parser.h"

using namespace dnnc::ir;

namespace {
// The error's what() ("file:line:col: error: message"), or "no error".
std::string parse_error(const std::string& text) {
  try {
    parse_module(text, "bad.ir");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "no error";
}
const std::string kHead = "module M {\n  param @w : f32[4] weight init=zeros\n  graph g(%x: f32[N,4]) {\n";
}  // namespace

TEST_CASE("parser: missing module header", "[ir][parser]") {
  CHECK(parse_error("modul M {}") == "bad.ir:1:1: error: expected 'module', found identifier 'modul'");
}

TEST_CASE("parser: unexpected module item and trailing text", "[ir][parser]") {
  CHECK(parse_error("module M {\n  params @w\n}") ==
        "bad.ir:2:3: error: expected 'source', 'batch', 'param', 'train', 'graph' or '}', found identifier 'params'");
  CHECK(parse_error("module M {\n}\n}") == "bad.ir:3:1: error: expected end of input, found '}'");
  CHECK(parse_error("module M {\n") ==
        "bad.ir:2:1: error: expected 'source', 'batch', 'param', 'train', 'graph' or '}', found end of input");
}

TEST_CASE("parser: malformed types", "[ir][parser]") {
  CHECK(parse_error("module M {\n  param @w : f16[4] weight\n}") ==
        "bad.ir:2:14: error: expected a type (f32[...] or i64[...]), found identifier 'f16'");
  CHECK(parse_error("module M {\n  param @w : f32[4,M] weight\n}") ==
        "bad.ir:2:20: error: expected a dimension (an integer or the batch symbol N), found identifier 'M'");
  CHECK(parse_error("module M {\n  param @w : f32[4]{nchw} weight\n}") ==
        "bad.ir:2:21: error: expected a layout (nhwc or col_major), found identifier 'nchw'");
  CHECK(parse_error("module M {\n  param @w : f32[4 weight\n}") ==
        "bad.ir:2:20: error: expected ']', found identifier 'weight'");
}

TEST_CASE("parser: bad param role and duplicate param", "[ir][parser]") {
  CHECK(parse_error("module M {\n  param @w : f32[4] bias\n}") ==
        "bad.ir:2:21: error: expected a param role (weight, buffer or optimizer_state), found identifier 'bias'");
  CHECK(parse_error("module M {\n  param @w : f32[4] weight\n  param @w : f32[4] weight\n}") ==
        "bad.ir:3:9: error: param @w is declared twice");
}

TEST_CASE("parser: undefined and redefined values, unknown params", "[ir][parser]") {
  CHECK(parse_error(kHead + "    %y = relu(%z) : f32[N,4]\n") == "bad.ir:4:15: error: use of undefined value %z");
  CHECK(parse_error(kHead + "    %x = relu(%x) : f32[N,4]\n") == "bad.ir:4:5: error: redefinition of value %x");
  CHECK(parse_error(kHead + "    %y = mul(%x, @v) : f32[N,4]\n") ==
        "bad.ir:4:18: error: use of unknown param @v (params must be declared before graphs)");
  CHECK(parse_error(kHead + "    update @v = %x\n") == "bad.ir:4:12: error: update of unknown param @v");
}

TEST_CASE("parser: result types must match the results", "[ir][parser]") {
  CHECK(parse_error(kHead + "    %y, %z = relu(%x) : f32[N,4]\n") ==
        "bad.ir:4:23: error: expected 2 result types (one per result), found 1");
  CHECK(parse_error(kHead + "    %y = relu(%x) f32[N,4]\n") ==
        "bad.ir:4:19: error: expected 1 result types (one per result), found 0");
}

TEST_CASE("parser: malformed attributes", "[ir][parser]") {
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=} : f32[N,4]\n") ==
        "bad.ir:4:22: error: expected an attribute value (number, true, false, string or list), found '}'");
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=1, a=2} : f32[N,4]\n") ==
        "bad.ir:4:25: error: attribute 'a' is given twice");
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=[1,true]} : f32[N,4]\n") ==
        "bad.ir:4:25: error: expected a number, found identifier 'true'");
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=99999999999999999999} : f32[N,4]\n") ==
        "bad.ir:4:22: error: expected a 64-bit integer, found 99999999999999999999");
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=1e999} : f32[N,4]\n") ==
        "bad.ir:4:22: error: expected a finite double, found 1e999");
}

TEST_CASE("parser: lexical errors", "[ir][parser]") {
  CHECK(parse_error("module M {\n  source \"abc\n}") ==
        "bad.ir:2:10: error: unterminated string; expected '\"', "
        "found end of input");
  CHECK(parse_error("module M { # }") == "bad.ir:1:12: error: expected a token, found '#'");
  CHECK(parse_error(kHead + "    % = relu(%x)\n") == "bad.ir:4:5: error: expected a name after '%', found ' '");
  CHECK(parse_error(kHead + "    %y = relu(%x) {a=1e} : f32[N,4]\n") ==
        "bad.ir:4:24: error: expected digits in the exponent, found '}'");
}

TEST_CASE("parser: malformed train config and loc", "[ir][parser]") {
  CHECK(parse_error("module M {\n  train {lr=0.1} optimizer \"sgd\" {}\n}") ==
        "bad.ir:2:10: error: expected a train field (data, mean, std, crop_padding, flip_p, batch, epochs, seed, clip_grad_norm), found identifier 'lr'");
  CHECK(parse_error("module M {\n  train {batch=4} \"sgd\" {}\n}") ==
        "bad.ir:2:19: error: expected 'optimizer', found string \"sgd\"");
  CHECK(parse_error(kHead + "    %y = relu(%x) : f32[N,4] loc(3)\n") == "bad.ir:4:35: error: expected ':', found ')'");
}

TEST_CASE("parser: duplicate graph and graph input", "[ir][parser]") {
  CHECK(parse_error("module M {\n  graph g() {\n return\n }\n  graph g() {\n return\n }\n}") ==
        "bad.ir:5:9: error: graph 'g' is defined twice");
  CHECK(parse_error("module M {\n  graph g(%x: f32[], %x: f32[]) {\n return\n }\n}") ==
        "bad.ir:2:22: error: redefinition of value %x");
}

TEST_CASE("parser: every truncation of a valid module fails with a located CompileError", "[ir][parser]") {
  const std::string text = kHead +
                           "    %y, %z = custom(%x, @w) {a=[1,2], b=-0.5, c=\"s\"} : f32[N,4], i64[] loc(4:5)\n"
                           "    return %y\n    update @w = %y\n  }\n}\n";
  REQUIRE(parse_error(text) == "no error");
  // Cutting anywhere before the final '}' leaves something unfinished.
  for (size_t cut = 0; cut < text.rfind('}'); ++cut) {
    std::string prefix = text.substr(0, cut);
    INFO("cut at " << cut << ": " << prefix);
    std::string err = parse_error(prefix);
    CHECK(err.rfind("bad.ir:", 0) == 0);
    CHECK(err.find(": error: ") != std::string::npos);
  }
}
