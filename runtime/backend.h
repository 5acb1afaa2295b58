// The Backend interface: compile one graph of a module for a device and run it. Backends:
// `reference` (the interpreter, the oracle), `cpu` (generated C++ JIT), `cuda` (plugin).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace dnnc::runtime {

namespace reference {
struct ParamStore;  // runtime/reference/interpreter.h: module params/buffers/state by name
}
using reference::ParamStore;

/// One compiled graph, bound to the ParamStore it reads and updates.
class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs the graph once on `inputs` (by graph input name; shapes must match the graph's
  /// types with the batch dim bound), returns the graph's outputs and applies its updates to
  /// the params. Throws std::runtime_error naming the input on a dtype/shape mismatch.
  virtual std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
  /// Bytes of the one activation arena this executable allocated for every intermediate and
  /// scratch buffer (codegen's plan-memory, Program::arena); 0 for the reference interpreter,
  /// which keeps each value in a tensor of its own.
  virtual int64_t arena_bytes() const { return 0; }
};

/// One graph at one batch size, for Backend::compile_all.
struct CompileRequest {
  std::string graph;
  int64_t batch = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Compiles graph `graph` of `module` for batch size `batch`. The executable keeps
  /// references to `module` and `params`, which must outlive it. Throws std::runtime_error
  /// (with the compiler's log for JIT backends) on failure.
  virtual std::unique_ptr<Executable> compile(const ir::Module& module, const std::string& graph,
                                              ParamStore& params, int64_t batch) = 0;
  /// compile() of each request, in order. JIT backends run their compilers concurrently (the
  /// cpu backend: one compiler per core), so a trainer that needs its train step and its
  /// inference graph pays for the slower of the two, not their sum. Throws what compile throws.
  virtual std::vector<std::unique_ptr<Executable>> compile_all(const ir::Module& module,
                                                               const std::vector<CompileRequest>& requests,
                                                               ParamStore& params) {
    std::vector<std::unique_ptr<Executable>> out;
    for (const CompileRequest& r : requests) out.push_back(compile(module, r.graph, params, r.batch));
    return out;
  }
};

/// The reference interpreter as a Backend (never fails to construct).
std::unique_ptr<Backend> make_reference_backend();

}  // namespace dnnc::runtime
