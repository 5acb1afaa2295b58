// Shared test helpers: models through the frontend and passes::compile.
#pragma once
#include <string>

#include "frontend/frontend.h"
#include "passes/compile.h"

namespace dnnc::test {

/// The model at `path` after the default pipeline for `target` (graphs forward, train_step,
/// infer).
inline ir::Module compiled_model(const std::string& path, const std::string& target = "cpu") {
  ir::Module m = frontend::compile_file(path);
  passes::CompileOptions options;
  options.target = &passes::find_target(target);
  passes::compile(m, options);
  return m;
}

/// The same for a model given as source text (diagnostics name the file `name`).
inline ir::Module compiled_source(const std::string& source, const std::string& name = "test.dnn") {
  ir::Module m = frontend::compile_source(source, name);
  passes::compile(m);
  return m;
}

}  // namespace dnnc::test
