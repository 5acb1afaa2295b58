// The cpu backend runs codegen's memory plan: one arena per executable, of the size
// `dnnc compile --stats` reports, every intermediate and scratch buffer at its planned offset,
// inputs and params outside it; the checking mode poisons each buffer when its life ends; and a
// plan with two live buffers overlapping is caught, statically and at run time.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "codegen/kir/kir_verifier.h"
#include "cpu_test_util.h"
#include "tests/support/dnnc_stats.h"

using namespace dnnc;

namespace {

std::string run_dnnc(const std::string& args) { return test::run_dnnc_ok(DNNC_EXE, args); }
std::map<std::string, int64_t> stats_arenas(const std::string& out) { return test::stats_arenas(out, "cpu"); }

int buffer_of(const codegen::Program& p, const std::string& name) {
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].value_name == name && codegen::in_arena(p.buffers[i])) return static_cast<int>(i);
  FAIL("no arena buffer for %" << name);
  return -1;
}

constexpr int64_t kBatch = 6;  // the batch of models_test: the same generated code, compiled once

}  // namespace

TEST_CASE("every model's cpu executables allocate the arena --stats reports, each buffer at its offset",
          "[cpu][arena]") {
  for (const auto& e : std::filesystem::directory_iterator("models")) {
    if (e.path().extension() != ".dnn") continue;
    const std::string file = e.path().string();
    INFO(file);
    std::map<std::string, int64_t> stats = stats_arenas(run_dnnc("compile " + file + " --stats --batch 6"));
    ir::Module m = test::compiled_model(file);
    runtime::reference::ParamStore params = runtime::reference::init_params(m, 3);
    runtime::cpu::CpuBackend backend(test::cpu_test_options());
    std::mt19937 rng(1);
    for (const char* graph : {"train_step", "infer"}) {
      INFO(graph);
      REQUIRE(stats.count(graph));
      auto exe = backend.compile(m, graph, params, kBatch);
      exe->run(test::random_inputs(*m.graph(graph), kBatch, rng));
      CHECK(exe->arena_bytes() == stats[graph]);
      const runtime::cpu::ArenaView arena = runtime::cpu::arena_of(*exe);
      CHECK(arena.bytes == stats[graph]);
      const codegen::Program& p = *runtime::cpu::program_of(*exe);
      for (size_t b = 0; b < p.buffers.size(); ++b) {
        const codegen::Buffer& buf = p.buffers[b];
        INFO(buf.name);
        const auto* at = static_cast<const std::byte*>(runtime::cpu::buffer_address(*exe, static_cast<int>(b)));
        REQUIRE(at);
        const bool inside = at >= arena.base && at < arena.base + arena.bytes;
        if (codegen::in_arena(buf))
          CHECK(at == arena.base + buf.offset);
        else if (buf.kind != codegen::BufferKind::alias)
          CHECK(!inside);  // inputs and params live outside the arena
      }
    }
  }
}

namespace {
// The checking mode's tick: checks that every buffer dying at the step was filled with 0xFF.
const runtime::Executable* g_exe = nullptr;
std::vector<std::vector<int>> g_dies;
int g_checked = 0, g_unpoisoned = 0;
void check_poisoned(int step) {
  if (step < 0 || step >= static_cast<int>(g_dies.size())) return;
  const codegen::Program& p = *runtime::cpu::program_of(*g_exe);
  for (int b : g_dies[static_cast<size_t>(step)]) {
    const auto* at = static_cast<const unsigned char*>(runtime::cpu::buffer_address(*g_exe, b));
    for (int64_t i = 0; i < p.buffers[static_cast<size_t>(b)].bytes(); ++i) g_unpoisoned += at[i] != 0xFF;
    ++g_checked;
  }
}
}  // namespace

TEST_CASE("the checking mode fills each buffer with NaN when its life ends", "[cpu][arena]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  runtime::reference::ParamStore params = runtime::reference::init_params(m, 3);
  runtime::cpu::CpuBackend backend(test::cpu_test_options());
  auto exe = backend.compile(m, "train_step", params, kBatch);
  const codegen::Program& p = *runtime::cpu::program_of(*exe);
  const std::vector<codegen::BufferLife> life = codegen::buffer_lives(p);
  const std::vector<int> times = codegen::step_times(p);
  g_dies.assign(p.steps.size(), {});
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (size_t b = 0; b < p.buffers.size(); ++b)
      if (codegen::in_arena(p.buffers[b]) && !p.steps[s].with_next && life[b].last == times[s])
        g_dies[s].push_back(static_cast<int>(b));
  g_exe = exe.get();
  g_checked = g_unpoisoned = 0;
  REQUIRE(runtime::cpu::set_profiler(*exe, check_poisoned));
  std::mt19937 rng(2);
  auto out = exe->run(test::random_inputs(*m.graph("train_step"), kBatch, rng));
  runtime::cpu::set_profiler(*exe, nullptr);
  CHECK(g_checked > 5);
  CHECK(g_unpoisoned == 0);
  CHECK(std::isfinite(out.at(0).f32()[0]));  // the loss is untouched: outputs live to the end
}

TEST_CASE("a plan with two live buffers overlapping fails the checker and, run anyway, the results",
          "[cpu][arena]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  const ir::Graph& g = *m.graph("train_step");
  codegen::Program good = codegen::lower_graph(m, g, kBatch);
  codegen::Program broken = good;
  // %h2 over %h1: both are live from the forward into the backward's weight gradients.
  broken.buffers[static_cast<size_t>(buffer_of(broken, "h2"))].offset =
      broken.buffers[static_cast<size_t>(buffer_of(broken, "h1"))].offset;
  CHECK_THROWS_WITH(codegen::verify_program(broken), Catch::Contains("overlap while both are live"));

  auto run_once = [&](codegen::Program p, runtime::reference::ParamStore& params) {
    runtime::cpu::CpuBackend backend(test::cpu_test_options());
    auto exe = backend.compile_program(std::move(p), params);
    std::mt19937 rng(4);
    return exe->run(test::random_inputs(g, kBatch, rng));
  };
  runtime::reference::ParamStore ref = runtime::reference::init_params(m, 5), ok = ref, bad = ref;
  std::mt19937 rng(4);
  auto want = runtime::reference::run_reference(m, g, test::random_inputs(g, kBatch, rng), ref);
  run_once(good, ok);
  run_once(broken, bad);
  double good_err = 0, bad_err = 0;
  for (const auto& [name, t] : ref.tensors) {
    good_err = std::max(good_err, runtime::rel_error(*ok.find(name), t));
    double e = runtime::rel_error(*bad.find(name), t);
    bad_err = std::max(bad_err, std::isnan(e) ? 1e30 : e);
  }
  CHECK(good_err <= 1e-5);
  CHECK(bad_err > 1e-3);
}
