// Pass `optimizer`: appends the parameter update (torch.optim SGD / Adam / AdamW semantics) to
// graph "train_step", turning its gradient outputs into in-place param updates.
#include <fmt/format.h>

#include <map>
#include <numeric>

#include "ir/op_registry.h"
#include "passes/grad_builder.h"
#include "passes/passes.h"

namespace dnnc::passes {
namespace {

constexpr const char* kStepParam = "dnnc.step";

double opt_float(const ir::Attrs& a, const char* key, double fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}

bool opt_bool(const ir::Attrs& a, const char* key) {
  auto it = a.find(key);
  if (it == a.end()) return false;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  return false;
}

void add_state(ir::Module& m, const std::string& name, const ir::TensorType& type) {
  if (m.param(name)) return;
  m.params.push_back(ir::Param{name, type, ir::ParamRole::optimizer_state, ir::InitSpec{"zeros", 0.0}, {}});
}

}  // namespace

bool optimizer(ir::Module& m) {
  ir::Graph* g = m.graph("train_step");
  if (!g) throw ir::CompileError(m.source_file, {}, "optimizer: no train_step graph (run autodiff first)");
  for (const auto& [name, v] : g->updates)
    if (name == kStepParam) return false;  // already applied

  const ir::OptimizerConfig& cfg = m.train.optimizer;
  const ir::Attrs& a = cfg.attrs;
  ir::SourceLoc loc = m.train.loc;
  if (cfg.kind != "sgd" && cfg.kind != "adam" && cfg.kind != "adamw")
    throw ir::CompileError(m.source_file, loc, fmt::format("unknown optimizer '{}' (expected sgd, adam or adamw)", cfg.kind));

  ir::Attrs op_attrs;
  double momentum = 0;
  if (cfg.kind == "sgd") {
    momentum = opt_float(a, "momentum", 0.0);
    double dampening = opt_float(a, "dampening", 0.0);
    bool nesterov = opt_bool(a, "nesterov");
    if (nesterov && (momentum <= 0 || dampening != 0))
      throw ir::CompileError(m.source_file, loc, "sgd: nesterov momentum requires a momentum > 0 and zero dampening");
    op_attrs = {{"lr", opt_float(a, "lr", 0.01)},
                {"momentum", momentum},
                {"dampening", dampening},
                {"weight_decay", opt_float(a, "weight_decay", 0.0)},
                {"nesterov", nesterov}};
  } else {
    op_attrs = {{"lr", opt_float(a, "lr", 0.001)},
                {"beta1", opt_float(a, "beta1", 0.9)},
                {"beta2", opt_float(a, "beta2", 0.999)},
                {"eps", opt_float(a, "eps", 1e-8)},
                {"weight_decay", opt_float(a, "weight_decay", cfg.kind == "adamw" ? 0.01 : 0.0)},
                {"decoupled", cfg.kind == "adamw"}};
  }

  GradBuilder b(*g, m);
  b.set_loc(loc);
  ir::TensorType scalar{ir::DType::f32, {}, ir::Layout::row_major};
  add_state(m, kStepParam, scalar);
  ir::ValueId step = b.emit1("add_scalar", {g->param(kStepParam, scalar)}, {{"value", 1.0}}, "step");
  // A scheduled lr is a graph input the trainer sets before every step (runtime/trainer/
  // lr_schedule.h), read by every update as its last operand.
  ir::ValueId lr = ir::kNoValue;
  if (!m.train.schedule.kind.empty()) lr = g->add_input(ir::kLrInput, scalar);
  auto with_lr = [&](std::vector<ir::ValueId> operands) {
    if (lr != ir::kNoValue) operands.push_back(lr);
    return operands;
  };

  // clip_grad_norm: torch.nn.utils.clip_grad_norm_(params, max_norm) before the step. Every
  // gradient is scaled by min(max_norm / (||all gradients||_2 + 1e-6), 1).
  auto is_grad = [&](size_t i) {
    const std::string& gname = g->value(g->outputs[i]).name;
    return i >= 2 && gname.ends_with(".grad") && m.param(gname.substr(0, gname.size() - 5));
  };
  std::map<ir::ValueId, ir::ValueId> clipped;
  if (m.train.clip_grad_norm > 0) {
    ir::ValueId total = ir::kNoValue;
    for (size_t i = 0; i < g->outputs.size(); ++i) {
      if (!is_grad(i)) continue;
      ir::ValueId gv = g->outputs[i];
      std::vector<int64_t> axes(g->value(gv).type.rank());
      std::iota(axes.begin(), axes.end(), int64_t{0});
      const std::string gname = g->value(gv).name;  // a copy: emitting nodes grows g->values
      ir::ValueId sq = b.emit1("mul", {gv, gv}, {}, gname + ".sq");
      ir::ValueId s = b.emit1("reduce_sum", {sq}, {{"axes", axes}, {"keepdim", false}}, gname + ".sumsq");
      total = total == ir::kNoValue ? s : b.emit1("add", {total, s}, {}, "grad_sumsq");
    }
    if (total != ir::kNoValue) {
      ir::ValueId coef = b.emit1("clip_coef", {total}, {{"max_norm", m.train.clip_grad_norm}}, "clip_coef");
      for (size_t i = 0; i < g->outputs.size(); ++i)
        if (is_grad(i)) {
          ir::ValueId gv = g->outputs[i];
          clipped[gv] = b.emit1("mul", {gv, coef}, {}, g->value(gv).name + ".clipped");
        }
    }
  }

  std::vector<ir::ValueId> kept;
  std::vector<std::pair<std::string, ir::ValueId>> updates;
  for (size_t i = 0; i < g->outputs.size(); ++i) {
    ir::ValueId gv = g->outputs[i];
    const std::string& gname = g->value(gv).name;
    const ir::Param* p = i >= 2 && gname.ends_with(".grad") ? m.param(gname.substr(0, gname.size() - 5)) : nullptr;
    if (!p) {
      kept.push_back(gv);
      continue;
    }
    std::string pname = p->name;
    ir::TensorType ptype = p->type;
    ir::ValueId pv = g->param(pname, ptype);
    if (auto c = clipped.find(gv); c != clipped.end()) gv = c->second;
    if (cfg.kind == "sgd") {
      if (momentum != 0) {
        std::string buf = pname + ".momentum_buffer";
        add_state(m, buf, ptype);
        auto r = b.emit("sgd_update", with_lr({pv, gv, g->param(buf, ptype), step}), op_attrs, pname + ".new");
        updates.emplace_back(pname, r[0]);
        updates.emplace_back(buf, r[1]);
      } else {
        updates.emplace_back(pname, b.emit1("sgd_update", with_lr({pv, gv}), op_attrs, pname + ".new"));
      }
    } else {
      std::string m1 = pname + ".exp_avg", m2 = pname + ".exp_avg_sq";
      add_state(m, m1, ptype);
      add_state(m, m2, ptype);
      auto r = b.emit("adam_update", with_lr({pv, gv, g->param(m1, ptype), g->param(m2, ptype), step}), op_attrs,
                      pname + ".new");
      updates.emplace_back(pname, r[0]);
      updates.emplace_back(m1, r[1]);
      updates.emplace_back(m2, r[2]);
    }
  }
  updates.emplace_back(kStepParam, step);
  g->outputs = kept;
  g->updates.insert(g->updates.end(), updates.begin(), updates.end());
  return true;
}

}  // namespace dnnc::passes
