// Training progress on a terminal or in a log (runtime/trainer/progress.h).
#include "runtime/trainer/progress.h"

#include <fmt/format.h>

#include <cmath>

namespace dnnc::runtime {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

void ProgressPrinter::on_step(const StepEvent& e) {
  std::string stats =
      fmt::format("loss {:.4f}  {:.0f} samples/s  ETA {}", e.loss, e.samples_per_s, format_duration(e.eta_s));
  if (!tty_) {
    int64_t every = every_ > 0 ? every_ : std::max<int64_t>(1, (e.batches + 4) / 5);
    if (e.batch % every == 0 || e.batch == e.batches)
      out_ << fmt::format("epoch {}/{} batch {}/{} step {}: {}\n", e.epoch, e.epochs, e.batch, e.batches, e.step, stats)
           << std::flush;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (bar_open_ && e.batch != e.batches && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int64_t kWidth = 24;
  int64_t filled = e.batches ? e.batch * kWidth / e.batches : kWidth;
  std::string bar =
      std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '.');
  out_ << fmt::format("\r\x1b[2Kepoch {}/{} [{}] {}/{} step {}  {}", e.epoch, e.epochs, bar, e.batch, e.batches, e.step,
                      stats)
       << std::flush;
  bar_open_ = true;
}

void ProgressPrinter::on_epoch(const EpochEvent& e) {
  if (bar_open_) out_ << "\n";
  bar_open_ = false;
  std::string acc =
      e.eval ? fmt::format(", test accuracy {:.4f} ({}/{})", e.eval->accuracy(), e.eval->correct, e.eval->total) : "";
  out_ << fmt::format("epoch {}/{} done: mean loss {:.4f}, {:.1f} s, {:.0f} samples/s{}\n", e.epoch, e.epochs,
                      e.mean_loss, e.seconds, e.samples_per_s, acc)
       << std::flush;
}

}  // namespace dnnc::runtime
