// A picture of a training run: train loss and test accuracy against the step, as a
// self-contained SVG file, drawn from the JSONL log (`dnnc plot run.jsonl -o run.svg`) or from
// the run itself (`dnnc train --plot run.svg`).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/trainer/observer.h"

namespace dnnc::runtime {

/// What a plot shows, in the JSONL log's terms.
struct RunCurves {
  struct StepPoint {
    int64_t step = 0;
    double loss = 0;
  };
  struct EvalPoint {
    int64_t step = 0;
    int64_t epoch = 0;          // 1-based; of a stop line, the epoch in progress
    std::optional<double> loss;  // an epoch's mean train loss (none for a stop line)
    std::optional<double> acc;   // test accuracy, if evaluated
  };
  std::vector<StepPoint> steps;  // step lines
  std::vector<EvalPoint> evals;  // epoch lines, then a stop line if the run stopped inside an epoch
};

/// Reads the curves of a JSONL log written by --log (docs/training.md). A log appended to by
/// --resume repeats no step (later lines replace earlier ones of the same step). Throws
/// std::runtime_error naming the file and line for an unreadable file, a line that is not a
/// JSON object of the log's events, or a log with no step and no epoch line.
RunCurves read_curves(const std::string& jsonl_path);

/// The SVG document: two panels over a shared step axis, train loss (the step lines as a line,
/// each epoch's mean loss as a marker) and test accuracy (a marker and line per evaluation). Every
/// marker carries its data as attributes (`data-step`, `data-loss` / `data-acc`), so tools and
/// tests can read the numbers back. `title` heads the picture.
std::string render_svg(const RunCurves& curves, const std::string& title);

/// Writes render_svg(curves, title) to `path` atomically. Throws std::runtime_error naming the file.
void write_plot(const std::string& path, const RunCurves& curves, const std::string& title);

/// Collects a run's curves as it trains, every step (for `dnnc train --plot`).
class CurveRecorder final : public TrainObserver {
 public:
  void on_step(const StepEvent& e) override { curves_.steps.push_back({e.step, e.loss}); }
  void on_epoch(const EpochEvent& e) override;
  void on_stop(const StopEvent& e) override;
  const RunCurves& curves() const { return curves_; }

 private:
  RunCurves curves_;
};

}  // namespace dnnc::runtime
