// The training loop (runtime/trainer/trainer.h).
#include "runtime/trainer/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "runtime/cuda/plugin_api.h"
#include "runtime/cuda/plugin_loader.h"
#include "runtime/trainer/batch_feed.h"
#include "ir/lr_schedule.h"
#include "runtime/trainer/schedule.h"

namespace dnnc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// 0, 1, ..., n-1: the indices of an augmented batch, which holds just the batch's images.
std::vector<int64_t> all_of_batch(size_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

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
  // The lr of each step: the train block's schedule over this run's epochs (a graph input when
  // scheduled), else the optimizer's lr throughout.
  const bool lr_input = m.graph(kTrainGraph)->find_value(ir::kLrInput) != ir::kNoValue;
  const ir::Attrs& opt = m.train.optimizer.attrs;
  const double base_lr = opt.count("lr") ? ir::attr_float(opt, "lr") : 0.0;
  const ir::LrSchedule schedule(m.train.schedule, base_lr, o.epochs, nb);
  if (schedule.active() != lr_input)
    throw std::runtime_error(fmt::format("model {}: the train config {} but graph {} {} input {}", m.name,
                                         schedule.active() ? "has a schedule" : "has no schedule", kTrainGraph,
                                         lr_input ? "has the" : "lacks the", ir::kLrInput));
  int64_t remaining = (o.epochs - start.epoch) * nb - start.batch;
  if (o.max_steps) remaining = std::min(remaining, o.max_steps);
  const double compile0 = cache.compile_seconds();
  {  // Compile what the run will need up front, together: the step at the first batch size it
     // meets, the epoch's short last batch if the run gets there, the eval graph.
    auto size_of = [&](int64_t b) { return std::min(train_set.n, (b + 1) * o.batch) - b * o.batch; };
    std::vector<CompileRequest> need;
    if (remaining > 0) {
      need.push_back({kTrainGraph, size_of(start.batch)});
      if (remaining >= nb - start.batch) need.push_back({kTrainGraph, size_of(nb - 1)});
    }
    if (test_set && test_set->n > 0) need.push_back({kInferGraph, std::min(o.eval_batch, test_set->n)});
    cache.prepare(need);
  }
  TrainResult r;
  r.end = start;
  RunInfo run_info{o.batch, o.seed, o.shuffle};
  auto save = [&] {
    if (o.save_path.empty()) return;
    auto t0 = Clock::now();
    save_checkpoint(o.save_path, m, cache.params(), r.end, run_info, o.save_hooks);
    r.time.checkpoint += since(t0);
  };
  auto run_eval = [&] {
    EvalResult ev = evaluate(cache, *test_set, *test_feed, o.eval_batch);
    r.time.eval += ev.seconds;
    return ev;
  };

  auto run_start = Clock::now();
  int64_t run_steps = 0;
  double epoch_seconds = 0, loss_sum = 0;  // of the current epoch
  int64_t epoch_samples = 0, epoch_steps = 0;
  // Books step `b` of epoch `e` (1 step, `samples` samples, `seconds` of data + compute): the
  // position, the finite-loss check, the losses and the observer.
  double last_lr = 0;  // of the step just taken
  auto finish_step = [&](int64_t e, int64_t b, double loss, int64_t samples, double seconds) {
    last_lr = schedule.lr(e, e * nb + b);  // the schedule counts batches of this recipe's epochs
    epoch_seconds += seconds;
    ++run_steps;
    r.end = {e, b + 1, r.end.step + 1};
    if (!std::isfinite(loss)) throw NonFiniteLossError(r.end.step, e + 1, loss, non_finite_params(m, cache.params()));
    r.losses.push_back(loss);
    loss_sum += loss;
    epoch_samples += samples;
    ++epoch_steps;
    if (observer) {
      double elapsed = since(run_start);
      observer->on_step({e + 1, o.epochs, b + 1, nb, r.end.step, loss, last_lr,
                         epoch_seconds > 0 ? static_cast<double>(epoch_samples) / epoch_seconds : 0.0,
                         elapsed / static_cast<double>(run_steps) * static_cast<double>(remaining - run_steps)});
    }
  };
  // Batch `b` of `order` through Executable::run (params in the ParamStore before and after).
  auto run_step = [&](int64_t e, int64_t b, const std::vector<int64_t>& order) {
    auto t0 = Clock::now();
    std::span<const int64_t> idx = batch_indices(order, o.batch, b);
    std::map<std::string, Tensor> inputs =
        o.augment.active() ? feed.make(augmented_batch(train_set, idx, o.augment, o.seed, e), all_of_batch(idx.size()))
                           : feed.make(train_set, idx);
    if (lr_input) inputs.emplace(ir::kLrInput, Tensor::scalar(static_cast<float>(schedule.lr(e, e * nb + b))));
    double data_s = since(t0);
    Executable& exe = cache.get(kTrainGraph, static_cast<int64_t>(idx.size()));
    auto t1 = Clock::now();
    std::vector<Tensor> out = exe.run(inputs);
    double train_s = since(t1);
    r.time.data += data_s;
    r.time.train += train_s;
    if (out.empty() || out[0].dtype() != ir::DType::f32 || out[0].numel() != 1)
      throw std::runtime_error(fmt::format("model {}: train_step's first output is {}, expected the f32 scalar loss",
                                           m.name, out.empty() ? "missing" : describe(out[0])));
    finish_step(e, b, out[0].f32()[0], static_cast<int64_t>(idx.size()), data_s + train_s);
  };

  // The cuda plugin's device-resident loop, when the backend offers it for the full batch: the
  // training split goes to the device once; full batches run in chunks of `metrics_every`
  // steps (one ResidentTrainer::train call each, the host reading the losses at its end); the
  // last, partial batch of an epoch (if any) still runs through run_step.
  const int64_t full_batches = train_set.n / o.batch;
  const int64_t metrics_every = std::max<int64_t>(1, o.metrics_every);
  cuda::ResidentTrainer* resident = nullptr;
  // The device holds the data set as loaded, so augmented runs go step by step; so do scheduled
  // ones (the lr is an input of every step).
  if (remaining > 0 && full_batches > 0 && cache.backend().name() == "cuda" && !o.augment.active() && !lr_input)
    resident = cuda::resident_trainer(cache.get(kTrainGraph, o.batch));
  if (resident) {
    auto t0 = Clock::now();
    std::vector<int64_t> all(static_cast<size_t>(train_set.n));
    std::iota(all.begin(), all.end(), int64_t{0});
    std::map<std::string, Tensor> by_name = feed.make(train_set, all);
    std::vector<Tensor> inputs;  // in graph input order
    const ir::Graph& g = *m.graph(kTrainGraph);
    for (ir::ValueId id : g.inputs) inputs.push_back(std::move(by_name.at(g.value(id).name)));
    resident->load_dataset(inputs);
    r.time.data += since(t0);
  }
  // Batches b .. b+steps-1 of `order` (all full) on the device. train() starts at order[0] from
  // the ParamStore's params, so `order` is rotated to batch b and the params are synced after
  // every call (which also keeps them current for evaluation and checkpoints).
  auto run_chunk = [&](int64_t e, int64_t b, int64_t steps, const std::vector<int64_t>& order) {
    std::vector<int64_t> rotated(order.size());
    std::rotate_copy(order.begin(), order.begin() + b * o.batch, order.end(), rotated.begin());
    ParamStore before = cache.params();
    auto t0 = Clock::now();
    std::vector<float> losses = resident->train(rotated, steps, metrics_every);
    resident->sync_params();
    double train_s = since(t0);
    r.time.train += train_s;
    if (static_cast<int64_t>(losses.size()) != steps)
      throw std::runtime_error(
          fmt::format("model {}: the resident trainer returned {} losses for {} steps", m.name, losses.size(), steps));
    auto bad = std::find_if(losses.begin(), losses.end(), [](float l) { return !std::isfinite(l); });
    if (bad != losses.end() && bad + 1 != losses.end()) {
      // Redo the chunk up to the bad step, so the params reported (and left in the ParamStore)
      // are those right after it, as on the step-by-step path.
      int64_t upto = bad - losses.begin() + 1;
      for (auto& [name, t] : before.tensors) cache.params().tensors[name] = std::move(t);
      resident->train(rotated, upto, upto);
      resident->sync_params();
    }
    for (int64_t i = 0; i < steps; ++i)
      finish_step(e, b + i, losses[static_cast<size_t>(i)], o.batch, train_s / static_cast<double>(steps));
  };

  for (int64_t e = start.epoch; e < o.epochs && !r.stopped_by_max_steps; ++e) {
    std::vector<int64_t> order = epoch_order(train_set.n, o.seed, e, o.shuffle);
    epoch_seconds = loss_sum = 0;
    epoch_samples = epoch_steps = 0;
    for (int64_t b = e == start.epoch ? start.batch : 0; b < nb;) {
      if (o.max_steps && run_steps == o.max_steps) {
        r.stopped_by_max_steps = true;
        break;
      }
      if (resident && b < full_batches) {
        int64_t steps = std::min(metrics_every, full_batches - b);
        if (o.max_steps) steps = std::min(steps, o.max_steps - run_steps);
        run_chunk(e, b, steps, order);
        b += steps;
      } else {
        run_step(e, b, order);
        ++b;
      }
    }
    if (r.stopped_by_max_steps) break;
    r.end = {e + 1, 0, r.end.step};
    EpochEvent ev{e + 1,
                  o.epochs,
                  r.end.step,
                  epoch_steps ? loss_sum / static_cast<double>(epoch_steps) : 0.0,
                  last_lr,
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
    if (observer) observer->on_stop({r.end.epoch + 1, r.end.batch, r.end.step, r.final_eval});
  }
  r.time.compile = cache.compile_seconds() - compile0;
  return r;
}

}  // namespace dnnc::runtime
