// dnnc_gpu_bench: one training epoch of a model on the cuda backend with the dataset resident on
// the device (ResidentTrainer: one CUDA graph replay per step, a host sync every
// --metrics-every steps), on seeded synthetic data of the model's input shape. Prints one JSON
// line. Driven by scripts/gpu-check.sh next to bench/gpu/torch_gpu_bench.py.
//   dnnc_gpu_bench MODEL.dnn BATCH [--samples N] [--metrics-every K] [--tf32] [--epochs E] [--label NAME]
//                  [--kernels FILE]
// epoch_s is the median of E epochs (default 1); epoch_min_s the fastest.
// --kernels: after the epoch, each generated kernel is timed alone (KernelProfiler) and FILE gets
// a markdown table of its time against its bandwidth floor (min_bytes at the measured
// device-to-device copy bandwidth); the elementwise kernels' target is within 2x of it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>

#include "frontend/frontend.h"
#include "passes/compile.h"
#include "runtime/backends.h"
#include "runtime/cuda/plugin_api.h"
#include "runtime/cuda/plugin_loader.h"
#include "runtime/data/random_inputs.h"
#include "runtime/reference/interpreter.h"

using namespace dnnc;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Each kernel of `exe` timed alone against its bandwidth floor, as a markdown table in `path`.
void write_kernel_table(runtime::Executable& exe, const std::string& what, const std::string& path) {
  runtime::cuda::KernelProfiler* prof = runtime::cuda::kernel_profiler(exe);
  if (!prof) throw std::runtime_error("the cuda plugin has no kernel profiler");
  const int launches = 50, reps = 5;
  const double bw = prof->copy_bandwidth(size_t{1} << 30);
  std::vector<runtime::cuda::KernelTime> times = prof->profile_kernels(launches, reps);
  std::string out =
      fmt::format("{}: each kernel alone, a graph of {} launches, median of {}; device-to-device copy {:.0f} GB/s\n\n",
                  what, launches, reps, bw / 1e9);
  out += "| kernel | mapping | launched | min bytes | µs | floor µs | × floor |\n|---|---|---|---|---|---|---|\n";
  // The 2x target is read for kernels whose floor is at least 1 us: below that, a launch's own
  // cost in a graph (about 1 us) is most of the time, whatever the kernel does.
  struct Side {
    std::vector<double> ratios;
    double worst = 0;
    std::string worst_name;
  } all, big;
  for (const auto& t : times) {
    double floor_us = static_cast<double>(t.min_bytes) / bw * 1e6;
    double ratio = floor_us > 0 ? t.us / floor_us : 0;
    out +=
        fmt::format("| {}{} | {} | {} | {} | {:.2f} | {:.2f} | {:.1f} |\n", t.name, t.failed ? " (failed check)" : "",
                    t.mapping, t.launched ? "yes" : "no (cuBLASLt)", t.min_bytes, t.us, floor_us, ratio);
    bool elementwise = t.mapping == "grid_thread" || t.mapping == "grid_vec4";
    if (!elementwise || !t.launched || t.failed) continue;
    for (Side* side : {&all, &big}) {
      if (side == &big && floor_us < 1.0) continue;
      side->ratios.push_back(ratio);
      if (ratio > side->worst) {
        side->worst = ratio;
        side->worst_name = t.name;
      }
    }
  }
  for (Side* side : {&all, &big}) {
    if (side->ratios.empty()) continue;
    std::sort(side->ratios.begin(), side->ratios.end());
    out += fmt::format(
        "\nelementwise kernels launched (grid_thread/grid_vec4){}: {}, median {:.1f}x their floor, worst "
        "{:.1f}x ({}); target <= 2x\n",
        side == &big ? " with a floor of at least 1 us" : "", side->ratios.size(),
        side->ratios[side->ratios.size() / 2], side->worst, side->worst_name);
  }
  std::ofstream f(path);
  f << out;
  if (!f) throw std::runtime_error("cannot write " + path);
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dnnc_gpu_bench MODEL.dnn BATCH [--samples N] [--metrics-every K] [--tf32] [--epochs E] "
                 "[--label NAME] [--kernels FILE]\n";
    return 2;
  }
  std::string model = argv[1];
  int64_t batch = std::stoll(argv[2]);
  int64_t samples = 60000, every = 50, epochs = 1;
  std::string label = "dnnc";  // the JSON line's "impl" (e.g. an A/B variant's name)
  std::string kernels_file;
  runtime::BackendOptions backend;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return std::stoll(argv[++i]);
    };
    if (a == "--samples")
      samples = next();
    else if (a == "--metrics-every")
      every = next();
    else if (a == "--epochs")
      epochs = next();
    else if (a == "--tf32")
      backend.tf32 = true;
    else if (a == "--label" && i + 1 < argc)
      label = argv[++i];
    else if (a == "--kernels" && i + 1 < argc)
      kernels_file = argv[++i];
    else
      throw std::invalid_argument("unknown option " + a);
  }
  if (epochs < 1 || samples < batch || batch < 1 || every < 1)
    throw std::invalid_argument("need --epochs >= 1, --metrics-every >= 1 and --samples >= BATCH >= 1");
  auto t0 = Clock::now();
  ir::Module m = frontend::compile_file(model);
  passes::compile(m);
  runtime::reference::ParamStore params = runtime::reference::init_params(m, 1);
  // $DNNC_CUBLASLT_EPILOGUES and $DNNC_CUBLASLT_ALGO set the A/B variants (scripts/gpu-check.sh).
  const runtime::cuda::CudaOptions opt = runtime::cuda_options(runtime::backend_options_from_env(backend));
  auto cuda = runtime::cuda::make_cuda_backend(opt);
  auto exe = cuda->compile(m, "train_step", params, batch);
  auto resident = reinterpret_cast<dnnc_cuda_resident_fn>(runtime::cuda::cuda_plugin_symbol("dnnc_cuda_resident"));
  runtime::cuda::ResidentTrainer* trainer = resident ? resident(exe.get()) : nullptr;
  if (!trainer) throw std::runtime_error("the cuda plugin has no resident trainer for this graph");
  double compile_s = since(t0);

  // Synthetic data of the graph's input shapes: f32 uniform in [-1, 1), labels in [0, 10).
  const ir::Graph& g = *m.graph("train_step");
  std::mt19937 rng(7);
  std::map<std::string, runtime::Tensor> batch_data = runtime::random_inputs(g, samples, rng);
  std::vector<runtime::Tensor> data;
  for (ir::ValueId id : g.inputs) data.push_back(std::move(batch_data.at(g.value(id).name)));
  auto t1 = Clock::now();
  trainer->load_dataset(data);
  double upload_s = since(t1);
  std::vector<int64_t> order(static_cast<size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  trainer->train(order, 5, 5);  // warm-up: graph capture, cuBLASLt first calls

  int64_t steps = samples / batch;
  std::vector<double> times;
  float last = 0;
  for (int64_t e = 0; e < epochs; ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    auto t2 = Clock::now();
    std::vector<float> losses = trainer->train(order, steps, every);
    times.push_back(since(t2));
    last = losses.empty() ? 0 : losses.back();
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];  // the upper median for an even count
  trainer->sync_params();
  if (!kernels_file.empty())
    write_kernel_table(*exe, fmt::format("{}.train_step at batch {}", m.name, batch), kernels_file);
  std::cout << fmt::format(
      "{{\"impl\": \"{}\", \"model\": \"{}\", \"batch\": {}, \"samples\": {}, \"steps\": {}, \"epoch_s\": {:.4f}, "
      "\"epoch_min_s\": {:.4f}, \"epochs\": {}, \"samples_per_s\": {:.0f}, \"final_loss\": {:.5f}, \"compile_s\": "
      "{:.3f}, "
      "\"upload_s\": {:.3f}, \"tf32\": {}}}\n",
      label, m.name, batch, samples, steps, median, times.front(), epochs, static_cast<double>(steps * batch) / median,
      last, compile_s, upload_s, opt.tf32 ? "true" : "false");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dnnc_gpu_bench: error: " << e.what() << "\n";
    return 1;
  }
}
