// The C++ printer: the exact text of a small kernel, and the shape of a whole translation unit.
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <set>

#include "codegen/cpp/cpp_printer.h"
#include "codegen/lower/lower.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

// A parallel loop's body is a function of its own (the loop variable, the outer locals it reads
// and every buffer as __restrict__ parameters), because gcc's OpenMP outlining drops
// __restrict__ from the buffers it passes into the parallel region.
TEST_CASE("a kernel prints as a step function with a parallel outer loop", "[codegen][printer]") {
  KernelBuilder kb("k0_relu");
  int x = kb.param("v_x", ScalarType::f32, false, 64);
  int y = kb.param("v_y", ScalarType::f32, true, 64);
  Expr lo = kb.let("lo", f32c(0.5));
  kb.loop("i", 64, true, [&](Expr i) {
    Expr v = kb.let("v", kb.load(x, i));
    kb.store(y, i, select(gt(v, f32c(0)), v, lo));
  });
  kb.fail(lt(kb.load(x, i64c(0)), f32c(-1)), "x[0] < -1");
  Kernel k = kb.finish();
  CHECK(k.errors == std::vector<std::string>{"x[0] < -1"});
  CHECK(print_kernel_cpp(k, {"%y = relu(%x)"}) ==
        "static inline void k0_relu_p0(i64 i, float lo, const float* __restrict__ v_x, float* __restrict__ v_y) {\n"
        "  float v = v_x[i];\n"
        "  v_y[i] = ((v > 0x0p+0f) ? v : lo);\n"
        "}\n"
        "// %y = relu(%x)\n"
        "DNNC_STEP int k0_relu(const float* __restrict__ v_x, float* __restrict__ v_y) {\n"
        "  float lo = 0x1p-1f;\n"
        "  #pragma omp parallel for num_threads(dnnc_threads) schedule(static)\n"
        "  for (i64 i = 0; i < 64; ++i) {\n"
        "    k0_relu_p0(i, lo, v_x, v_y);\n"
        "  }\n"
        "  if ((v_x[0] < (-0x1p+0f))) return 1;\n"
        "  return 0;\n"
        "}\n");
}

TEST_CASE("a parallel loop that assigns an outer local or can fail stays inline", "[codegen][printer]") {
  KernelBuilder kb("k1_odd");
  int x = kb.param("v_x", ScalarType::f32, false, 8);
  int y = kb.param("v_y", ScalarType::f32, true, 8);
  Expr acc = kb.let("acc", f32c(0));
  kb.loop("i", 8, true, [&](Expr i) { kb.assign(acc, kb.load(x, i)); });
  kb.store(y, i64c(0), acc);
  std::string src = print_kernel_cpp(kb.finish(), {});
  CHECK(src.find("_p0") == std::string::npos);
  CHECK(src.find("    acc = v_x[i];\n") != std::string::npos);
}

// A loop that only adds terms to outer f32 locals is an OpenMP simd reduction (vectorized, and
// blocked over the vector's lanes); one that also stores, or whose term reads its own sum, or
// that assigns something other than a sum, is printed as it is.
TEST_CASE("a sum loop prints as an omp simd reduction", "[codegen][printer]") {
  KernelBuilder kb("k2_sums");
  int x = kb.param("v_x", ScalarType::f32, false, 64);
  int y = kb.param("v_y", ScalarType::f32, true, 64);
  Expr s = kb.let("s", f32c(0)), q = kb.let("q", f32c(0));
  kb.loop("i", 64, false, [&](Expr i) {
    Expr v = kb.let("v", kb.load(x, i));
    kb.assign(s, s + v);
    kb.assign(q, q + v * v);
  });
  kb.loop("j", 64, false, [&](Expr j) {  // stores: not a pure sum loop
    kb.assign(s, s + kb.load(x, j));
    kb.store(y, j, s);
  });
  kb.loop("k", 64, false, [&](Expr k) { kb.assign(q, q + q * kb.load(x, k)); });  // term reads q
  kb.loop("l", 64, false, [&](Expr l) { kb.assign(q, max(q, kb.load(x, l))); });  // not a sum
  kb.store(y, i64c(0), s + q);
  std::string src = print_kernel_cpp(kb.finish(), {});
  CHECK(src.find("  #pragma omp simd reduction(+:s,q)\n  for (i64 i = 0; i < 64; ++i) {\n") != std::string::npos);
  size_t first = src.find("#pragma omp simd");
  CHECK(src.find("#pragma omp simd", first + 1) == std::string::npos);
}

TEST_CASE("min and max print with std::min/std::max semantics", "[codegen][printer]") {
  Kernel none;
  Expr a = var("a", ScalarType::f32), b = var("b", ScalarType::f32);
  CHECK(print_expr_cpp(max(a, b), none) == "(a < b ? b : a)");
  CHECK(print_expr_cpp(min(a, b), none) == "(b < a ? b : a)");
  CHECK(print_expr_cpp(exp(cast(ScalarType::f64, a)), none) == "__builtin_exp(((double)a))");
  CHECK(print_expr_cpp(u64c(0x9e3779b97f4a7c15ULL), none) == "0x9e3779b97f4a7c15ull");
}

TEST_CASE("a program prints as one header-free unit exporting dnnc_run", "[codegen][printer]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 4);
  std::string src = print_program_cpp(p);
  CHECK(src.find("#include") == std::string::npos);
  CHECK(src.find("extern \"C\" int dnnc_run(void** buffers)") != std::string::npos);
  CHECK(src.find("extern \"C\" void dnnc_set_threads(int n)") != std::string::npos);
  CHECK(src.find("void cblas_sgemm(") != std::string::npos);
  CHECK(src.find("// %d0 = relu_backward(%d1, ") != std::string::npos);
  CHECK(src == print_program_cpp(lower_graph(m, *m.graph("train_step"), 4)));  // deterministic
}

TEST_CASE("a large program prints in parts, each step function defined in one of them", "[codegen][printer]") {
  ir::Module m = test::compiled_model("models/resnet_mnist.dnn");
  std::string src = print_program_cpp(lower_graph(m, *m.graph("train_step"), 4));
  const std::string marker = "\n#define DNNC_PARTS ";
  size_t at = src.find(marker);
  REQUIRE(at != std::string::npos);
  int parts = std::atoi(src.c_str() + at + marker.size());
  REQUIRE(parts >= 2);
  CHECK(src.find("#if DNNC_PART <= 0\nextern \"C\" int dnnc_run(void** buffers) {") != std::string::npos);
  // Every function dnnc_run calls is defined once, inside one part's #if, and declared for part 0.
  std::string run = src.substr(src.find("extern \"C\" int dnnc_run"));
  std::set<std::string> called;
  for (size_t p = 0; (p = run.find("\n  ", p)) != std::string::npos;) {
    p += 3;
    if (run.compare(p, 9, "if (int e") == 0) p = run.find("= ", p) + 2;
    size_t paren = run.find('(', p);
    std::string name = run.substr(p, paren - p);
    if (name.size() > 1 && (name[0] == 'k' || name[0] == 'g') && std::isdigit(static_cast<unsigned char>(name[1])))
      called.insert(name);
  }
  REQUIRE(called.size() > 20);
  std::vector<int> per_part(static_cast<size_t>(parts), 0);
  for (const std::string& fn : called) {
    INFO(fn);
    size_t def = src.find("DNNC_STEP int " + fn + "(");
    if (def == std::string::npos) def = src.find("DNNC_STEP void " + fn + "(");
    REQUIRE(def != std::string::npos);
    size_t eol = src.find('\n', def);
    CHECK(src[eol - 1] == '{');
    size_t next = src.find(src.substr(def, eol - def - 2) + ";");  // its declaration for part 0
    CHECK(next != std::string::npos);
    CHECK(src.find(src.substr(def, eol - def), def + 1) == std::string::npos);  // defined once
    size_t guard = src.rfind("#if DNNC_PART < 0 || DNNC_PART == ", def);
    REQUIRE(guard != std::string::npos);
    CHECK(src.rfind("#endif", def) < guard);
    int part = std::atoi(src.c_str() + guard + 34);
    REQUIRE(part >= 0);
    REQUIRE(part < parts);
    ++per_part[static_cast<size_t>(part)];
  }
  for (int n : per_part) CHECK(n > 0);  // no empty part
  // A small program is one part, with no guards.
  ir::Module mlp = test::compiled_model("models/mnist_mlp.dnn");
  std::string small = print_program_cpp(lower_graph(mlp, *mlp.graph("infer"), 4));
  CHECK(small.find("\n#define DNNC_PARTS") == std::string::npos);
  CHECK(small.find("#if DNNC_PART < 0") == std::string::npos);
}
