// Every generated CUDA kernel of every model in models/ (train_step and infer, at the train
// block's batch and at batch 1) compiles with NVRTC for sm_80 and sm_90, all kernels of a graph
// in one program; ptxas's report shows a register count and no spills for each kernel; launch
// configurations are valid. Needs the CUDA toolkit, not a driver or a GPU.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "cuda_test_util.h"
#include "ops_graph.h"
#include "runtime/cuda/nvrtc_compile.h"

using namespace dnnc;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> models() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator("models"))
    if (e.path().extension() == ".dnn") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  out.push_back("tests/cpu/models/mlp_acts.dnn");  // GEMM epilogues and column sums of every kind
  out.push_back("tests/cpu/models/recipe_features.dnn");  // concat, slice, scheduled lr, clipping
  return out;
}

void check_launch(const codegen::CudaKernel& k) {
  INFO("kernel " << k.name << " (" << codegen::cuda_mapping_name(k.mapping) << ")");
  CHECK(k.launch.block > 0);
  CHECK(k.launch.block <= 1024);
  CHECK(k.launch.block % 32 == 0);
  CHECK(k.launch.grid > 0);
  CHECK(k.launch.grid <= codegen::kCudaMaxGrid);
  CHECK(k.launch.shared_bytes <= 48 * 1024);
  if (k.mapping == codegen::CudaMapping::block) CHECK(k.launch.grid == 1);
}

// Compiles `cp` (one program) with NVRTC for sm_80 and sm_90 and checks every kernel's launch
// config and ptxas report; prints one table row per arch.
void check_program(const codegen::CudaProgram& cp, const std::string& model, const std::string& graph, int64_t batch) {
  for (const auto& k : cp.kernels) check_launch(k);
  for (const char* arch : {"sm_80", "sm_90"}) {
    std::string label = fmt::format("{}.{}.b{}", model, graph, batch);
    INFO(label << " for " << arch);
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(cp.source, label, arch, {"--ptxas-options=-v"});
    CHECK(out.cubin);
    CHECK(!out.image.empty());
    std::map<std::string, runtime::cuda::PtxasKernelStats> stats;
    for (const auto& s : runtime::cuda::parse_ptxas_log(out.log)) stats[s.kernel] = s;
    int max_regs = 0, spills = 0;
    for (const auto& k : cp.kernels) {
      INFO("kernel " << k.name << "; ptxas log:\n" << out.log);
      REQUIRE(stats.count(k.name) == 1);
      const auto& s = stats[k.name];
      CHECK(s.registers > 0);
      CHECK(s.registers <= 255);
      CHECK(s.spill_stores == 0);
      CHECK(s.spill_loads == 0);
      CHECK(s.shared == k.launch.shared_bytes);
      max_regs = std::max(max_regs, s.registers);
      spills += s.spill_stores + s.spill_loads;
    }
    std::cout << fmt::format("{:<16} {:<10} {:>5} {:<6} {:>7} {:>8} {:>7} {:>7.0f}ms\n", model, graph, batch, arch,
                             cp.kernels.size(), max_regs, spills, out.seconds * 1e3);
  }
}

void print_header() {
  std::cout << fmt::format("{:<16} {:<10} {:>5} {:<6} {:>7} {:>8} {:>7} {:>8}\n", "model", "graph", "batch", "arch",
                           "kernels", "max regs", "spills", "compile");
}

}  // namespace

TEST_CASE("every model's CUDA kernels compile with NVRTC for sm_80 and sm_90 without spills", "[cuda][nvrtc]") {
  std::vector<fs::path> ms = models();
  REQUIRE(ms.size() >= 5);
  print_header();
  // Each model in NCHW and with every region forced to NHWC (the cuda cost model picks one or
  // the other per region).
  for (const fs::path& path : ms)
    for (const char* variant : {"nchw", "nhwc"}) {
      ir::Module m = frontend::compile_file(path.string());
      passes::compile(m, {.target = &passes::cuda_target(), .layout = passes::parse_layout_choice(variant)});
      int64_t train_batch = m.train.batch > 0 ? m.train.batch : 1;
      for (const char* graph : {"train_step", "infer"}) {
        if (!m.graph(graph)) continue;
        std::vector<int64_t> batches = {train_batch};
        if (train_batch != 1) batches.push_back(1);
        for (int64_t batch : batches)
          check_program(codegen::print_program_cuda(test::cuda_lower(m, graph, batch)), m.name + " (" + variant + ")",
                        graph, batch);
      }
    }
}

// The ops graph of the cpu op tests (tests/cpu/ops_graph.h): a small case of every registered op
// (norms, dropout, softmax, losses, every pooling, Adam, ...), as the cuda backend lowers it.
TEST_CASE("every op's CUDA kernels compile with NVRTC for sm_80 and sm_90 without spills", "[cuda][nvrtc]") {
  test::OpsModule ops = test::build_ops_module();
  codegen::Program p = codegen::lower_graph(ops.module, *ops.module.graph("ops"), 1, codegen::cuda_lower_options());
  codegen::CudaProgram cp = codegen::print_program_cuda(p);
  CHECK(cp.kernels.size() >= 40);
  print_header();
  check_program(cp, ops.module.name, "ops", 1);
}

TEST_CASE("an NVRTC compile error carries the compiler's log and the options", "[cuda][nvrtc]") {
  std::string bad = "extern \"C\" __global__ void k_broken(float* x) { x[0] = no_such_value; }\n";
  try {
    runtime::cuda::nvrtc_compile(bad, "broken_kernel", "sm_80");
    FAIL("a broken kernel compiled");
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("broken_kernel") != std::string::npos);
    CHECK(msg.find("no_such_value") != std::string::npos);  // from NVRTC's log
    CHECK(msg.find("identifier") != std::string::npos);
    CHECK(msg.find("-arch=sm_80") != std::string::npos);
  }
}

TEST_CASE("ptxas reports are parsed per kernel", "[cuda][nvrtc]") {
  std::string log =
      "ptxas info    : Compiling entry function 'k0_relu' for 'sm_80'\n"
      "ptxas info    : Function properties for k0_relu\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 24 registers, used 1 barriers, 256 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k1_x' for 'sm_80'\n";
  auto s = runtime::cuda::parse_ptxas_log(log);
  REQUIRE(s.size() == 2);
  CHECK(s[0].kernel == "k0_relu");
  CHECK(s[0].registers == 24);
  CHECK(s[0].spill_stores == 4);
  CHECK(s[0].spill_loads == 12);
  CHECK(s[0].stack_frame == 8);
  CHECK(s[0].shared == 256);
  CHECK(s[1].registers == -1);
}

TEST_CASE("NVRTC targets sm_80 and sm_90", "[cuda][nvrtc]") {
  auto archs = runtime::cuda::nvrtc_supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(!runtime::cuda::nvrtc_version().empty());
}
