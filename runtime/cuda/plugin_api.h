// The C interface between the dnnc core and the cuda plugin (libdnnc_cuda.so): the core
// dlopens the plugin and looks these symbols up; nothing else crosses the boundary by name.
// Both sides are built from the same tree with the same compiler (the Backend they exchange is
// a C++ object).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dnnc::runtime {
class Backend;
class Executable;
class Tensor;
}  // namespace dnnc::runtime

/// Bumped when anything below changes; the core refuses a plugin with another value.
#define DNNC_CUDA_PLUGIN_ABI 4

namespace dnnc::runtime::cuda {

/// How the cuda backend is made (runtime::BackendOptions carries the same choices). The
/// backend reads nothing else: no environment variable, no global.
struct CudaOptions {
  bool tf32 = false;      // GEMMs in TF32 (CUBLAS_COMPUTE_32F_FAST_TF32, ~1e-3 relative error)
  std::string cache_dir;  // kernel cache directory; empty: the default (runtime/cpu/jit_cache.h)
  /// cuBLASLt activation epilogues (RELU_AUX_BIAS, DRELU_BGRAD, ...): on, off (every activation
  /// runs as its generated kernel), or log (on, and one stderr line per GEMM plan).
  enum class Epilogues : uint8_t { on, off, log };
  Epilogues epilogues = Epilogues::on;
  /// GEMM algorithms: the heuristic's first pick (the same every run), or tune: time up to 8
  /// of its candidates before the first step and keep the fastest.
  enum class GemmAlgo : uint8_t { heuristic, tune };
  GemmAlgo gemm_algo = GemmAlgo::heuristic;
  /// The arena checking mode (as the cpu backend's CpuOptions::poison_arena): the activation
  /// arena is set to NaN bytes at the start of each step and each buffer when its life ends.
  bool poison_arena = false;
};

}  // namespace dnnc::runtime::cuda

extern "C" {
typedef int (*dnnc_cuda_abi_fn)(void);
/// True if a CUDA device can be used; else false with one line saying why in *why.
typedef bool (*dnnc_cuda_probe_fn)(std::string* why);
/// A new CudaBackend; nullptr on failure with the reason in *error.
typedef dnnc::runtime::Backend* (*dnnc_cuda_create_fn)(const dnnc::runtime::cuda::CudaOptions* options,
                                                       std::string* error);
}

namespace dnnc::runtime::cuda {

/// Training with the dataset resident on the device (plugin-only extension of an Executable
/// compiled from a `train_step` graph by the cuda backend). Obtained through the plugin's
/// `dnnc_cuda_resident` symbol.
class ResidentTrainer {
 public:
  virtual ~ResidentTrainer() = default;
  /// Copies the whole dataset to the device once: `inputs` in graph input order, each with the
  /// sample dim first (e.g. image f32[60000,1,28,28], label i64[60000]).
  virtual void load_dataset(const std::vector<Tensor>& inputs) = 0;
  /// Runs `steps` train steps on consecutive batches (batch i reads samples of `order`
  /// [i*B, (i+1)*B) mod the dataset, `order` a permutation uploaded once per call), each step one
  /// CUDA graph replay; the loss of every step goes to a device ring; the host reads it every
  /// `metrics_every` steps (and at the end). Returns the per-step losses. Params stay on the
  /// device; sync_params() writes them back to the ParamStore. Every call starts afresh: it
  /// uploads the params (and optimizer state) from the ParamStore and begins at `order[0]`, so
  /// a caller that trains in several calls calls sync_params() in between and rotates `order`
  /// to where the previous call stopped.
  virtual std::vector<float> train(const std::vector<int64_t>& order, int64_t steps, int64_t metrics_every) = 0;
  virtual void sync_params() = 0;
};

/// One generated kernel's cost, measured on its own (KernelProfiler).
struct KernelTime {
  std::string name;
  std::string mapping;    // codegen::cuda_mapping_name
  int64_t min_bytes = 0;  // codegen::CudaKernel::min_bytes
  bool launched = true;   // false: a cuBLASLt epilogue does its work, the step does not launch it
  bool failed = false;    // the kernel set the error flag while timed (it returned early): unreliable
  double us = 0;          // median time per launch
};

/// Per-kernel timing of an Executable made by the plugin's backend (through the plugin's
/// `dnnc_cuda_profiler`), for the bandwidth-floor check of dnnc_gpu_bench --kernels.
class KernelProfiler {
 public:
  virtual ~KernelProfiler() = default;
  /// Times each generated kernel alone: a CUDA graph of `launches` back-to-back launches of it,
  /// replayed `reps` times; the median replay divided by `launches`. Run the executable first
  /// so its buffers hold real values. Kernels that update in place run many times, so profile a
  /// throwaway executable: its params and outputs are garbage afterwards.
  virtual std::vector<KernelTime> profile_kernels(int launches, int reps) = 0;
  /// The device's achieved memory bandwidth in bytes/s: a device-to-device copy of `bytes`
  /// (read + written), median of a few.
  virtual double copy_bandwidth(size_t bytes) = 0;
};

}  // namespace dnnc::runtime::cuda

extern "C" {
/// The ResidentTrainer view of an Executable made by the plugin's backend (nullptr if it was
/// not compiled from a graph with exactly one loss output).
typedef dnnc::runtime::cuda::ResidentTrainer* (*dnnc_cuda_resident_fn)(dnnc::runtime::Executable* exe);
/// The KernelProfiler view of an Executable made by the plugin's backend (nullptr otherwise).
typedef dnnc::runtime::cuda::KernelProfiler* (*dnnc_cuda_profiler_fn)(dnnc::runtime::Executable* exe);
}
