// Lowering decisions: GEMM flags and epilogues, views as aliases, conv paths, fused groups, errors.
#include "codegen/lower/lower.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "codegen/kir/kir_printer.h"
#include "codegen/lower/coschedule.h"
#include "ir/check.h"
#include "ir/fusion.h"
#include "ir/op_registry.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

std::vector<const Step*> gemms(const Program& p) {
  std::vector<const Step*> out;
  for (const Step& s : p.steps)
    if (s.kind == Step::Kind::gemm) out.push_back(&s);
  return out;
}

const Buffer& buf(const Program& p, int id) { return p.buffers.at(static_cast<size_t>(id)); }

// A module with one graph "g" over input %x of `shape`, built by `body`.
ir::Module one_graph(const ir::TensorType& x, const std::function<void(ir::Graph&, ir::ValueId)>& body) {
  ir::Module m;
  m.name = "T";
  ir::Graph g;
  g.name = "g";
  ir::ValueId in = g.add_input("x", x);
  body(g, in);
  m.graphs.push_back(std::move(g));
  return m;
}

ir::ValueId add(ir::Graph& g, const std::string& op, std::vector<ir::ValueId> ins, ir::Attrs attrs = {}) {
  const ir::OpDef* def = ir::find_op(op);
  std::vector<ir::TensorType> types;
  for (ir::ValueId v : ins) types.push_back(g.value(v).type);
  ir::Attrs full = ir::complete_attrs(*def, attrs);
  return g.add_node(op, ins, full, ir::infer_types(*def, types, full))[0];
}

}  // namespace

TEST_CASE("linear and matmul become GEMMs with transposes as flags and a bias epilogue", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 16);
  auto gs = gemms(p);
  REQUIRE(gs.size() == 3 + 5);  // 3 forward linears, 3 weight grads, 2 input grads
  const GemmCall& fc1 = gs[0]->gemm;
  CHECK(fc1.trans_b);
  CHECK_FALSE(fc1.trans_a);
  CHECK(fc1.m == 16);
  CHECK(fc1.n == 512);
  CHECK(fc1.k == 784);
  CHECK(fc1.bias_kind == GemmCall::Bias::per_col);
  int weight_grads = 0;
  for (const Step* s : gs) weight_grads += s->gemm.trans_a ? 1 : 0;
  CHECK(weight_grads == 3);
  for (const Kernel& k : p.kernels) CHECK(k.name.find("transpose") == std::string::npos);
}

TEST_CASE("flatten and reshape are aliases of their operand's storage", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 4);
  int views = 0, in_place = 0;
  for (const Buffer& b : p.buffers) {
    if (b.kind != BufferKind::alias) continue;
    const Buffer& root = buf(p, b.alias_of);
    CHECK(root.kind != BufferKind::alias);
    CHECK(root.numel() == b.numel());
    if (root.kind == BufferKind::param)
      ++in_place;
    else
      ++views;
  }
  CHECK(views == 2);     // %2 = flatten(%h), %dh = reshape(%d2)
  CHECK(in_place == 9);  // 4 params, 4 momentum buffers and the step, updated in place
}

TEST_CASE("optimizer updates write their params in place", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp_adam.dnn");
  const ir::Graph& g = *m.graph("train_step");
  Program p = lower_graph(m, g, 16);
  REQUIRE(p.updates.size() == g.updates.size());
  for (const auto& [name, b] : p.updates) {
    INFO(name);
    const Buffer& u = buf(p, b);
    REQUIRE(u.kind == BufferKind::alias);
    CHECK(buf(p, u.alias_of).kind == BufferKind::param);
    CHECK(buf(p, u.alias_of).value_name == name);
  }
  // The in-place kernels take each param once, read and written.
  for (const Kernel& k : p.kernels)
    if (k.name.find("adam_update") != std::string::npos) {
      int written = 0;
      for (const KernelParam& kp : k.params) written += kp.written;
      CHECK(written == 3);  // param, exp_avg, exp_avg_sq
      CHECK(k.params.size() == 5);
    }
}

TEST_CASE("map ops after a GEMM in one fuse group become its epilogue", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const ir::Graph& g = *m.graph("train_step");
  Program p = lower_graph(m, g, 128);
  int epilogues = 0;
  for (const Step* s : gemms(p)) {
    if (s->gemm.epilogue < 0) continue;
    ++epilogues;
    const Kernel& k = p.kernels.at(static_cast<size_t>(s->gemm.epilogue));
    CHECK(k.index_params.size() == 2);
    // C is the buffer of the epilogue's result (relu's h, relu_backward's d): no other buffer.
    bool c_is_arg = false;
    for (int a : s->args) c_is_arg |= a == s->gemm.c;
    CHECK(c_is_arg);
  }
  CHECK(epilogues == 4 + 3);  // fc1, fc2 forward (relu); dh2, dh1 (relu_backward); 3 fused SGD updates
  for (const Step& s : p.steps)
    if (s.kind == Step::Kind::kernel)
      CHECK(p.kernels[static_cast<size_t>(s.kernel)].name.find("relu") == std::string::npos);
  // Not fused when disabled.
  LowerOptions off;
  off.gemm_epilogues = false;
  Program q = lower_graph(m, g, 128, off);
  for (const Step* s : gemms(q)) CHECK(s->gemm.epilogue < 0);
}

TEST_CASE("a GEMM epilogue that is exactly one relu or relu_backward is named for the CUDA printer",
          "[codegen][lower]") {
  ir::Module m = test::compiled_model("tests/cpu/models/mlp_acts.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 6);
  std::vector<GemmCall::Act> acts;
  std::vector<const GemmCall*> relu, relu_backward;
  for (const Step* s : gemms(p)) {
    acts.push_back(s->gemm.act);
    if (s->gemm.act == GemmCall::Act::relu) relu.push_back(&s->gemm);
    if (s->gemm.act == GemmCall::Act::relu_backward) relu_backward.push_back(&s->gemm);
    if (s->gemm.act != GemmCall::Act::relu_backward) CHECK(s->gemm.act_mask == -1);
  }
  // fc1 and fc2 (relu); not fc3 (tanh), fc4 (relu(a) + a reads the product twice) or fc5.
  REQUIRE(relu.size() == 2);
  CHECK(relu[0]->n == 40);
  CHECK(relu[1]->n == 30);
  CHECK(relu[1]->bias_kind == GemmCall::Bias::none);
  // dh2 and dh1, each masked by its relu's output: the C of the forward GEMM.
  REQUIRE(relu_backward.size() == 2);
  CHECK(relu_backward[0]->n == 30);
  CHECK(relu_backward[0]->act_mask == relu[1]->c);
  CHECK(relu_backward[1]->n == 40);
  CHECK(relu_backward[1]->act_mask == relu[0]->c);
  CHECK(print_kir(p).find(" act=relu_backward mask=%") != std::string::npos);
  // The fused SGD updates are epilogues too, but not activations.
  int sgd_epilogues = 0;
  for (const Step* s : gemms(p))
    if (s->gemm.first_step >= 0) {
      ++sgd_epilogues;
      CHECK(s->gemm.act == GemmCall::Act::none);
    }
  CHECK(sgd_epilogues == 5);
}

TEST_CASE("small convolutions use direct loops, larger ones im2col and batched GEMM", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/lenet5.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 8);
  int conv_kernels = 0, im2col = 0, batched = 0, per_image_dw = 0, dw_sums = 0;
  for (const Kernel& k : p.kernels) {
    conv_kernels += k.name.find("_conv2d") != std::string::npos && k.name.find("backward") == std::string::npos;
    im2col += k.name.find("im2col") != std::string::npos;
    dw_sums += k.name.find("dw_sum") != std::string::npos;
  }
  for (const Step* s : gemms(p)) {
    batched += s->gemm.batch == 8 && !s->gemm.trans_b;
    // weight gradients: one GEMM per image dW_b = dy_b · col_bᵀ (K = output pixels), summed
    // into dW on one thread (conv1, small) or into per-image slices on the threads (conv2)
    per_image_dw += s->gemm.batch == 8 && s->gemm.trans_b && (s->gemm.k == 28 * 28 || s->gemm.k == 10 * 10) &&
                    s->gemm.accumulate_batches == (s->gemm.k == 28 * 28);
  }
  CHECK(conv_kernels == 1);  // conv1 (+ relu + maxpool): 1*5*5 = 25 taps per output
  CHECK(im2col == 3);        // conv2 forward, both weight gradients
  CHECK(batched == 2);       // conv2 forward, conv2 input gradient
  CHECK(per_image_dw == 2);
  CHECK(dw_sums == 1);  // conv2's slices summed
}

TEST_CASE("conv2d -> relu -> maxpool2d and maxpool2d_backward -> relu_backward -> bias grad are one kernel each",
          "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 4);
  std::vector<std::string> names;
  for (const Kernel& k : p.kernels) names.push_back(k.name);
  auto has = [&](const std::string& part) {
    return std::count_if(names.begin(), names.end(),
                         [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  CHECK(has("conv2d_pool") == 1);
  CHECK(has("maxpool2d_backward_bias") == 1);
  CHECK(has("relu") == 0);
  CHECK(has("reduce_sum") == 0);  // the fc bias gradient is summed in the softmax_xent kernel
  CHECK(has("softmax_xent") == 1);
  CHECK(has("dy_t") == 0);
  // The pre-activation conv output is never stored: no [4,16,30,30] buffer besides the relu
  // output and its gradient.
  int planes = 0;
  for (const Buffer& b : p.buffers)
    planes += b.kind == BufferKind::intermediate && b.shape == std::vector<int64_t>{4, 16, 30, 30};
  CHECK(planes == 2);
}

TEST_CASE("a group of same-shaped elementwise nodes becomes one loop nest", "[codegen][lower]") {
  ir::TensorType t{ir::DType::f32, {ir::kBatch, 8}};
  ir::Module m = one_graph(t, [](ir::Graph& g, ir::ValueId x) {
    ir::ValueId a = add(g, "relu", {x});
    ir::ValueId b = add(g, "mul_scalar", {a}, {{"value", 2.0}});
    ir::ValueId c = add(g, "tanh", {b});
    g.outputs = {c, a};
  });
  Program plain = lower_graph(m, m.graphs[0], 3);
  // The group as pass fuse would record it: one elementwise chain.
  ir::Graph& g = m.graphs[0];
  g.groups.push_back(ir::FusionGroup{ir::fusion::kElementwise});
  for (ir::Node& n : g.nodes) {
    n.group = 0;
    n.role = ir::fusion::kChain;
  }
  Program fused = lower_graph(m, g, 3);
  CHECK(fused.kernels.size() == 1);
  CHECK(plain.kernels.size() == 3);
  // %b lives only inside the fused kernel; %a escapes (it is an output) and is stored.
  CHECK(fused.kernels[0].params.size() == 3);
}

TEST_CASE("at batch 1 a binary op still joins its chain (a dim of extent 1 has no stride to match)",
          "[codegen][lower]") {
  ir::TensorType t{ir::DType::f32, {ir::kBatch, 8}};
  ir::Module m = one_graph(t, [](ir::Graph& g, ir::ValueId x) {
    ir::ValueId a = add(g, "relu", {x});
    g.outputs = {add(g, "mul", {a, x})};
  });
  ir::Graph& g = m.graphs[0];
  g.groups.push_back(ir::FusionGroup{ir::fusion::kElementwise});
  for (ir::Node& n : g.nodes) {
    n.group = 0;
    n.role = ir::fusion::kChain;
  }
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    CHECK(lower_graph(m, g, batch).kernels.size() == 1);
  }
}

TEST_CASE("a group its kind's lowering cannot take is an internal error naming the group", "[codegen][lower]") {
  ir::TensorType t{ir::DType::f32, {ir::kBatch, 8}};
  auto grouped = [&](const std::string& kind, const char* role) {
    ir::Module m = one_graph(t, [](ir::Graph& g, ir::ValueId x) {
      ir::ValueId a = add(g, "relu", {x});
      g.outputs = {add(g, "tanh", {a})};
    });
    ir::Graph& g = m.graphs[0];
    g.groups.push_back(ir::FusionGroup{kind});
    for (ir::Node& n : g.nodes) {
      n.group = 0;
      n.role = role;
    }
    return m;
  };
  auto error_of = [](const ir::Module& m) -> std::string {
    try {
      lower_graph(m, m.graphs[0], 2);
    } catch (const InternalError& e) {
      return e.what();
    }
    return "no error";
  };
  // No lowering for the kind at all.
  std::string unknown = error_of(grouped("gather_scatter", ir::fusion::kChain));
  CHECK_THAT(unknown, Catch::Contains("internal compiler error in fusion group 0 ('gather_scatter', 2 nodes"));
  CHECK_THAT(unknown, Catch::Contains("no lowering for fusion groups of kind 'gather_scatter'"));
  // A softmax_xent group that is not the loss pattern.
  std::string xent = error_of(grouped(ir::fusion::kSoftmaxXent, ir::fusion::kLoss));
  CHECK_THAT(xent, Catch::Contains("fusion group 0 ('softmax_xent'"));
  CHECK_THAT(xent, Catch::Contains("took 0 of the group's 2 nodes"));
  // An epilogue group whose first node is not its head.
  std::string headless = error_of(grouped(ir::fusion::epilogue_kind("linear"), ir::fusion::kChain));
  CHECK_THAT(headless, Catch::Contains("does not start with its head"));
}

TEST_CASE("lowering errors name the graph and what is wrong", "[codegen][lower]") {
  ir::TensorType t{ir::DType::f32, {ir::kBatch, 8}};
  ir::Module m = one_graph(t, [](ir::Graph& g, ir::ValueId x) { g.outputs = {add(g, "relu", {x})}; });
  const ir::Graph& g = m.graphs[0];
  CHECK_THROWS_WITH(lower_graph(m, g, 0), Catch::Contains("batch must be >= 1"));
  ir::Module cm = one_graph(ir::TensorType{ir::DType::f32, {ir::kBatch, 8}, ir::Layout::col_major},
                            [](ir::Graph& g2, ir::ValueId x) { g2.outputs = {add(g2, "relu", {x})}; });
  CHECK_THROWS_WITH(lower_graph(cm, cm.graphs[0], 2),
                    Catch::Contains("codegen lowers row_major values and 4-d nhwc activations"));
  // An {nhwc} activation reaches an op without an NHWC lowering: named, not lowered row-major.
  ir::Module nm = one_graph(ir::TensorType{ir::DType::f32, {ir::kBatch, 2, 3, 3}, ir::Layout::nhwc},
                            [](ir::Graph& g2, ir::ValueId x) {
                              g2.outputs = {add(g2, "softmax", {x}, {{"axis", int64_t{1}}})};
                            });
  CHECK_THROWS_WITH(lower_graph(nm, nm.graphs[0], 2), Catch::Contains("op 'softmax' has no lowering for {nhwc} value"));
}

TEST_CASE("every registered op has a cpu lowering", "[codegen][lower]") {
  for (const ir::OpDef* op : ir::all_ops()) {
    INFO(op->name);
    CHECK(has_lowering(op->name));
  }
}

namespace {

ir::Module with_optimizer(const std::string& path, const std::string& kind, const ir::Attrs& attrs) {
  ir::Module m = frontend::compile_file(path);
  m.train.optimizer.kind = kind;
  m.train.optimizer.attrs = attrs;
  passes::compile(m);
  return m;
}

int kernels_named(const Program& p, const std::string& part) {
  int n = 0;
  for (const Step& s : p.steps)
    if (s.kind == Step::Kind::kernel && p.kernels[static_cast<size_t>(s.kernel)].name.find(part) != std::string::npos)
      ++n;
  return n;
}

int fused_updates(const Program& p) {
  int n = 0;
  for (const Step* s : gemms(p)) n += s->gemm.first_step >= 0;
  return n;
}

}  // namespace

TEST_CASE("an SGD-momentum update runs fused in its weight-gradient GEMM", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const ir::Graph& g = *m.graph("train_step");
  Program p = lower_graph(m, g, 16);
  CHECK(fused_updates(p) == 3);
  for (const Step* s : gemms(p)) {
    const GemmCall& c = s->gemm;
    if (c.first_step < 0) continue;
    INFO(s->comment.front());
    CHECK(c.trans_a);
    CHECK(c.beta == 0.9f);
    CHECK(c.alpha == 1.0f);
    CHECK(c.beta_first == 0.0f);
    CHECK(c.alpha_first == 1.0f);
    REQUIRE(c.epilogue >= 0);
    // C is the momentum buffer (in place); the gradient never gets a buffer of its own.
    const Buffer& cb = buf(p, c.c);
    REQUIRE(cb.kind == BufferKind::alias);
    CHECK(buf(p, cb.alias_of).value_name.find("momentum_buffer") != std::string::npos);
    CHECK(buf(p, c.first_step).value_name == "step");
    CHECK(s->comment.size() == 2);
  }
  for (const Buffer& b : p.buffers) CHECK(b.value_name.find("weight.grad") == std::string::npos);
  CHECK(kernels_named(p, "sgd_update") == 3);  // the biases
  CHECK(kernels_named(p, "sgd_step_check") == 1);

  LowerOptions off;
  off.optimizer_in_gemm = false;
  Program q = lower_graph(m, g, 16, off);
  CHECK(fused_updates(q) == 0);
  CHECK(kernels_named(q, "sgd_update") == 6);
  CHECK(kernels_named(q, "sgd_step_check") == 0);
}

TEST_CASE("independent weight-gradient GEMMs are co-scheduled; dependent ones are not", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const ir::Graph& g = *m.graph("train_step");
  Program p = lower_graph(m, g, 128);
  // The three weight-gradient GEMMs (each with its fused SGD update) form one group: consecutive,
  // with_next on all but the last; the bias updates that sat between them come after.
  std::vector<size_t> group;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].with_next || (i > 0 && p.steps[i - 1].with_next)) group.push_back(i);
  REQUIRE(group.size() == 3);
  CHECK(group[1] == group[0] + 1);
  CHECK(group[2] == group[0] + 2);
  CHECK_FALSE(p.steps[group[2]].with_next);
  for (size_t i : group) {
    INFO(p.steps[i].comment.front());
    CHECK(p.steps[i].kind == Step::Kind::gemm);
    CHECK(p.steps[i].gemm.first_step >= 0);  // a weight gradient with its update
    CHECK(p.steps[i].comment.front().find("weight.grad") != std::string::npos);
  }
  for (size_t i = group[2] + 1; i < p.steps.size(); ++i) CHECK(p.steps[i].kind == Step::Kind::kernel);
  CHECK(kernels_named(p, "sgd_update") == 3);
  // The forward GEMMs each read the previous one's output: never grouped.
  for (size_t i = 0; i < group[0]; ++i) CHECK_FALSE(p.steps[i].with_next);
  // Independence is about buffers: a GEMM and a step reading its C are dependent.
  CHECK_FALSE(independent(step_access(p, p.steps[group[0]]), step_access(p, p.steps[group[0]])));
  CHECK(independent(step_access(p, p.steps[group[0]]), step_access(p, p.steps[group[1]])));

  LowerOptions off;
  off.coschedule_gemms = false;
  Program q = lower_graph(m, g, 128, off);
  for (const Step& s : q.steps) CHECK_FALSE(s.with_next);
  CHECK(q.steps.size() == p.steps.size());
  // The infer graph's GEMMs form a chain: nothing to co-schedule.
  Program inf = lower_graph(m, *m.graph("infer"), 128);
  for (const Step& s : inf.steps) CHECK_FALSE(s.with_next);
}

TEST_CASE("SGD variants: decay and dampening fuse, Nesterov, no momentum and Adam do not", "[codegen][lower]") {
  auto fused = [](const ir::Module& m) { return fused_updates(lower_graph(m, *m.graph("train_step"), 8)); };
  const std::string mlp = "models/mnist_mlp.dnn";
  ir::Module damp =
      with_optimizer(mlp, "sgd", {{"lr", 0.1}, {"momentum", 0.5}, {"dampening", 0.25}, {"weight_decay", 0.01}});
  Program p = lower_graph(damp, *damp.graph("train_step"), 8);
  CHECK(fused_updates(p) == 3);
  for (const Step* s : gemms(p))
    if (s->gemm.first_step >= 0) {
      CHECK(s->gemm.alpha == 0.75f);
      CHECK(s->gemm.beta == 0.5f);
      CHECK(s->gemm.alpha_first == 1.0f);
      CHECK(s->gemm.beta_first == 0.0f);
    }
  CHECK(fused(with_optimizer(mlp, "sgd", {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}})) == 0);
  CHECK(fused(with_optimizer(mlp, "sgd", {{"lr", 0.1}})) == 0);
  CHECK(fused(test::compiled_model("models/mnist_mlp_adam.dnn")) == 0);
  CHECK(fused(test::compiled_model("models/lenet5.dnn")) >= 3);  // its fc layers
}

TEST_CASE("bias-gradient sums run in the input-gradient GEMM's epilogue", "[codegen][lower]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const ir::Graph& g = *m.graph("train_step");
  Program p = lower_graph(m, g, 16);
  int sums = 0;
  for (const Step* s : gemms(p)) {
    if (s->gemm.col_sums < 0) continue;
    ++sums;
    CHECK(s->gemm.epilogue >= 0);
    CHECK(buf(p, s->gemm.col_sums).shape == std::vector<int64_t>{s->gemm.n});
    CHECK(buf(p, s->gemm.col_sums).value_name.find("bias.grad") != std::string::npos);
  }
  CHECK(sums == 2);                            // fc2.bias.grad, fc1.bias.grad
  CHECK(kernels_named(p, "reduce_sum") == 0);  // fc3.bias.grad is summed in the softmax_xent kernel
  LowerOptions off;
  off.bias_grad_in_gemm = false;
  Program q = lower_graph(m, g, 16, off);
  for (const Step* s : gemms(q)) CHECK(s->gemm.col_sums < 0);
  CHECK(kernels_named(q, "reduce_sum") == 2);
}

TEST_CASE("the softmax_xent group is one kernel: loss, dloss, dlogits and the bias gradient", "[codegen][lower]") {
  for (const char* model : {"models/mnist_mlp.dnn", "models/cifar_cnn.dnn"}) {
    INFO(model);
    ir::Module m = test::compiled_model(model);
    Program p = lower_graph(m, *m.graph("train_step"), 8);
    CHECK(kernels_named(p, "softmax_xent") == 1);
    CHECK(kernels_named(p, "cross_entropy") == 0);
    CHECK(kernels_named(p, "fill") == 0);
    for (const Step& s : p.steps)
      if (s.kind == Step::Kind::kernel &&
          p.kernels[static_cast<size_t>(s.kernel)].name.find("softmax_xent") != std::string::npos) {
        CHECK(s.comment.size() == 4);  // cross_entropy, fill, cross_entropy_backward, reduce_sum
        CHECK(p.kernels[static_cast<size_t>(s.kernel)].errors.size() == 1);
      }
  }
}
