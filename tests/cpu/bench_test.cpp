// Per-step timings of train_step, cpu backend vs reference interpreter (hidden; run with
// `build/tests/cpu/cpu_tests "[bench]"`). Prints milliseconds per step; checks nothing but that
// both ran.
#include <chrono>
#include <cstdio>

#include "cpu_test_util.h"

using namespace dnnc;

namespace {

double ms_per_step(runtime::Executable& exe, const std::map<std::string, runtime::Tensor>& in, int steps) {
  exe.run(in);  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) exe.run(in);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
}

void bench(const std::string& model, int64_t batch, int steps) {
  ir::Module m = test::compiled_model("models/" + model + ".dnn");
  runtime::reference::ParamStore cpu_params = runtime::reference::init_params(m, 1), ref_params = cpu_params;
  std::mt19937 rng(1);
  auto in = test::random_inputs(*m.graph("train_step"), batch, rng);
  runtime::cpu::CpuBackend cpu(test::cpu_test_options());
  runtime::cpu::CpuOptions one_thread = test::cpu_test_options();
  one_thread.threads = 1;
  runtime::cpu::CpuBackend cpu1(one_thread);
  auto c = cpu.compile(m, "train_step", cpu_params, batch);
  auto c1 = cpu1.compile(m, "train_step", cpu_params, batch);
  auto r = runtime::make_reference_backend()->compile(m, "train_step", ref_params, batch);
  double tc = ms_per_step(*c, in, steps);
  double t1 = ms_per_step(*c1, in, steps);
  double tr = ms_per_step(*r, in, std::max(1, steps / 10));
  std::printf(
      "%s train_step batch %lld: cpu %.3f ms/step (%d threads), %.3f ms/step (1 thread), reference %.3f ms/step\n",
      model.c_str(), static_cast<long long>(batch), tc, cpu.threads(), t1, tr);
  CHECK(tc > 0);
}

}  // namespace

TEST_CASE("train_step timings, cpu vs reference", "[.][bench]") {
  bench("mnist_mlp", 128, 50);
  bench("cifar_cnn", 4, 200);
  bench("lenet5", 64, 50);
  bench("cifar_strided", 32, 20);
}
