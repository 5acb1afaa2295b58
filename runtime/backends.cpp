// The backend registry and `--device` selection (runtime/backends.h).
#include "runtime/backends.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "ir/check.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cuda/plugin_loader.h"

namespace dnnc::runtime {

void BackendRegistry::add(BackendFactory factory) {
  DNNC_CHECK(!find(factory.name), "backend registered twice");
  factories_.push_back(std::move(factory));
}

const BackendFactory* BackendRegistry::find(const std::string& name) const {
  for (const auto& f : factories_)
    if (f.name == name) return &f;
  return nullptr;
}

void register_builtin_backends(BackendRegistry& registry) {
  registry.add(
      {"reference", [] { return std::string(); }, [](const BackendOptions&) { return make_reference_backend(); }});
  registry.add({"cpu", [] { return cpu::cpu_backend_unavailable_reason(); },
                [](const BackendOptions& o) {
                  cpu::CpuOptions co;
                  co.poison_arena = o.poison_arena;
                  return std::make_unique<cpu::CpuBackend>(co);
                }});
  // The cuda plugin (libdnnc_cuda.so), dlopened on first use; see runtime/cuda/plugin_loader.h.
  registry.add({"cuda", [] { return cuda::cuda_backend_unavailable_reason(); },
                [](const BackendOptions& o) { return cuda::make_cuda_backend(cuda_options(o)); }});
}

cuda::CudaOptions cuda_options(const BackendOptions& o) {
  check_backend_options(o);
  cuda::CudaOptions co;
  co.tf32 = o.tf32;
  co.epilogues = o.cublaslt_epilogues == "off"   ? cuda::CudaOptions::Epilogues::off
                 : o.cublaslt_epilogues == "log" ? cuda::CudaOptions::Epilogues::log
                                                 : cuda::CudaOptions::Epilogues::on;
  co.gemm_algo = o.gemm_algo == "tune" ? cuda::CudaOptions::GemmAlgo::tune : cuda::CudaOptions::GemmAlgo::heuristic;
  co.poison_arena = o.poison_arena;
  return co;
}

void check_backend_options(const BackendOptions& o) {
  if (o.cublaslt_epilogues != "on" && o.cublaslt_epilogues != "off" && o.cublaslt_epilogues != "log")
    throw std::invalid_argument(fmt::format("cuBLASLt epilogues '{}': expected on, off or log", o.cublaslt_epilogues));
  if (o.gemm_algo != "heuristic" && o.gemm_algo != "tune")
    throw std::invalid_argument(fmt::format("GEMM algorithm choice '{}': expected heuristic or tune", o.gemm_algo));
}

BackendOptions backend_options_from_env(BackendOptions options) {
  if (const char* e = std::getenv("DNNC_CUBLASLT_EPILOGUES"); e && *e) {
    options.cublaslt_epilogues = e;
    if (options.cublaslt_epilogues != "on" && options.cublaslt_epilogues != "off" &&
        options.cublaslt_epilogues != "log")
      throw std::invalid_argument(fmt::format("DNNC_CUBLASLT_EPILOGUES is '{}'; expected on, off or log", e));
  }
  if (const char* e = std::getenv("DNNC_CUBLASLT_ALGO"); e && *e) {
    options.gemm_algo = e;
    if (options.gemm_algo != "heuristic" && options.gemm_algo != "tune")
      throw std::invalid_argument(fmt::format("DNNC_CUBLASLT_ALGO is '{}'; expected heuristic or tune", e));
  }
  if (const char* e = std::getenv("DNNC_POISON_ARENA"); e && *e) {
    const std::string v = e;
    if (v != "0" && v != "1") throw std::invalid_argument(fmt::format("DNNC_POISON_ARENA is '{}'; expected 0 or 1", v));
    options.poison_arena = v == "1";
  }
  return options;
}

const std::vector<std::string>& device_preference() {
  static const std::vector<std::string> order = {"cuda", "cpu", "reference"};
  return order;
}

namespace {

// Why `name` cannot be used here, or "" if it can.
std::string why_unavailable(const BackendRegistry& registry, const std::string& name) {
  const BackendFactory* f = registry.find(name);
  if (!f) return name == "cuda" ? "no CUDA plugin in this build" : fmt::format("no {} backend in this build", name);
  return f->unavailable_reason ? f->unavailable_reason() : std::string();
}

std::unique_ptr<Backend> create(const BackendFactory& f, const BackendOptions& options) {
  std::unique_ptr<Backend> b = f.create(options);
  if (!b) throw std::runtime_error(fmt::format("backend '{}' could not be created", f.name));
  return b;
}

// The device line: "device: NAME (WHY)", plus the GEMM mode for cuda, the one backend whose
// numerics an option changes.
std::string device_line(const std::string& name, const std::string& why, const BackendOptions& options) {
  std::string line = fmt::format("device: {} ({})", name, why);
  if (name == "cuda") line += options.tf32 ? ", TF32 GEMMs" : ", exact fp32 GEMMs";
  return line;
}

}  // namespace

BackendChoice select_backend(const BackendRegistry& registry, const std::string& device,
                             const BackendOptions& options) {
  const auto& known = device_preference();
  if (device == "auto") {
    std::vector<std::string> skipped;
    for (const std::string& name : known) {
      std::string why = why_unavailable(registry, name);
      if (why.empty()) {
        std::string because = skipped.empty() ? "the preferred one" : fmt::format("{}", fmt::join(skipped, "; "));
        return {create(*registry.find(name), options), device_line(name, "auto: " + because, options)};
      }
      skipped.push_back(name + ": " + why);
    }
    throw std::runtime_error(fmt::format("no device is available ({})", fmt::join(skipped, "; ")));
  }
  if (std::find(known.begin(), known.end(), device) == known.end())
    throw std::invalid_argument(fmt::format("unknown device '{}' (expected auto, {})", device, fmt::join(known, ", ")));
  std::string why = why_unavailable(registry, device);
  if (!why.empty()) throw std::runtime_error(fmt::format("device '{}' is not available: {}", device, why));
  return {create(*registry.find(device), options), device_line(device, "as requested", options)};
}

}  // namespace dnnc::runtime
