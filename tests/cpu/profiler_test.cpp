// The generated code's per-step hook (dnnc_set_profiler, cpu::set_profiler): fires -1 on entry
// and then once after every program step, in order; off again after resetting it to null.
#include <vector>

#include "cpu_test_util.h"

using namespace dnnc;

namespace {

std::vector<int> g_ticks;
void record(int step) { g_ticks.push_back(step); }

}  // namespace

TEST_CASE("cpu profiler hook fires once per program step", "[cpu][profiler]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  runtime::reference::ParamStore params = runtime::reference::init_params(m, 1);
  std::mt19937 rng(3);
  auto in = test::random_inputs(*m.graph("train_step"), 4, rng);
  runtime::cpu::CpuBackend cpu(test::cpu_test_options());
  auto exe = cpu.compile(m, "train_step", params, 4);
  const codegen::Program* prog = runtime::cpu::program_of(*exe);
  REQUIRE(prog);
  REQUIRE(prog->steps.size() > 3);

  g_ticks.clear();
  exe->run(in);
  CHECK(g_ticks.empty());  // no hook by default

  REQUIRE(runtime::cpu::set_profiler(*exe, record));
  for (int r = 0; r < 2; ++r) {
    g_ticks.clear();
    exe->run(in);
    REQUIRE(g_ticks.size() == prog->steps.size() + 1);
    for (size_t i = 0; i < g_ticks.size(); ++i) CHECK(g_ticks[i] == static_cast<int>(i) - 1);
  }

  runtime::cpu::set_profiler(*exe, nullptr);
  g_ticks.clear();
  exe->run(in);
  CHECK(g_ticks.empty());

  auto ref = runtime::make_reference_backend()->compile(m, "train_step", params, 4);
  CHECK_FALSE(runtime::cpu::set_profiler(*ref, record));
  CHECK(runtime::cpu::program_of(*ref) == nullptr);
}
