// passes::compile (compile.h).
#include "passes/compile.h"

namespace dnnc::passes {

void compile(ir::Module& m, const CompileOptions& options) {
  PassRegistry registry;
  register_all_passes(registry,
                      {.target = options.target, .layout_report = options.layout_report, .layout = options.layout});
  run_pipeline(m, registry, options.pipeline);
}

std::vector<std::string> pass_names() {
  PassRegistry registry;
  register_all_passes(registry);
  std::vector<std::string> out;
  for (const PassInfo& p : registry.all()) out.push_back(p.name);
  return out;
}

}  // namespace dnnc::passes
