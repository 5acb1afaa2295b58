// The `dnnc` subcommands: each registers its options on the CLI11 app and runs when chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "ir/graph.h"

namespace dnnc::cli {

/// A subcommand's run function returns the process exit code.
using Runner = std::function<int()>;

/// Each adds one subcommand to `app` and stores its runner in `run` (called if chosen).
void add_check_command(CLI::App& app, Runner& run);
void add_dump_ir_command(CLI::App& app, Runner& run);
void add_train_command(CLI::App& app, Runner& run);    // cli/cmd_train.cpp
void add_eval_command(CLI::App& app, Runner& run);     // cli/cmd_eval.cpp
void add_infer_command(CLI::App& app, Runner& run);    // cli/cmd_eval.cpp
void add_data_command(CLI::App& app, Runner& run);     // cli/cmd_data.cpp
void add_compile_command(CLI::App& app, Runner& run);  // cli/cmd_compile.cpp
void add_plot_command(CLI::App& app, Runner& run);     // cli/cmd_plot.cpp

/// Loads a model: a `.dnn` file through the frontend, a `.ir` file through the IR parser.
/// Throws ir::CompileError (with the file and location) on any error.
ir::Module load_module(const std::string& path);

/// Reads a whole file, or "" if it cannot be read (used to show source lines in diagnostics).
std::string read_text(const std::string& path);

/// Runs `body`, turning the library's exceptions into a printed error and an exit code:
/// 1 for user errors (diagnostics with the source line), 2 for usage errors, 3 for internal ones.
int guarded(const std::function<int()>& body);

}  // namespace dnnc::cli
