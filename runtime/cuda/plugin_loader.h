// The core's side of the cuda plugin: finds libdnnc_cuda.so (in $DNNC_PLUGIN_DIR, else next
// to the running executable), dlopens it once, checks its ABI and asks it whether a device can
// be used. No CUDA headers or libraries here: the core never links CUDA.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/plugin_api.h"

namespace dnnc::runtime::cuda {

/// The directories searched for the plugin, in order.
std::vector<std::string> plugin_search_dirs();

/// Empty if the cuda backend can run here; else one line saying why: no plugin found (naming
/// the directories searched), dlopen's error (e.g. a missing libcudart.so.13), an ABI mismatch,
/// or the plugin's own reason ("cudaGetDeviceCount failed: cudaErrorInsufficientDriver (35):
/// ..."). Loads the plugin on first use; the handle is never closed.
std::string cuda_backend_unavailable_reason();

/// Creates the cuda backend through the plugin. Throws std::runtime_error with the reason above
/// if it is unavailable, or the plugin's error if creation fails.
std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options = {});

/// The address of an exported plugin symbol, or nullptr (plugin not loaded or no such symbol).
void* cuda_plugin_symbol(const char* name);

/// The plugin's ResidentTrainer view of `exe` (through `dnnc_cuda_resident`), or nullptr: the
/// plugin was never loaded in this process (so no executable can come from it; this never
/// loads it), it has no such symbol, or `exe` is not a train-step executable of its backend.
ResidentTrainer* resident_trainer(Executable& exe);

/// The plugin's KernelProfiler view of `exe` (through `dnnc_cuda_profiler`), or nullptr, as
/// resident_trainer.
KernelProfiler* kernel_profiler(Executable& exe);

}  // namespace dnnc::runtime::cuda
