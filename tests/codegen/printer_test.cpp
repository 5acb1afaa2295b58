// The C++ printer: the exact text of a small kernel, and the shape of a whole translation unit.
#include <catch2/catch.hpp>

#include "codegen/cpp_printer.h"
#include "codegen/lower.h"
#include "codegen_test_util.h"

using namespace dnnc;
using namespace dnnc::codegen;

TEST_CASE("a kernel prints as a static function with a parallel outer loop", "[codegen][printer]") {
  KernelBuilder kb("k0_relu");
  int x = kb.param("v_x", ScalarType::f32, false, 64);
  int y = kb.param("v_y", ScalarType::f32, true, 64);
  kb.loop("i", 64, true, [&](Expr i) {
    Expr v = kb.let("v", kb.load(x, i));
    kb.store(y, i, select(gt(v, f32c(0)), v, f32c(0.5)));
  });
  kb.fail(lt(kb.load(x, i64c(0)), f32c(-1)), "x[0] < -1");
  Kernel k = kb.finish();
  CHECK(k.errors == std::vector<std::string>{"x[0] < -1"});
  CHECK(print_kernel_cpp(k, {"%y = relu(%x)"}) ==
        "// %y = relu(%x)\n"
        "static int k0_relu(const float* __restrict__ v_x, float* __restrict__ v_y) {\n"
        "  #pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n"
        "  for (i64 i = 0; i < 64; ++i) {\n"
        "    float v = v_x[i];\n"
        "    v_y[i] = ((v > 0x0p+0f) ? v : 0x1p-1f);\n"
        "  }\n"
        "  if ((v_x[0] < (-0x1p+0f))) return 1;\n"
        "  return 0;\n"
        "}\n");
}

TEST_CASE("min and max print with std::min/std::max semantics", "[codegen][printer]") {
  std::vector<KernelParam> none;
  Expr a = var("a", ScalarType::f32), b = var("b", ScalarType::f32);
  CHECK(print_expr_cpp(max(a, b), none) == "(a < b ? b : a)");
  CHECK(print_expr_cpp(min(a, b), none) == "(b < a ? b : a)");
  CHECK(print_expr_cpp(exp(cast(ScalarType::f64, a)), none) == "__builtin_exp(((double)a))");
  CHECK(print_expr_cpp(u64c(0x9e3779b97f4a7c15ULL), none) == "0x9e3779b97f4a7c15ull");
}

TEST_CASE("a program prints as one header-free unit exporting dnnc_run", "[codegen][printer]") {
  ir::Module m = test::pipeline_model("models/cifar_cnn.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 4);
  std::string src = print_program_cpp(p);
  CHECK(src.find("#include") == std::string::npos);
  CHECK(src.find("extern \"C\" int dnnc_run(void** buffers)") != std::string::npos);
  CHECK(src.find("extern \"C\" void dnnc_set_threads(int n)") != std::string::npos);
  CHECK(src.find("void cblas_sgemm(") != std::string::npos);
  CHECK(src.find("// %d0 = relu_backward(%d1, ") != std::string::npos);
  CHECK(src == print_program_cpp(lower_graph(m, *m.graph("train_step"), 4)));  // deterministic
}
