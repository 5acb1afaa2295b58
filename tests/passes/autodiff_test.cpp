// autodiff and optimizer: structure of the derived train step (numbers are held to PyTorch
// by the golden tests in tests/golden).
#include <catch2/catch.hpp>

#include <algorithm>

#include "pass_test_util.h"
#include "passes/grad_builder.h"

using namespace dnnc;

namespace {

ir::Module compile(const std::string& body, const std::string& train = "") {
  std::string src = "model M {\n  input x: f32[N, 8]\n  input label: i64[N]\n" + body + "\n}\n" + train;
  return frontend::compile_source(src, "test.dnn");
}

int count_op(const ir::Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return n.op == op; }));
}

std::vector<std::string> output_names(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::ValueId v : g.outputs) out.push_back(g.value(v).name);
  return out;
}

}  // namespace

TEST_CASE("autodiff: outputs are loss, prediction and one gradient per trainable param", "[autodiff]") {
  ir::Module m = compile(
      "  fc1 = linear(8, 4)\n  fc2 = linear(4, 3)\n"
      "  logits = fc2(relu(fc1(x)))\n  loss = cross_entropy(logits, label)");
  test::run_passes(m, {"autodiff"});
  const ir::Graph* g = m.graph("train_step");
  REQUIRE(g);
  CHECK(output_names(*g) == std::vector<std::string>{"loss", "logits", "fc1.weight.grad", "fc1.bias.grad",
                                                     "fc2.weight.grad", "fc2.bias.grad"});
  // The first layer's input is data: no gradient is computed for it.
  CHECK(count_op(*g, "matmul") == 3);
}

TEST_CASE("autodiff: a value used twice gets the sum of both gradients", "[autodiff]") {
  ir::Module m = compile(
      "  fc1 = linear(8, 4)\n  fc2 = linear(4, 3)\n"
      "  h = relu(fc1(x))\n  logits = fc2(h + h)\n  loss = cross_entropy(logits, label)");
  test::run_passes(m, {"autodiff"});
  const ir::Graph* g = m.graph("train_step");
  REQUIRE(g);
  // forward: one add (h + h); backward: the fan-out sum of the add's two operand gradients.
  CHECK(count_op(*g, "add") == 2);
}

TEST_CASE("autodiff: a layer that does not reach the loss gets no gradient and no update", "[autodiff]") {
  ir::Module m = compile(
      "  fc1 = linear(8, 3)\n  fc2 = linear(8, 3)\n"
      "  unused = fc2(x)\n  logits = fc1(x)\n  loss = cross_entropy(logits, label)");
  test::run_passes(m, {"autodiff", "optimizer"});
  const ir::Graph* g = m.graph("train_step");
  REQUIRE(g);
  for (const auto& [name, v] : g->updates) CHECK(name.rfind("fc2.", 0) != 0);
  CHECK(output_names(*g) == std::vector<std::string>{"loss", "logits"});
}

TEST_CASE("autodiff: the CNN's first convolution computes no input gradient", "[autodiff]") {
  ir::Module m = frontend::compile_file("models/cifar_cnn.dnn");
  test::run_passes(m, {"autodiff"});
  const ir::Graph* g = m.graph("train_step");
  REQUIRE(g);
  CHECK(count_op(*g, "conv2d_backward_weight") == 1);
  CHECK(count_op(*g, "conv2d_backward_input") == 0);
  CHECK(count_op(*g, "maxpool2d_backward") == 1);
}

TEST_CASE("sum_to reduces broadcast dims back to the operand's shape", "[autodiff]") {
  ir::Module m;
  m.source_file = "t";
  ir::Graph g;
  ir::ValueId dy = g.add_input("dy", {ir::DType::f32, {ir::kBatch, 4, 3}});
  passes::GradBuilder b(g, m);
  ir::ValueId r1 = b.sum_to(dy, {3});
  CHECK(g.value(r1).type.shape == ir::Shape{3});
  CHECK(ir::attr_ints(g.nodes.back().attrs, "axes") == std::vector<int64_t>{0, 1});
  ir::ValueId r2 = b.sum_to(dy, {4, 1});
  CHECK(g.value(r2).type.shape == ir::Shape{4, 1});
  CHECK(g.nodes.back().op == "reshape");
  CHECK(b.sum_to(dy, {ir::kBatch, 4, 3}) == dy);
}

TEST_CASE("optimizer: sgd with momentum adds PyTorch-named buffers and a step counter", "[optimizer]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  test::run_passes(m, {"autodiff", "optimizer"});
  REQUIRE(m.param("fc1.weight.momentum_buffer"));
  CHECK(m.param("fc1.weight.momentum_buffer")->role == ir::ParamRole::optimizer_state);
  REQUIRE(m.param("dnnc.step"));
  const ir::Graph* g = m.graph("train_step");
  CHECK(count_op(*g, "sgd_update") == 6);
  CHECK(g->updates.size() == 6 * 2 + 1);
  CHECK(output_names(*g) == std::vector<std::string>{"loss", "logits"});
}

TEST_CASE("optimizer: adam keeps two moments per param", "[optimizer]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp_adam.dnn");
  test::run_passes(m, {"autodiff", "optimizer"});
  CHECK(m.param("fc3.bias.exp_avg"));
  CHECK(m.param("fc3.bias.exp_avg_sq"));
  const ir::Graph* g = m.graph("train_step");
  CHECK(count_op(*g, "adam_update") == 6);
  CHECK(g->updates.size() == 6 * 3 + 1);
}

TEST_CASE("optimizer: plain sgd (no momentum) keeps no state but the step", "[optimizer]") {
  ir::Module m = compile("  fc = linear(8, 3)\n  logits = fc(x)\n  loss = cross_entropy(logits, label)",
                         "train M {\n  batch = 4\n  epochs = 1\n  optimizer = sgd(lr: 0.1)\n}\n");
  test::run_passes(m, {"autodiff", "optimizer"});
  CHECK_FALSE(m.param("fc.weight.momentum_buffer"));
  const ir::Graph* g = m.graph("train_step");
  CHECK(g->updates.size() == 2 + 1);
}

TEST_CASE("derive-infer drops the loss and the label input", "[derive-infer]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  test::run_passes(m, {"derive-infer"});
  const ir::Graph* g = m.graph("infer");
  REQUIRE(g);
  REQUIRE(g->inputs.size() == 1);
  CHECK(g->value(g->inputs[0]).name == "image");
  CHECK(output_names(*g) == std::vector<std::string>{"logits"});
  CHECK(count_op(*g, "cross_entropy") == 0);
}
