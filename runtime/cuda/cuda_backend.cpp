// The cuda plugin (libdnnc_cuda.so): the `cuda` Backend. A graph is lowered, printed as CUDA C,
// compiled by NVRTC to a CUBIN for the device (PTX when NVRTC does not know the device's arch),
// cached on disk, loaded with cudaLibraryLoadData (no link against libcuda), and its steps —
// kernels, cuBLASLt GEMMs, param updates — are captured once into a CUDA graph that every run
// replays. Everything lives in one device allocation (codegen/cuda/cuda_layout.h), its
// activation arena exactly as plan-memory laid it out. See docs/cuda.md (what is verified where).
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "codegen/cuda/cuda_layout.h"
#include "codegen/cuda/cuda_printer.h"
#include "codegen/lower/lower.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/gemm_lt.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/cuda/plugin_api.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::runtime::cuda {

namespace {

using codegen::Buffer;
using codegen::BufferKind;

// Kernels the runtime adds to every program: the resident dataset's batch gather and the loss
// ring of ResidentTrainer. They read the step number from device memory, so one captured graph
// serves every step.
const char* kRuntimeKernels = R"(
// runtime: copies batch `*counter` of a device-resident dataset (rows of `row_words` 4-byte
// words, sample order `order`) into an input buffer.
extern "C" __global__ void __launch_bounds__(256) dnnc_gather(const unsigned* __restrict__ src, unsigned* __restrict__ dst,
    const i64* __restrict__ order, const i64* __restrict__ counter, i64 samples, i64 batch, i64 row_words) {
  const i64 step = *counter;
  const i64 n = batch * row_words;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {
    const i64 r = e / row_words, w = e % row_words;
    const i64 s = order[(step * batch + r) % samples];
    dst[e] = src[s * row_words + w];
  }
}

// runtime: the loss of this step into the ring; then the next step.
extern "C" __global__ void dnnc_record_loss(const float* __restrict__ loss, float* __restrict__ ring, i64* __restrict__ counter,
    i64 ring_size) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    ring[*counter % ring_size] = *loss;
    *counter += 1;
  }
}
)";

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

ir::DType dtype_of(codegen::ScalarType t) { return t == codegen::ScalarType::i64 ? ir::DType::i64 : ir::DType::f32; }
size_t elem_bytes(codegen::ScalarType t) {
  return t == codegen::ScalarType::i64 || t == codegen::ScalarType::f64 ? 8 : 4;
}

// $DNNC_CUBLASLT_ALGO=tune: how many of the heuristic's algorithms each GEMM plan times, and
// how many matmuls the graph that times each one holds.
constexpr int kTuneCandidates = 8;
constexpr int kTuneReps = 20;

// Device handles shared by the backend and its executables (which may outlive it).
struct Context {
  int device = 0;
  int major = 0, minor = 0;
  std::string name;
  size_t max_shared_per_block = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  GemmOptions gemm;
  KernelCache cache;

  bool log_epilogues = false;  // CudaOptions::Epilogues::log: one stderr line per GEMM plan
  bool tune_gemms = false;     // CudaOptions::GemmAlgo::tune: time the heuristic's candidates, keep the fastest
  bool poison_arena = false;   // CudaOptions::poison_arena

  explicit Context(const CudaOptions& o) : cache(o.cache_dir) {
    gemm.tf32 = o.tf32;
    gemm.activation_epilogues = o.epilogues != CudaOptions::Epilogues::off;
    log_epilogues = o.epilogues == CudaOptions::Epilogues::log;
    poison_arena = o.poison_arena;
    if (o.gemm_algo == CudaOptions::GemmAlgo::tune) {
      tune_gemms = true;
      gemm.candidates = kTuneCandidates;
    }
    DNNC_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    DNNC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    major = prop.major;
    minor = prop.minor;
    name = prop.name;
    max_shared_per_block = prop.sharedMemPerBlock;
    DNNC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DNNC_CUBLAS_CHECK(cublasLtCreate(&lt));
  }
  ~Context() {
    if (lt) cublasLtDestroy(lt);
    if (stream) cudaStreamDestroy(stream);
  }

  // The NVRTC target: the device's own arch as CUBIN, or PTX for the newest arch NVRTC knows
  // that is not newer than the device (the driver finishes it).
  std::string target() const {
    int want = major * 10 + minor;
    std::vector<int> archs = nvrtc_supported_archs();
    if (std::find(archs.begin(), archs.end(), want) != archs.end()) return fmt::format("sm_{}", want);
    int best = 0;
    for (int a : archs)
      if (a <= want) best = std::max(best, a);
    if (!best)
      throw std::runtime_error(fmt::format("GPU {} is sm_{}, older than NVRTC's oldest target sm_{}", name, want,
                                           archs.empty() ? 0 : archs.front()));
    return fmt::format("compute_{}", best);
  }
};

class CudaExecutable final : public Executable, public ResidentTrainer, public KernelProfiler {
 public:
  CudaExecutable(std::shared_ptr<Context> ctx, codegen::Program prog, ParamStore& params)
      : ctx_(std::move(ctx)), prog_(std::move(prog)), params_(params), errors_(codegen::program_errors(prog_)) {
    cprog_ = codegen::print_program_cuda(prog_);
    for (const codegen::CudaKernel& k : cprog_.kernels)
      if (k.launch.shared_bytes > static_cast<int>(ctx_->max_shared_per_block))
        fail(fmt::format("kernel {} needs {} bytes of shared memory, the device allows {}", k.name,
                         k.launch.shared_bytes, ctx_->max_shared_per_block));
    try {
      load_kernels();
      plan_arena();
      plan_gemms();
      if (ctx_->poison_arena) plan_poison();
    } catch (...) {
      release();  // (no destructor runs for a constructor that throws)
      throw;
    }
  }

  ~CudaExecutable() override { release(); }

  void release() {
    if (graph_) cudaGraphExecDestroy(graph_);
    if (resident_graph_) cudaGraphExecDestroy(resident_graph_);
    for (void* p : dataset_) cudaFree(p);
    if (arena_) cudaFree(arena_);
    if (lib_) cudaLibraryUnload(lib_);
    graph_ = resident_graph_ = nullptr;
    dataset_.clear();
    arena_ = nullptr;
    lib_ = nullptr;
  }

  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    cudaStream_t s = ctx_->stream;
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const Buffer& b = prog_.buffers[i];
      if (b.kind == BufferKind::input) {
        auto it = inputs.find(b.value_name);
        if (it == inputs.end()) fail(fmt::format("input '{}' ({}) was not given", b.value_name, type_str(b)));
        check(it->second, b, "input");
        upload(it->second, i);
      }
    }
    upload_params();
    if (!graph_) graph_ = capture(false);
    DNNC_CUDA_CHECK(cudaGraphLaunch(graph_, s));
    int err = 0;
    DNNC_CUDA_CHECK(cudaMemcpyAsync(&err, dev(err_offset_), sizeof(int), cudaMemcpyDeviceToHost, s));
    std::vector<Tensor> outputs;
    for (int b : prog_.outputs)
      outputs.push_back(download(offset_[static_cast<size_t>(root(b))], prog_.buffers[static_cast<size_t>(b)]));
    std::vector<Tensor> updated;
    for (size_t i = 0; i < prog_.updates.size(); ++i)
      updated.push_back(download(update_home_[i], prog_.buffers[static_cast<size_t>(prog_.updates[i].second)]));
    DNNC_CUDA_CHECK(cudaStreamSynchronize(s));
    check_error(err);
    for (size_t i = 0; i < prog_.updates.size(); ++i) params_.tensors[prog_.updates[i].first] = std::move(updated[i]);
    return outputs;
  }

  int64_t arena_bytes() const override { return prog_.arena.bytes; }

  // ---- KernelProfiler ----

  std::vector<KernelTime> profile_kernels(int launches, int reps) override {
    launches = std::max(1, launches);
    reps = std::max(1, reps);
    cudaStream_t s = ctx_->stream;
    DNNC_CUDA_CHECK(cudaStreamSynchronize(s));
    Events ev;
    std::vector<KernelTime> out;
    for (size_t k = 0; k < cprog_.kernels.size(); ++k) {
      const codegen::CudaKernel& ck = cprog_.kernels[k];
      KernelTime t;
      t.name = ck.name;
      t.mapping = codegen::cuda_mapping_name(ck.mapping);
      t.min_bytes = ck.min_bytes;
      t.launched = launched_[k];
      cudaGraphExec_t exec = capture_graph([&] {
        for (int i = 0; i < launches; ++i) launch_kernel(k);
      });
      std::vector<double> ms;
      int err = 0;
      for (int r = 0; r <= reps; ++r) {  // replay 0 warms up
        DNNC_CUDA_CHECK(cudaMemsetAsync(dev(err_offset_), 0, sizeof(int), s));
        DNNC_CUDA_CHECK(cudaEventRecord(ev.begin, s));
        DNNC_CUDA_CHECK(cudaGraphLaunch(exec, s));
        DNNC_CUDA_CHECK(cudaEventRecord(ev.end, s));
        DNNC_CUDA_CHECK(cudaMemcpyAsync(&err, dev(err_offset_), sizeof(int), cudaMemcpyDeviceToHost, s));
        DNNC_CUDA_CHECK(cudaStreamSynchronize(s));
        t.failed = t.failed || err != 0;
        float elapsed = 0;
        DNNC_CUDA_CHECK(cudaEventElapsedTime(&elapsed, ev.begin, ev.end));
        if (r > 0) ms.push_back(elapsed);
      }
      cudaGraphExecDestroy(exec);
      std::sort(ms.begin(), ms.end());
      t.us = ms[ms.size() / 2] * 1e3 / launches;
      out.push_back(std::move(t));
    }
    DNNC_CUDA_CHECK(cudaMemsetAsync(dev(err_offset_), 0, sizeof(int), s));
    return out;
  }

  double copy_bandwidth(size_t bytes) override {
    cudaStream_t s = ctx_->stream;
    void *a = nullptr, *b = nullptr;
    DNNC_CUDA_CHECK(cudaMalloc(&a, bytes));
    std::vector<double> ms;
    try {
      DNNC_CUDA_CHECK(cudaMalloc(&b, bytes));
      DNNC_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, s));
      Events ev;
      for (int r = 0; r <= 5; ++r) {
        DNNC_CUDA_CHECK(cudaEventRecord(ev.begin, s));
        DNNC_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        DNNC_CUDA_CHECK(cudaEventRecord(ev.end, s));
        DNNC_CUDA_CHECK(cudaStreamSynchronize(s));
        float elapsed = 0;
        DNNC_CUDA_CHECK(cudaEventElapsedTime(&elapsed, ev.begin, ev.end));
        if (r > 0) ms.push_back(elapsed);
      }
    } catch (...) {
      cudaFree(a);
      if (b) cudaFree(b);
      throw;
    }
    cudaFree(a);
    cudaFree(b);
    std::sort(ms.begin(), ms.end());
    return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3);
  }

  // ---- ResidentTrainer ----

  void load_dataset(const std::vector<Tensor>& inputs) override {
    std::vector<int> in = input_buffers();
    if (inputs.size() != in.size())
      fail(fmt::format("dataset has {} tensors, the graph {} inputs", inputs.size(), in.size()));
    if (resident_graph_) {  // it captured the old dataset's pointers
      DNNC_CUDA_CHECK(cudaGraphExecDestroy(resident_graph_));
      resident_graph_ = nullptr;
    }
    for (void* p : dataset_) cudaFree(p);
    dataset_.clear();
    samples_ = -1;
    for (size_t i = 0; i < in.size(); ++i) {
      const Buffer& b = prog_.buffers[static_cast<size_t>(in[i])];
      const Tensor& t = inputs[i];
      std::vector<int64_t> row(b.shape.begin() + 1, b.shape.end()), got(t.shape().begin() + 1, t.shape().end());
      if (t.rank() != b.shape.size() || row != got || t.dtype() != dtype_of(b.dtype))
        fail(fmt::format("dataset tensor for input '{}' is {}; expected [samples,{}] of {}", b.value_name, describe(t),
                         fmt::join(row, ","), ir::dtype_name(dtype_of(b.dtype))));
      if (samples_ >= 0 && t.dim(0) != samples_) fail("dataset tensors have different sample counts");
      samples_ = t.dim(0);
      void* p = nullptr;
      DNNC_CUDA_CHECK(cudaMalloc(&p, t.nbytes()));
      dataset_.push_back(p);
      // On the work stream, which does not wait for the legacy default stream (non-blocking);
      // from pageable memory the call returns once `t` has been staged.
      DNNC_CUDA_CHECK(cudaMemcpyAsync(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice, ctx_->stream));
    }
  }

  std::vector<float> train(const std::vector<int64_t>& order, int64_t steps, int64_t metrics_every) override {
    if (dataset_.empty()) fail("train: no dataset loaded");
    if (static_cast<int64_t>(order.size()) != samples_) fail("train: order is not a permutation of the samples");
    if (order.size() * sizeof(int64_t) > max_order_bytes())
      fail(fmt::format("train: {} samples; the resident trainer holds at most {}", order.size(),
                       max_order_bytes() / sizeof(int64_t)));
    if (prog_.outputs.empty() || prog_.buffers[static_cast<size_t>(prog_.outputs[0])].numel() != 1)
      fail("train: the graph's first output is not a scalar loss");
    metrics_every = std::max<int64_t>(1, metrics_every);
    cudaStream_t s = ctx_->stream;
    DNNC_CUDA_CHECK(
        cudaMemcpyAsync(dev(order_offset_), order.data(), order.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    DNNC_CUDA_CHECK(cudaMemsetAsync(dev(counter_offset_), 0, sizeof(int64_t), s));
    // Once per call: the resident graph does not clear the error flag, so a failure in any
    // step of a chunk is still there when the host reads it.
    DNNC_CUDA_CHECK(cudaMemsetAsync(dev(err_offset_), 0, sizeof(int), s));
    upload_params();
    if (!resident_graph_) resident_graph_ = capture(true);
    std::vector<float> losses;
    std::vector<float> ring(static_cast<size_t>(kRing));
    int64_t done = 0;
    while (done < steps) {
      int64_t chunk = std::min({metrics_every, steps - done, kRing});
      for (int64_t i = 0; i < chunk; ++i) DNNC_CUDA_CHECK(cudaGraphLaunch(resident_graph_, s));
      int err = 0;
      DNNC_CUDA_CHECK(
          cudaMemcpyAsync(ring.data(), dev(ring_offset_), kRing * sizeof(float), cudaMemcpyDeviceToHost, s));
      DNNC_CUDA_CHECK(cudaMemcpyAsync(&err, dev(err_offset_), sizeof(int), cudaMemcpyDeviceToHost, s));
      DNNC_CUDA_CHECK(cudaStreamSynchronize(s));  // the only host sync: every `metrics_every` steps
      check_error(err);
      for (int64_t i = 0; i < chunk; ++i) losses.push_back(ring[static_cast<size_t>((done + i) % kRing)]);
      done += chunk;
    }
    return losses;
  }

  void sync_params() override {
    std::vector<Tensor> updated;
    for (size_t i = 0; i < prog_.updates.size(); ++i)
      updated.push_back(download(update_home_[i], prog_.buffers[static_cast<size_t>(prog_.updates[i].second)]));
    DNNC_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream));
    for (size_t i = 0; i < prog_.updates.size(); ++i) params_.tensors[prog_.updates[i].first] = std::move(updated[i]);
  }

 private:
  static constexpr int64_t kRing = 4096;

  struct Events {
    cudaEvent_t begin = nullptr, end = nullptr;
    Events() {
      DNNC_CUDA_CHECK(cudaEventCreate(&begin));
      if (cudaError_t e = cudaEventCreate(&end); e != cudaSuccess) {
        cudaEventDestroy(begin);
        DNNC_CUDA_CHECK(e);
      }
    }
    ~Events() {
      cudaEventDestroy(begin);
      cudaEventDestroy(end);
    }
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
  };

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(
        fmt::format("cuda backend ({}.{}, batch {}): {}", prog_.module_name, prog_.graph_name, prog_.batch, msg));
  }

  static std::string type_str(const Buffer& b) {
    return fmt::format("{}[{}]", ir::dtype_name(dtype_of(b.dtype)), fmt::join(b.shape, ","));
  }

  void check(const Tensor& t, const Buffer& b, const char* what) const {
    if (t.dtype() != dtype_of(b.dtype) || t.shape() != b.shape)
      fail(fmt::format("{} '{}': expected {}, found {}", what, b.value_name, type_str(b), describe(t)));
  }

  void check_error(int err) const {
    if (err == 0) return;
    fail(err > 0 && err <= static_cast<int>(errors_.size()) ? errors_[static_cast<size_t>(err - 1)]
                                                            : fmt::format("error code {}", err));
  }

  int root(int b) const { return codegen::root_buffer(prog_, b); }

  void* dev(size_t offset) const { return arena_ + offset; }
  void* buf(int b) const { return arena_ + offset_[static_cast<size_t>(root(b))]; }

  std::vector<int> input_buffers() const {
    std::vector<int> in;
    for (size_t i = 0; i < prog_.buffers.size(); ++i)
      if (prog_.buffers[i].kind == BufferKind::input) in.push_back(static_cast<int>(i));
    return in;
  }

  void load_kernels() {
    std::string source = cprog_.source + kRuntimeKernels;
    std::string arch = ctx_->target();
    std::vector<std::string> options = {"--ptxas-options=-v"};
    CachedImage img = ctx_->cache.load(
        source, fmt::format("{}.{}.b{}", prog_.module_name, prog_.graph_name, prog_.batch), arch, options);
    if (!img.cubin) img.image.push_back('\0');  // PTX is loaded as a C string
    DNNC_CUDA_CHECK(cudaLibraryLoadData(&lib_, img.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    for (const codegen::CudaKernel& k : cprog_.kernels) {
      cudaKernel_t fn = nullptr;
      DNNC_CUDA_CHECK(cudaLibraryGetKernel(&fn, lib_, k.name.c_str()));
      kernels_.push_back(fn);
    }
    DNNC_CUDA_CHECK(cudaLibraryGetKernel(&gather_, lib_, "dnnc_gather"));
    DNNC_CUDA_CHECK(cudaLibraryGetKernel(&record_, lib_, "dnnc_record_loss"));
  }

  // One cudaMalloc laid out by codegen::cuda_device_layout: inputs and params, the activation
  // arena at plan-memory's offsets, update snapshots, the error flag, the resident trainer's
  // counter and ring, the GEMM workspace and the ReLU masks; the sample order after them.
  void plan_arena() {
    const codegen::CudaDeviceLayout l =
        codegen::cuda_device_layout(prog_, cprog_, static_cast<int64_t>(ctx_->gemm.workspace_bytes), kRing);
    for (int64_t o : l.buffer) offset_.push_back(static_cast<size_t>(std::max<int64_t>(o, 0)));
    for (const codegen::CudaDeviceLayout::Update& u : l.updates) {
      update_target_.push_back(u.target);
      update_snapshot_.push_back(u.snapshot < 0 ? SIZE_MAX : static_cast<size_t>(u.snapshot));
      update_home_.push_back(static_cast<size_t>(u.home));
    }
    for (int64_t m : l.masks) mask_offset_.push_back(static_cast<size_t>(m));
    err_offset_ = static_cast<size_t>(l.err);
    counter_offset_ = static_cast<size_t>(l.counter);
    ring_offset_ = static_cast<size_t>(l.ring);
    workspace_offset_ = static_cast<size_t>(l.workspace);
    activation_offset_ = static_cast<size_t>(l.arena_offset);
    arena_bytes_ = static_cast<size_t>(l.bytes);
    DNNC_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&arena_), arena_bytes_ + max_order_bytes()));
    order_offset_ = arena_bytes_;
    DNNC_CUDA_CHECK(cudaMemsetAsync(arena_, 0, arena_bytes_, ctx_->stream));
  }

  // Checking mode: per stream op, the arena buffers whose lifetime ends with it (the last op of
  // the last step of a step time); enqueue fills them with NaN bytes right after it.
  void plan_poison() {
    const std::vector<codegen::BufferLife> life = codegen::buffer_lives(prog_);
    const std::vector<int> times = codegen::step_times(prog_);
    std::vector<int> last_op(prog_.steps.size(), -1);
    for (size_t i = 0; i < stream_ops_.size(); ++i) last_op[static_cast<size_t>(op_step(stream_ops_[i]))] = static_cast<int>(i);
    poison_after_.assign(stream_ops_.size(), {});
    for (size_t s = 0; s < prog_.steps.size(); ++s) {
      if (prog_.steps[s].with_next || last_op[s] < 0) continue;
      for (size_t b = 0; b < prog_.buffers.size(); ++b)
        if (codegen::in_arena(prog_.buffers[b]) && life[b].last == times[s])
          poison_after_[static_cast<size_t>(last_op[s])].push_back(static_cast<int>(b));
    }
  }

  int op_step(const codegen::CudaStreamOp& op) const {
    return op.kind == codegen::CudaStreamOp::Kind::gemm ? op.index : cprog_.kernels[static_cast<size_t>(op.index)].step;
  }

  // A cuBLASLt plan per GEMM step, in program order, with the activation epilogue the printer
  // planned: a drelu asks for its mask only if the relu_aux GEMM that writes it got one.
  void plan_gemms() {
    using codegen::CudaLtAct;
    std::vector<bool> mask_written(cprog_.relu_masks.size(), false);
    std::vector<CudaLtAct> taken(prog_.steps.size(), CudaLtAct::none);
    for (size_t i = 0; i < prog_.steps.size(); ++i) {
      const codegen::Step& s = prog_.steps[i];
      if (s.kind != codegen::Step::Kind::gemm) {
        gemms_.push_back(nullptr);
        continue;
      }
      const codegen::CudaGemmAct& planned = cprog_.step_act[i];
      GemmActRequest req;
      req.act = codegen::cuda_act_request(cprog_, i, mask_written);
      if (planned.mask >= 0) {
        req.mask = dev(mask_offset_[static_cast<size_t>(planned.mask)]);
        req.mask_ld = cprog_.relu_masks[static_cast<size_t>(planned.mask)].ld;
      }
      if (req.act == CudaLtAct::drelu_bgrad) req.bgrad = static_cast<float*>(buf(s.gemm.col_sums));
      auto plan = std::make_unique<GemmPlan>(ctx_->lt, s.gemm, ctx_->gemm, req);
      if (plan->act() == CudaLtAct::relu_aux) mask_written[static_cast<size_t>(planned.mask)] = true;
      taken[i] = plan->act();
      if (ctx_->log_epilogues) log_gemm(i, planned.act, *plan);
      if (ctx_->tune_gemms) tune_gemm(i, *plan);
      gemms_.push_back(std::move(plan));
    }
    // Tuning ran the GEMMs on the (zeroed, not yet uploaded) arena: zero it again.
    if (ctx_->tune_gemms) DNNC_CUDA_CHECK(cudaMemsetAsync(arena_, 0, arena_bytes_, ctx_->stream));
    stream_ops_ = codegen::cuda_launch_sequence(prog_, cprog_, taken);
    launched_.assign(cprog_.kernels.size(), false);
    for (const codegen::CudaStreamOp& op : stream_ops_)
      if (op.kind == codegen::CudaStreamOp::Kind::kernel) launched_[static_cast<size_t>(op.index)] = true;
  }

  // Times the plan's candidate algorithms on the arena's buffers and keeps the fastest; with
  // $DNNC_CUBLASLT_EPILOGUES=log, one stderr line of the times.
  void tune_gemm(size_t step, GemmPlan& plan) {
    const codegen::GemmCall& g = prog_.steps[step].gemm;
    const float* bias = g.bias >= 0 ? static_cast<const float*>(buf(g.bias)) : nullptr;
    std::vector<GemmAlgoTime> times =
        plan.tune(ctx_->stream, static_cast<const float*>(buf(g.a)), static_cast<const float*>(buf(g.b)), bias,
                  static_cast<float*>(buf(g.c)), dev(workspace_offset_), kTuneReps);
    if (!ctx_->log_epilogues) return;
    std::string list;
    for (const GemmAlgoTime& t : times)
      list += t.us < 0 ? fmt::format(" #{} refused", t.rank) : fmt::format(" #{} {:.2f}", t.rank, t.us);
    std::fprintf(stderr, "dnnc: cuda: %s.%s step %zu: GEMM m=%lld n=%lld k=%lld: tuned, chose #%d of %zu (us:%s)\n",
                 prog_.module_name.c_str(), prog_.graph_name.c_str(), step, static_cast<long long>(g.m),
                 static_cast<long long>(g.n), static_cast<long long>(g.k), plan.chosen(), times.size(), list.c_str());
  }

  void log_gemm(size_t step, codegen::CudaLtAct planned, const GemmPlan& plan) const {
    const codegen::GemmCall& g = prog_.steps[step].gemm;
    std::string refused;
    for (codegen::CudaLtAct a : plan.refused())
      refused += fmt::format(", {} refused", codegen::cuda_lt_act_name(a, plan.bias_epilogue()));
    std::string line = fmt::format("dnnc: cuda: {}.{} step {}: GEMM m={} n={} k={}: cuBLASLt epilogue {}{}",
                                   prog_.module_name, prog_.graph_name, step, g.m, g.n, g.k,
                                   codegen::cuda_lt_act_name(plan.act(), plan.bias_epilogue()), refused);
    if (planned != codegen::CudaLtAct::none && plan.act() == codegen::CudaLtAct::none)
      line += " (the generated kernels run instead)";
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  // Room for a sample order of up to 1M samples (the 60k-sample epochs of the benchmarks).
  static size_t max_order_bytes() { return size_t{1} << 23; }

  void upload(const Tensor& t, size_t b) {
    DNNC_CUDA_CHECK(cudaMemcpyAsync(arena_ + offset_[b], t.data(), t.nbytes(), cudaMemcpyHostToDevice, ctx_->stream));
  }

  void upload_params() {
    for (size_t i = 0; i < prog_.buffers.size(); ++i) {
      const Buffer& b = prog_.buffers[i];
      if (b.kind != BufferKind::param) continue;
      const Tensor* t = params_.find(b.value_name);
      if (!t) fail(fmt::format("param '{}' ({}) is not in the param store", b.value_name, type_str(b)));
      check(*t, b, "param");
      upload(*t, i);
    }
  }

  Tensor download(size_t offset, const Buffer& b) const {
    Tensor t(dtype_of(b.dtype), b.shape);
    if (t.nbytes())
      DNNC_CUDA_CHECK(cudaMemcpyAsync(t.data(), arena_ + offset, t.nbytes(), cudaMemcpyDeviceToHost, ctx_->stream));
    return t;
  }

  void launch_kernel(size_t ki) {
    const codegen::CudaKernel& k = cprog_.kernels[ki];
    std::vector<int64_t> scalars = k.scalars;
    std::vector<void*> values;
    for (int b : k.args) values.push_back(buf(b));
    int* err = static_cast<int*>(dev(err_offset_));
    int base = k.error_base;
    std::vector<void*> args;
    for (int64_t& v : scalars) args.push_back(&v);
    for (void*& v : values) args.push_back(&v);
    args.push_back(&err);
    args.push_back(&base);
    DNNC_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[ki]),
                                     dim3(static_cast<unsigned>(k.launch.grid)),
                                     dim3(static_cast<unsigned>(k.launch.block)), args.data(), 0, ctx_->stream));
  }

  // The whole step on the stream: kernels and GEMMs in program order, then the param updates
  // (snapshots of param-valued updates first). `resident`: gather the batch before, record the
  // loss after.
  void enqueue(bool resident) {
    cudaStream_t s = ctx_->stream;
    if (resident) {
      std::vector<int> in = input_buffers();
      for (size_t i = 0; i < in.size(); ++i) {
        const Buffer& b = prog_.buffers[static_cast<size_t>(in[i])];
        int64_t row_words = b.numel() / b.shape[0] * static_cast<int64_t>(elem_bytes(b.dtype)) / 4;
        int64_t batch = b.shape[0];
        void* src = dataset_[i];
        void* dst = buf(in[i]);
        void* order = dev(order_offset_);
        void* counter = dev(counter_offset_);
        int64_t samples = samples_;
        void* args[] = {&src, &dst, &order, &counter, &samples, &batch, &row_words};
        int64_t blocks = std::clamp<int64_t>((batch * row_words + 255) / 256, 1, 4096);
        DNNC_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(gather_), dim3(static_cast<unsigned>(blocks)),
                                         dim3(256), args, 0, s));
      }
    }
    // Checking mode: the whole activation arena starts as NaN bytes.
    if (ctx_->poison_arena && prog_.arena.bytes > 0)
      DNNC_CUDA_CHECK(cudaMemsetAsync(dev(activation_offset_), 0xFF, static_cast<size_t>(prog_.arena.bytes), s));
    // Kernels and GEMMs in program order; a GEMM's epilogue and column-sum kernels only where
    // its cuBLASLt epilogue does not do their work (codegen::cuda_launch_sequence).
    for (size_t i = 0; i < stream_ops_.size(); ++i) {
      const codegen::CudaStreamOp& op = stream_ops_[i];
      if (op.kind == codegen::CudaStreamOp::Kind::kernel) {
        launch_kernel(static_cast<size_t>(op.index));
      } else {
        const codegen::GemmCall& g = prog_.steps[static_cast<size_t>(op.index)].gemm;
        const float* bias = g.bias >= 0 ? static_cast<const float*>(buf(g.bias)) : nullptr;
        gemms_[static_cast<size_t>(op.index)]->run(s, static_cast<const float*>(buf(g.a)),
                                                   static_cast<const float*>(buf(g.b)), bias,
                                                   static_cast<float*>(buf(g.c)), dev(workspace_offset_));
      }
      if (ctx_->poison_arena)
        for (int b : poison_after_[i])
          DNNC_CUDA_CHECK(cudaMemsetAsync(buf(b), 0xFF,
                                          static_cast<size_t>(prog_.buffers[static_cast<size_t>(b)].bytes()), s));
    }
    auto bytes = [&](int b) { return static_cast<size_t>(prog_.buffers[static_cast<size_t>(b)].numel()) * 4; };
    for (size_t u = 0; u < prog_.updates.size(); ++u) {
      int src = prog_.updates[u].second;
      if (update_snapshot_[u] != SIZE_MAX)
        DNNC_CUDA_CHECK(cudaMemcpyAsync(dev(update_snapshot_[u]), buf(src),
                                        bytes(src) * elem_bytes(prog_.buffers[static_cast<size_t>(src)].dtype) / 4,
                                        cudaMemcpyDeviceToDevice, s));
    }
    for (size_t u = 0; u < prog_.updates.size(); ++u) {
      int src = prog_.updates[u].second;
      if (update_target_[u] < 0) continue;
      const void* from = update_snapshot_[u] != SIZE_MAX ? dev(update_snapshot_[u]) : buf(src);
      size_t n = bytes(src) * elem_bytes(prog_.buffers[static_cast<size_t>(src)].dtype) / 4;
      if (from != buf(update_target_[u]))  // (an in-place update needs no copy)
        DNNC_CUDA_CHECK(cudaMemcpyAsync(buf(update_target_[u]), from, n, cudaMemcpyDeviceToDevice, s));
    }
    if (resident) {
      void* loss = buf(prog_.outputs[0]);
      void* ring = dev(ring_offset_);
      void* counter = dev(counter_offset_);
      int64_t ring_size = kRing;
      void* args[] = {&loss, &ring, &counter, &ring_size};
      DNNC_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(record_), dim3(1), dim3(32), args, 0, s));
    }
  }

  cudaGraphExec_t capture(bool resident) {
    cudaStream_t s = ctx_->stream;
    return capture_graph([&] {
      // `run` clears the error flag in its graph; the resident graph leaves it to `train`.
      if (!resident) DNNC_CUDA_CHECK(cudaMemsetAsync(dev(err_offset_), 0, sizeof(int), s));
      enqueue(resident);
    });
  }

  // What `enqueue_work` puts on the stream, captured and instantiated as one graph.
  template <class F>
  cudaGraphExec_t capture_graph(F&& enqueue_work) {
    cudaStream_t s = ctx_->stream;
    cudaGraph_t graph = nullptr;
    DNNC_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_work();
    } catch (...) {
      cudaStreamEndCapture(s, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    DNNC_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    DNNC_CUDA_CHECK(e);
    return exec;
  }

  std::shared_ptr<Context> ctx_;
  codegen::Program prog_;
  codegen::CudaProgram cprog_;
  ParamStore& params_;
  std::vector<std::string> errors_;
  cudaLibrary_t lib_ = nullptr;
  std::vector<cudaKernel_t> kernels_;
  cudaKernel_t gather_ = nullptr, record_ = nullptr;
  std::vector<std::unique_ptr<GemmPlan>> gemms_;
  std::vector<codegen::CudaStreamOp> stream_ops_;  // what enqueue launches, in order
  std::vector<bool> launched_;                     // per kernel: in stream_ops_
  char* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<size_t> offset_, mask_offset_;
  std::vector<int> update_target_;
  std::vector<size_t> update_snapshot_, update_home_;
  size_t err_offset_ = 0, counter_offset_ = 0, ring_offset_ = 0, workspace_offset_ = 0, order_offset_ = 0;
  size_t activation_offset_ = 0;               // the activation arena (Program::arena) in the allocation
  std::vector<std::vector<int>> poison_after_;  // checking mode: per stream op, the buffers that die with it
  cudaGraphExec_t graph_ = nullptr, resident_graph_ = nullptr;
  std::vector<void*> dataset_;
  int64_t samples_ = -1;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& o) : ctx_(std::make_shared<Context>(o)) {}
  std::string name() const override { return "cuda"; }

  std::unique_ptr<Executable> compile(const ir::Module& module, const std::string& graph, ParamStore& params,
                                      int64_t batch) override {
    const ir::Graph* g = module.graph(graph);
    if (!g) throw std::runtime_error(fmt::format("cuda backend: module {} has no graph '{}'", module.name, graph));
    codegen::Program prog = codegen::lower_graph(module, *g, batch, codegen::cuda_lower_options());
    return std::make_unique<CudaExecutable>(ctx_, std::move(prog), params);
  }

 private:
  std::shared_ptr<Context> ctx_;
};

}  // namespace

}  // namespace dnnc::runtime::cuda

extern "C" {

__attribute__((visibility("default"))) int dnnc_cuda_plugin_abi(void) { return DNNC_CUDA_PLUGIN_ABI; }

__attribute__((visibility("default"))) bool dnnc_cuda_probe(std::string* why) {
  int count = 0;  // cudaGetDeviceCount leaves it unwritten on failure
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    // The two common cases in a few words (the device line shows it on every command of a
    // machine without a GPU); anything else in full.
    if (e == cudaErrorInsufficientDriver)
      *why = "no usable NVIDIA driver (cudaErrorInsufficientDriver)";
    else if (e == cudaErrorNoDevice)
      *why = "no CUDA device found";
    else
      *why = "cudaGetDeviceCount failed: " + dnnc::runtime::cuda::cuda_error_text(e);
    return false;
  }
  if (count < 1) {
    *why = "no CUDA device found";
    return false;
  }
  return true;
}

__attribute__((visibility("default"))) dnnc::runtime::Backend* dnnc_cuda_create(
    const dnnc::runtime::cuda::CudaOptions* options, std::string* error) {
  try {
    return new dnnc::runtime::cuda::CudaBackend(options ? *options : dnnc::runtime::cuda::CudaOptions{});
  } catch (const std::exception& ex) {
    *error = ex.what();
    return nullptr;
  }
}

__attribute__((visibility("default"))) dnnc::runtime::cuda::KernelProfiler* dnnc_cuda_profiler(
    dnnc::runtime::Executable* exe) {
  return dynamic_cast<dnnc::runtime::cuda::CudaExecutable*>(exe);
}

__attribute__((visibility("default"))) dnnc::runtime::cuda::ResidentTrainer* dnnc_cuda_resident(
    dnnc::runtime::Executable* exe) {
  auto* e = dynamic_cast<dnnc::runtime::cuda::CudaExecutable*>(exe);
  return e;
}
}
