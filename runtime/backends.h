// The backends this binary knows, by name, and the choice behind `--device auto|cpu|cuda|reference`:
// a small registry of factories, filled in one explicit function (no static registration).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/plugin_api.h"

namespace dnnc::runtime {

/// Settings handed to the backend being created (from `dnnc train --tf32` etc.). Each backend
/// reads the fields that concern it and ignores the rest; no backend reads the environment.
struct BackendOptions {
  bool tf32 = false;                      // cuda: GEMMs in TF32 (CudaOptions::tf32)
  std::string cublaslt_epilogues = "on";  // cuda: on, off or log (CudaOptions::epilogues)
  std::string gemm_algo = "heuristic";    // cuda: heuristic or tune (CudaOptions::gemm_algo)
  bool poison_arena = false;              // cpu, cuda: the arena checking mode (CpuOptions::poison_arena)
};

/// `options` with the fields the environment sets: $DNNC_CUBLASLT_EPILOGUES (on|off|log),
/// $DNNC_CUBLASLT_ALGO (heuristic|tune) and $DNNC_POISON_ARENA (0|1), for the front ends (the CLI, the GPU benchmark) that
/// document them. Throws std::invalid_argument naming the variable for any other value.
BackendOptions backend_options_from_env(BackendOptions options);

/// Throws std::invalid_argument naming the field if an option has a value no backend knows.
void check_backend_options(const BackendOptions& options);

/// The cuda backend's options for `options` (checked as check_backend_options does).
cuda::CudaOptions cuda_options(const BackendOptions& options);

struct BackendFactory {
  std::string name;  // the --device name: "reference", "cpu", "cuda"
  /// Empty if the backend can run here; otherwise why not (e.g. "no CUDA device found").
  std::function<std::string()> unavailable_reason;
  /// Creates the backend with `options`. May throw std::runtime_error (then selection reports it).
  std::function<std::unique_ptr<Backend>(const BackendOptions&)> create;
};

class BackendRegistry {
 public:
  /// Asserts that the name is new.
  void add(BackendFactory factory);
  /// nullptr if no backend of that name is registered.
  const BackendFactory* find(const std::string& name) const;
  const std::vector<BackendFactory>& all() const { return factories_; }

 private:
  std::vector<BackendFactory> factories_;
};

/// Registers every backend built into this binary. Today that is `reference`; the `cpu`
/// (JIT) and `cuda` (plugin) backends register here when they exist, each with its own
/// availability check.
void register_builtin_backends(BackendRegistry& registry);

/// The device names `--device` accepts, in `auto`'s order of preference: cuda, cpu, reference.
const std::vector<std::string>& device_preference();

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  /// One line: "device: cpu (auto: cuda: no CUDA plugin in this build)"; for cuda it ends with
  /// the GEMM mode: "device: cuda (as requested), TF32 GEMMs" or ", exact fp32 GEMMs".
  std::string message;
};

/// Picks the backend for `device` and creates it with `options`: "auto" takes the first
/// available of device_preference(); a named device must be registered and available. Throws
/// std::invalid_argument for an unknown name (listing the known ones) and std::runtime_error
/// for a known device that is not available here, saying why (e.g. "device 'cuda' is not
/// available: no CUDA plugin in this build").
BackendChoice select_backend(const BackendRegistry& registry, const std::string& device,
                             const BackendOptions& options = {});

}  // namespace dnnc::runtime
