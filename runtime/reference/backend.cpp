// The reference interpreter behind the Backend interface: "compiling" binds a graph of a
// module to a ParamStore and a batch size; running calls run_reference.
#include "runtime/backend.h"

#include <fmt/format.h>

#include <stdexcept>

#include "runtime/reference/interpreter.h"

namespace dnnc::runtime {
namespace {

class ReferenceExecutable final : public Executable {
 public:
  ReferenceExecutable(const ir::Module& m, const ir::Graph& g, ParamStore& params, int64_t batch)
      : m_(m), g_(g), params_(params), batch_(batch) {}

  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override {
    // The interpreter binds the batch from the inputs; hold it to the size compiled for.
    for (ir::ValueId id : g_.inputs) {
      const ir::Value& v = g_.value(id);
      auto it = inputs.find(v.name);
      if (it == inputs.end()) continue;  // run_reference names the missing input
      for (size_t d = 0; d < v.type.shape.size() && d < it->second.rank(); ++d)
        if (v.type.shape[d] == ir::kBatch && it->second.dim(d) != batch_)
          throw std::runtime_error(fmt::format("reference {}: input '{}' has batch size {}, compiled for {}", g_.name,
                                               v.name, it->second.dim(d), batch_));
    }
    return reference::run_reference(m_, g_, inputs, params_);
  }

 private:
  const ir::Module& m_;
  const ir::Graph& g_;
  ParamStore& params_;
  int64_t batch_;
};

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }

  std::unique_ptr<Executable> compile(const ir::Module& module, const std::string& graph, ParamStore& params,
                                      int64_t batch) override {
    const ir::Graph* g = module.graph(graph);
    if (!g) throw std::runtime_error(fmt::format("reference: module {} has no graph '{}'", module.name, graph));
    if (batch < 1) throw std::runtime_error(fmt::format("reference: batch size must be >= 1, got {}", batch));
    return std::make_unique<ReferenceExecutable>(module, *g, params, batch);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace dnnc::runtime
