// The cuda backend's device layout (codegen/cuda/cuda_layout.h), checked without a GPU: for every
// model the activation arena is exactly the size `dnnc compile --stats --target=cuda` reports,
// every intermediate and scratch buffer sits at the arena's start plus its planned offset, and no
// two regions of the allocation overlap. The emulator runs every program in this layout.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

#include "codegen/cuda/cuda_layout.h"
#include "codegen/lower/lower.h"
#include "cpu_test_util.h"
#include "tests/support/dnnc_stats.h"
#include "emu_program.h"

using namespace dnnc;

namespace {

std::string run_dnnc(const std::string& args) { return test::run_dnnc_ok(DNNC_EXE, args); }
std::map<std::string, int64_t> stats_arenas(const std::string& out) { return test::stats_arenas(out, "cuda"); }

}  // namespace

TEST_CASE("the cuda layout holds plan-memory's arena as --stats reports it, and no regions overlap",
          "[cuda_emu][arena]") {
  for (const auto& e : std::filesystem::directory_iterator("models")) {
    if (e.path().extension() != ".dnn") continue;
    const std::string file = e.path().string();
    INFO(file);
    std::map<std::string, int64_t> stats = stats_arenas(run_dnnc("compile " + file + " --stats --target=cuda --batch 3"));
    ir::Module m = test::compiled_model(file, "cuda");  // select-layout for the cuda target, as --stats
    for (const char* graph : {"train_step", "infer"}) {
      INFO(graph);
      codegen::Program p = codegen::lower_graph(m, *m.graph(graph), 3, codegen::cuda_lower_options());
      codegen::CudaProgram cp = codegen::print_program_cuda(p);
      const int64_t workspace = 1 << 20, ring = 4096;
      codegen::CudaDeviceLayout l = codegen::cuda_device_layout(p, cp, workspace, ring);
      REQUIRE(stats.count(graph));
      CHECK(l.arena_bytes == stats[graph]);
      CHECK(l.arena_bytes == p.arena.bytes);
      std::vector<std::pair<int64_t, int64_t>> regions = {{l.arena_offset, l.arena_offset + l.arena_bytes},
                                                          {l.err, l.err + 4},
                                                          {l.counter, l.counter + 8},
                                                          {l.ring, l.ring + 4 * ring},
                                                          {l.workspace, l.workspace + workspace}};
      for (size_t i = 0; i < cp.relu_masks.size(); ++i) regions.push_back({l.masks[i], l.masks[i] + cp.relu_masks[i].bytes()});
      for (const codegen::CudaDeviceLayout::Update& u : l.updates)
        if (u.snapshot >= 0) regions.push_back({u.snapshot, u.snapshot + 1});
      for (size_t b = 0; b < p.buffers.size(); ++b) {
        const codegen::Buffer& buf = p.buffers[b];
        INFO(buf.name);
        if (codegen::in_arena(buf)) {
          CHECK(l.buffer[b] == l.arena_offset + buf.offset);
        } else if (buf.kind != codegen::BufferKind::alias) {
          CHECK((l.buffer[b] + buf.bytes() <= l.arena_offset || l.buffer[b] >= l.arena_offset + l.arena_bytes));
          regions.push_back({l.buffer[b], l.buffer[b] + buf.bytes()});
        }
      }
      std::sort(regions.begin(), regions.end());
      for (size_t i = 0; i < regions.size(); ++i) {
        CHECK(regions[i].first % codegen::kArenaAlign == 0);
        CHECK(regions[i].second <= l.bytes);
        if (i > 0) CHECK(regions[i - 1].second <= regions[i].first);
      }
    }
  }
}

TEST_CASE("the emulator runs a program in the cuda layout", "[cuda_emu][arena]") {
  ir::Module m = test::compiled_model("models/cifar_cnn.dnn");
  test::EmuProgram emu(codegen::lower_graph(m, *m.graph("infer"), 3, codegen::cuda_lower_options()),
                       DNNC_EMU_CACHE_DIR);
  for (size_t b = 0; b < emu.layout().buffer.size(); ++b)
    CHECK(emu.address(static_cast<int>(b)) == emu.block() + emu.layout().buffer[b]);
}
