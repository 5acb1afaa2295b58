// The training loop (runtime/trainer/trainer.h).
#include "runtime/trainer/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>

#include "runtime/trainer/batch_feed.h"
#include "runtime/trainer/schedule.h"

namespace dnnc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string non_finite_message(int64_t step, int64_t epoch, double loss, const std::vector<std::string>& bad) {
  std::string msg = fmt::format("step {} (epoch {}): loss is {}", step, epoch,
                                std::isnan(loss) ? "nan"
                                : loss > 0       ? "inf"
                                                 : "-inf");
  if (bad.empty()) return msg + "; every parameter is still finite";
  return msg + fmt::format("; non-finite after this step's update: {}", fmt::join(bad, ", "));
}

// The f32 params of `m` holding a NaN or Inf, in module order.
std::vector<std::string> non_finite_params(const ir::Module& m, const ParamStore& params) {
  std::vector<std::string> bad;
  for (const ir::Param& p : m.params) {
    const Tensor* t = params.find(p.name);
    if (!t || t->dtype() != ir::DType::f32) continue;
    const float* v = t->f32();
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!std::isfinite(v[i])) {
        bad.push_back(p.name);
        break;
      }
  }
  return bad;
}

void check_options(const Dataset& ds, const TrainOptions& o, const TrainPosition& start) {
  if (o.epochs < 1 || o.batch < 1 || o.eval_batch < 1 || o.max_steps < 0)
    throw std::invalid_argument(
        fmt::format("train: epochs ({}), batch ({}) and eval batch ({}) must be >= 1, max steps >= 0", o.epochs,
                    o.batch, o.eval_batch));
  if (ds.n < 1) throw std::invalid_argument("train: the training set is empty");
  int64_t nb = batches_per_epoch(ds.n, o.batch);
  if (start.epoch > o.epochs || (start.epoch == o.epochs && start.batch != 0) || start.batch < 0 || start.batch >= nb ||
      start.step < 0)
    throw std::invalid_argument(
        fmt::format("train: cannot start at epoch {} batch {}: the run has {} epochs of {} batches", start.epoch + 1,
                    start.batch, o.epochs, nb));
}

}  // namespace

NonFiniteLossError::NonFiniteLossError(int64_t step, int64_t epoch, double loss, std::vector<std::string> bad_params)
    : std::runtime_error(non_finite_message(step, epoch, loss, bad_params)),
      step_(step),
      epoch_(epoch),
      bad_params_(std::move(bad_params)) {}

TrainResult train(ExecutableCache& cache, const Dataset& train_set, const Dataset* test_set, const TrainOptions& o,
                  TrainPosition start, TrainObserver* observer) {
  check_options(train_set, o, start);
  const ir::Module& m = cache.module();
  BatchFeed feed = make_batch_feed(m, kTrainGraph, train_set, o.mean, o.std);
  if (feed.label_input.empty())
    throw std::runtime_error(fmt::format("graph {} of model {} has no i64 label input", kTrainGraph, m.name));
  std::optional<BatchFeed> test_feed;
  if (test_set) test_feed = make_batch_feed(m, kInferGraph, *test_set, o.mean, o.std);

  const int64_t nb = batches_per_epoch(train_set.n, o.batch);
  int64_t remaining = (o.epochs - start.epoch) * nb - start.batch;
  if (o.max_steps) remaining = std::min(remaining, o.max_steps);
  const double compile0 = cache.compile_seconds();
  TrainResult r;
  r.end = start;
  RunInfo run_info{o.batch, o.seed, o.shuffle};
  auto save = [&] {
    if (o.save_path.empty()) return;
    auto t0 = Clock::now();
    save_checkpoint(o.save_path, m, cache.params(), r.end, run_info);
    r.time.checkpoint += since(t0);
  };
  auto run_eval = [&] {
    EvalResult ev = evaluate(cache, *test_set, *test_feed, o.eval_batch);
    r.time.eval += ev.seconds;
    return ev;
  };

  auto run_start = Clock::now();
  int64_t run_steps = 0;
  for (int64_t e = start.epoch; e < o.epochs && !r.stopped_by_max_steps; ++e) {
    std::vector<int64_t> order = epoch_order(train_set.n, o.seed, e, o.shuffle);
    double epoch_seconds = 0, loss_sum = 0;
    int64_t epoch_samples = 0, epoch_steps = 0;
    for (int64_t b = e == start.epoch ? start.batch : 0; b < nb; ++b) {
      if (o.max_steps && run_steps == o.max_steps) {
        r.stopped_by_max_steps = true;
        break;
      }
      auto t0 = Clock::now();
      std::span<const int64_t> idx = batch_indices(order, o.batch, b);
      std::map<std::string, Tensor> inputs = feed.make(train_set, idx);
      double data_s = since(t0);
      Executable& exe = cache.get(kTrainGraph, static_cast<int64_t>(idx.size()));
      auto t1 = Clock::now();
      std::vector<Tensor> out = exe.run(inputs);
      double train_s = since(t1);
      r.time.data += data_s;
      r.time.train += train_s;
      epoch_seconds += data_s + train_s;
      if (out.empty() || out[0].dtype() != ir::DType::f32 || out[0].numel() != 1)
        throw std::runtime_error(fmt::format("model {}: train_step's first output is {}, expected the f32 scalar loss",
                                             m.name, out.empty() ? "missing" : describe(out[0])));
      double loss = out[0].f32()[0];
      ++run_steps;
      r.end = {e, b + 1, r.end.step + 1};
      if (!std::isfinite(loss)) throw NonFiniteLossError(r.end.step, e + 1, loss, non_finite_params(m, cache.params()));
      r.losses.push_back(loss);
      loss_sum += loss;
      epoch_samples += static_cast<int64_t>(idx.size());
      ++epoch_steps;
      if (observer) {
        double elapsed = since(run_start);
        observer->on_step({e + 1, o.epochs, b + 1, nb, r.end.step, loss,
                           epoch_seconds > 0 ? static_cast<double>(epoch_samples) / epoch_seconds : 0.0,
                           elapsed / static_cast<double>(run_steps) * static_cast<double>(remaining - run_steps)});
      }
    }
    if (r.stopped_by_max_steps) break;
    r.end = {e + 1, 0, r.end.step};
    EpochEvent ev{e + 1,
                  o.epochs,
                  r.end.step,
                  epoch_steps ? loss_sum / static_cast<double>(epoch_steps) : 0.0,
                  epoch_seconds,
                  epoch_seconds > 0 ? static_cast<double>(epoch_samples) / epoch_seconds : 0.0,
                  {}};
    if (test_set) ev.eval = r.final_eval = run_eval();
    r.epochs.push_back(ev);
    if (observer) observer->on_epoch(ev);
    save();
    if (o.max_steps && run_steps == o.max_steps && e + 1 < o.epochs) r.stopped_by_max_steps = true;
  }
  // A stop inside an epoch (or a run with nothing left to do) still reports accuracy and saves.
  bool ended_on_epoch = !r.epochs.empty() && r.end.batch == 0;
  if (!ended_on_epoch) {
    if (test_set) r.final_eval = run_eval();
    if (run_steps > 0) save();
  }
  r.time.compile = cache.compile_seconds() - compile0;
  return r;
}

}  // namespace dnnc::runtime
