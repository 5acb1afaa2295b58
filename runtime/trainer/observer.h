// What the training loop reports as it goes (each step, each epoch), for the progress display
// and the JSONL metrics log.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/trainer/evaluate.h"

namespace dnnc::runtime {

struct StepEvent {
  int64_t epoch = 0;    // 1-based
  int64_t epochs = 0;   // of the whole run
  int64_t batch = 0;    // batches done in this epoch, this one included (1-based)
  int64_t batches = 0;  // per epoch
  int64_t step = 0;     // train steps taken in all (1-based: the step just taken)
  double loss = 0;
  double lr = 0;             // the learning rate this step used (the schedule's, else the optimizer's)
  double samples_per_s = 0;  // this epoch so far (data + compute)
  double eta_s = 0;          // estimated time left in this run
};

struct EpochEvent {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  int64_t step = 0;      // train steps taken in all at the end of the epoch
  double mean_loss = 0;  // mean of the losses of this epoch's steps (those run in this process)
  double lr = 0;         // the learning rate of the epoch's last step
  double seconds = 0;    // wall time of the epoch's steps (data + compute)
  double samples_per_s = 0;
  std::optional<EvalResult> eval;  // test accuracy, if a test split was given
};

/// The end of a run inside an epoch (a --steps stop): where it stopped and the evaluation there.
struct StopEvent {
  int64_t epoch = 0;  // 1-based: the epoch in progress
  int64_t batch = 0;  // batches of it done
  int64_t step = 0;   // train steps taken in all
  std::optional<EvalResult> eval;
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_step(const StepEvent&) {}
  virtual void on_epoch(const EpochEvent&) {}
  virtual void on_stop(const StopEvent&) {}
};

/// Forwards every event to each observer in turn (none may be null).
class ObserverList final : public TrainObserver {
 public:
  explicit ObserverList(std::vector<TrainObserver*> list) : list_(std::move(list)) {}
  void on_step(const StepEvent& e) override {
    for (TrainObserver* o : list_) o->on_step(e);
  }
  void on_epoch(const EpochEvent& e) override {
    for (TrainObserver* o : list_) o->on_epoch(e);
  }
  void on_stop(const StopEvent& e) override {
    for (TrainObserver* o : list_) o->on_stop(e);
  }

 private:
  std::vector<TrainObserver*> list_;
};

}  // namespace dnnc::runtime
