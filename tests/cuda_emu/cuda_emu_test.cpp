// The CUDA C that the printer generates, run on the CPU by the emulator (cuda_emu.h), against
// the reference interpreter: every model's train steps and inference, and every op. This runs
// the printer's thread mappings, warp and block reductions, float4 paths, error flags and GEMM
// helper kernels without a GPU. What it cannot show: timing, real memory ordering, NVRTC's code
// (the emulator compiles the same source with the host compiler), cuBLASLt's own behaviour.
#include <functional>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "codegen/lower/lower.h"
#include "cpu_test_util.h"
#include "emu_program.h"
#include "ops_graph.h"

using namespace dnnc;

namespace {

// Sums run in other orders than the reference's (warp and block trees, cuBLASLt's view): float
// rounding, not bits.
constexpr double kTol = 2e-5;

using codegen::CudaLtAct;
using Refused = std::set<CudaLtAct>;
// The emulated cuBLASLt has every activation epilogue, or none (as DNNC_CUBLASLT_EPILOGUES=off).
const Refused kAll{};
const Refused kNone{CudaLtAct::relu, CudaLtAct::relu_aux, CudaLtAct::drelu, CudaLtAct::drelu_bgrad};

test::EmuProgram emu(const ir::Module& m, const std::string& graph, int64_t batch, const Refused& refused = kAll,
                     bool reverse = false) {
  return test::EmuProgram(codegen::lower_graph(m, *m.graph(graph), batch, codegen::cuda_lower_options()),
                          DNNC_EMU_CACHE_DIR, refused, reverse);
}

int count(const std::vector<CudaLtAct>& taken, CudaLtAct a) {
  return static_cast<int>(std::count(taken.begin(), taken.end(), a));
}

void check_model(const std::string& path, int64_t batch, int steps = 2, const Refused& refused = kAll,
                 bool reverse = false, passes::LayoutChoice layout = passes::LayoutChoice::automatic,
                 const std::function<void(ir::Module&)>& edit = {}) {
  ir::Module m = frontend::compile_file(path);
  if (edit) edit(m);  // the recipe, before the passes
  passes::compile(m, {.target = &passes::find_target(layout == passes::LayoutChoice::automatic ? "cpu" : "cuda"),
                      .layout = layout});
  if (layout == passes::LayoutChoice::nhwc) {  // the program under test runs channels-last values
    int nhwc = 0;
    for (const ir::Value& v : m.graph("train_step")->values) nhwc += v.type.layout == ir::Layout::nhwc;
    REQUIRE(nhwc > 0);
  }
  runtime::reference::ParamStore ref = runtime::reference::init_params(m, 11);
  runtime::reference::ParamStore dev = ref;
  test::EmuProgram train = emu(m, "train_step", batch, refused, reverse);
  std::mt19937 rng(5);
  const ir::Graph& g = *m.graph("train_step");
  for (int step = 1; step <= steps; ++step) {
    auto inputs = test::random_inputs(g, batch, rng);
    auto want = runtime::reference::run_reference(m, g, inputs, ref);
    auto got = train.run(inputs, dev);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      test::check_close(got[i], want[i], fmt::format("{} step {} output {}", m.name, step, i), kTol);
    for (const auto& [name, t] : ref.tensors) {
      const runtime::Tensor* d = dev.find(name);
      REQUIRE(d);
      test::check_close(*d, t, fmt::format("{} step {} param {}", m.name, step, name), kTol);
    }
  }
  test::EmuProgram infer = emu(m, "infer", batch, refused, reverse);
  const ir::Graph& ig = *m.graph("infer");
  auto inputs = test::random_inputs(ig, batch, rng);
  auto want = runtime::reference::run_reference(m, ig, inputs, ref);
  auto got = infer.run(inputs, dev);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    test::check_close(got[i], want[i], fmt::format("{} infer output {}", m.name, i), kTol);
}

// Each model with the threads of a block scheduled lowest first and highest first.
void check_both_orders(const std::string& path, int64_t batch) {
  for (bool reverse : {false, true}) {
    INFO((reverse ? "highest thread first" : "lowest thread first"));
    check_model(path, batch, 2, kAll, reverse);
  }
}

}  // namespace

// select-layout's NHWC on the cuda target: the channels-last convolutions (im2col + one GEMM
// over the batch's pixels, col2im), pools, batchnorm and layout conversions as CUDA kernels.
TEST_CASE("emulated cuda equals reference in NHWC", "[cuda_emu][layout]") {
  for (const char* path : {"models/cifar_cnn.dnn", "models/lenet5.dnn", "tests/cpu/models/nhwc_shapes.dnn"}) {
    INFO(path);
    check_model(path, 2, 2, kAll, false, passes::LayoutChoice::nhwc);
  }
  // Batch 3: at batch 2 a relu decision within rounding of 0 flips between the reference's and
  // the GEMMs' summation orders (in NCHW as well), which moves batchnorm's gradients by ~1%.
  check_model("models/vgg_cifar.dnn", 3, 1, kAll, false, passes::LayoutChoice::nhwc);
}

TEST_CASE("emulated cuda equals reference: mnist_mlp", "[cuda_emu]") { check_both_orders("models/mnist_mlp.dnn", 3); }
TEST_CASE("emulated cuda equals reference: mnist_mlp_adam", "[cuda_emu]") {
  check_both_orders("models/mnist_mlp_adam.dnn", 3);
}
// The scheduled lr (the train_step input dnnc.lr) read by Adam with weight decay and by
// momentum SGD (fused into the weight-gradient GEMM's epilogue).
TEST_CASE("emulated cuda equals reference with a scheduled lr", "[cuda_emu][schedule]") {
  check_model("models/mnist_mlp_adam.dnn", 3, 2, kAll, false, passes::LayoutChoice::automatic, [](ir::Module& m) {
    m.train.schedule = {"step", {{"step_size", int64_t{1}}}};
    m.train.optimizer.attrs["weight_decay"] = 0.01;
  });
  check_model("models/mnist_mlp.dnn", 3, 2, kAll, false, passes::LayoutChoice::automatic,
              [](ir::Module& m) { m.train.schedule = {"cosine", {}}; });
}
TEST_CASE("emulated cuda equals reference: concat, label smoothing, schedule, clipping; batchnorm1d",
          "[cuda_emu]") {
  check_model("tests/cpu/models/recipe_features.dnn", 3);
  check_model("tests/golden/mlp_batchnorm1d.dnn", 4);
}
TEST_CASE("emulated cuda equals reference with gradient clipping", "[cuda_emu]") {
  check_model("models/lenet5.dnn", 3, 2, kAll, false, passes::LayoutChoice::automatic,
              [](ir::Module& m) { m.train.clip_grad_norm = 0.05; });
}
TEST_CASE("emulated cuda equals reference: lenet5", "[cuda_emu]") { check_both_orders("models/lenet5.dnn", 2); }
TEST_CASE("emulated cuda equals reference: cifar_cnn", "[cuda_emu]") { check_both_orders("models/cifar_cnn.dnn", 4); }
TEST_CASE("emulated cuda equals reference: cifar_strided", "[cuda_emu]") {
  check_both_orders("models/cifar_strided.dnn", 3);
}
TEST_CASE("emulated cuda equals reference: GEMM epilogues and column sums", "[cuda_emu]") {
  check_both_orders("tests/cpu/models/mlp_acts.dnn", 5);
}
TEST_CASE("emulated cuda equals reference: fused conv/pool kernels on awkward shapes", "[cuda_emu]") {
  check_both_orders("tests/cpu/models/conv_pool_shapes.dnn", 3);
}

// The activation epilogues and every fallback the backend can end up with: all taken (RELU_AUX
// masks read by DRELU_BGRAD), none (the generated kernels), no BGRAD (DRELU + the column-sum
// kernel), no RELU_AUX (plain RELU, and the DRELU that would read its mask falls back to the
// kernels), relu only.
TEST_CASE("emulated cuda equals reference with each set of cuBLASLt epilogues", "[cuda_emu][epilogue]") {
  ir::Module m = test::compiled_model("models/mnist_mlp.dnn");
  struct Case {
    const char* what;
    Refused refused;
    int relu_aux, relu, drelu_bgrad, drelu;
  };
  for (const Case& c :
       {Case{"all", kAll, 2, 0, 2, 0}, Case{"none", kNone, 0, 0, 0, 0},
        Case{"no bgrad", {CudaLtAct::drelu_bgrad}, 2, 0, 0, 2}, Case{"no aux", {CudaLtAct::relu_aux}, 0, 2, 0, 0},
        Case{"relu only", {CudaLtAct::relu_aux, CudaLtAct::drelu, CudaLtAct::drelu_bgrad}, 0, 2, 0, 0}}) {
    INFO("cuBLASLt epilogues: " << c.what);
    test::EmuProgram e = emu(m, "train_step", 4, c.refused);
    CHECK(count(e.taken(), CudaLtAct::relu_aux) == c.relu_aux);
    CHECK(count(e.taken(), CudaLtAct::relu) == c.relu);
    CHECK(count(e.taken(), CudaLtAct::drelu_bgrad) == c.drelu_bgrad);
    CHECK(count(e.taken(), CudaLtAct::drelu) == c.drelu);
    check_model("models/mnist_mlp.dnn", 4, 2, c.refused);
    check_model("tests/cpu/models/mlp_acts.dnn", 3, 2, c.refused);
  }
}

TEST_CASE("emulated cuda ops: every op equals the reference", "[cuda_emu]") {
  test::OpsModule ops = test::build_ops_module();
  const ir::Graph& g = *ops.module.graph("ops");
  runtime::reference::ParamStore params;
  test::EmuProgram exe = emu(ops.module, "ops", 1);
  test::EmuProgram reversed = emu(ops.module, "ops", 1, kAll, true);
  std::mt19937 rng(17);
  for (float step : {1.0f, 3.0f}) {
    auto inputs = test::random_op_inputs(g, rng, step);
    auto want = runtime::reference::run_reference(ops.module, g, inputs, params);
    auto got = exe.run(inputs, params);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      test::check_close(got[i], want[i], fmt::format("{} (step {})", g.value(g.outputs[i]).name, step), kTol);
    auto got_r = reversed.run(inputs, params);
    for (size_t i = 0; i < got_r.size(); ++i)
      test::check_close(got_r[i], want[i],
                        fmt::format("{} (step {}, highest thread first)", g.value(g.outputs[i]).name, step), kTol);
  }
}

// ---- the emulator itself -----------------------------------------------------------------------

namespace {

using LaunchFn = const char* (*)(void (*)(void**), void**, unsigned, unsigned);

// Compiles `kernel_source` (kernels plus extern "C" void call(void** a) wrappers) and launches
// wrapper `call` on grid x block; returns the emulator's error ("" if none).
std::string run_snippet(const std::string& kernel_source, unsigned grid, unsigned block, void** args) {
  std::string so = test::compile_for_emulator(kernel_source, DNNC_EMU_CACHE_DIR);
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  auto launch = reinterpret_cast<LaunchFn>(dlsym(lib, "dnnc_emu_launch"));
  auto call = reinterpret_cast<void (*)(void**)>(dlsym(lib, "call"));
  REQUIRE(launch);
  REQUIRE(call);
  const char* e = launch(call, args, grid, block);
  return e ? e : "";
}

}  // namespace

TEST_CASE("the emulator runs warp shuffles and block barriers as a GPU would", "[cuda_emu]") {
  // Each block sums its 128 thread ids with shuffles and shared memory; thread 0 stores it.
  std::string src = R"(
__global__ void k(int* out) {
  __shared__ int part[4];
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = part[0] + part[1] + part[2] + part[3];
}
extern "C" __attribute__((visibility("default"))) void call(void** a) { k((int*)a[0]); }
)";
  std::vector<int> out(3, -1);
  void* args[] = {out.data()};
  CHECK(run_snippet(src, 3, 128, args).empty());
  for (int b = 0; b < 3; ++b) CHECK(out[static_cast<size_t>(b)] == (128 * b) * 128 + 127 * 128 / 2);
}

TEST_CASE("the emulator reports a warp split between __syncwarp and __syncthreads", "[cuda_emu]") {
  std::string src = R"(
__global__ void k(int* out) {
  if (threadIdx.x < 16) __syncwarp(); else __syncthreads();
  out[threadIdx.x] = 1;
}
extern "C" __attribute__((visibility("default"))) void call(void** a) { k((int*)a[0]); }
)";
  std::vector<int> out(64, 0);
  void* args[] = {out.data()};
  CHECK_THAT(run_snippet(src, 1, 64, args), Catch::Contains("split between __syncwarp and __syncthreads"));
}

TEST_CASE("the emulator reports a shuffle reading a lane that has exited", "[cuda_emu]") {
  std::string src = R"(
__global__ void k(float* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 16);
}
extern "C" __attribute__((visibility("default"))) void call(void** a) { k((float*)a[0]); }
)";
  std::vector<float> out(32, 0);
  void* args[] = {out.data()};
  CHECK_THAT(run_snippet(src, 1, 32, args), Catch::Contains("has exited"));
}
