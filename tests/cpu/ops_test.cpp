// Every op family on the cpu backend against the reference interpreter (rel err <= 1e-5), in
// two builds of the same "ops" graph: default lowering, and one where every loop nest and GEMM
// is multi-threaded and every convolution takes the im2col + GEMM path.
#include <memory>
#include <set>

#include "cpu_test_util.h"
#include "ir/op_registry.h"
#include "ops_graph.h"

using namespace dnnc;

namespace {

struct Compiled {
  test::OpsModule ops = test::build_ops_module();
  runtime::reference::ParamStore params;
  std::unique_ptr<runtime::Executable> plain, threaded;
};

// Built once per process; the executables keep references to `params`, so it never moves.
Compiled& compiled() {
  static std::unique_ptr<Compiled> c = [] {
    auto p = std::make_unique<Compiled>();
    Compiled& r = *p;
    runtime::cpu::CpuBackend plain(test::cpu_test_options());
    r.plain = plain.compile(r.ops.module, "ops", r.params, 1);
    runtime::cpu::CpuOptions o = test::cpu_test_options();
    o.lower.parallel_min_work = 1;
    o.lower.gemm_parallel_flops = 1;
    o.lower.direct_conv_max_k = 0;
    o.threads = 2;
    runtime::cpu::CpuBackend threaded(o);
    r.threaded = threaded.compile(r.ops.module, "ops", r.params, 1);
    return p;
  }();
  return *c;
}

void check_family(const std::string& family) {
  Compiled& c = compiled();
  const ir::Graph& g = *c.ops.module.graph("ops");
  REQUIRE(c.ops.family.count(family));
  std::mt19937 rng(17);
  for (float step : {1.0f, 3.0f}) {
    auto inputs = test::random_op_inputs(g, rng, step);
    auto want = runtime::reference::run_reference(c.ops.module, g, inputs, c.params);
    auto got_plain = c.plain->run(inputs);
    auto got_threaded = c.threaded->run(inputs);
    for (const std::string& name : c.ops.family.at(family)) {
      size_t i = 0;
      while (g.value(g.outputs[i]).name != name) ++i;
      test::check_close(got_plain[i], want[i], name + " (step " + std::to_string(step) + ")");
      test::check_close(got_threaded[i], want[i], name + " threaded (step " + std::to_string(step) + ")");
    }
  }
}

}  // namespace

TEST_CASE("cpu ops: activations, scalar arithmetic, fill", "[cpu][ops]") { check_family("elementwise"); }
TEST_CASE("cpu ops: activation backward maps", "[cpu][ops]") { check_family("elementwise_backward"); }
TEST_CASE("cpu ops: add/sub/mul/div with broadcasting", "[cpu][ops]") { check_family("broadcast"); }
TEST_CASE("cpu ops: dropout", "[cpu][ops]") { check_family("dropout"); }
TEST_CASE("cpu ops: flatten, reshape, transpose", "[cpu][ops]") { check_family("shape"); }
TEST_CASE("cpu ops: reduce_sum", "[cpu][ops]") { check_family("reduce"); }
TEST_CASE("cpu ops: softmax family", "[cpu][ops]") { check_family("softmax"); }
TEST_CASE("cpu ops: cross_entropy and mse_loss", "[cpu][ops]") { check_family("loss"); }
TEST_CASE("cpu ops: linear and matmul", "[cpu][ops]") { check_family("gemm"); }
TEST_CASE("cpu ops: conv2d", "[cpu][ops]") { check_family("conv"); }
TEST_CASE("cpu ops: conv2d backward", "[cpu][ops]") { check_family("conv_backward"); }
TEST_CASE("cpu ops: pooling", "[cpu][ops]") { check_family("pool"); }
TEST_CASE("cpu ops: batchnorm and layernorm", "[cpu][ops]") { check_family("norm"); }
TEST_CASE("cpu ops: optimizer updates", "[cpu][ops]") { check_family("optim"); }

TEST_CASE("the ops graph covers every registered op", "[cpu][ops]") {
  const ir::Graph& g = *compiled().ops.module.graph("ops");
  std::set<std::string> used;
  for (const ir::Node& n : g.nodes) used.insert(n.op);
  for (const ir::OpDef* op : ir::all_ops()) {
    INFO(op->name);
    CHECK(used.count(op->name));
  }
}
