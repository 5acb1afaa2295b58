// Shared helpers for pass tests: compile a model or IR text, run passes, read/compare goldens.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "frontend/frontend.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "tests/support/files.h"

namespace dnnc::test {

/// Runs `passes` (default pipeline if empty) for `target` with the verifier before and after
/// each pass; select-layout's decisions go to `layout` if given.
inline void run_passes(ir::Module& m, std::vector<std::string> passes = {}, const std::string& target = "cpu",
                       passes::LayoutReport* layout = nullptr) {
  passes::compile(m, {.target = &passes::find_target(target),
                      .layout_report = layout,
                      .pipeline = {.passes = std::move(passes), .verify_each = true}});
}

}  // namespace dnnc::test
