// select-layout's NHWC is lowered, and it computes what NCHW computes: every conv model, compiled
// with --layout nhwc and --layout nchw, run for three train steps and one inference from the
// same params on the same seeded inputs — outputs and every updated param of the two within
// 1e-6 of each other (or twice the larger of their distances from the reference where larger:
// check_pair), and nhwc within the cpu backend's tolerance (1e-5) of the reference interpreter
// (which runs the nhwc module in its own storage order).
#include "cpu_test_util.h"

using namespace dnnc;

namespace {

ir::Module compiled(const std::string& path, passes::LayoutChoice layout) {
  ir::Module m = frontend::compile_file(path);
  passes::compile(m, {.layout = layout});
  return m;
}

// Values of `g` stored channels-last.
int nhwc_values(const ir::Graph& g) {
  int n = 0;
  for (const ir::Value& v : g.values) n += v.type.layout == ir::Layout::nhwc;
  return n;
}

// nhwc against nchw: within 1e-6, or within twice the larger of the two's distances from the
// reference where that is larger (two valid fp32 summation orders differ by about that much:
// 1.006e-6 on vgg_cifar's logits; NCHW's batchnorm sums are blocked over vector lanes, NHWC's
// strided ones in blocks of 16 pixels); and nhwc against the reference within the cpu backend's
// tolerance.
void check_pair(const runtime::Tensor& nhwc, const runtime::Tensor& nchw, const runtime::Tensor& ref,
                const std::string& what) {
  if (nhwc.dtype() != ir::DType::f32) {
    test::check_close(nhwc, nchw, what + ": nhwc vs nchw");
    return;
  }
  const double nchw_err = runtime::rel_error(nchw, ref);
  const double own = std::max(nchw_err, runtime::rel_error(nhwc, ref));
  test::check_close(nhwc, nchw, what + ": nhwc vs nchw", std::max(1e-6, 2 * own));
  test::check_close(nhwc, ref, what + ": nhwc vs the reference");
}

void check_layouts(const std::string& path, int64_t batch,
                   const runtime::cpu::CpuOptions& options = test::cpu_test_options()) {
  INFO(path << " at batch " << batch);
  ir::Module nchw = compiled(path, passes::LayoutChoice::nchw);
  ir::Module nhwc = compiled(path, passes::LayoutChoice::nhwc);
  for (const char* graph : {"train_step", "infer"}) {
    INFO(graph);
    CHECK(nhwc_values(*nchw.graph(graph)) == 0);
    REQUIRE(nhwc_values(*nhwc.graph(graph)) > 0);  // the test compares two different programs
  }
  runtime::reference::ParamStore p_nchw = runtime::reference::init_params(nchw, 11);
  runtime::reference::ParamStore p_nhwc = p_nchw, p_ref = p_nchw;
  runtime::cpu::CpuBackend backend(options);
  auto t_nchw = backend.compile(nchw, "train_step", p_nchw, batch);
  auto t_nhwc = backend.compile(nhwc, "train_step", p_nhwc, batch);
  std::mt19937 rng(5);
  const ir::Graph& g = *nhwc.graph("train_step");
  for (int step = 1; step <= 3; ++step) {
    std::string at = "step " + std::to_string(step);
    // Every step from the same params, so the layouts' differences do not compound. A relu or
    // max-pool decision within rounding of its threshold can still flip between any two valid
    // summation orders (nchw against the reference too: vgg_cifar at batch 4 with other seeds);
    // the inputs here are clear of such ties, and a lowering bug fails at every seed.
    for (auto& [name, t] : p_nchw.tensors) p_nhwc.tensors[name] = p_ref.tensors[name] = t;
    auto inputs = test::random_inputs(g, batch, rng);
    auto want = runtime::reference::run_reference(nhwc, g, inputs, p_ref);
    auto a = t_nchw->run(inputs);
    auto b = t_nhwc->run(inputs);
    REQUIRE(a.size() == b.size());
    REQUIRE(b.size() == want.size());
    for (size_t i = 0; i < b.size(); ++i) check_pair(b[i], a[i], want[i], at + " output " + std::to_string(i));
    for (const auto& [name, t] : p_ref.tensors) check_pair(*p_nhwc.find(name), *p_nchw.find(name), t, at + " param " + name);
  }
  auto i_nchw = backend.compile(nchw, "infer", p_nchw, batch);
  auto i_nhwc = backend.compile(nhwc, "infer", p_nhwc, batch);
  auto inputs = test::random_inputs(*nhwc.graph("infer"), batch, rng);
  auto want = runtime::reference::run_reference(nhwc, *nhwc.graph("infer"), inputs, p_ref);
  auto a = i_nchw->run(inputs);
  auto b = i_nhwc->run(inputs);
  for (size_t i = 0; i < b.size(); ++i) check_pair(b[i], a[i], want[i], "infer output " + std::to_string(i));
}

}  // namespace

TEST_CASE("nhwc equals nchw: every conv model in models/", "[cpu][layout]") {
  check_layouts("models/cifar_cnn.dnn", 4);
  check_layouts("models/lenet5.dnn", 6);
  check_layouts("models/cifar_strided.dnn", 6);
  check_layouts("models/vgg_cifar.dnn", 2);
  check_layouts("models/resnet_mnist.dnn", 3);
}

TEST_CASE("nhwc equals nchw: awkward conv and pool shapes, batchnorm and dropout, threaded", "[cpu][layout]") {
  runtime::cpu::CpuOptions threaded = test::cpu_test_options();
  threaded.threads = 2;
  threaded.lower.gemm_parallel_flops = 1;
  threaded.lower.parallel_min_work = 1;
  check_layouts("tests/cpu/models/nhwc_shapes.dnn", 3);
  check_layouts("tests/cpu/models/nhwc_shapes.dnn", 3, threaded);
  check_layouts("models/lenet5.dnn", 3, threaded);
}
