// SVG plots of a training run (runtime/trainer/plot.h).
#include "runtime/trainer/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "runtime/checkpoint/atomic_file.h"

namespace dnnc::runtime {
namespace {

// The picture: 720 x 560, two panels of 600 x 200 with their left edge at x 80.
constexpr double kLeft = 80, kWidth = 600, kPanelHeight = 200;
constexpr double kLossTop = 50, kAccTop = 320;

// "Nice" tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `n` of them.
std::vector<double> ticks(double lo, double hi, int n) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / n, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::string num(double v) { return fmt::format("{:.6g}", v); }

struct Axis {
  double lo, hi, px0, px1;  // data range onto pixel range
  double at(double v) const { return px0 + (v - lo) / (hi - lo) * (px1 - px0); }
};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// One panel's frame, grid and tick labels; `y` maps the value axis.
void frame(std::string& svg, const Axis& x, const Axis& y, double top, const std::string& label, bool percent) {
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fff" stroke="#444"/>)"
                     "\n",
                     kLeft, top, kWidth, kPanelHeight);
  for (double v : ticks(y.lo, y.hi, 5)) {
    double py = y.at(v);
    svg += fmt::format(R"(<line x1="{}" y1="{:.2f}" x2="{}" y2="{:.2f}" stroke="#ddd"/>)"
                       "\n",
                       kLeft, py, kLeft + kWidth, py);
    svg += fmt::format(R"(<text x="{}" y="{:.2f}" text-anchor="end" dominant-baseline="middle">{}</text>)"
                       "\n",
                       kLeft - 6, py, percent ? fmt::format("{:g}%", v * 100) : num(v));
  }
  for (double v : ticks(x.lo, x.hi, 6)) {
    double px = x.at(v);
    svg += fmt::format(R"(<line x1="{:.2f}" y1="{}" x2="{:.2f}" y2="{}" stroke="#eee"/>)"
                       "\n",
                       px, top, px, top + kPanelHeight);
    svg += fmt::format(R"(<text x="{:.2f}" y="{}" text-anchor="middle">{}</text>)"
                       "\n",
                       px, top + kPanelHeight + 16, num(v));
  }
  svg += fmt::format(R"svg(<text x="{}" y="{}" transform="rotate(-90 {} {})" text-anchor="middle">{}</text>)svg"
                     "\n",
                     24, top + kPanelHeight / 2, 24, top + kPanelHeight / 2, label);
}

std::pair<double, double> padded(double lo, double hi) {
  if (!(hi > lo)) return {lo - 0.5, hi + 0.5};
  double pad = (hi - lo) * 0.05;
  return {lo - pad, hi + pad};
}

}  // namespace

RunCurves read_curves(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the log file", path));
  std::map<int64_t, double> steps;  // by step: a resumed run's lines replace those it redid
  std::map<int64_t, RunCurves::EvalPoint> evals;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      const std::string event = j.at("event").get<std::string>();
      int64_t step = j.at("step").get<int64_t>();
      if (event == "step") {
        steps[step] = j.at("loss").get<double>();
        continue;
      }
      if (event != "epoch" && event != "stop") continue;  // events of later versions
      RunCurves::EvalPoint p{step, j.at("epoch").get<int64_t>(), std::nullopt, std::nullopt};
      if (event == "epoch") p.loss = j.at("loss").get<double>();
      if (j.contains("test_acc")) p.acc = j.at("test_acc").get<double>();
      evals[step] = p;
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: not a line of a dnnc log: {}", path, n, e.what()));
    }
  }
  if (steps.empty() && evals.empty())
    throw std::runtime_error(fmt::format("{}: the log has no step or epoch lines to plot", path));
  RunCurves c;
  for (const auto& [step, loss] : steps) c.steps.push_back({step, loss});
  for (const auto& [step, p] : evals) c.evals.push_back(p);
  return c;
}

std::string render_svg(const RunCurves& c, const std::string& title) {
  // The step axis covers every point; the loss axis every loss; accuracy 0..1 unless all are high.
  double max_step = 1, lo_loss = INFINITY, hi_loss = -INFINITY, lo_acc = 1;
  for (const auto& p : c.steps) {
    max_step = std::max(max_step, static_cast<double>(p.step));
    if (std::isfinite(p.loss)) lo_loss = std::min(lo_loss, p.loss), hi_loss = std::max(hi_loss, p.loss);
  }
  for (const auto& p : c.evals) {
    max_step = std::max(max_step, static_cast<double>(p.step));
    if (p.loss && std::isfinite(*p.loss)) lo_loss = std::min(lo_loss, *p.loss), hi_loss = std::max(hi_loss, *p.loss);
    if (p.acc) lo_acc = std::min(lo_acc, *p.acc);
  }
  if (!std::isfinite(lo_loss)) lo_loss = 0, hi_loss = 1;
  auto [loss_lo, loss_hi] = padded(lo_loss, hi_loss);
  double acc_lo = lo_acc >= 0.5 ? std::floor(lo_acc * 10) / 10 : 0;
  Axis x{0, max_step, kLeft, kLeft + kWidth};
  Axis loss_y{loss_lo, loss_hi, kLossTop + kPanelHeight, kLossTop};
  Axis acc_y{acc_lo, 1, kAccTop + kPanelHeight, kAccTop};

  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="720" height="580" viewBox="0 0 720 580" font-family="sans-serif" font-size="12">)"
      "\n<title>{}</title>\n"
      R"(<rect width="720" height="580" fill="#fafafa"/>)"
      "\n"
      R"(<text x="380" y="28" text-anchor="middle" font-size="15">{}</text>)"
      "\n",
      escape(title), escape(title));
  frame(svg, x, loss_y, kLossTop, "train loss", false);
  frame(svg, x, acc_y, kAccTop, "test accuracy", true);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">step</text>)"
                     "\n",
                     kLeft + kWidth / 2, kAccTop + kPanelHeight + 36);

  if (!c.steps.empty()) {
    std::string pts;
    for (const auto& p : c.steps)
      if (std::isfinite(p.loss)) pts += fmt::format("{:.2f},{:.2f} ", x.at(p.step), loss_y.at(p.loss));
    svg += fmt::format(R"(<polyline class="step-loss" fill="none" stroke="#1f77b4" stroke-width="1.2" points="{}"/>)"
                       "\n",
                       pts);
    svg += "<g class=\"step-points\">\n";
    for (const auto& p : c.steps)
      if (std::isfinite(p.loss))
        svg += fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="1" fill="#1f77b4" data-step="{}" data-loss="{}"/>)"
                           "\n",
                           x.at(p.step), loss_y.at(p.loss), p.step, num(p.loss));
    svg += "</g>\n";
  }
  svg += "<g class=\"epoch-loss\">\n";
  for (const auto& p : c.evals)
    if (p.loss && std::isfinite(*p.loss))
      svg += fmt::format(
          R"(<rect x="{:.2f}" y="{:.2f}" width="7" height="7" fill="#ff7f0e" data-step="{}" data-epoch="{}" data-loss="{}"><title>epoch {}: mean loss {}</title></rect>)"
          "\n",
          x.at(p.step) - 3.5, loss_y.at(*p.loss) - 3.5, p.step, p.epoch, num(*p.loss), p.epoch, num(*p.loss));
  svg += "</g>\n";
  std::string acc_pts;
  for (const auto& p : c.evals)
    if (p.acc) acc_pts += fmt::format("{:.2f},{:.2f} ", x.at(p.step), acc_y.at(*p.acc));
  if (!acc_pts.empty())
    svg += fmt::format(R"(<polyline class="test-acc" fill="none" stroke="#2ca02c" stroke-width="1.5" points="{}"/>)"
                       "\n",
                       acc_pts);
  svg += "<g class=\"acc-points\">\n";
  for (const auto& p : c.evals)
    if (p.acc)
      svg += fmt::format(
          R"(<circle cx="{:.2f}" cy="{:.2f}" r="4" fill="#2ca02c" data-step="{}" data-epoch="{}" data-acc="{}"><title>step {}: test accuracy {:.4f}</title></circle>)"
          "\n",
          x.at(p.step), acc_y.at(*p.acc), p.step, p.epoch, num(*p.acc), p.step, *p.acc);
  svg += "</g>\n";
  // The legend.
  svg += fmt::format(
      R"(<g font-size="11"><line x1="500" y1="{0}" x2="520" y2="{0}" stroke="#1f77b4"/><text x="524" y="{1}">step loss</text>)"
      R"(<rect x="586" y="{2}" width="7" height="7" fill="#ff7f0e"/><text x="598" y="{1}">epoch mean</text></g>)"
      "\n",
      kLossTop - 10, kLossTop - 6, kLossTop - 13.5);
  svg += "</svg>\n";
  return svg;
}

void write_plot(const std::string& path, const RunCurves& curves, const std::string& title) {
  std::string svg = render_svg(curves, title);
  AtomicFile f(path);
  f.write(svg.data(), svg.size());
  f.commit();
}

void CurveRecorder::on_epoch(const EpochEvent& e) {
  RunCurves::EvalPoint p{e.step, e.epoch, e.mean_loss, std::nullopt};
  if (e.eval) p.acc = e.eval->accuracy();
  curves_.evals.push_back(p);
}

void CurveRecorder::on_stop(const StopEvent& e) {
  RunCurves::EvalPoint p{e.step, e.epoch, std::nullopt, std::nullopt};
  if (e.eval) p.acc = e.eval->accuracy();
  curves_.evals.push_back(p);
}

}  // namespace dnnc::runtime
