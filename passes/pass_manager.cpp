// The pass registry and pipeline runner.
#include "passes/pass_manager.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ir/check.h"
#include "ir/verifier.h"

namespace dnnc::passes {

void PassRegistry::add(PassInfo info) {
  DNNC_CHECK(!find(info.name), "pass registered twice");
  passes_.push_back(std::move(info));
}

const PassInfo* PassRegistry::find(const std::string& name) const {
  for (const auto& p : passes_)
    if (p.name == name) return &p;
  return nullptr;
}

static std::string known_names(const PassRegistry& r) {
  std::string s;
  for (const auto& p : r.all()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

static void require_known(const PassRegistry& r, const std::string& name, const char* what) {
  if (!r.find(name))
    throw std::invalid_argument(fmt::format("unknown pass '{}' in {} (known passes: {})", name, what, known_names(r)));
}

void run_pipeline(ir::Module& module, const PassRegistry& registry, const PipelineOptions& options) {
  std::vector<std::string> order = options.passes.empty() ? default_pipeline() : options.passes;
  for (const auto& n : order) require_known(registry, n, "--passes");
  for (const auto& n : options.disabled) require_known(registry, n, "--disable-pass");
  if (!options.stop_after.empty()) {
    require_known(registry, options.stop_after, "--after");
    bool in_pipeline = false;
    for (const auto& n : order) in_pipeline |= n == options.stop_after;
    if (!in_pipeline)
      throw std::invalid_argument(
          fmt::format("pass '{}' is not in the pipeline ({})", options.stop_after, fmt::join(order, ",")));
  }
  // Expensive-check builds verify around every pass, whatever the caller asked.
  const bool verify = options.verify_each || kExpensiveChecks;
  if (verify) ir::verify(module);
  for (const auto& name : order) {
    if (options.disabled.count(name)) continue;
    const PassInfo* pass = registry.find(name);
    bool changed = false;
    {
      CheckScope scope("pass " + name);
      changed = pass->run(module);
    }
    if (verify) {
      // The module verified before the pass: whatever is wrong now, the pass did.
      try {
        ir::verify(module);
      } catch (const ir::VerifyError& e) {
        throw InternalError("pass " + name, fmt::format("the IR does not verify after it: {}", e.what()), "");
      }
    }
    if (options.after_pass) options.after_pass(name, module, changed);
    if (name == options.stop_after) break;
  }
}

}  // namespace dnnc::passes
