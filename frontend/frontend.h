// Entry points of the .dnn frontend: source text or file -> ir::Module with the "forward"
// graph, the params and the train config. The language is documented in docs/dsl.md.
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::frontend {

/// Compiles the text of a .dnn file; `filename` is used in diagnostics and module.source_file.
/// Throws ir::CompileError (file, line:col, message) for every user error; print it with
/// ir::format_diagnostic(e, source). Sources over 1 MiB, models over 10,000 statements or
/// 10,000 ops are errors too (dnnc compiles small models; this bounds time and memory).
ir::Module compile_source(const std::string& source, const std::string& filename);

/// Reads `path` and compiles it. A missing, unreadable or oversized (> 1 MiB) file is an
/// ir::CompileError naming the file (no location).
ir::Module compile_file(const std::string& path);

/// The bytes of `path` (what compile_file compiles; the CLI needs it to print diagnostics).
/// Throws ir::CompileError naming the file if it cannot be read or is larger than 1 MiB.
std::string read_source(const std::string& path);

/// The parsed AST of `source` as indented text (`--emit=ast`). Throws ir::CompileError on
/// lexical or syntax errors.
std::string dump_ast(const std::string& source, const std::string& filename);

}  // namespace dnnc::frontend
