// The `dnnc` command: one subcommand per job (check, dump-ir, ...).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"dnnc: a graph compiler and runtime for small neural networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dnnc 0.1.0");
  dnnc::cli::Runner run;
  dnnc::cli::add_check_command(app, run);
  dnnc::cli::add_dump_ir_command(app, run);
  dnnc::cli::add_train_command(app, run);
  dnnc::cli::add_eval_command(app, run);
  dnnc::cli::add_infer_command(app, run);
  dnnc::cli::add_data_command(app, run);
  dnnc::cli::add_compile_command(app, run);
  CLI11_PARSE(app, argc, argv);
  return run ? run() : 2;
}
