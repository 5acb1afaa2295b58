// ir::LrSchedule against torch.optim.lr_scheduler: the lr of every step of each case in
// tests/trainer/golden/lr_schedules.json (written by make_lr_schedules.py from PyTorch 1.13)
// must be the same double, bit for bit; and the range checks.
#include "ir/lr_schedule.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace dnnc;

namespace {

ir::ScheduleConfig config_of(const nlohmann::json& c) {
  ir::ScheduleConfig s{c.at("kind").get<std::string>(), {}};
  for (const auto& [k, v] : c.at("args").items()) {
    if (v.is_boolean())
      s.attrs[k] = v.get<bool>();
    else if (v.is_number_integer())
      s.attrs[k] = v.get<int64_t>();
    else if (v.is_number())
      s.attrs[k] = v.get<double>();
    else if (v.is_string())
      s.attrs[k] = v.get<std::string>();
    else
      s.attrs[k] = v.get<std::vector<int64_t>>();
  }
  return s;
}

}  // namespace

TEST_CASE("every step's lr equals torch.optim.lr_scheduler's, bit for bit", "[trainer][schedule]") {
  std::ifstream f("tests/trainer/golden/lr_schedules.json");
  REQUIRE(f);
  nlohmann::json golden = nlohmann::json::parse(f);
  REQUIRE(golden.at("cases").size() >= 10);
  for (const auto& c : golden.at("cases")) {
    ir::ScheduleConfig s = config_of(c);
    int64_t epochs = c.at("epochs"), steps = c.at("steps_per_epoch");
    ir::LrSchedule sched(s, c.at("lr").get<double>(), epochs, steps);
    std::vector<double> want = c.at("lrs").get<std::vector<double>>();
    REQUIRE(static_cast<int64_t>(want.size()) == epochs * steps);
    bool varies = false;
    for (int64_t i = 0; i < epochs * steps; ++i) {
      INFO(s.kind << " " << c.at("args").dump() << " step " << i);
      CHECK(sched.lr(i / steps, i) == want[static_cast<size_t>(i)]);
      varies |= want[static_cast<size_t>(i)] != want[0];
    }
    CHECK(varies);  // every case moves the lr
  }
}

TEST_CASE("no schedule is the optimizer's lr throughout", "[trainer][schedule]") {
  ir::LrSchedule none({}, 0.125, 3, 4);
  CHECK_FALSE(none.active());
  for (int64_t i = 0; i < 12; ++i) CHECK(none.lr(i / 4, i) == 0.125);
}

TEST_CASE("schedule arguments out of PyTorch's ranges are refused, naming the argument", "[trainer][schedule]") {
  auto error_of = [](const std::string& kind, ir::Attrs attrs) -> std::pair<std::string, std::string> {
    try {
      ir::LrSchedule({kind, std::move(attrs)}, 0.1, 5, 10);
    } catch (const ir::ScheduleError& e) {
      return {e.arg, e.what()};
    }
    return {"", "no error"};
  };
  using P = std::pair<std::string, std::string>;
  CHECK(error_of("step", {{"step_size", int64_t{0}}}) ==
        P{"step_size", "schedule step: step_size must be at least 1, found 0"});
  CHECK(error_of("step", {}) == P{"", "schedule step: needs step_size"});
  CHECK(error_of("multistep", {{"milestones", std::vector<int64_t>{2, -1}}}) ==
        P{"milestones", "schedule multistep: milestones must be epochs >= 0, found -1"});
  CHECK(error_of("cosine", {{"t_max", 0.0}}) == P{"t_max", "schedule cosine: t_max must be positive, found 0"});
  CHECK(error_of("linear", {{"start_factor", 0.0}}) ==
        P{"start_factor", "schedule linear: start_factor must be in (0, 1], found 0"});
  CHECK(error_of("one_cycle", {{"max_lr", 0.1}, {"anneal_strategy", std::string("exp")}}) ==
        P{"anneal_strategy", "schedule one_cycle: anneal_strategy must be cos or linear, found exp"});
  CHECK(error_of("one_cycle", {{"max_lr", 0.1}, {"pct_start", 1.5}}) ==
        P{"pct_start", "schedule one_cycle: pct_start must be in [0, 1], found 1.5"});
  CHECK(error_of("cosine", {{"T_max", int64_t{3}}}) ==
        P{"T_max", "schedule cosine: unknown argument 'T_max'; expected t_max, eta_min"});
  CHECK(error_of("exponential", {}) ==
        P{"", "unknown schedule 'exponential'; expected step, multistep, cosine, linear or one_cycle"});
}
