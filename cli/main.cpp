// The `dnnc` command: one subcommand per job (check, dump-ir, ...). Usage errors (an unknown
// command or option, a bad option value) exit 2 as docs/training.md documents, with a
// did-you-mean suggestion where a known name is close to what was typed.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

// Levenshtein distance (small strings).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest of `names` to `typed`, if it is close (at most 2 edits, or a prefix either way).
std::string closest(const std::string& typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = 3;
  for (const std::string& n : names) {
    size_t d = edit_distance(typed, n);
    if (typed.size() >= 3 && (n.rfind(typed, 0) == 0 || typed.rfind(n, 0) == 0)) d = std::min<size_t>(d, 1);
    if (d < best_d) best_d = d, best = n;
  }
  return best;
}

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(s->get_name());
  return out;
}

// The long option names of `app` ("--epochs").
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

int usage_error(const std::string& msg) {
  std::cerr << "dnnc: error: " << msg << "\nRun 'dnnc --help' (or 'dnnc COMMAND --help') for usage.\n";
  return 2;
}

}  // namespace

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
  dnnc::cli::add_plot_command(app, run);

  // An unknown command: CLI11 would only say that a subcommand is required.
  std::vector<std::string> commands = command_names(app);
  if (argc >= 2 && argv[1][0] != '-' &&
      std::find(commands.begin(), commands.end(), std::string(argv[1])) == commands.end()) {
    std::string hint = closest(argv[1], commands);
    std::string list;
    for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
    return usage_error("unknown command '" + std::string(argv[1]) + "'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (commands: " + list + ")");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // An unknown option: suggest the chosen command's closest one.
    CLI::App* cmd = &app;
    while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().back();
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) continue;
      std::string name = a.substr(0, a.find('='));
      std::vector<std::string> known = option_names(*cmd);
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string hint = closest(name, known);
      std::string where = "dnnc";
      for (CLI::App* c = cmd; c && c != &app; c = c->get_parent()) where = "dnnc " + c->get_name() + where.substr(4);
      return usage_error("unknown option '" + name + "' for " + where +
                         (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    return usage_error(e.what());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return usage_error(e.what());
  }
  return run ? run() : 2;
}
