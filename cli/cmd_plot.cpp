// `dnnc plot LOG.jsonl -o RUN.svg`: a picture of a training run from its JSONL log
// (runtime/trainer/plot.h).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/cmd_setup.h"
#include "cli/commands.h"
#include "runtime/trainer/plot.h"

namespace dnnc::cli {
namespace {

struct PlotOptions {
  std::string log, out, title;
};

int run_plot(const PlotOptions& o) {
  std::string out = o.out;
  if (out.empty()) out = std::filesystem::path(o.log).replace_extension(".svg").string();
  if (out == o.log) throw std::invalid_argument(fmt::format("-o {}: would overwrite the log itself", out));
  prepare_output_file(out, "-o");
  runtime::RunCurves curves = runtime::read_curves(o.log);
  runtime::write_plot(out, curves, o.title.empty() ? o.log : o.title);
  int64_t evals = 0;
  for (const auto& p : curves.evals) evals += p.acc ? 1 : 0;
  std::cout << fmt::format("wrote {}: {} step losses, {} evaluations, up to step {}\n", out, curves.steps.size(),
                           evals,
                           std::max(curves.steps.empty() ? 0 : curves.steps.back().step,
                                    curves.evals.empty() ? 0 : curves.evals.back().step));
  return 0;
}

}  // namespace

void add_plot_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<PlotOptions>();
  CLI::App* cmd = app.add_subcommand("plot", "Draw a run's train loss and test accuracy from its --log file as SVG");
  cmd->add_option("log", o->log, "the JSONL log of dnnc train --log")->required();
  cmd->add_option("-o,--output", o->out, "the SVG file to write (default: the log's name with .svg)");
  cmd->add_option("--title", o->title, "the picture's title (default: the log's path)");
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_plot(*o); }); }; });
}

}  // namespace dnnc::cli
