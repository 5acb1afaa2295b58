// Helpers shared by the frontend tests: compile snippets, find nodes, summarise graphs.
#pragma once
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "ir/graph.h"

namespace dnnc::test {

/// Compiles a model block body (statements only) wrapped in `model M { ... }`.
inline ir::Module compile_body(const std::string& body) {
  return frontend::compile_source("model M {\n" + body + "\n}\n", "t.dnn");
}

/// The message of the CompileError that compiling `source` throws, prefixed by line:col;
/// "no error" if it compiles.
inline std::string error_of(const std::string& source) {
  try {
    frontend::compile_source(source, "t.dnn");
  } catch (const ir::CompileError& e) {
    return std::to_string(e.loc().line) + ":" + std::to_string(e.loc().col) + " " + e.message();
  }
  return "no error";
}

inline std::string body_error(const std::string& body) { return error_of("model M {\n" + body + "\n}\n"); }

inline std::vector<std::string> node_ops(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n.op);
  return out;
}

inline std::vector<std::string> param_names(const ir::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.params) out.push_back(p.name);
  return out;
}

inline std::string type_of(const ir::Graph& g, const std::string& value) {
  ir::ValueId id = g.find_value(value);
  return id == ir::kNoValue ? "<none>" : ir::to_string(g.value(id).type);
}

/// The node that defines value `name`; nullptr if none.
inline const ir::Node* node_defining(const ir::Graph& g, const std::string& name) {
  ir::ValueId id = g.find_value(name);
  int p = id == ir::kNoValue ? -1 : g.producer(id);
  return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
}

}  // namespace dnnc::test
