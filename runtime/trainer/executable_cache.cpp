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

void ExecutableCache::prepare(const std::vector<CompileRequest>& requests) {
  std::vector<CompileRequest> missing;
  for (const CompileRequest& r : requests) {
    auto key = std::make_pair(r.graph, r.batch);
    bool seen = compiled_.count(key) > 0;
    for (const CompileRequest& m : missing) seen = seen || (m.graph == r.graph && m.batch == r.batch);
    if (!seen) missing.push_back(r);
  }
  if (missing.empty()) return;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Executable>> exes = backend_.compile_all(module_, missing, params_);
  compile_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < missing.size(); ++i)
    compiled_.emplace(std::make_pair(missing[i].graph, missing[i].batch), std::move(exes.at(i)));
}

}  // namespace dnnc::runtime
