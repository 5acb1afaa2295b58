// The kernel IR verifier (codegen/kir/kir_verifier.h): every lowered program of every model
// passes it, with the parallel-loop proofs on, at several batches and for both targets, and so
// do convolutions and pools of random shapes; each kind of broken program fails it, naming the
// kernel and what is wrong.
#include "codegen/kir/kir_verifier.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <random>

#include "codegen/kir/kir_printer.h"
#include "codegen/lower/lower.h"
#include "ir/check.h"
#include "tests/support/files.h"
#include "tests/support/models.h"
#include "tests/support/programs.h"

using namespace dnnc;
using namespace dnnc::codegen;
using Catch::Matchers::Contains;

namespace {

const KirVerifyOptions kProve{.prove_parallel_loops = true};

// A program of one kernel step over buffers named like the kernel's params (x: an input, the
// rest intermediates unless `kinds` says otherwise).
Program one_kernel(Kernel k, std::map<std::string, BufferKind> kinds = {}) {
  kinds.emplace("x", BufferKind::input);
  return test::one_kernel_program(std::move(k), kinds);
}

std::string verify_error(const Program& p, const KirVerifyOptions& o = kProve) {
  try {
    verify_program(p, o);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every model's programs pass the kernel IR verifier with parallel loops proved", "[codegen][kir]") {
  for (const char* model : {"models/mnist_mlp.dnn", "models/mnist_mlp_adam.dnn", "models/lenet5.dnn",
                            "models/cifar_cnn.dnn", "models/cifar_strided.dnn", "tests/cpu/models/conv_pool_shapes.dnn",
                            "tests/cpu/models/mlp_acts.dnn", "tests/trainer/tiny_bn.dnn"}) {
    ir::Module m = test::compiled_model(model);
    for (const char* graph : {"train_step", "infer"})
      for (int64_t batch : {1, 3, 16})
        for (bool cuda : {false, true}) {
          INFO(model << " " << graph << " batch " << batch << (cuda ? " cuda" : " cpu"));
          Program p = lower_graph(m, *m.graph(graph), batch, cuda ? cuda_lower_options() : LowerOptions{});
          CHECK(verify_error(p) == "");
        }
  }
}

// Convolutions and pools the frontend accepts, of random sizes, strides, paddings and dilations:
// a fused conv/relu/pool, a strided conv through im2col, and their backward kernels.
TEST_CASE("convolutions and pools of random shapes lower to programs that pass the verifier", "[codegen][kir]") {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int built = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int c = pick(1, 4), o = pick(1, 6), k = pick(1, 4), s = pick(1, 3), pad = pick(0, k / 2), d = pick(1, 2);
    const int h = pick(k * d + 2, 14), w = pick(k * d + 2, 14);
    const int pk = pick(1, 3), ps = pick(1, 3), pp = pick(0, pk / 2);
    const int ho = (h + 2 * pad - d * (k - 1) - 1) / s + 1, wo = (w + 2 * pad - d * (k - 1) - 1) / s + 1;
    const int qo = (ho + 2 * pp - pk) / ps + 1, qw = (wo + 2 * pp - pk) / ps + 1;
    if (ho < 1 || wo < 1 || ho + 2 * pp < pk || wo + 2 * pp < pk || qo < 1 || qw < 1) continue;
    const std::string src = fmt::format(
        "model R {{\n  input image: f32[N, {c}, {h}, {w}]\n  input label: i64[N]\n"
        "  conv = conv2d({c}, {o}, kernel: {k}, stride: {s}, padding: {pad}, dilation: {d})\n"
        "  fc = linear({o} * {qo} * {qw}, 3)\n"
        "  x = maxpool2d(relu(conv(image)), kernel: {pk}, stride: {ps}, padding: {pp})\n"
        "  logits = fc(flatten(x))\n  loss = cross_entropy(logits, label)\n}}\n"
        "train R {{\n  batch = 2\n  epochs = 1\n  optimizer = sgd(lr: 0.1, momentum: 0.9)\n}}\n",
        fmt::arg("c", c), fmt::arg("h", h), fmt::arg("w", w), fmt::arg("o", o), fmt::arg("k", k), fmt::arg("s", s),
        fmt::arg("pad", pad), fmt::arg("d", d), fmt::arg("qo", qo), fmt::arg("qw", qw), fmt::arg("pk", pk),
        fmt::arg("ps", ps), fmt::arg("pp", pp));
    INFO(src);
    ir::Module m = test::compiled_source(src);
    for (int64_t batch : {1, 2, 5})
      for (bool cuda : {false, true}) {
        INFO("batch " << batch << (cuda ? " cuda" : " cpu"));
        Program p = lower_graph(m, *m.graph("train_step"), batch, cuda ? cuda_lower_options() : LowerOptions{});
        CHECK(verify_error(p) == "");
      }
    ++built;
  }
  CHECK(built >= 20);
}

TEST_CASE("an index that can leave its buffer fails, naming the kernel, the access and its range", "[codegen][kir]") {
  KernelBuilder kb("k0_shift");
  int x = kb.param("x", ScalarType::f32, false, 64);
  int y = kb.param("y", ScalarType::f32, true, 64);
  kb.loop("i", 64, true, [&](Expr i) { kb.store(y, i, kb.load(x, i + i64c(1))); });
  CHECK_THAT(verify_error(one_kernel(kb.finish())),
             Contains("kernel IR verifier, program t.g at batch 1, step 0, kernel k0_shift") &&
                 Contains("load of x[i + 1]") && Contains("buffer of 64 elements") && Contains("[1, 64]"));
}

TEST_CASE("guards, loop bounds and failed checks count: a conv's padded rows and a checked label pass",
          "[codegen][kir]") {
  // y[oh] = x[oh - 1 + k] for oh in [max(0, 1 - k), min(8, 9 - k)): in bounds only through
  // the relation between oh's bounds and k.
  KernelBuilder kb("k0_window");
  int x = kb.param("x", ScalarType::f32, false, 8);
  int l = kb.param("label", ScalarType::i64, false, 1);
  int y = kb.param("y", ScalarType::f32, true, 8);
  kb.fail(binary(BinaryOp::logical_or, lt(kb.load(l, i64c(0)), i64c(0)), ge(kb.load(l, i64c(0)), i64c(8))),
          "label out of range");
  kb.loop("k", 3, false, [&](Expr k) {
    kb.loop("oh", max(i64c(0), i64c(1) - k), min(i64c(8), i64c(9) - k), false,
            [&](Expr oh) { kb.accumulate(y, oh, kb.load(x, oh - i64c(1) + k)); });
  });
  kb.loop("j", 10, false, [&](Expr j) {
    kb.if_(binary(BinaryOp::logical_and, ge(j - i64c(1), i64c(0)), lt(j - i64c(1), i64c(8))),
           [&] { kb.accumulate(y, j - i64c(1), f32c(1)); });
  });
  Expr t = kb.let("t", kb.load(l, i64c(0)));
  kb.store(y, t, f32c(0));
  Program p = one_kernel(kb.finish(), {{"label", BufferKind::input}});
  p.buffers[2].kind = BufferKind::param;  // y is read by its += before this kernel writes it
  p.updates = {{"y", 2}};
  CHECK(verify_error(p) == "");
}

TEST_CASE("a buffer read before anything writes it fails", "[codegen][kir]") {
  KernelBuilder kb("k0_early");
  int t = kb.param("tmp", ScalarType::f32, true, 4);
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("i", 4, false, [&](Expr i) { kb.store(y, i, kb.load(t, i)); });
  kb.loop("i", 4, false, [&](Expr i) { kb.store(t, i, f32c(0)); });
  CHECK_THAT(verify_error(one_kernel(kb.finish())), Contains("load of tmp (buffer tmp) before anything writes it"));
}

TEST_CASE("a write to an input, or to a param no update names, fails", "[codegen][kir]") {
  KernelBuilder kb("k0_clobber");
  int x = kb.param("x", ScalarType::f32, true, 4);
  kb.loop("i", 4, false, [&](Expr i) { kb.store(x, i, f32c(0)); });
  Kernel k = kb.finish();
  CHECK_THAT(verify_error(one_kernel(k)), Contains("a write to input x"));
  CHECK_THAT(verify_error(one_kernel(k, {{"x", BufferKind::param}})),
             Contains("a write to param x, which no update of the program names"));
}

TEST_CASE("a variable out of scope, a store to a read-only param and a bad argument fail", "[codegen][kir]") {
  KernelBuilder kb("k0_scope");
  int y = kb.param("y", ScalarType::f32, true, 4);
  kb.loop("i", 4, false, [&](Expr i) { kb.store(y, i, f32c(0)); });
  Kernel k = kb.finish();
  Kernel out_of_scope = k;
  auto s = std::make_shared<StmtNode>(*k.body[0]->body[0]);  // y[i] = 0 outside the loop over i
  out_of_scope.body.push_back(s);
  CHECK_THAT(verify_error(one_kernel(out_of_scope)), Contains("i is used outside the scope that defines it"));
  Kernel read_only = k;
  read_only.params[0].written = false;
  CHECK_THAT(verify_error(one_kernel(read_only)), Contains("a store to y, a param not marked written"));
  Program wrong_size = one_kernel(k);
  wrong_size.buffers[0].shape = {3};
  CHECK_THAT(verify_error(wrong_size), Contains("param y is f32[4], its buffer y is f32[3]"));
}

TEST_CASE("a GEMM whose operand extends past its buffer fails", "[codegen][kir]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  Program p = lower_graph(m, *m.graph("infer"), 4);
  size_t g = 0;
  while (p.steps[g].kind != Step::Kind::gemm) ++g;
  CHECK(verify_error(p) == "");
  p.steps[g].gemm.m += 1;  // one row more than A and C have
  CHECK_THAT(verify_error(p), Contains(fmt::format("step {}, GEMM", g)) && Contains("GEMM operand A"));
}

TEST_CASE("a parallel loop whose iterations write one element fails the parallel proof", "[codegen][kir]") {
  // y[i / 2] = x[i]: iterations 2j and 2j + 1 both write y[j].
  KernelBuilder kb("k0_race");
  int x = kb.param("x", ScalarType::f32, false, 64);
  int y = kb.param("y", ScalarType::f32, true, 32);
  kb.loop("i", 64, true, [&](Expr i) { kb.store(y, i / i64c(2), kb.load(x, i)); });
  Program p = one_kernel(kb.finish());
  CHECK(verify_error(p, {.prove_parallel_loops = false}) == "");
  CHECK_THAT(verify_error(p), Contains("parallel loop i") && Contains("two iterations of i store to y["));

  // Rows of a plane, bands of two rows, the last band taking the leftover row: not a linear
  // window of the loop variable, decided by running the index arithmetic.
  KernelBuilder kb2("k0_bands");
  int x2 = kb2.param("x", ScalarType::f32, false, 2 * 5 * 4);
  int y2 = kb2.param("y", ScalarType::f32, true, 2 * 5 * 4);
  kb2.loop("bq", 4, true, [&](Expr bq) {
    Expr band = kb2.let("band", bq % i64c(2));
    Expr plane = kb2.let("plane", bq / i64c(2));
    Expr lo = kb2.let("lo", band * i64c(2));
    Expr hi = kb2.let("hi", select(eq(band, i64c(1)), i64c(5), lo + i64c(2)));
    kb2.loop("r", lo, hi, false, [&](Expr r) {
      kb2.loop("c", 4, false, [&](Expr c) {
        Expr i = plane * i64c(20) + r * i64c(4) + c;
        kb2.store(y2, i, kb2.load(x2, i));
      });
    });
  });
  CHECK(verify_error(one_kernel(kb2.finish())) == "");
}
