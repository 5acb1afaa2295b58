// Shared helpers for codegen tests: a model through the default pipeline, whole-file reads.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "frontend/frontend.h"
#include "passes/pass_manager.h"

namespace dnnc::test {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The model at `path` after the default pipeline (graphs forward, train_step, infer).
inline ir::Module pipeline_model(const std::string& path) {
  ir::Module m = frontend::compile_file(path);
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::run_pipeline(m, r, {});
  return m;
}

/// A model given as source text, after the default pipeline.
inline ir::Module pipeline_source(const std::string& source) {
  ir::Module m = frontend::compile_source(source, "test.dnn");
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::run_pipeline(m, r, {});
  return m;
}

}  // namespace dnnc::test
