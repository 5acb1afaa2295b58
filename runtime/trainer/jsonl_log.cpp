// The JSONL metrics log (runtime/trainer/jsonl_log.h).
#include "runtime/trainer/jsonl_log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace dnnc::runtime {

JsonlLog::JsonlLog(const std::string& path, int64_t every, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc), every_(std::max<int64_t>(1, every)) {
  if (!out_)
    throw std::runtime_error(fmt::format("{}: cannot open the log file for writing: {}", path, std::strerror(errno)));
}

void JsonlLog::write(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot write to the log file", path_));
}

void JsonlLog::on_step(const StepEvent& e) {
  if (e.step % every_ != 0) return;
  nlohmann::ordered_json j = {{"event", "step"}, {"epoch", e.epoch}, {"batch", e.batch},
                              {"step", e.step},  {"loss", e.loss},   {"lr", e.lr}, {"samples_per_s", e.samples_per_s}};
  write(j.dump());
}

namespace {

void add_eval(nlohmann::ordered_json& j, const std::optional<EvalResult>& eval) {
  if (!eval) return;
  j["test_acc"] = eval->accuracy();
  j["test_correct"] = eval->correct;
  j["test_total"] = eval->total;
}

}  // namespace

void JsonlLog::on_epoch(const EpochEvent& e) {
  nlohmann::ordered_json j = {{"event", "epoch"},    {"epoch", e.epoch},     {"step", e.step},
                              {"loss", e.mean_loss}, {"lr", e.lr}, {"seconds", e.seconds}, {"samples_per_s", e.samples_per_s}};
  add_eval(j, e.eval);
  write(j.dump());
}

void JsonlLog::on_stop(const StopEvent& e) {
  nlohmann::ordered_json j = {{"event", "stop"}, {"epoch", e.epoch}, {"batch", e.batch}, {"step", e.step}};
  add_eval(j, e.eval);
  write(j.dump());
}

}  // namespace dnnc::runtime
