// Human-readable training progress: on a terminal a progress bar redrawn in place (epoch,
// step, loss, samples/s, ETA); otherwise plain lines every few steps. One line per epoch with
// the test accuracy either way.
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "runtime/trainer/observer.h"

namespace dnnc::runtime {

class ProgressPrinter final : public TrainObserver {
 public:
  /// `tty`: draw a bar with '\r' (redrawn at most ~10 times a second); otherwise print a line
  /// every `every` steps (0: about 5 lines per epoch) and at each epoch's last step.
  ProgressPrinter(std::ostream& out, bool tty, int64_t every = 0) : out_(out), tty_(tty), every_(every) {}
  void on_step(const StepEvent& e) override;
  void on_epoch(const EpochEvent& e) override;

 private:
  std::ostream& out_;
  bool tty_;
  int64_t every_;
  bool bar_open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

/// "1:05", "1:02:03" (h:mm:ss past an hour); "?" for a negative or non-finite value.
std::string format_duration(double seconds);

}  // namespace dnnc::runtime
