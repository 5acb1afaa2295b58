// Named passes over an ir::Module, the explicit registry of all passes and the pipeline runner
// behind `--passes=`, `--disable-pass=`, `--verify-each` and `--dump-ir-after=`.
#pragma once
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/passes.h"

namespace dnnc::passes {

/// A pass mutates the module in place and returns whether it changed anything. A pass that
/// returns false must leave the printed IR byte-identical. User errors throw ir::CompileError.
using PassFn = std::function<bool(ir::Module&)>;

struct PassInfo {
  std::string name;  // kebab-case, e.g. "select-layout"
  std::string summary;
  PassFn run;
};

class PassRegistry {
 public:
  /// Asserts that the name is new.
  void add(PassInfo info);
  /// nullptr if unknown.
  const PassInfo* find(const std::string& name) const;
  const std::vector<PassInfo>& all() const { return passes_; }

 private:
  std::vector<PassInfo> passes_;
};

/// What the registered passes are compiled for, and where they report.
struct PassConfig {
  const Target* target = &cpu_target();   // select-layout's target (cost model, layouts)
  LayoutReport* layout_report = nullptr;  // if set, select-layout's decisions per graph
  LayoutChoice layout = LayoutChoice::automatic;  // select-layout: cost model or forced
};

/// Registers every pass dnnc has, in one place (no static initializers). The passes keep
/// `config`'s pointers: the target and the report must outlive the registry.
void register_all_passes(PassRegistry& registry, const PassConfig& config = {});

/// The default compilation pipeline, in order.
std::vector<std::string> default_pipeline();

struct PipelineOptions {
  std::vector<std::string> passes;  // empty: default_pipeline()
  std::set<std::string> disabled;   // skipped by name (for bisecting)
  std::string stop_after;           // run up to and including this pass; empty: run all
  bool verify_each = false;         // run the verifier before the first and after every pass
  /// Called after each pass that ran (changed or not), e.g. to dump the IR.
  std::function<void(const std::string& pass, const ir::Module&, bool changed)> after_pass;
};

/// Runs the pipeline. Throws std::invalid_argument naming the pass if a name in `passes`,
/// `disabled` or `stop_after` is unknown (listing the known ones), ir::VerifyError if the module
/// does not verify before the first pass, dnnc::InternalError naming the pass if it does not
/// verify after one (a pass broke it) or a pass's internal check fails, ir::CompileError for user
/// errors. Verification runs with `verify_each`, and always in expensive-check builds.
void run_pipeline(ir::Module& module, const PassRegistry& registry, const PipelineOptions& options);

}  // namespace dnnc::passes
