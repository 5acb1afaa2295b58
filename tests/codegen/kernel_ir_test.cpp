// KernelIR builders: constant folding, types, fresh names, and exact float literals.
#include "codegen/kir/kernel_ir.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "codegen/cpp/cpp_printer.h"

using namespace dnnc::codegen;

TEST_CASE("integer index arithmetic folds constants and identities", "[codegen][kernel_ir]") {
  Expr i = var("i", ScalarType::i64);
  int64_t v = 0;
  CHECK(is_int_const(i64c(3) * i64c(4) + i64c(2), &v));
  CHECK(v == 14);
  CHECK((i + i64c(0))->kind == ExprKind::var);
  CHECK((i * i64c(1))->kind == ExprKind::var);
  CHECK(is_int_const(i * i64c(0), &v));
  CHECK(v == 0);
  CHECK((i * i64c(2))->kind == ExprKind::binary);
}

TEST_CASE("comparisons are bool, arithmetic keeps its operand type", "[codegen][kernel_ir]") {
  Expr x = var("x", ScalarType::f32);
  CHECK(lt(x, f32c(0)).type() == ScalarType::boolean);
  CHECK((x * 2.0).type() == ScalarType::f32);
  CHECK(cast(ScalarType::f64, x).type() == ScalarType::f64);
  CHECK(select(gt(x, f32c(0)), x, f32c(0)).type() == ScalarType::f32);
  CHECK(unary(UnaryOp::is_nan, x).type() == ScalarType::boolean);
}

TEST_CASE("KernelBuilder gives every variable a fresh name", "[codegen][kernel_ir]") {
  KernelBuilder kb("k");
  int p = kb.param("i", ScalarType::f32, true, 4);
  std::vector<std::string> names;
  kb.loop("i", 4, false, [&](Expr a) {
    names.push_back(a->name);
    kb.loop("i", 2, false, [&](Expr b) {
      names.push_back(b->name);
      kb.store(p, a, cast(ScalarType::f32, b));
    });
  });
  Kernel k = kb.finish();
  CHECK(k.params[0].name == "i");
  CHECK(names == std::vector<std::string>{"i1", "i2"});
}

TEST_CASE("float literals print exactly and parse back to the same bits", "[codegen][printer]") {
  CHECK(cpp_float_literal(1.0f) == "0x1p+0f");
  CHECK(cpp_float_literal(0.1f) == "0x1.99999ap-4f");
  CHECK(cpp_float_literal(-2.5f) == "(-0x1.4p+1f)");
  CHECK(cpp_float_literal(INFINITY) == "__builtin_inff()");
  CHECK(cpp_float_literal(-INFINITY) == "(-__builtin_inff())");
  CHECK(cpp_float_literal(NAN) == "__builtin_nanf(\"\")");
  CHECK(cpp_double_literal(0.1) == "0x1.999999999999ap-4");
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000; ++i) {
    uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, 4);
    if (!std::isfinite(f)) continue;
    std::string lit = cpp_float_literal(f);
    std::string body = lit.front() == '(' ? lit.substr(1, lit.size() - 3) : lit.substr(0, lit.size() - 1);
    float back = std::strtof(body.c_str(), nullptr);
    uint32_t bb;
    std::memcpy(&bb, &back, 4);
    INFO(lit);
    REQUIRE(bb == b);
  }
}
