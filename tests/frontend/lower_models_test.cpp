// Lowering of every model in models/: params (PyTorch names, shapes, order, init), the
// forward graph's node sequence, value types and outputs, and the train config.
#include <catch2/catch.hpp>
#include <cmath>

#include "frontend/frontend.h"
#include "ir/op_registry.h"
#include "test_util.h"

using namespace dnnc;
using test::node_ops;
using test::param_names;
using test::type_of;

namespace {

struct ParamRow {
  std::string name;
  ir::Shape shape;
  double bound;  // uniform bound; 0 for non-uniform init
};

void check_params(const ir::Module& m, const std::vector<ParamRow>& rows) {
  REQUIRE(m.params.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("param " << i << " " << rows[i].name);
    const ir::Param& p = m.params[i];
    CHECK(p.name == rows[i].name);
    CHECK(p.type.shape == rows[i].shape);
    CHECK(p.type.dtype == ir::DType::f32);
    CHECK(p.role == ir::ParamRole::weight);
    CHECK(p.init.kind == "uniform");
    CHECK(std::abs(p.init.bound - rows[i].bound) <= 1e-15 * rows[i].bound);
  }
}

// Every node's attributes are complete (completing them again changes nothing) and every
// node has a source location.
void check_nodes_complete(const ir::Graph& g) {
  for (const auto& n : g.nodes) {
    INFO("node " << n.op);
    const ir::OpDef* def = ir::find_op(n.op);
    REQUIRE(def);
    CHECK(ir::complete_attrs(*def, n.attrs) == n.attrs);
    CHECK(n.loc.known());
  }
}

void check_outputs(const ir::Graph& g, const std::string& prediction, const std::string& prediction_type) {
  REQUIRE(g.outputs.size() == 2);
  CHECK(g.value(g.outputs[0]).name == "loss");
  CHECK(ir::to_string(g.value(g.outputs[0]).type) == "f32[]");
  CHECK(g.value(g.outputs[1]).name == prediction);
  CHECK(ir::to_string(g.value(g.outputs[1]).type) == prediction_type);
}

void check_inputs(const ir::Graph& g, const std::string& image_type) {
  REQUIRE(g.inputs.size() == 2);
  CHECK(g.value(g.inputs[0]).name == "image");
  CHECK(ir::to_string(g.value(g.inputs[0]).type) == image_type);
  CHECK(g.value(g.inputs[1]).name == "label");
  CHECK(ir::to_string(g.value(g.inputs[1]).type) == "i64[N]");
}

double inv_sqrt(double fan_in) { return 1.0 / std::sqrt(fan_in); }

}  // namespace

TEST_CASE("models/mnist_mlp.dnn: params, graph and train config", "[frontend][models]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  CHECK(m.name == "MnistMLP");
  CHECK(m.source_file == "models/mnist_mlp.dnn");
  check_params(m, {{"fc1.weight", {512, 784}, inv_sqrt(784)},
                   {"fc1.bias", {512}, inv_sqrt(784)},
                   {"fc2.weight", {256, 512}, inv_sqrt(512)},
                   {"fc2.bias", {256}, inv_sqrt(512)},
                   {"fc3.weight", {10, 256}, inv_sqrt(256)},
                   {"fc3.bias", {10}, inv_sqrt(256)}});
  REQUIRE(m.graphs.size() == 1);
  const ir::Graph& g = m.graphs[0];
  CHECK(g.name == "forward");
  check_inputs(g, "f32[N,1,28,28]");
  CHECK(node_ops(g) ==
        std::vector<std::string>{"flatten", "linear", "relu", "linear", "relu", "linear", "cross_entropy"});
  CHECK(type_of(g, "h1") == "f32[N,512]");
  CHECK(type_of(g, "h2") == "f32[N,256]");
  check_outputs(g, "logits", "f32[N,10]");
  check_nodes_complete(g);
  CHECK(g.updates.empty());

  const ir::TrainConfig& t = m.train;
  CHECK(t.present);
  CHECK(t.data.dataset == "mnist");
  CHECK(t.data.mean == std::vector<double>{0.5});
  CHECK(t.data.std == std::vector<double>{0.5});
  CHECK(t.batch == 128);
  CHECK(t.epochs == 5);
  CHECK(t.seed == 1);
  CHECK(t.optimizer.kind == "sgd");
  CHECK(t.optimizer.attrs ==
        ir::Attrs{{"lr", 0.001}, {"momentum", 0.9}, {"dampening", 0.0}, {"weight_decay", 0.0}, {"nesterov", false}});
}

TEST_CASE("models/mnist_mlp_adam.dnn: same model, adam with PyTorch defaults", "[frontend][models]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp_adam.dnn");
  ir::Module sgd = frontend::compile_file("models/mnist_mlp.dnn");
  CHECK(param_names(m) == param_names(sgd));
  CHECK(node_ops(m.graphs[0]) == node_ops(sgd.graphs[0]));
  CHECK(m.train.optimizer.kind == "adam");
  CHECK(m.train.optimizer.attrs ==
        ir::Attrs{{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.0}});
}

TEST_CASE("models/cifar_cnn.dnn: conv, pool, flatten to 3600, linear", "[frontend][models]") {
  ir::Module m = frontend::compile_file("models/cifar_cnn.dnn");
  check_params(m, {{"conv1.weight", {16, 3, 3, 3}, inv_sqrt(27)},
                   {"conv1.bias", {16}, inv_sqrt(27)},
                   {"fc.weight", {10, 3600}, inv_sqrt(3600)},
                   {"fc.bias", {10}, inv_sqrt(3600)}});
  const ir::Graph& g = m.graphs[0];
  check_inputs(g, "f32[N,3,32,32]");
  CHECK(node_ops(g) == std::vector<std::string>{"conv2d", "relu", "maxpool2d", "flatten", "linear", "cross_entropy"});
  CHECK(type_of(g, "h") == "f32[N,16,15,15]");
  check_outputs(g, "logits", "f32[N,10]");
  check_nodes_complete(g);
  // Line 9 is `  h      = maxpool2d(relu(conv1(image)), 2)`: conv1 at column 27, maxpool2d at 12.
  CHECK(g.nodes[0].loc == ir::SourceLoc{9, 27});
  CHECK(g.nodes[2].loc == ir::SourceLoc{9, 12});
  CHECK(ir::attr_ints(g.nodes[0].attrs, "stride") == std::vector<int64_t>{1, 1});
  CHECK(ir::attr_ints(g.nodes[0].attrs, "padding") == std::vector<int64_t>{0, 0});
  CHECK(ir::attr_ints(g.nodes[2].attrs, "kernel") == std::vector<int64_t>{2, 2});
  // The conv node reads x, weight, bias in that order.
  REQUIRE(g.nodes[0].inputs.size() == 3);
  CHECK(g.value(g.nodes[0].inputs[1]).name == "conv1.weight");
  CHECK(g.value(g.nodes[0].inputs[1]).kind == ir::ValueKind::param);
  CHECK(g.value(g.nodes[0].inputs[2]).name == "conv1.bias");

  const ir::TrainConfig& t = m.train;
  CHECK(t.data.dataset == "cifar10");
  CHECK(t.data.mean == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(t.data.std == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(t.batch == 4);
  CHECK(t.epochs == 2);
  CHECK(t.seed == 2);
  CHECK(ir::attr_float(t.optimizer.attrs, "momentum") == 0.9);
}

TEST_CASE("models/lenet5.dnn: LeNet-5 shapes", "[frontend][models]") {
  ir::Module m = frontend::compile_file("models/lenet5.dnn");
  check_params(m, {{"conv1.weight", {6, 1, 5, 5}, inv_sqrt(25)},
                   {"conv1.bias", {6}, inv_sqrt(25)},
                   {"conv2.weight", {16, 6, 5, 5}, inv_sqrt(150)},
                   {"conv2.bias", {16}, inv_sqrt(150)},
                   {"fc1.weight", {120, 400}, inv_sqrt(400)},
                   {"fc1.bias", {120}, inv_sqrt(400)},
                   {"fc2.weight", {84, 120}, inv_sqrt(120)},
                   {"fc2.bias", {84}, inv_sqrt(120)},
                   {"fc3.weight", {10, 84}, inv_sqrt(84)},
                   {"fc3.bias", {10}, inv_sqrt(84)}});
  const ir::Graph& g = m.graphs[0];
  check_inputs(g, "f32[N,1,28,28]");
  CHECK(node_ops(g) == std::vector<std::string>{"conv2d", "relu", "maxpool2d", "conv2d", "relu", "maxpool2d", "flatten",
                                                "linear", "relu", "linear", "relu", "linear", "cross_entropy"});
  CHECK(type_of(g, "h1") == "f32[N,6,14,14]");
  CHECK(type_of(g, "h2") == "f32[N,16,5,5]");
  CHECK(type_of(g, "h3") == "f32[N,120]");
  check_outputs(g, "logits", "f32[N,10]");
  check_nodes_complete(g);
  CHECK(ir::attr_ints(g.nodes[0].attrs, "padding") == std::vector<int64_t>{2, 2});
}

TEST_CASE("models/cifar_strided.dnn: padding, stride 2 and avgpool", "[frontend][models]") {
  ir::Module m = frontend::compile_file("models/cifar_strided.dnn");
  check_params(m, {{"conv1.weight", {16, 3, 3, 3}, inv_sqrt(27)},
                   {"conv1.bias", {16}, inv_sqrt(27)},
                   {"conv2.weight", {32, 16, 3, 3}, inv_sqrt(144)},
                   {"conv2.bias", {32}, inv_sqrt(144)},
                   {"fc.weight", {10, 2048}, inv_sqrt(2048)},
                   {"fc.bias", {10}, inv_sqrt(2048)}});
  const ir::Graph& g = m.graphs[0];
  CHECK(node_ops(g) == std::vector<std::string>{"conv2d", "relu", "conv2d", "relu", "avgpool2d", "flatten", "linear",
                                                "cross_entropy"});
  CHECK(type_of(g, "h1") == "f32[N,16,32,32]");
  CHECK(type_of(g, "h2") == "f32[N,32,8,8]");
  check_outputs(g, "logits", "f32[N,10]");
  check_nodes_complete(g);
  CHECK(ir::attr_ints(g.nodes[2].attrs, "stride") == std::vector<int64_t>{2, 2});
  CHECK(ir::attr_ints(g.nodes[2].attrs, "padding") == std::vector<int64_t>{1, 1});
}
