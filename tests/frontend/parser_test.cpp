// Parser unit tests: structure of the AST, precedence, locations, syntax errors, depth limit.
#include "frontend/parser.h"

#include <catch2/catch.hpp>

using namespace dnnc;
using frontend::ast::ExprKind;

static std::string error_of(const std::string& src) {
  try {
    frontend::parse(src, "t.dnn");
  } catch (const ir::CompileError& e) {
    return std::to_string(e.loc().line) + ":" + std::to_string(e.loc().col) + " " + e.message();
  }
  return "no error";
}

static frontend::ast::File parse_model_body(const std::string& body) {
  return frontend::parse("model M {\n" + body + "\n}\n", "t.dnn");
}

TEST_CASE("parser: input declarations keep name, dtype and dims", "[frontend][parser]") {
  auto f = parse_model_body("  input image: f32[N, 3, 32 * 1]");
  REQUIRE(f.model.stmts.size() == 1);
  const auto& in = *f.model.stmts[0].input;
  CHECK(in.name == "image");
  CHECK(in.loc == ir::SourceLoc{2, 9});
  CHECK(in.dtype == "f32");
  REQUIRE(in.dims.size() == 3);
  CHECK(in.dims[0]->kind == ExprKind::ident);
  CHECK(in.dims[2]->kind == ExprKind::binary);
}

TEST_CASE("parser: * binds tighter than +, and operators associate left", "[frontend][parser]") {
  auto f = parse_model_body("x = 1 + 2 * 3 - 4");
  const auto& e = *f.model.stmts[0].assign->value;
  REQUIRE(e.kind == ExprKind::binary);
  CHECK(e.op == '-');
  const auto& lhs = *e.elems[0];
  CHECK(lhs.op == '+');
  CHECK(lhs.elems[1]->op == '*');
  CHECK(e.loc == ir::SourceLoc{2, 15});
}

TEST_CASE("parser: calls keep positional and keyword args; tuples need a comma", "[frontend][parser]") {
  auto f = parse_model_body("y = maxpool2d(relu(x), kernel: (3, 3), stride: (2))");
  const auto& c = *f.model.stmts[0].assign->value;
  REQUIRE(c.kind == ExprKind::call);
  CHECK(c.name == "maxpool2d");
  REQUIRE(c.args.size() == 3);
  CHECK(c.args[0].key.empty());
  CHECK(c.args[0].value->kind == ExprKind::call);
  CHECK(c.args[1].key == "kernel");
  CHECK(c.args[1].value->kind == ExprKind::tuple);
  CHECK(c.args[1].value->elems.size() == 2);
  CHECK(c.args[2].value->kind == ExprKind::int_lit);
}

TEST_CASE("parser: unary minus nests and applies to the operand", "[frontend][parser]") {
  auto f = parse_model_body("y = - -x * 2");
  const auto& e = *f.model.stmts[0].assign->value;
  REQUIRE(e.kind == ExprKind::binary);
  CHECK(e.elems[0]->kind == ExprKind::neg);
  CHECK(e.elems[0]->elems[0]->kind == ExprKind::neg);
}

TEST_CASE("parser: normalize takes 'mean X, std Y' as one argument", "[frontend][parser]") {
  auto f = frontend::parse("model M {\n}\ntrain M {\n data = cifar10(normalize: mean (0.5, 0.4, 0.3), std (0.2))\n}\n",
                           "t.dnn");
  REQUIRE(f.train);
  const auto& data = *f.train->entries[0].value;
  REQUIRE(data.args.size() == 1);
  const auto& n = *data.args[0].value;
  CHECK(n.name == "normalize");
  REQUIRE(n.args.size() == 2);
  CHECK(n.args[0].key == "mean");
  CHECK(n.args[0].value->elems.size() == 3);
  CHECK(n.args[1].key == "std");
  CHECK(n.args[1].value->kind == ExprKind::float_lit);
}

TEST_CASE("parser: syntax errors say what was expected and what was found", "[frontend][parser]") {
  CHECK(error_of("modle M {}") == "1:1 expected 'model', found identifier 'modle'");
  CHECK(error_of("model M {\n  x = relu(y\n}") ==
        "2:11 this '(' of relu(...) is not closed: expected ',' or ')' before '}' on line 3");
  CHECK(error_of("model M {\n  x = relu(y z)\n}") == "2:14 expected ',' or ')', found identifier 'z'");
  CHECK(error_of("model M {\n  x = (y, 2\n}") == "2:7 this '(' is not closed: expected ',' or ')' before '}' on line 3");
  CHECK(error_of("model M {\n  x = f(a,\n        b)\n}") == "no error");  // arguments may continue on the next line
  CHECK(error_of("model M {\n  x = f(k: [3, 3])\n}") ==
        "2:12 expected an expression, found '['; .dnn writes a list of values as a tuple: (3, 3)");
  CHECK(error_of("model M {\n  x = f(k: [3])\n}") ==
        "2:12 expected an expression, found '['; .dnn writes a list of values as a tuple: (3,)");
  CHECK(error_of("model M {\n  x = \n}") == "3:1 expected an expression, found '}'");
  CHECK(error_of("model M {\n  x relu(y)\n}") == "2:5 expected '=', found identifier 'relu'");
  CHECK(error_of("model M {\n  x = 1") == "2:8 expected '}' closing the model block, found end of file");
  CHECK(error_of("model M {\n  input x f32[N]\n}") == "2:11 expected ':', found identifier 'f32'");
}

TEST_CASE("parser: two statements on one line are an error", "[frontend][parser]") {
  CHECK(error_of("model M {\n  a = 1 b = 2\n}") ==
        "2:9 expected a line break or '}' after the statement, found identifier 'b'");
}

TEST_CASE("parser: keywords cannot be used as names", "[frontend][parser]") {
  CHECK(error_of("model M {\n  train = 1\n}") == "2:3 'train' is a keyword and cannot be assigned");
  CHECK(error_of("model M {\n  x = model\n}") == "2:7 expected an expression, found keyword 'model'");
}

TEST_CASE("parser: a second model block or trailing tokens are errors", "[frontend][parser]") {
  CHECK(error_of("model A {\n}\nmodel B {\n}") == "3:1 a file holds one model block; found a second 'model'");
  CHECK(error_of("model A {\n}\ntrain A {\n}\nx") == "5:1 expected end of file, found identifier 'x'");
}

TEST_CASE("parser: nesting up to the depth limit parses, one more level is an error", "[frontend][parser]") {
  int ok_levels = frontend::kMaxExprDepth - 1;  // the statement's own expr is one level
  std::string ok = "model M {\n x = " + std::string(static_cast<size_t>(ok_levels), '(') + "1" +
                   std::string(static_cast<size_t>(ok_levels), ')') + "\n}";
  CHECK(error_of(ok) == "no error");
  std::string deep = "model M {\n x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n}";
  CHECK(error_of(deep) ==
        "2:" + std::to_string(6 + frontend::kMaxExprDepth) + " expression nested too deeply: more than 256 levels");
}

TEST_CASE("parser: long operator chains count toward the depth limit", "[frontend][parser]") {
  std::string chain = "model M {\n x = 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  chain += "\n}";
  CHECK(error_of(chain).find("expression nested too deeply") != std::string::npos);
}

TEST_CASE("parser: dump_ast prints one node per line with locations", "[frontend][parser]") {
  auto f = parse_model_body("  h = relu(x, k: 2)");
  CHECK(frontend::dump_ast(f) ==
        "model M @1:7\n"
        "  assign h @2:3\n"
        "    call relu @2:7\n"
        "      ident x @2:12\n"
        "      key k @2:15\n"
        "        int 2 @2:18\n");
}
