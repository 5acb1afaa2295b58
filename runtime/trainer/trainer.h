// The training loop: epochs over an in-memory data set in a seeded order, one train_step per
// batch (the last partial batch too), a finite-loss check after every step, test accuracy
// per epoch, checkpoints at epoch ends, and resuming from any batch. On the cuda plugin's
// backend the full batches run device-resident (ResidentTrainer) with the same batches,
// losses and reports.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/data/augment.h"
#include "runtime/data/dataset.h"
#include "runtime/trainer/checkpoint_io.h"
#include "runtime/trainer/executable_cache.h"
#include "runtime/trainer/observer.h"

namespace dnnc::runtime {

/// The graph one training step runs.
inline constexpr const char* kTrainGraph = "train_step";

struct TrainOptions {
  int64_t epochs = 1;
  int64_t batch = 1;
  uint64_t seed = 0;      // the epoch order (parameters are initialised by the caller)
  bool shuffle = true;    // false: every epoch in data set order
  int64_t max_steps = 0;  // stop after this many steps of this run; 0: no limit
  int64_t eval_batch = 500;
  std::vector<double> mean, std;          // per-channel input normalization
  Augmentation augment;                   // of the training batches (not of evaluation)
  std::string save_path;                  // non-empty: save_checkpoint at every epoch end and at a --steps stop
  int64_t metrics_every = 50;             // cuda resident training: steps per device call (host reads losses)
  const SaveHooks* save_hooks = nullptr;  // test seam for checkpoint writes (write_safetensors)
};

/// Seconds spent in each part of a run.
struct TimeSplit {
  double compile = 0;     // frontend, passes and backend compilation
  double data = 0;        // loading data and building batches
  double train = 0;       // train steps
  double eval = 0;        // test-set evaluation
  double checkpoint = 0;  // writing checkpoints
};

struct TrainResult {
  std::vector<double> losses;            // every step of this run, in order
  std::vector<EpochEvent> epochs;        // the epochs completed in this run
  TrainPosition end;                     // where the run stopped (epoch-end positions are {e+1, 0, steps})
  std::optional<EvalResult> final_eval;  // on the test split after the last step, if one was given
  bool stopped_by_max_steps = false;
  TimeSplit time;  // compile here is the backend's share only
};

/// A step whose loss is NaN or infinite. what(): "step 17 (epoch 1): loss is nan" plus the
/// params that are non-finite after that step's update, if any.
class NonFiniteLossError : public std::runtime_error {
 public:
  NonFiniteLossError(int64_t step, int64_t epoch, double loss, std::vector<std::string> bad_params);
  int64_t step() const { return step_; }
  int64_t epoch() const { return epoch_; }
  const std::vector<std::string>& bad_params() const { return bad_params_; }

 private:
  int64_t step_, epoch_;
  std::vector<std::string> bad_params_;
};

/// Trains the module of `cache` (its train_step graph; the infer graph for evaluation) on
/// `train_set` from `start` to the end of epoch `o.epochs` (or `o.max_steps` steps), evaluating
/// on `test_set` (may be null) after every epoch and at a max-steps stop. Epoch e's order is
/// epoch_order(n, o.seed, e, o.shuffle), so starting at {e, b, s} continues exactly as an
/// uninterrupted run would. Throws NonFiniteLossError when a loss is not finite,
/// std::invalid_argument if `start` lies beyond the run or options are out of range, and
/// std::runtime_error if the graphs do not fit the data (batch_feed.h) or the backend fails.
TrainResult train(ExecutableCache& cache, const Dataset& train_set, const Dataset* test_set, const TrainOptions& o,
                  TrainPosition start = {}, TrainObserver* observer = nullptr);

}  // namespace dnnc::runtime
