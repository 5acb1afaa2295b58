// Lowering of single language features: each layer kind, functional ops and their
// arguments, infix arithmetic with constants, named constants, names, outputs.
#include <catch2/catch.hpp>
#include <cmath>

#include "test_util.h"

using namespace dnnc;
using test::compile_body;
using test::node_defining;
using test::node_ops;
using test::param_names;
using test::type_of;

namespace {
const char* kMlpInputs =
    "  input x: f32[N, 8]\n"
    "  input y: f32[N, 8]\n";
}

TEST_CASE("batchnorm2d: PyTorch params and buffers, 5 outputs, running stats as updates", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[B, 4, 6, 6]\n"
      "  bn = batchnorm2d(4, eps: 0.001)\n"
      "  h = bn(x)\n"
      "  loss = mse_loss(h, x)\n");
  CHECK(m.batch_symbol == "B");
  CHECK(param_names(m) == std::vector<std::string>{"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"});
  CHECK(m.params[0].init.kind == "ones");
  CHECK(m.params[1].init.kind == "zeros");
  CHECK(m.params[2].role == ir::ParamRole::buffer);
  CHECK(m.params[2].init.kind == "zeros");
  CHECK(m.params[3].role == ir::ParamRole::buffer);
  CHECK(m.params[3].init.kind == "ones");
  CHECK(m.params[4].role == ir::ParamRole::buffer);
  CHECK(ir::to_string(m.params[4].type) == "i64[]");
  const ir::Graph& g = m.graphs[0];
  const ir::Node* bn = node_defining(g, "h");
  REQUIRE(bn);
  CHECK(bn->op == "batchnorm2d");
  CHECK(bn->inputs.size() == 5);
  CHECK(bn->outputs.size() == 5);
  CHECK(ir::attr_float(bn->attrs, "eps") == 0.001);
  CHECK(ir::attr_float(bn->attrs, "momentum") == 0.1);
  REQUIRE(g.updates.size() == 3);
  CHECK(g.updates[0].first == "bn.running_mean");
  CHECK(g.updates[0].second == bn->outputs[3]);
  CHECK(g.updates[1].first == "bn.running_var");
  CHECK(g.updates[1].second == bn->outputs[4]);
  // num_batches_tracked + 1, as PyTorch's training-mode forward does.
  CHECK(g.updates[2].first == "bn.num_batches_tracked");
  int pi = g.producer(g.updates[2].second);
  REQUIRE(pi >= 0);
  const ir::Node* inc = &g.nodes[static_cast<size_t>(pi)];
  CHECK(inc->op == "increment");
  CHECK(g.value(inc->inputs[0]).name == "bn.num_batches_tracked");
}

TEST_CASE("batchnorm1d: batchnorm2d's params, lowered as batchnorm2d between reshapes", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[B, 8]\n"
      "  bn = batchnorm1d(8, momentum: 0.2)\n"
      "  h = bn(x)\n"
      "  loss = mse_loss(h, x)\n");
  CHECK(param_names(m) == std::vector<std::string>{"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"});
  const ir::Graph& g = m.graphs[0];
  CHECK(node_ops(g) == std::vector<std::string>{"reshape", "batchnorm2d", "increment", "reshape", "mse_loss"});
  const ir::Node* back = node_defining(g, "h");
  REQUIRE(back);
  CHECK(back->op == "reshape");
  CHECK(type_of(g, "h") == "f32[N,8]");
  CHECK(ir::attr_float(g.nodes[1].attrs, "momentum") == 0.2);
  CHECK(ir::to_string(g.value(g.nodes[1].inputs[0]).type) == "f32[N,8,1,1]");
  REQUIRE(g.updates.size() == 3);

  ir::Module ncl = compile_body("  input x: f32[B, 3, 5]\n  bn = batchnorm1d(3)\n  loss = mse_loss(bn(x), x)\n");
  CHECK(ir::to_string(ncl.graphs[0].value(ncl.graphs[0].nodes[1].inputs[0]).type) == "f32[N,3,5,1]");
  CHECK(test::body_error("  input x: f32[B, 3, 5, 5]\n  bn = batchnorm1d(3)\n  loss = mse_loss(bn(x), x)") ==
        "4:19 batchnorm1d layer 'bn' expects an f32 input [B, C] or [B, C, L], found f32[B,3,5,5]");
  CHECK(test::body_error("  input x: f32[B, 4]\n  bn = batchnorm1d(3)\n  loss = mse_loss(bn(x), x)") ==
        "3:20 layer 'bn' declares num_features 3, but its input x at 4:22 has 4 channels: expected 4, found 3");
}

TEST_CASE("concat: a tuple of tensors along an axis, as torch.cat", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[B, 2, 4, 4]\n"
      "  input y: f32[B, 3, 4, 4]\n"
      "  h = concat((x, y, x), axis: 1)\n"
      "  loss = mse_loss(flatten(h), flatten(h))\n");
  const ir::Node* c = node_defining(m.graphs[0], "h");
  REQUIRE(c);
  CHECK(c->op == "concat");
  CHECK(c->inputs.size() == 3);
  CHECK(type_of(m.graphs[0], "h") == "f32[N,7,4,4]");
  CHECK(ir::attr_int(c->attrs, "axis") == 1);
  const std::string two = "  input x: f32[B, 2, 4, 4]\n  input y: f32[B, 3, 5, 4]\n";
  CHECK(test::body_error(two + "  h = concat(x)\n  loss = mse_loss(h, h)") ==
        "4:14 concat expects a tuple of 2 to 8 tensors, e.g. concat((a, b), axis: 1); found x");
  CHECK(test::body_error(two + "  h = concat((x, y))\n  loss = mse_loss(h, h)") ==
        "4:7 concat: operand 1 is [N,3,5,4] but operand 0 is [N,2,4,4]; expected equal dims but along axis 1, found "
        "5 at dim 2");
  CHECK(test::body_error(two + "  h = concat((x, x), axis: 0)\n  loss = mse_loss(h, h)") ==
        "4:7 concat: axis 0 is the batch dim; expected another axis");
}

TEST_CASE("layernorm: weight/bias of normalized_shape, attrs passed through", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 5, 8]\n"
      "  ln = layernorm((5, 8))\n"
      "  loss = mse_loss(ln(x), x)\n");
  CHECK(param_names(m) == std::vector<std::string>{"ln.weight", "ln.bias"});
  CHECK(m.params[0].type.shape == ir::Shape{5, 8});
  const ir::Node& n = m.graphs[0].nodes[0];
  CHECK(n.op == "layernorm");
  CHECK(ir::attr_ints(n.attrs, "normalized_shape") == std::vector<int64_t>{5, 8});
  CHECK(n.outputs.size() == 3);
}

TEST_CASE("linear without bias and conv2d with groups get PyTorch shapes and bounds", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 4, 9, 9]\n"
      "  c = conv2d(4, 8, (3, 1), 1, 0, 1, 2, bias: false)\n"
      "  fc = linear(8 * 7 * 9, 3, bias: false)\n"
      "  loss = mse_loss(fc(flatten(c(x))), fc(flatten(c(x))))\n");
  CHECK(param_names(m) == std::vector<std::string>{"c.weight", "fc.weight"});
  CHECK(m.params[0].type.shape == ir::Shape{8, 2, 3, 1});
  CHECK(m.params[0].init.bound == 1.0 / std::sqrt(6.0));
  CHECK(m.params[1].type.shape == ir::Shape{3, 504});
  const ir::Node& conv = m.graphs[0].nodes[0];
  CHECK(conv.inputs.size() == 2);
  CHECK(ir::attr_int(conv.attrs, "groups") == 2);
}

TEST_CASE("a layer applied twice shares its params", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  fc = linear(8, 8)\n"
                              "  loss = mse_loss(fc(fc(x)), y)\n");
  CHECK(param_names(m) == std::vector<std::string>{"fc.weight", "fc.bias"});
  CHECK(node_ops(m.graphs[0]) == std::vector<std::string>{"linear", "linear", "mse_loss"});
  CHECK(m.graphs[0].nodes[0].inputs[1] == m.graphs[0].nodes[1].inputs[1]);
}

TEST_CASE("dropout reads the dnnc.step param, created once after the layers, with ordinal seeds", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  a = dropout(x, p: 0.25)\n"
                              "  fc = linear(8, 8)\n"
                              "  b = dropout(fc(a), 0.1)\n"
                              "  c = dropout(b, seed: 7)\n"
                              "  loss = mse_loss(c, y)\n");
  CHECK(param_names(m) == std::vector<std::string>{"fc.weight", "fc.bias", "dnnc.step"});
  const ir::Param& step = m.params[2];
  CHECK(ir::to_string(step.type) == "f32[]");
  CHECK(step.role == ir::ParamRole::optimizer_state);
  CHECK(step.init.kind == "zeros");
  const ir::Graph& g = m.graphs[0];
  const ir::Node* a = node_defining(g, "a");
  const ir::Node* b = node_defining(g, "b");
  const ir::Node* c = node_defining(g, "c");
  REQUIRE((a && b && c));
  CHECK(ir::attr_float(a->attrs, "p") == 0.25);
  CHECK(ir::attr_int(a->attrs, "seed") == 0);
  CHECK(ir::attr_float(b->attrs, "p") == 0.1);
  CHECK(ir::attr_int(b->attrs, "seed") == 1);
  CHECK(ir::attr_int(c->attrs, "seed") == 7);
  CHECK(ir::attr_float(c->attrs, "p") == 0.5);
  CHECK(g.value(a->inputs[1]).name == "dnnc.step");
  CHECK(a->inputs[1] == b->inputs[1]);
  CHECK(g.value(a->outputs[1]).name == "a.mask");
}

TEST_CASE("infix arithmetic: tensors broadcast, constants become scalar ops", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  s = x + y\n"
                              "  t = x * 2\n"
                              "  u = 3 * x\n"
                              "  v = x - 1.5\n"
                              "  w = 1 - x\n"
                              "  z = x / 4\n"
                              "  q = -x\n"
                              "  r = x * (2 * 3 + 1)\n"
                              "  loss = mse_loss(s + t + u + v + w + z + q + r, y)\n");
  const ir::Graph& g = m.graphs[0];
  auto value_of = [&](const char* name) { return ir::attr_float(node_defining(g, name)->attrs, "value"); };
  CHECK(node_defining(g, "s")->op == "add");
  CHECK(node_defining(g, "t")->op == "mul_scalar");
  CHECK(value_of("t") == 2.0);
  CHECK(node_defining(g, "u")->op == "mul_scalar");
  CHECK(value_of("u") == 3.0);
  CHECK(node_defining(g, "v")->op == "add_scalar");
  CHECK(value_of("v") == -1.5);
  const ir::Node* w = node_defining(g, "w");
  CHECK(w->op == "add_scalar");
  CHECK(value_of("w") == 1.0);
  const ir::Node* neg = node_defining(g, g.value(w->inputs[0]).name);
  REQUIRE(neg);
  CHECK(neg->op == "mul_scalar");
  CHECK(ir::attr_float(neg->attrs, "value") == -1.0);
  CHECK(node_defining(g, "z")->op == "div_scalar");
  CHECK(value_of("z") == 4.0);
  CHECK(node_defining(g, "q")->op == "mul_scalar");
  CHECK(value_of("q") == -1.0);
  CHECK(value_of("r") == 7.0);
}

TEST_CASE("add/sub/mul/div calls behave like the infix operators", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  a = mul(x, y)\n"
                              "  b = div(a, 2)\n"
                              "  loss = mse_loss(sub(b, 1), y)\n");
  const ir::Graph& g = m.graphs[0];
  CHECK(node_ops(g) == std::vector<std::string>{"mul", "div_scalar", "add_scalar", "mse_loss"});
}

TEST_CASE("broadcasting tensors of different ranks follows the registry's rule", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 3, 4]\n"
      "  input y: f32[N, 1, 4]\n"
      "  s = x * y\n"
      "  loss = mse_loss(s, x)\n");
  CHECK(type_of(m.graphs[0], "s") == "f32[N,3,4]");
}

TEST_CASE("named constants can size layers and scale tensors", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  hidden = 4 * 4\n"
                              "  scale = 0.5\n"
                              "  fc1 = linear(8, hidden)\n"
                              "  fc2 = linear(hidden, 8)\n"
                              "  loss = mse_loss(fc2(fc1(x)) * scale, y)\n");
  CHECK(m.params[0].type.shape == ir::Shape{16, 8});
  CHECK(ir::attr_float(m.graphs[0].nodes[2].attrs, "value") == 0.5);
}

TEST_CASE("reshape takes dims with the batch symbol; transpose takes a permutation", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 2, 3]\n"
      "  a = reshape(x, N, 6)\n"
      "  b = reshape(x, (N, 3, 2))\n"
      "  c = transpose(b, 0, 2, 1)\n"
      "  loss = mse_loss(flatten(c), a)\n");
  const ir::Graph& g = m.graphs[0];
  CHECK(ir::attr_ints(node_defining(g, "a")->attrs, "shape") == std::vector<int64_t>{ir::kBatch, 6});
  CHECK(type_of(g, "b") == "f32[N,3,2]");
  CHECK(ir::attr_ints(node_defining(g, "c")->attrs, "perm") == std::vector<int64_t>{0, 2, 1});
  CHECK(type_of(g, "c") == "f32[N,2,3]");
}

TEST_CASE("activation and softmax arguments, positional or by keyword", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  a = leaky_relu(x, 0.2)\n"
                              "  b = leaky_relu(x)\n"
                              "  c = softmax(x, axis: 1)\n"
                              "  d = log_softmax(x)\n"
                              "  e = gelu(tanh(sigmoid(x)))\n"
                              "  loss = mse_loss(a + b + c + d + e, y)\n");
  const ir::Graph& g = m.graphs[0];
  CHECK(ir::attr_float(node_defining(g, "a")->attrs, "negative_slope") == 0.2);
  CHECK(ir::attr_float(node_defining(g, "b")->attrs, "negative_slope") == 0.01);
  CHECK(ir::attr_int(node_defining(g, "c")->attrs, "axis") == 1);
  CHECK(ir::attr_int(node_defining(g, "d")->attrs, "axis") == -1);
  CHECK(node_defining(g, "e")->op == "gelu");
}

TEST_CASE("pooling: kernel, stride and padding as ints or pairs", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 2, 8, 8]\n"
      "  a = maxpool2d(x, kernel: 3, stride: 2, padding: 1)\n"
      "  b = avgpool2d(x, (2, 4), count_include_pad: false)\n"
      "  loss = mse_loss(flatten(a), flatten(a))\n"
      "  unused = b\n");
  const ir::Graph& g = m.graphs[0];
  CHECK(type_of(g, "a") == "f32[N,2,4,4]");
  const ir::Node* b = node_defining(g, "b");
  CHECK(ir::attr_ints(b->attrs, "kernel") == std::vector<int64_t>{2, 4});
  CHECK(ir::attr_bool(b->attrs, "count_include_pad") == false);
  CHECK(type_of(g, "b") == "f32[N,2,4,2]");
}

TEST_CASE("matmul with transpose flags", "[frontend][lower]") {
  ir::Module m = compile_body(
      "  input x: f32[N, 8]\n"
      "  input w: f32[N, 8]\n"
      "  s = matmul(x, w, transpose_a: true)\n"
      "  loss = mse_loss(s, s)\n");
  CHECK(type_of(m.graphs[0], "s") == "f32[8,8]");
  CHECK(ir::attr_bool(m.graphs[0].nodes[0].attrs, "transpose_a"));
  CHECK_FALSE(ir::attr_bool(m.graphs[0].nodes[0].attrs, "transpose_b"));
}

TEST_CASE("the prediction output is the first operand of the loss op, through scalar arithmetic", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) +
                              "  p = relu(x)\n"
                              "  loss = 0.5 * mse_loss(p, y)\n");
  const ir::Graph& g = m.graphs[0];
  REQUIRE(g.outputs.size() == 2);
  CHECK(g.value(g.outputs[0]).name == "loss");
  CHECK(g.value(g.outputs[1]).name == "p");
}

TEST_CASE("values take the user's names; unnamed intermediates get fresh numbers", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) + "  h = relu(tanh(x))\n  loss = mse_loss(h, y)\n");
  const ir::Graph& g = m.graphs[0];
  CHECK(g.value(g.nodes[0].outputs[0]).name == "0");
  CHECK(g.value(g.nodes[1].outputs[0]).name == "h");
  CHECK(g.value(g.nodes[2].outputs[0]).name == "loss");
}

TEST_CASE("a file without a train block has no train config", "[frontend][lower]") {
  ir::Module m = compile_body(std::string(kMlpInputs) + "  loss = mse_loss(x, y)\n");
  CHECK_FALSE(m.train.present);
  CHECK(m.graphs[0].outputs.size() == 2);
}
