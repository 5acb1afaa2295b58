// plan-memory (codegen/lower/plan_memory.h): every lowered program of every model gets a sound
// arena near the max-live lower bound, and the arena checker of verify_program rejects a plan
// where two live buffers overlap.
#include "codegen/lower/plan_memory.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "codegen/kir/kir_verifier.h"
#include "codegen/lower/lower.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;

namespace {

std::vector<std::string> all_models() {
  std::vector<std::string> out;
  for (const char* dir : {"models", "tests/cpu/models"})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".dnn") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Buffer id of the arena buffer holding IR value `name`.
int buffer_of(const Program& p, const std::string& name) {
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].value_name == name && in_arena(p.buffers[i])) return static_cast<int>(i);
  FAIL("no arena buffer for %" << name);
  return -1;
}

}  // namespace

TEST_CASE("every program of every model has a sound arena within 1.25x of max-live", "[plan-memory]") {
  for (const std::string& file : all_models()) {
    ir::Module m = test::compiled_model(file);
    for (const LowerOptions& options : {LowerOptions{}, cuda_lower_options()})
      for (const ir::Graph& g : m.graphs)
        for (int64_t batch : {int64_t{1}, int64_t{5}}) {
          INFO(file << " " << g.name << " at batch " << batch);
          Program p = lower_graph(m, g, batch, options);  // verify_program checks the arena
          REQUIRE(p.arena.planned);
          CHECK(p.arena.bytes >= p.arena.max_live_bytes);
          CHECK(static_cast<double>(p.arena.bytes) <= 1.25 * static_cast<double>(p.arena.max_live_bytes));
          CHECK(p.arena.bytes <= p.arena.naive_bytes);
          for (const Buffer& b : p.buffers) {
            INFO(b.name);
            CHECK((b.offset >= 0) == in_arena(b));
          }
        }
  }
}

TEST_CASE("plan-memory reuses the storage of dead buffers", "[plan-memory]") {
  ir::Module m = test::compiled_model("models/lenet5.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 64);
  CHECK(static_cast<double>(p.arena.bytes) < 0.5 * static_cast<double>(p.arena.naive_bytes));
  // Scratch (im2col columns) is planned with the values.
  int scratch = 0;
  for (const Buffer& b : p.buffers) scratch += b.kind == BufferKind::scratch && b.offset >= 0;
  CHECK(scratch > 0);
}

TEST_CASE("the arena checker rejects two live buffers that overlap", "[plan-memory]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  Program p = lower_graph(m, *m.graph("train_step"), 8);
  REQUIRE_NOTHROW(verify_program(p));
  // %h1 and %h2 are both live from the forward into the backward.
  Program broken = p;
  broken.buffers[static_cast<size_t>(buffer_of(broken, "h2"))].offset =
      broken.buffers[static_cast<size_t>(buffer_of(broken, "h1"))].offset;
  CHECK_THROWS_WITH(verify_program(broken), Catch::Contains("arena buffers v_h1 [") &&
                                                Catch::Contains("overlap while both are live"));
  // An offset past the arena's end, and one that is not aligned.
  broken = p;
  broken.buffers[static_cast<size_t>(buffer_of(broken, "h1"))].offset = p.arena.bytes;
  CHECK_THROWS_WITH(verify_program(broken), Catch::Contains("is not an aligned place"));
  broken = p;
  broken.buffers[static_cast<size_t>(buffer_of(broken, "loss"))].offset += 4;
  CHECK_THROWS_WITH(verify_program(broken), Catch::Contains("is not an aligned place"));
  // Buffers whose lifetimes do not meet may share bytes: the plan above does.
  const std::vector<BufferLife> life = buffer_lives(p);
  bool shared = false;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    for (size_t j = i + 1; j < p.buffers.size(); ++j)
      shared |= p.buffers[i].offset >= 0 && p.buffers[i].offset == p.buffers[j].offset;
  CHECK(shared);
}
