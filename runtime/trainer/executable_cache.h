// Compiled graphs by (graph, batch size): an Executable is compiled for one batch size, so a
// run keeps one per size it meets (the full batch and the last, partial one; eval batches).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend.h"

namespace dnnc::runtime {

class ExecutableCache {
 public:
  /// `module`, `params` and `backend` must outlive the cache.
  ExecutableCache(Backend& backend, const ir::Module& module, ParamStore& params)
      : backend_(backend), module_(module), params_(params) {}

  /// The executable of `graph` for `batch`, compiled on first use. Throws what
  /// Backend::compile throws.
  Executable& get(const std::string& graph, int64_t batch);

  /// Compiles those of `requests` not compiled yet, together (Backend::compile_all: the cpu
  /// backend runs their compilers concurrently). Throws what Backend::compile throws.
  void prepare(const std::vector<CompileRequest>& requests);

  /// Seconds spent in Backend::compile so far.
  double compile_seconds() const { return compile_seconds_; }
  Backend& backend() { return backend_; }
  const ir::Module& module() const { return module_; }
  ParamStore& params() { return params_; }

 private:
  Backend& backend_;
  const ir::Module& module_;
  ParamStore& params_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<Executable>> compiled_;
  double compile_seconds_ = 0;
};

}  // namespace dnnc::runtime
