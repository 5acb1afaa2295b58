// Shared helpers for pass tests: compile a model or IR text, run passes, read/compare goldens.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "frontend/frontend.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"

namespace dnnc::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `passes` (default pipeline if empty) for `target` with the verifier before and after
/// each pass; select-layout's decisions go to `layout` if given.
inline void run_passes(ir::Module& m, std::vector<std::string> passes = {}, const std::string& target = "cpu",
                       passes::LayoutReport* layout = nullptr) {
  passes::PassRegistry r;
  passes::register_all_passes(r, {.target = &passes::find_target(target), .layout_report = layout});
  passes::PipelineOptions o;
  o.passes = std::move(passes);
  o.verify_each = true;
  passes::run_pipeline(m, r, o);
}

}  // namespace dnnc::test
