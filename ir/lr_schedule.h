// The learning rate of every step of a run under the train block's schedule, with the values
// of torch.optim.lr_scheduler (1.13): the same recurrences in the same double arithmetic, so
// each step's lr equals the one PyTorch's scheduler gives (tests/trainer/lr_schedule_test.cpp
// against values PyTorch generated). StepLR, MultiStepLR, CosineAnnealingLR and LinearLR are
// stepped at every epoch end, as in PyTorch's usual loop; OneCycleLR after every batch, with
// total_steps = epochs x batches per epoch. The lr is a pure function of the position, so a
// resumed run continues the schedule where it stopped.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dnnc::ir {

/// A schedule argument out of range: what() names the schedule and the argument
/// ("schedule step: step_size must be at least 1, found 0"); `arg` is the argument's name, or
/// empty when the schedule itself is at fault (an unknown kind).
struct ScheduleError : std::invalid_argument {
  ScheduleError(std::string arg_name, const std::string& what) : std::invalid_argument(what), arg(std::move(arg_name)) {}
  std::string arg;
};

class LrSchedule {
 public:
  /// The schedule `s` (kind "" : the constant `base_lr`) for a run of `epochs` epochs of
  /// `steps_per_epoch` steps. Throws ScheduleError for an unknown kind or argument, or one
  /// out of range (PyTorch's own checks).
  LrSchedule(const ir::ScheduleConfig& s, double base_lr, int64_t epochs, int64_t steps_per_epoch);

  /// The lr of the step `step` (0-based, counted over the whole run) of epoch `epoch`
  /// (0-based). Asserts both lie inside the run.
  double lr(int64_t epoch, int64_t step) const;

  bool active() const { return !kind_.empty(); }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  int64_t epochs_, steps_per_epoch_;
  std::vector<double> per_epoch_;  // epoch schedules: the lr of each epoch
  // one_cycle
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  std::vector<Phase> phases_;
  bool cos_anneal_ = true;
};

}  // namespace dnnc::ir
