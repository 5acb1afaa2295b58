// Hand-built modules for the IR tests; node result types come from the registry's rules.
#include "fixtures.h"

#include <cmath>

#include "ir/op_registry.h"
#include "test_types.h"

namespace dnnc::ir::test {
namespace {

// Appends a node with complete attrs and inferred result types.
std::vector<ValueId> node(Graph& g, const std::string& op, std::vector<ValueId> ins, Attrs attrs,
                          std::vector<std::string> names = {}, SourceLoc loc = {}) {
  const OpDef* def = find_op(op);
  std::vector<TensorType> types;
  for (ValueId i : ins) types.push_back(g.value(i).type);
  Attrs complete = complete_attrs(*def, attrs);
  auto out = infer_types(*def, types, complete);
  return g.add_node(op, std::move(ins), std::move(complete), out, loc, names);
}

Param param(const std::string& name, const std::string& type, ParamRole role, InitSpec init, SourceLoc loc = {}) {
  return Param{name, ty(type), role, init, loc};
}

}  // namespace

Module mlp_module() {
  Module m;
  m.name = "MnistMLP";
  m.source_file = "models/mnist_mlp.dnn";
  double b1 = 1.0 / std::sqrt(784.0), b2 = 1.0 / std::sqrt(128.0);
  m.params = {param("fc1.weight", "f32[128,784]", ParamRole::weight, {"uniform", b1}, {5, 3}),
              param("fc1.bias", "f32[128]", ParamRole::weight, {"uniform", b1}, {5, 3}),
              param("fc2.weight", "f32[10,128]", ParamRole::weight, {"uniform", b2}, {6, 3}),
              param("fc2.bias", "f32[10]", ParamRole::weight, {"uniform", b2}, {6, 3})};
  m.train.present = true;
  m.train.data = {"mnist", {0.5}, {0.5}};
  m.train.batch = 128;
  m.train.epochs = 5;
  m.train.seed = 1;
  m.train.optimizer = {"sgd", {{"lr", 0.001}, {"momentum", 0.9}}};
  m.train.loc = {14, 1};
  Graph g;
  g.name = "forward";
  ValueId x = g.add_input("x", ty("f32[N,1,28,28]"));
  ValueId label = g.add_input("label", ty("i64[N]"));
  auto p = [&](const std::string& n) { return g.param(n, m.param(n)->type); };
  ValueId flat = node(g, "flatten", {x}, {}, {}, {10, 12})[0];
  ValueId h = node(g, "linear", {flat, p("fc1.weight"), p("fc1.bias")}, {}, {"h"}, {10, 12})[0];
  ValueId a = node(g, "relu", {h}, {}, {"a"}, {10, 8})[0];
  ValueId logits = node(g, "linear", {a, p("fc2.weight"), p("fc2.bias")}, {}, {"logits"}, {11, 12})[0];
  ValueId loss = node(g, "cross_entropy", {logits, label}, {}, {"loss"}, {12, 10})[0];
  g.outputs = {loss, logits};
  m.graphs.push_back(std::move(g));
  return m;
}

Module rich_module() {
  Module m;
  m.name = "Rich";
  m.batch_symbol = "B";
  m.params = {
      param("conv.weight", "f32[8,3,3,3]{nhwc}", ParamRole::weight, {"uniform", 0.19245008972987526}, {3, 5}),
      param("bn.weight", "f32[8]", ParamRole::weight, {"ones", 0.0}),
      param("bn.bias", "f32[8]", ParamRole::weight, {"zeros", 0.0}),
      param("bn.running_mean", "f32[8]", ParamRole::buffer, {"zeros", 0.0}),
      param("bn.running_var", "f32[8]", ParamRole::buffer, {"ones", 0.0}),
      param("fc.weight", "f32[10,512]{col_major}", ParamRole::weight, {"uniform", 0.044194173824159216}),
      param("fc.weight.momentum_buffer", "f32[10,512]{col_major}", ParamRole::optimizer_state, {"zeros", -0.0}),
      param("bn.weight.exp_avg", "f32[8]", ParamRole::optimizer_state, {"zeros", 0.0}),
      param("bn.weight.exp_avg_sq", "f32[8]", ParamRole::optimizer_state, {"zeros", 0.0}),
      param("optimizer step", "f32[]", ParamRole::optimizer_state, {"zeros", 0.0}),
  };
  m.train.present = true;
  m.train.data = {"cifar10", {0.4914, 0.4822, 0.4465}, {0.247, 0.243, 0.261}};
  m.train.batch = 4;
  m.train.epochs = 10;
  m.train.seed = 42;
  m.train.optimizer = {"adamw",
                       {{"lr", 1e-3},
                        {"betas", std::vector<double>{0.9, 0.999}},
                        {"eps", 1e-8},
                        {"amsgrad", false},
                        {"tag", std::string("say \"hi\" \\ bye")},
                        {"warmup", int64_t{-3}},
                        {"milestones", std::vector<int64_t>{}}}};
  Graph g;
  g.name = "train_step";
  ValueId x = g.add_input("image", ty("f32[N,3,16,16]{nhwc}"));
  ValueId label = g.add_input("label", ty("i64[N]"));
  ValueId step = g.add_input("step", ty("f32[]"));
  auto p = [&](const std::string& n) { return g.param(n, m.param(n)->type); };
  ValueId c =
      node(g, "conv2d", {x, p("conv.weight")}, {{"padding", std::vector<int64_t>{1, 1}}}, {"conv.out"}, {7, 9})[0];
  auto bn = node(g, "batchnorm2d", {c, p("bn.weight"), p("bn.bias"), p("bn.running_mean"), p("bn.running_var")},
                 {{"momentum", 0.25}}, {"bn.y", "bn.mean", "bn.invstd", "bn.rm", "bn.rv"});
  ValueId r = node(g, "leaky_relu", {bn[0]}, {{"negative_slope", 0.1}})[0];
  ValueId pool = node(g, "maxpool2d", {r}, {{"kernel", std::vector<int64_t>{2, 2}}})[0];
  node(g, "sub", {pool, pool}, {});  // same layouts: stays nhwc
  ValueId rows = node(g, "avgpool2d", {r}, {{"kernel", std::vector<int64_t>{2, 2}}, {"count_include_pad", false}})[0];
  ValueId flat_in = node(g, "mul_scalar", {rows}, {{"value", 1.0}})[0];
  ValueId drop_in = node(g, "fill", {}, {{"value", -0.0}, {"shape", std::vector<int64_t>{-1, 8, 8, 8}}})[0];
  node(g, "add", {flat_in, drop_in}, {});  // nhwc + row_major broadcast operand: nhwc
  auto drop = node(g, "dropout", {drop_in, step}, {{"p", 0.1}, {"seed", int64_t{7}}}, {"drop.y", "drop.mask"});
  ValueId flat =
      node(g, "flatten", {node(g, "reshape", {drop[0]}, {{"shape", std::vector<int64_t>{-1, 2, 256}}})[0]}, {})[0];
  ValueId logits = node(g, "linear", {flat, p("fc.weight")}, {}, {"logits"})[0];
  ValueId loss = node(g, "cross_entropy", {logits, label}, {}, {"loss"})[0];
  ValueId dw =
      node(g, "matmul", {node(g, "fill", {}, {{"value", 1.0}, {"shape", std::vector<int64_t>{-1, 10}}})[0], flat},
           {{"transpose_a", true}})[0];
  ValueId dwt = node(g, "transpose", {dw}, {{"perm", std::vector<int64_t>{1, 0}}})[0];
  node(g, "transpose", {dwt}, {{"perm", std::vector<int64_t>{1, 0}}});
  // sgd_update with momentum on a col_major weight: grads must share the layout, so reuse the param.
  auto sgd = node(g, "sgd_update", {p("fc.weight"), p("fc.weight"), p("fc.weight.momentum_buffer"), step},
                  {{"lr", 0.01}, {"momentum", 0.9}, {"nesterov", true}}, {"fc.weight.new", "fc.weight.buf"});
  ValueId gw = node(g, "mul", {p("bn.weight"), p("bn.weight")}, {})[0];
  auto adam = node(g, "adam_update",
                   {p("bn.weight"), gw, p("bn.weight.exp_avg"), p("bn.weight.exp_avg_sq"), p("optimizer step")},
                   {{"decoupled", true}, {"weight_decay", 0.01}});
  ValueId next_step = node(g, "add_scalar", {p("optimizer step")}, {{"value", 1.0}}, {"step.next"})[0];
  g.outputs = {loss, bn[1], drop[1]};
  g.updates = {{"fc.weight", sgd[0]},          {"fc.weight.momentum_buffer", sgd[1]}, {"bn.weight", adam[0]},
               {"bn.weight.exp_avg", adam[1]}, {"bn.weight.exp_avg_sq", adam[2]},     {"bn.running_mean", bn[3]},
               {"bn.running_var", bn[4]},      {"optimizer step", next_step}};
  m.graphs.push_back(std::move(g));
  Graph infer;
  infer.name = "infer";
  ValueId ix = infer.add_input("image", ty("f32[N,3,16,16]{nhwc}"));
  ValueId ic = node(infer, "conv2d", {ix, infer.param("conv.weight", m.param("conv.weight")->type)}, {})[0];
  infer.outputs = {ic};
  m.graphs.push_back(std::move(infer));
  return m;
}

}  // namespace dnnc::ir::test
