// Finding, loading and probing the cuda plugin (plugin_loader.h).
#include "runtime/cuda/plugin_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "runtime/cuda/plugin_api.h"

namespace dnnc::runtime::cuda {

namespace {

constexpr const char* kPluginFile = "libdnnc_cuda.so";

struct Plugin {
  void* handle = nullptr;
  std::string path;
  std::string error;  // why it could not be loaded; empty if loaded
  dnnc_cuda_probe_fn probe = nullptr;
  dnnc_cuda_create_fn create = nullptr;
};

// Set once plugin() has tried to load the plugin (whether or not it succeeded).
std::atomic<bool> g_load_tried{false};

// The process's one plugin, loaded on first use (a dlopen'ed library is process-wide state).
Plugin& plugin() {
  static Plugin p;
  static std::once_flag once;
  std::call_once(once, [] {
    g_load_tried = true;
    std::vector<std::string> dirs = plugin_search_dirs();
    for (const std::string& dir : dirs) {
      std::string path = (std::filesystem::path(dir) / kPluginFile).string();
      if (access(path.c_str(), R_OK) != 0) continue;
      p.path = path;
      p.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!p.handle) {
        const char* e = dlerror();
        p.error = fmt::format("cannot load {}: {}", path, e ? e : "unknown dlopen error");
        return;
      }
      auto abi = reinterpret_cast<dnnc_cuda_abi_fn>(dlsym(p.handle, "dnnc_cuda_plugin_abi"));
      p.probe = reinterpret_cast<dnnc_cuda_probe_fn>(dlsym(p.handle, "dnnc_cuda_probe"));
      p.create = reinterpret_cast<dnnc_cuda_create_fn>(dlsym(p.handle, "dnnc_cuda_create"));
      if (!abi || !p.probe || !p.create) {
        p.error = fmt::format("{} is not a dnnc cuda plugin (missing dnnc_cuda_* symbols)", path);
      } else if (abi() != DNNC_CUDA_PLUGIN_ABI) {
        p.error = fmt::format("{} has plugin ABI {}, this dnnc needs {} (rebuild the plugin)", path, abi(),
                              DNNC_CUDA_PLUGIN_ABI);
      }
      return;
    }
    p.error = fmt::format("no CUDA plugin ({} not found in {})", kPluginFile, fmt::join(dirs, ", "));
  });
  return p;
}

}  // namespace

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("DNNC_PLUGIN_DIR"); d && *d) dirs.push_back(d);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    dirs.push_back(std::filesystem::path(exe).parent_path().string());
  }
  return dirs;
}

std::string cuda_backend_unavailable_reason() {
  Plugin& p = plugin();
  if (!p.error.empty()) return p.error;
  std::string why;
  if (p.probe(&why)) return "";
  return why.empty() ? "the plugin found no usable CUDA device" : why;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options) {
  std::string why = cuda_backend_unavailable_reason();
  if (!why.empty()) throw std::runtime_error("cuda backend: " + why);
  std::string error;
  Backend* b = plugin().create(&options, &error);
  if (!b) throw std::runtime_error(fmt::format("cuda backend: {}", error.empty() ? "creation failed" : error));
  return std::unique_ptr<Backend>(b);
}

void* cuda_plugin_symbol(const char* name) {
  Plugin& p = plugin();
  return p.handle && p.error.empty() ? dlsym(p.handle, name) : nullptr;
}

ResidentTrainer* resident_trainer(Executable& exe) {
  if (!g_load_tried) return nullptr;  // no plugin backend exists, so `exe` is not from one
  auto fn = reinterpret_cast<dnnc_cuda_resident_fn>(cuda_plugin_symbol("dnnc_cuda_resident"));
  return fn ? fn(&exe) : nullptr;
}

KernelProfiler* kernel_profiler(Executable& exe) {
  if (!g_load_tried) return nullptr;
  auto fn = reinterpret_cast<dnnc_cuda_profiler_fn>(cuda_plugin_symbol("dnnc_cuda_profiler"));
  return fn ? fn(&exe) : nullptr;
}

}  // namespace dnnc::runtime::cuda
