// dnnc_bench: the benchmark harness behind bench/compare_torch.sh (not a unit test; nothing here
// is run by ctest). Modes:
//   dnnc_bench serve MODEL.dnn --batch B [--graph G] [--device cpu] [--threads T] [--no-coschedule]
//       compiles MODEL's graph G (train_step, the default, or infer: what `dnnc eval` runs per
//       batch) for batch B, makes 8 seeded random batches in memory, then answers lines on
//       stdin: "run N" runs the graph N times (cycling through the batches) and prints one JSON
//       line {"times_ms":[...]} with each run's wall time; "quit" exits.
//       A persistent worker lets the driver interleave dnnc and PyTorch in one run.
//       --no-coschedule lowers without LowerOptions::coschedule_gemms, --no-bn-epilogues without
//       LowerOptions::batchnorm_epilogues (for A/B runs; profile takes them too).
//       Every mode that compiles a model takes --layout auto|nchw|nhwc (select-layout's choice).
//   dnnc_bench profile MODEL.dnn --batch B [--graph G] [--steps N] [--threads T]
//       compiles graph G like serve, runs it N times (default 200, after 20 warm-up
//       runs) with the generated code's per-step hook set (cpu::set_profiler) and prints a
//       table: per program step its median ms, share of the summed medians, name and the IR
//       lines it computes; then the median of the whole run() and what run() spends outside
//       dnnc_run (binding buffers, copying outputs and updates).
//   dnnc_bench compile MODEL.dnn --batch B --cache DIR
//       times frontend + passes + codegen + JIT of graph G (--graph all: train_step and infer,
//       what `dnnc train` compiles), cold if DIR is empty, warm if an earlier run filled it;
//       prints {"compile_ms":...}.
//   dnnc_bench flops MODEL.dnn --batch B [--graph G]
//       prints {"gemm_flops":...}: 2*M*N*K summed over the GEMM calls of graph G as lowered
//       (every conv and linear is lowered to GEMMs, so this is the model's matrix-product work).
//   dnnc_bench gemm-bound MODEL.dnn --batch B [--graph G] [--steps N] [--threads T]
//       the GEMM bound of graph G: the same GEMM calls as lowered (shapes, transposes, batches),
//       run back to back through plain OpenBLAS cblas_sgemm on scratch buffers with nothing
//       else; prints {"gemm_ms":...}, the median over N runs (default 200) of their summed time.
//       A step can be no faster than this with OpenBLAS as its GEMM.
//   dnnc_bench sgemm [--n N] [--threads T]
//       the machine's sgemm ceiling: median GFLOP/s of OpenBLAS cblas_sgemm on N x N x N, and the
//       kernel set ("core") OpenBLAS runs, which OPENBLAS_CORETYPE overrides.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/lower/lower.h"
#include "frontend/frontend.h"
#include "ir/diagnostic.h"
#include "passes/compile.h"
#include "runtime/data/random_inputs.h"
#include "runtime/backends.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/reference/interpreter.h"

// OpenBLAS, declared here as the generated code does (no header dependency).
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int n);
char* openblas_get_corename();
}

namespace {

using namespace dnnc;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Args {
  std::string mode, model, device = "cpu", cache, graph = "train_step";
  int64_t batch = 0;
  int threads = 0, n = 1024, steps = 200;
  bool coschedule = true;
  bool bn_epilogues = true;
  std::string layout = "auto";  // select-layout's choice: auto, nchw or nhwc

  Args with_graph(std::string g) const {
    Args b = *this;
    b.graph = std::move(g);
    return b;
  }
};

Args parse_args(int argc, char** argv) {
  if (argc < 2)
    throw std::invalid_argument("usage: dnnc_bench serve|profile|compile|flops|gemm-bound|sgemm [MODEL.dnn] [options]");
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(s + " needs a value");
      return argv[++i];
    };
    if (s == "--batch")
      a.batch = std::stoll(value());
    else if (s == "--device")
      a.device = value();
    else if (s == "--threads")
      a.threads = std::stoi(value());
    else if (s == "--cache")
      a.cache = value();
    else if (s == "--n")
      a.n = std::stoi(value());
    else if (s == "--steps")
      a.steps = std::stoi(value());
    else if (s == "--no-coschedule")
      a.coschedule = false;
    else if (s == "--no-bn-epilogues")
      a.bn_epilogues = false;
    else if (s == "--layout")
      a.layout = value();
    else if (s == "--graph")
      a.graph = value();
    else if (!s.empty() && s[0] != '-' && a.model.empty())
      a.model = s;
    else
      throw std::invalid_argument("unknown argument '" + s + "'");
  }
  if (a.mode != "sgemm" && a.model.empty()) throw std::invalid_argument(a.mode + ": needs MODEL.dnn");
  if (a.mode != "sgemm" && a.batch < 1) throw std::invalid_argument(a.mode + ": needs --batch B (B >= 1)");
  return a;
}

ir::Module pipeline(const std::string& path, const std::string& layout) {
  ir::Module m = frontend::compile_file(path);
  passes::compile(m, {.layout = passes::parse_layout_choice(layout)});
  return m;
}

/// The graph the mode runs: --graph (train_step unless given).
const ir::Graph* graph_of(const ir::Module& m, const Args& a) {
  const ir::Graph* g = m.graph(a.graph);
  if (!g)
    throw std::runtime_error(a.model + ": no graph '" + a.graph +
                             "' (train_step needs a train block; infer needs a prediction output)");
  return g;
}

std::unique_ptr<runtime::Backend> make_backend(const Args& a) {
  if (a.device == "reference") return runtime::make_reference_backend();
  if (a.device != "cpu") throw std::invalid_argument("--device must be cpu or reference, got '" + a.device + "'");
  runtime::cpu::CpuOptions o;
  o.threads = a.threads;
  o.lower.coschedule_gemms = a.coschedule;
  o.lower.batchnorm_epilogues = a.bn_epilogues;
  if (!a.cache.empty()) o.jit.cache_dir = a.cache;
  return std::make_unique<runtime::cpu::CpuBackend>(o);
}

/// Seeded random values for every input of `g`: images uniform in [-1, 1), labels in [0, 10).
std::map<std::string, runtime::Tensor> random_batch(const ir::Graph& g, int64_t batch, std::mt19937& rng) {
  return runtime::random_inputs(g, batch, rng);
}

void print_times(const std::vector<double>& t) {
  std::string s = "{\"times_ms\":[";
  for (size_t i = 0; i < t.size(); ++i) s += (i ? "," : "") + std::to_string(t[i]);
  std::cout << s << "]}" << std::endl;
}

int serve(const Args& a) {
  ir::Module m = pipeline(a.model, a.layout);
  const ir::Graph* g = graph_of(m, a);
  runtime::ParamStore params = runtime::reference::init_params(m, 1);
  auto backend = make_backend(a);
  auto exe = backend->compile(m, a.graph, params, a.batch);
  std::mt19937 rng(1);
  std::vector<std::map<std::string, runtime::Tensor>> batches;
  for (int i = 0; i < 8; ++i) batches.push_back(random_batch(*g, a.batch, rng));
  std::cout << "{\"ready\":true}" << std::endl;
  size_t next = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) != 0)
      throw std::invalid_argument("serve: expected 'run N' or 'quit', got '" + line + "'");
    int n = std::stoi(line.substr(4));
    std::vector<double> times;
    times.reserve(n);
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      exe->run(batches[next]);
      times.push_back(ms_since(t0));
      next = (next + 1) % batches.size();
    }
    print_times(times);
  }
  return 0;
}

// Timestamps of the current run: stamps[0] on entry to dnnc_run, stamps[i + 1] after step i.
std::vector<Clock::time_point> g_stamps;
size_t g_ticks = 0;

void tick(int step) {
  size_t i = static_cast<size_t>(step + 1);
  if (i < g_stamps.size()) g_stamps[i] = Clock::now();
  ++g_ticks;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int profile(const Args& a) {
  if (a.device != "cpu") throw std::invalid_argument("profile: only --device cpu has per-step hooks");
  if (a.steps < 1) throw std::invalid_argument("profile: --steps must be >= 1");
  ir::Module m = pipeline(a.model, a.layout);
  const ir::Graph* g = graph_of(m, a);
  runtime::ParamStore params = runtime::reference::init_params(m, 1);
  auto backend = make_backend(a);
  auto exe = backend->compile(m, a.graph, params, a.batch);
  const codegen::Program* prog = runtime::cpu::program_of(*exe);
  if (!prog) throw std::runtime_error("profile: not a cpu executable");
  std::mt19937 rng(1);
  std::vector<std::map<std::string, runtime::Tensor>> batches;
  for (int i = 0; i < 8; ++i) batches.push_back(random_batch(*g, a.batch, rng));
  for (int i = 0; i < 20; ++i) exe->run(batches[static_cast<size_t>(i) % batches.size()]);
  const size_t n = prog->steps.size();
  std::vector<std::vector<double>> per_step(n);
  std::vector<double> whole, outside;
  g_stamps.assign(n + 1, Clock::time_point{});
  runtime::cpu::set_profiler(*exe, tick);
  for (int r = 0; r < a.steps; ++r) {
    g_ticks = 0;
    auto t0 = Clock::now();
    exe->run(batches[static_cast<size_t>(r) % batches.size()]);
    double total = ms_since(t0);
    if (g_ticks != n + 1)
      throw std::runtime_error("profile: the step hook fired " + std::to_string(g_ticks) + " times, expected " +
                               std::to_string(n + 1));
    for (size_t i = 0; i < n; ++i)
      per_step[i].push_back(std::chrono::duration<double, std::milli>(g_stamps[i + 1] - g_stamps[i]).count());
    whole.push_back(total);
    outside.push_back(total - std::chrono::duration<double, std::milli>(g_stamps[n] - g_stamps[0]).count());
  }
  runtime::cpu::set_profiler(*exe, nullptr);
  std::vector<double> med(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += med[i] = median(per_step[i]);
  std::printf("%s %s batch %lld, %d runs: median ms per program step\n", m.name.c_str(),
              a.graph.c_str(), static_cast<long long>(a.batch), a.steps);
  std::printf("%5s %9s %6s  %s\n", "step", "ms", "%", "what");
  for (size_t i = 0; i < n; ++i) {
    const codegen::Step& s = prog->steps[i];
    std::string name = s.kind == codegen::Step::Kind::kernel ? prog->kernels.at(static_cast<size_t>(s.kernel)).name
                                                             : "g" + std::to_string(i) + "_gemm";
    std::printf("%5zu %9.4f %6.1f  %s\n", i, med[i], sum > 0 ? 100.0 * med[i] / sum : 0.0, name.c_str());
    for (const std::string& line : s.comment) std::printf("%23s%s\n", "", line.c_str());
  }
  std::printf("sum of step medians %.4f ms; run() median %.4f ms, of which outside dnnc_run %.4f ms\n", sum,
              median(whole), median(outside));
  return 0;
}

int compile_only(const Args& a) {
  auto t0 = Clock::now();
  ir::Module m = pipeline(a.model, a.layout);
  runtime::ParamStore params = runtime::reference::init_params(m, 1);
  auto backend = make_backend(a);
  // --graph all: what `dnnc train` compiles, the train step and the inference graph.
  std::vector<std::string> graphs = a.graph == "all" ? std::vector<std::string>{"train_step", "infer"}
                                                     : std::vector<std::string>{a.graph};
  std::vector<runtime::CompileRequest> requests;
  for (const std::string& name : graphs) {
    graph_of(m, a.with_graph(name));
    requests.push_back({name, a.batch});
  }
  backend->compile_all(m, requests, params);  // concurrently, as the trainer does
  std::printf("{\"compile_ms\":%.3f}\n", ms_since(t0));
  return 0;
}

int flops(const Args& a) {
  ir::Module m = pipeline(a.model, a.layout);
  const ir::Graph* g = graph_of(m, a);
  codegen::Program p = codegen::lower_graph(m, *g, a.batch);
  double total = 0;
  for (const codegen::Step& s : p.steps)
    if (s.kind == codegen::Step::Kind::gemm)
      total += 2.0 * double(s.gemm.m) * double(s.gemm.n) * double(s.gemm.k) * double(s.gemm.batch);
  std::printf("{\"gemm_flops\":%.0f}\n", total);
  return 0;
}

int gemm_bound(const Args& a) {
  if (a.threads > 0) openblas_set_num_threads(a.threads);
  ir::Module m = pipeline(a.model, a.layout);
  const ir::Graph* g = graph_of(m, a);
  codegen::Program p = codegen::lower_graph(m, *g, a.batch);
  struct Call {
    codegen::GemmCall g;
    std::vector<float> x, y, z;
  };
  std::vector<Call> calls;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (const codegen::Step& s : p.steps) {
    if (s.kind != codegen::Step::Kind::gemm) continue;
    Call c{s.gemm, {}, {}, {}};
    const codegen::GemmCall& gc = c.g;
    // Dense scratch operands of the call's own shape (leading dimensions as lowered).
    int64_t rows_a = gc.trans_a ? gc.k : gc.m, rows_b = gc.trans_b ? gc.n : gc.k;
    c.x.resize(size_t(rows_a * gc.lda));
    c.y.resize(size_t(rows_b * gc.ldb));
    c.z.resize(size_t(gc.m * gc.ldc));
    for (auto& v : c.x) v = d(rng);
    for (auto& v : c.y) v = d(rng);
    calls.push_back(std::move(c));
  }
  auto run_all = [&] {
    for (Call& c : calls) {
      const codegen::GemmCall& gc = c.g;
      for (int64_t b = 0; b < gc.batch; ++b)  // one problem per image, each of the call's shape
        cblas_sgemm(101, gc.trans_a ? 112 : 111, gc.trans_b ? 112 : 111, int(gc.m), int(gc.n), int(gc.k), 1.0f,
                    c.x.data(), int(gc.lda), c.y.data(), int(gc.ldb), gc.accumulate_batches || b ? 1.0f : 0.0f,
                    c.z.data(), int(gc.ldc));
    }
  };
  for (int i = 0; i < 20; ++i) run_all();
  std::vector<double> t;
  for (int r = 0; r < a.steps; ++r) {
    auto t0 = Clock::now();
    run_all();
    t.push_back(ms_since(t0));
  }
  std::printf("{\"gemm_ms\":%.4f,\"gemm_calls\":%zu}\n", median(t), calls.size());
  return 0;
}

int sgemm(const Args& a) {
  if (a.threads > 0) openblas_set_num_threads(a.threads);
  int n = a.n;
  std::vector<float> x(size_t(n) * n), y(size_t(n) * n), z(size_t(n) * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (auto& v : x) v = d(rng);
  for (auto& v : y) v = d(rng);
  std::vector<double> gflops;
  for (int r = 0; r < 15; ++r) {
    auto t0 = Clock::now();
    cblas_sgemm(101 /*row major*/, 111 /*no trans*/, 111, n, n, n, 1.0f, x.data(), n, y.data(), n, 0.0f, z.data(), n);
    double s = ms_since(t0) / 1e3;
    if (r >= 2) gflops.push_back(2.0 * n * n * n / s / 1e9);  // the first runs warm up the thread pool
  }
  std::sort(gflops.begin(), gflops.end());
  std::printf("{\"sgemm_gflops\":%.2f,\"n\":%d,\"core\":\"%s\"}\n", gflops[gflops.size() / 2], n,
              openblas_get_corename());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse_args(argc, argv);
    if (a.mode == "serve") return serve(a);
    if (a.mode == "profile") return profile(a);
    if (a.mode == "compile") return compile_only(a);
    if (a.mode == "flops") return flops(a);
    if (a.mode == "gemm-bound") return gemm_bound(a);
    if (a.mode == "sgemm") return sgemm(a);
    throw std::invalid_argument("unknown mode '" + a.mode + "' (serve, profile, compile, flops, gemm-bound, sgemm)");
  } catch (const ir::CompileError& e) {
    std::cerr << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "dnnc_bench: error: " << e.what() << "\n";
  }
  return 1;
}
