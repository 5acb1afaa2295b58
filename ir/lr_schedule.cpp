#include "ir/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <stdexcept>

#include "ir/check.h"

namespace dnnc::ir {
namespace {

// This file is compiled with -ffp-contract=off (CMakeLists.txt): every operation rounds as
// Python's float arithmetic does.
constexpr double kPi = std::numbers::pi;  // math.pi

class Args {
 public:
  Args(const ScheduleConfig& s) : s_(s) {}

  [[noreturn]] void fail(const std::string& arg, const std::string& msg) const {
    throw ScheduleError(arg, fmt::format("schedule {}: {}", s_.kind, msg));
  }
  bool has(const char* key) const { return s_.attrs.count(key) > 0; }
  double number(const char* key, double fallback) const {
    auto it = s_.attrs.find(key);
    if (it == s_.attrs.end()) return fallback;
    if (auto* d = std::get_if<double>(&it->second)) return *d;
    if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
    fail(key, fmt::format("{} must be a number, found {}", key, attr_to_string(it->second)));
  }
  double required(const char* key) const {
    if (!has(key)) fail("", fmt::format("needs {}", key));
    return number(key, 0);
  }
  int64_t integer(const char* key, int64_t fallback, int64_t min) const {
    auto it = s_.attrs.find(key);
    int64_t v = fallback;
    if (it != s_.attrs.end()) {
      auto* i = std::get_if<int64_t>(&it->second);
      if (!i) fail(key, fmt::format("{} must be an integer, found {}", key, attr_to_string(it->second)));
      v = *i;
    }
    if (v < min) fail(key, fmt::format("{} must be at least {}, found {}", key, min, v));
    return v;
  }
  std::string text(const char* key, const std::string& fallback) const {
    auto it = s_.attrs.find(key);
    if (it == s_.attrs.end()) return fallback;
    if (auto* t = std::get_if<std::string>(&it->second)) return *t;
    fail(key, fmt::format("{} must be a name, found {}", key, attr_to_string(it->second)));
  }
  std::vector<int64_t> ints(const char* key) const {
    auto it = s_.attrs.find(key);
    if (it == s_.attrs.end()) fail("", fmt::format("needs {}", key));
    if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
    if (auto* i = std::get_if<int64_t>(&it->second)) return {*i};
    fail(key, fmt::format("{} must be a list of integers, found {}", key, attr_to_string(it->second)));
  }
  void only(std::initializer_list<const char*> known) const {
    for (const auto& [k, v] : s_.attrs)
      if (std::none_of(known.begin(), known.end(), [&](const char* n) { return k == n; })) {
        std::string list;
        for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(k, fmt::format("unknown argument '{}'; expected {}", k, list));
      }
  }

 private:
  const ScheduleConfig& s_;
};

// Python's a % b for floats (the result has b's sign).
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

LrSchedule::LrSchedule(const ScheduleConfig& s, double base_lr, int64_t epochs, int64_t steps_per_epoch)
    : kind_(s.kind), epochs_(epochs), steps_per_epoch_(steps_per_epoch) {
  DNNC_CHECK(epochs >= 1 && steps_per_epoch >= 1, "LrSchedule: a run of {} epochs of {} steps", epochs,
             steps_per_epoch);
  Args a(s);
  // Each epoch schedule's get_lr(), chained from the lr of the epoch before, as PyTorch's
  // scheduler.step() computes it (last_epoch e, group['lr'] = prev).
  auto chain = [&](double first, auto&& next) {
    per_epoch_.push_back(first);
    for (int64_t e = 1; e < epochs; ++e) per_epoch_.push_back(next(e, per_epoch_.back()));
  };
  if (kind_.empty()) {
    per_epoch_.assign(static_cast<size_t>(epochs), base_lr);
  } else if (kind_ == "step") {  // StepLR(step_size, gamma=0.1)
    a.only({"step_size", "gamma"});
    if (!a.has("step_size")) a.fail("", "needs step_size");
    int64_t step_size = a.integer("step_size", 1, 1);
    double gamma = a.number("gamma", 0.1);
    chain(base_lr, [&](int64_t e, double lr) { return e % step_size != 0 ? lr : lr * gamma; });
  } else if (kind_ == "multistep") {  // MultiStepLR(milestones, gamma=0.1)
    a.only({"milestones", "gamma"});
    std::map<int64_t, int64_t> count;  // Counter(milestones)
    for (int64_t m : a.ints("milestones")) {
      if (m < 0) a.fail("milestones", fmt::format("milestones must be epochs >= 0, found {}", m));
      ++count[m];
    }
    double gamma = a.number("gamma", 0.1);
    chain(base_lr, [&](int64_t e, double lr) {
      auto it = count.find(e);
      return it == count.end() ? lr : lr * std::pow(gamma, static_cast<double>(it->second));
    });
  } else if (kind_ == "cosine") {  // CosineAnnealingLR(T_max, eta_min=0); T_max defaults to the epochs
    a.only({"t_max", "eta_min"});
    double t_max = a.has("t_max") ? a.number("t_max", 0) : static_cast<double>(epochs);
    if (!(t_max > 0)) a.fail("t_max", fmt::format("t_max must be positive, found {}", t_max));
    double eta_min = a.number("eta_min", 0.0);
    chain(base_lr, [&](int64_t e, double lr) {
      double ed = static_cast<double>(e);
      if (py_mod(ed - 1 - t_max, 2 * t_max) == 0) return lr + (base_lr - eta_min) * (1 - std::cos(kPi / t_max)) / 2;
      return (1 + std::cos(kPi * ed / t_max)) / (1 + std::cos(kPi * (ed - 1) / t_max)) * (lr - eta_min) + eta_min;
    });
  } else if (kind_ == "linear") {  // LinearLR(start_factor=1/3, end_factor=1.0, total_iters=5)
    a.only({"start_factor", "end_factor", "total_iters"});
    double start = a.number("start_factor", 1.0 / 3), end = a.number("end_factor", 1.0);
    if (!(start > 0 && start <= 1)) a.fail("start_factor", fmt::format("start_factor must be in (0, 1], found {}", start));
    if (!(end >= 0 && end <= 1)) a.fail("end_factor", fmt::format("end_factor must be in [0, 1], found {}", end));
    double total = static_cast<double>(a.integer("total_iters", 5, 1));
    chain(base_lr * start, [&](int64_t e, double lr) {
      double ed = static_cast<double>(e);
      if (ed > total) return lr;
      return lr * (1. + (end - start) / (total * start + (ed - 1) * (end - start)));
    });
  } else if (kind_ == "one_cycle") {  // OneCycleLR(max_lr, total_steps, ..., cycle_momentum=False)
    a.only({"max_lr", "pct_start", "anneal_strategy", "div_factor", "final_div_factor", "three_phase"});
    double max_lr = a.required("max_lr");
    if (!(max_lr > 0)) a.fail("max_lr", fmt::format("max_lr must be positive, found {}", max_lr));
    double pct = a.number("pct_start", 0.3);
    if (!(pct >= 0 && pct <= 1)) a.fail("pct_start", fmt::format("pct_start must be in [0, 1], found {}", pct));
    std::string anneal = a.text("anneal_strategy", "cos");
    if (anneal != "cos" && anneal != "linear")
      a.fail("anneal_strategy", fmt::format("anneal_strategy must be cos or linear, found {}", anneal));
    cos_anneal_ = anneal == "cos";
    double div = a.number("div_factor", 25.0), final_div = a.number("final_div_factor", 1e4);
    if (!(div > 0)) a.fail("div_factor", fmt::format("div_factor must be positive, found {}", div));
    if (!(final_div > 0)) a.fail("final_div_factor", fmt::format("final_div_factor must be positive, found {}", final_div));
    bool three = false;
    if (a.has("three_phase")) {
      auto it = s.attrs.find("three_phase");
      auto* b = std::get_if<bool>(&it->second);
      if (!b) a.fail("three_phase", "three_phase must be true or false");
      three = *b;
    }
    double total = static_cast<double>(epochs * steps_per_epoch);
    double initial = max_lr / div, min_lr = initial / final_div;
    if (three)
      phases_ = {{pct * total - 1, initial, max_lr}, {2 * pct * total - 2, max_lr, initial}, {total - 1, initial, min_lr}};
    else
      phases_ = {{pct * total - 1, initial, max_lr}, {total - 1, max_lr, min_lr}};
  } else {
    throw ScheduleError("", fmt::format("unknown schedule '{}'; expected step, multistep, cosine, linear or one_cycle",
                                        kind_));
  }
}

double LrSchedule::lr(int64_t epoch, int64_t step) const {
  DNNC_CHECK(epoch >= 0 && epoch < epochs_ && step >= 0 && step < epochs_ * steps_per_epoch_,
             "LrSchedule::lr: epoch {} step {} outside a run of {} epochs of {} steps", epoch, step, epochs_,
             steps_per_epoch_);
  if (phases_.empty()) return per_epoch_[static_cast<size_t>(epoch)];
  // OneCycleLR.get_lr() at last_epoch = step.
  const double step_num = static_cast<double>(step);
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (step_num <= p.end_step || i == phases_.size() - 1) {
      double pct = (step_num - start_step) / (p.end_step - start_step);
      if (cos_anneal_) {
        double cos_out = std::cos(kPi * pct) + 1;
        return p.end_lr + (p.start_lr - p.end_lr) / 2.0 * cos_out;
      }
      return (p.end_lr - p.start_lr) * pct + p.start_lr;
    }
    start_step = p.end_step;
  }
  DNNC_UNREACHABLE("one_cycle has phases");
}

}  // namespace dnnc::ir
