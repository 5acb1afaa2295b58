// `dnnc train`: compile a model, train it on its data set with the chosen backend, evaluate
// per epoch, write checkpoints and metrics, and print a summary with the time split.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <memory>

#include "cli/cmd_setup.h"
#include "cli/commands.h"
#include "cli/test_seams.h"
#include "runtime/reference/interpreter.h"
#include "runtime/trainer/jsonl_log.h"
#include "runtime/trainer/plot.h"
#include "runtime/trainer/progress.h"
#include "runtime/trainer/trainer.h"

namespace dnnc::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct TrainCliOptions {
  std::string file, data, init, save, resume, log, plot;
  DeviceOptions device;
  RecipeOverrides recipe;
  int64_t steps = 0, log_every = 10, eval_batch = 500, metrics_every = 50;
  bool no_shuffle = false, allow_other_model = false;
};

std::string epochs_text(int64_t n) { return fmt::format("{} epoch{}", n, n == 1 ? "" : "s"); }

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int run_train(const TrainCliOptions& o) {
  if (!o.init.empty() && !o.resume.empty())
    throw std::invalid_argument("--init and --resume exclude each other (--resume restores the weights too)");
  check_device_options(o.device);
  // Output paths before any work, so a typo does not cost a training run.
  if (!o.save.empty()) prepare_output_file(o.save, "--save");
  if (!o.log.empty()) prepare_output_file(o.log, "--log");
  if (!o.plot.empty()) prepare_output_file(o.plot, "--plot");
  if (o.allow_other_model && o.init.empty())
    throw std::invalid_argument("--allow-other-model applies to --init only; give --init FILE");
  if (!o.resume.empty() && o.save.empty())
    warn(fmt::format("--resume {} without --save: the continued run will not be saved", o.resume));
  // The device first: the passes compile for its target (select-layout's cost model).
  std::ostringstream device_line;
  std::unique_ptr<runtime::Backend> backend = choose_device(o.device, device_line);
  auto t0 = Clock::now();
  ir::Module m = compile_model(o.file, o.recipe, o.device.layout, target_of(*backend));
  double compile_s = since(t0);
  if (!m.train.present)
    throw std::invalid_argument(fmt::format("{}: model {} has no train block; add one (docs/dsl.md)", o.file, m.name));
  if (m.train.epochs < 1)
    throw std::invalid_argument(
        fmt::format("{}: the train block of {} sets no epochs; add 'epochs = N' to it or pass --epochs N", o.file,
                    m.name));
  std::cout << fmt::format("model {} ({}): {}\n", m.name, o.file, describe_parameters(m));
  std::cout << "recipe: " << describe_recipe(m) << "\n";
  std::cout << device_line.str();

  // The starting weights before the data: a wrong checkpoint costs no loading.
  runtime::ParamStore params = runtime::reference::init_params(m, static_cast<uint64_t>(m.train.seed));
  runtime::TrainPosition start;
  if (!o.init.empty()) {
    load_init_weights(m, o.init, o.allow_other_model, params);
    std::cout << fmt::format("init: weights from {}\n", o.init);
  }
  if (!o.resume.empty()) {
    runtime::RunInfo run{m.train.batch, static_cast<uint64_t>(m.train.seed), !o.no_shuffle};
    start = runtime::load_checkpoint(o.resume, m, run, params);
    if (start.epoch >= m.train.epochs)
      throw std::runtime_error(fmt::format(
          "{}: this run is finished: it trained {} of {} ({} steps); to train on, pass --epochs N with N > {}",
          o.resume, epochs_text(start.epoch), m.train.epochs, start.step, start.epoch));
    if (start.batch == 0 && start.epoch > 0)
      std::cout << fmt::format("resume: from {} after epoch {} (step {})\n", o.resume, start.epoch, start.step);
    else
      std::cout << fmt::format("resume: from {} at epoch {}, batch {} (step {})\n", o.resume, start.epoch + 1,
                               start.batch, start.step);
  }

  auto t1 = Clock::now();
  DataSource src = resolve_data(m, o.data);
  runtime::Dataset train_set = load_split(m, src, true);
  runtime::Dataset test_set = load_split(m, src, false);
  double load_s = since(t1);
  std::cout << fmt::format("data: {}{} from {}: {} train, {} test images ({:.2f} s)\n", m.train.data.dataset,
                           src.inferred ? " (format inferred from the files)" : "", src.dir, train_set.n, test_set.n,
                           load_s);

  runtime::TrainOptions topt;
  topt.epochs = m.train.epochs;
  topt.batch = m.train.batch;
  topt.seed = static_cast<uint64_t>(m.train.seed);
  topt.shuffle = !o.no_shuffle;
  topt.max_steps = o.steps;
  topt.eval_batch = o.eval_batch;
  topt.mean = m.train.data.mean;
  topt.std = m.train.data.std;
  topt.augment = {m.train.data.crop_padding, m.train.data.flip_p};
  topt.save_path = o.save;
  topt.metrics_every = o.metrics_every;
  topt.save_hooks = test_save_hooks();

  runtime::ProgressPrinter progress(std::cout, isatty(fileno(stdout)) != 0);
  std::unique_ptr<runtime::JsonlLog> log;
  std::vector<runtime::TrainObserver*> observers{&progress};
  if (!o.log.empty()) {
    log = std::make_unique<runtime::JsonlLog>(o.log, o.log_every, !o.resume.empty());
    observers.push_back(log.get());
  }
  runtime::CurveRecorder curves;
  if (!o.plot.empty()) observers.push_back(&curves);
  runtime::ObserverList observer(observers);
  runtime::ExecutableCache cache(*backend, m, params);
  auto t2 = Clock::now();
  runtime::TrainResult r = runtime::train(cache, train_set, &test_set, topt, start, &observer);
  double total_s = since(t2) + compile_s + load_s;

  const runtime::TimeSplit& t = r.time;
  std::cout << fmt::format(
      "{} after {} steps in {:.1f} s: compile {:.2f} s, data {:.2f} s, train {:.1f} s, eval {:.1f} s",
      r.stopped_by_max_steps ? "stopped (--steps)" : "done", r.end.step, total_s, compile_s + t.compile,
      load_s + t.data, t.train, t.eval);
  if (!o.save.empty()) std::cout << fmt::format(", checkpoint {:.2f} s", t.checkpoint);
  std::cout << "\n";
  if (!o.save.empty())
    std::cout << fmt::format("saved: {} (state_dict) and {}\n", o.save, runtime::training_state_path(o.save));
  if (!o.plot.empty()) {
    runtime::write_plot(o.plot, curves.curves(), fmt::format("{}: {}", m.name, describe_recipe(m)));
    std::cout << fmt::format("plot: {}\n", o.plot);
  }
  if (r.final_eval)
    std::cout << fmt::format("test accuracy: {:.4f} ({}/{})\n", r.final_eval->accuracy(), r.final_eval->correct,
                             r.final_eval->total);
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model on its data set and report test accuracy");
  cmd->add_option("file", o->file, "model file (.dnn)")->required();
  add_data_options(*cmd, o->data, o->recipe.dataset);
  add_device_options(*cmd, o->device);
  cmd->add_option("--epochs", o->recipe.epochs, "number of epochs (replaces the train block's)");
  cmd->add_option("--batch", o->recipe.batch, "batch size (replaces the train block's)");
  cmd->add_option("--lr", o->recipe.lr, "learning rate (replaces the optimizer's)");
  cmd->add_option("--seed", o->recipe.seed, "seed of parameter init and shuffling (replaces the train block's)");
  cmd->add_option("--steps", o->steps, "stop after this many train steps (0: run all epochs)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--init", o->init, "start from this state_dict (.safetensors, PyTorch names and shapes)");
  add_allow_other_model_flag(*cmd, o->allow_other_model);
  cmd->add_option("--save", o->save, "write the state_dict here (and FILE.train.safetensors for --resume)");
  cmd->add_option("--resume", o->resume, "continue the run saved with --save FILE");
  cmd->add_option("--log", o->log, "write metrics as JSON lines to this file (appended to on --resume)");
  cmd->add_option("--plot", o->plot, "draw this run's loss and test accuracy as SVG here at the end (every step)");
  cmd->add_option("--log-every", o->log_every, "steps between --log step lines")->check(CLI::PositiveNumber);
  cmd->add_option("--eval-batch", o->eval_batch, "batch size of test-set evaluation")->check(CLI::PositiveNumber);
  cmd->add_flag("--no-shuffle", o->no_shuffle, "train every epoch in data set order");
  cmd->add_option("--metrics-every", o->metrics_every,
                  "cuda: train steps per device-resident call; the host reads their losses after each")
      ->check(CLI::PositiveNumber);
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_train(*o); }); }; });
}

}  // namespace dnnc::cli
