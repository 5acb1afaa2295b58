// The metrics log behind `--log FILE.jsonl`: one JSON object per line, for every `every`-th
// step and for every epoch.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/trainer/observer.h"

namespace dnnc::runtime {

/// Lines: {"event":"step","epoch":E,"batch":B,"step":S,"loss":L,"samples_per_s":R} and
/// {"event":"epoch","epoch":E,"step":S,"loss":mean,"seconds":T,"samples_per_s":R,
/// "test_acc":A,"test_correct":C,"test_total":N} (the test fields only with a test split), and
/// for a stop inside an epoch {"event":"stop","epoch":E,"batch":B,"step":S, test fields}.
/// Epochs and batches are 1-based; `step` counts train steps from the start of training.
class JsonlLog final : public TrainObserver {
 public:
  /// Opens `path` (appending if `append`, else truncating). Throws std::runtime_error naming
  /// the file if it cannot be opened. `every` >= 1: log every that many steps.
  JsonlLog(const std::string& path, int64_t every, bool append);
  void on_step(const StepEvent& e) override;
  void on_epoch(const EpochEvent& e) override;
  void on_stop(const StopEvent& e) override;

 private:
  void write(const std::string& line);
  std::string path_;
  std::ofstream out_;
  int64_t every_;
};

}  // namespace dnnc::runtime
