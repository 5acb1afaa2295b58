// The kernel IR's text form (codegen/kir/kir_printer.h): exact text of a small kernel and of a
// program's buffers and steps, C precedence with parentheses only where needed, exact floats.
#include "codegen/kir/kir_printer.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>

#include "codegen/lower/lower.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

TEST_CASE("kernel IR prints with C precedence, typed literals and one line per statement", "[codegen][kir]") {
  KernelBuilder kb("k0_demo");
  int x = kb.param("x", ScalarType::f32, false, 60);
  int l = kb.param("label", ScalarType::i64, false, 4);
  int y = kb.param("y", ScalarType::f32, true, 60);
  kb.fail(lt(kb.load(l, i64c(0)), i64c(0)), "label below 0");
  kb.loop("r", 4, true, [&](Expr r) {
    Expr base = kb.let("base", (r + i64c(1)) * i64c(15) - i64c(15));
    Expr acc = kb.let("acc", f32c(-INFINITY));
    kb.loop("c", 15, false, [&](Expr c) { kb.assign(acc, max(acc, kb.load(x, base + c) / f32c(0.1))); });
    kb.if_(binary(BinaryOp::logical_and, gt(acc, f32c(0)), ne(r, i64c(2))),
           [&] { kb.store(y, base - (r - i64c(1)), -(acc * f32c(2)) + cast(ScalarType::f32, r)); });
    kb.accumulate(y, base, select(unary(UnaryOp::is_nan, acc), f32c(NAN), exp(acc)));
  });
  Kernel k = kb.finish();
  CHECK(print_kernel_kir(k) ==
        "kernel k0_demo(x: f32[60], label: i64[4], y: f32[60] written) {\n"
        "  fail 1 if label[0] < 0  // \"label below 0\"\n"
        "  for r in [0, 4) parallel {\n"
        "    let i64 base = (r + 1) * 15 - 15\n"
        "    let f32 acc = f32(-inf)\n"
        "    for c in [0, 15) {\n"
        "      acc = max(acc, x[base + c] / 0.1f)\n"
        "    }\n"
        "    if acc > 0.0f && r != 2 {\n"
        "      y[base - (r - 1)] = -(acc * 2.0f) + f32(r)\n"
        "    }\n"
        "    y[base] += select(isnan(acc), f32(nan), exp(acc))\n"
        "  }\n"
        "}\n");
}

TEST_CASE("a program prints its buffers, its steps with their IR nodes, outputs and updates", "[codegen][kir]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 8);
  std::string text = print_kir(p);
  CHECK_THAT(text, Catch::StartsWith(fmt::format("// kernel IR of MnistMLP.train_step at batch 8\nprogram "
                                                 "MnistMLP.train_step batch 8\narena {} bytes (naive {}, max-live "
                                                 "{})\n\nbuffer %0 in_image: input f32[8,1,28,28] \"image\"\n",
                                                 p.arena.bytes, p.arena.naive_bytes, p.arena.max_live_bytes)));
  // Arena buffers print their offset and the step times they are live.
  CHECK_THAT(text, Catch::Contains(fmt::format("buffer %16 v_h1: intermediate f32[8,512] \"h1\" at {} live 0..",
                                               p.buffers[16].offset)));
  CHECK_THAT(text, Catch::Contains("buffer %2 p_fc1_weight: param f32[512,784] \"fc1.weight\"\n"));
  CHECK_THAT(text, Catch::Contains(" alias of %"));
  CHECK_THAT(text, Catch::Contains("  // %h1 = relu(%1)\n"));
  CHECK_THAT(
      text,
      Catch::Contains("  // %h1 = relu(%1)\n  epilogue g0_epilogue(%16)\n  kernel g0_epilogue(begin: i64, end: i64, "));
  CHECK_THAT(text, Catch::Contains("\noutputs %"));
  CHECK_THAT(text, Catch::Contains("update \"fc1.weight\" = %"));
  CHECK(text == print_kir(lower_graph(m, *m.graph("train_step"), 8)));  // deterministic
}

TEST_CASE("notes annotate kernels and statements", "[codegen][kir]") {
  KernelBuilder kb("k0_n");
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("i", 4, true, [&](Expr i) { kb.store(y, i, f32c(1)); });
  Kernel k = kb.finish();
  KirNotes notes = [](const Kernel& kk, const StmtNode* s) -> std::string {
    if (!s) return "mapping of " + kk.name + "\nsecond line";
    return s->kind == StmtKind::loop ? "the loop" : "";
  };
  CHECK(print_kernel_kir(k, 1, notes) ==
        "  // mapping of k0_n\n"
        "  // second line\n"
        "  kernel k0_n(y: f32[4] written) {\n"
        "    for i in [0, 4) parallel {  // the loop\n"
        "      y[i] = 1.0f\n"
        "    }\n"
        "  }\n");
}
