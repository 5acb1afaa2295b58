// fuse + schedule + plan-memory on every model: launch targets, and the checker proves that no
// two simultaneously live buffers overlap (and can fail).
#include <catch2/catch.hpp>

#include <filesystem>

#include "pass_test_util.h"
#include "passes/graph_analysis.h"
#include "passes/memory_check.h"

using namespace dnnc;

namespace {
ir::Module optimized(const std::string& file, int64_t batch = 0) {
  ir::Module m = frontend::compile_file(file);
  if (batch > 0) m.train.batch = batch;
  test::run_passes(m);
  return m;
}
}  // namespace

TEST_CASE("every graph of every model has a sound memory plan", "[plan-memory]") {
  for (const auto& e : std::filesystem::directory_iterator("models")) {
    if (e.path().extension() != ".dnn") continue;
    ir::Module m = optimized(e.path().string());
    for (const auto& g : m.graphs) {
      INFO(e.path().string() << " graph " << g.name);
      REQUIRE(g.memory);
      CHECK(passes::check_memory_plan(g) == "");
      CHECK(g.memory->arena_bytes >= g.memory->lower_bound_bytes);
    }
  }
}

TEST_CASE("the checker rejects a plan where two live buffers overlap", "[plan-memory]") {
  ir::Module m = optimized("models/mnist_mlp.dnn");
  ir::Graph g = *m.graph("train_step");
  REQUIRE(passes::check_memory_plan(g) == "");
  // Put the loss on top of the logits: both live until the end.
  int64_t logits_offset = -1;
  for (auto& s : g.memory->slots)
    if (g.value(s.value).name == "logits") logits_offset = s.offset;
  REQUIRE(logits_offset >= 0);
  for (auto& s : g.memory->slots)
    if (g.value(s.value).name == "loss") s.offset = logits_offset;
  CHECK_THAT(passes::check_memory_plan(g), Catch::Contains("overlap"));
}

TEST_CASE("seed models meet the kernel-count and arena targets", "[fuse][plan-memory]") {
  struct Target {
    const char* file;
    int64_t batch;
    int max_kernels;
  };
  for (Target t : {Target{"models/mnist_mlp.dnn", 128, 12}, Target{"models/cifar_cnn.dnn", 4, 10},
                   Target{"models/cifar_cnn.dnn", 128, 10}}) {
    ir::Module m = optimized(t.file, t.batch);
    const ir::Graph& g = *m.graph("train_step");
    INFO(t.file << " at batch " << t.batch);
    CHECK(passes::kernel_count(g) <= t.max_kernels);
    for (const auto& n : g.nodes) CHECK(n.op != "transpose");  // no standalone transpose kernels
    const ir::MemoryPlan& p = *g.memory;
    CHECK(p.batch == t.batch);
    CHECK(static_cast<double>(p.arena_bytes) <= 1.15 * static_cast<double>(p.lower_bound_bytes));
    CHECK(static_cast<double>(p.arena_bytes) <= 0.5 * static_cast<double>(p.naive_bytes));
  }
}
