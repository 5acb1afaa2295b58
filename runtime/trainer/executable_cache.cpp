// Compiled graphs by (graph, batch size) (runtime/trainer/executable_cache.h).
#include "runtime/trainer/executable_cache.h"

#include <chrono>

namespace dnnc::runtime {

Executable& ExecutableCache::get(const std::string& graph, int64_t batch) {
  auto key = std::make_pair(graph, batch);
  auto it = compiled_.find(key);
  if (it != compiled_.end()) return *it->second;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Executable> exe = backend_.compile(module_, graph, params_, batch);
  compile_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return *compiled_.emplace(key, std::move(exe)).first->second;
}

}  // namespace dnnc::runtime
