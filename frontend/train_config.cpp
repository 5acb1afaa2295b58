// The train block: `data = mnist(normalize: mean (0.5), std (0.5))`, `batch = 128`,
// `epochs = 5`, `seed = 1`, `optimizer = sgd(lr: 0.001, momentum: 0.9)`.
#include "frontend/train_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "frontend/call_args.h"
#include "frontend/const_eval.h"
#include "frontend/suggest.h"
#include "ir/lr_schedule.h"

namespace dnnc::frontend {
namespace {

using ast::Expr;
using ast::ExprKind;

struct DataSet {
  std::string name;
  int64_t channels, height, width;
};
const std::vector<DataSet> kDataSets = {{"mnist", 1, 28, 28}, {"fashion_mnist", 1, 28, 28}, {"cifar10", 3, 32, 32}};

const std::vector<std::string> kSettings = {"data",      "augment",  "batch",         "epochs",
                                            "seed",      "optimizer", "schedule",     "clip_grad_norm"};
const std::vector<std::string> kAugmentations = {"random_crop", "random_horizontal_flip"};
const std::vector<std::string> kOptimizers = {"sgd", "adam", "adamw"};

// Each schedule's arguments (positional order) and how each is read.
enum class ArgKind { integer, number, integers, name, flag };
struct ScheduleArg {
  const char* name;
  ArgKind kind;
};
const std::vector<std::pair<std::string, std::vector<ScheduleArg>>> kSchedules = {
    {"step", {{"step_size", ArgKind::integer}, {"gamma", ArgKind::number}}},
    {"multistep", {{"milestones", ArgKind::integers}, {"gamma", ArgKind::number}}},
    {"cosine", {{"t_max", ArgKind::number}, {"eta_min", ArgKind::number}}},
    {"linear", {{"start_factor", ArgKind::number}, {"end_factor", ArgKind::number}, {"total_iters", ArgKind::integer}}},
    {"one_cycle",
     {{"max_lr", ArgKind::number},
      {"pct_start", ArgKind::number},
      {"anneal_strategy", ArgKind::name},
      {"div_factor", ArgKind::number},
      {"final_div_factor", ArgKind::number},
      {"three_phase", ArgKind::flag}}},
};

class TrainLowering {
 public:
  TrainLowering(const ast::File& f, ir::Module& m, const std::string& file)
      : f_(f), t_(*f.train), m_(m), file_(file), ev_(file, [this](const Expr& e) -> Resolved { unknown(e); }) {}

  void run() {
    if (t_.name != m_.name)
      fail(t_.loc, fmt::format("train block names model '{}', but the model is '{}'", t_.name, m_.name));
    std::map<std::string, const ast::Assign*> seen;
    for (const ast::Assign& a : t_.entries) {
      if (std::find(kSettings.begin(), kSettings.end(), a.name) == kSettings.end()) unknown_setting(a);
      auto [it, fresh] = seen.emplace(a.name, &a);
      if (!fresh)
        fail(a.loc, fmt::format("train setting '{}' is set twice (first at {}:{})", a.name, it->second->loc.line,
                                it->second->loc.col));
    }
    ir::TrainConfig& tc = m_.train;
    tc.present = true;
    tc.loc = t_.loc;
    // batch and the optimizer shape the compiled training step; epochs only how long `dnnc
    // train` runs, so it may come from --epochs instead (0 here: not set).
    for (const char* required : {"batch", "optimizer"})
      if (!seen.count(required))
        fail(t_.loc, fmt::format("train block is missing '{}'; it needs batch and optimizer (and epochs, or "
                                 "--epochs when training)",
                                 required));
    tc.batch = int_at_least(*seen["batch"], 1);
    tc.epochs = seen.count("epochs") ? int_at_least(*seen["epochs"], 1) : 0;
    tc.seed = seen.count("seed") ? int_at_least(*seen["seed"], 0) : 0;
    if (seen.count("data")) data(*seen["data"]->value);
    if (seen.count("augment")) augment(*seen["augment"]->value);
    optimizer(*seen["optimizer"]->value);
    if (seen.count("schedule")) schedule(*seen["schedule"]->value);
    if (seen.count("clip_grad_norm")) {  // torch.nn.utils.clip_grad_norm_(params, max_norm)
      const Expr& v = *seen["clip_grad_norm"]->value;
      tc.clip_grad_norm = ev_.eval_float(v, "train setting 'clip_grad_norm'");
      if (!(tc.clip_grad_norm > 0))
        fail(expr_start(v), fmt::format("clip_grad_norm must be positive, found {}", tc.clip_grad_norm));
    }
  }

 private:
  const ast::File& f_;
  const ast::TrainBlock& t_;
  ir::Module& m_;
  const std::string& file_;
  ConstEval ev_;

  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }
  [[noreturn]] void unknown(const Expr& e) const {
    fail(e.loc, fmt::format("unknown identifier '{}'; train settings take constants", e.name));
  }

  [[noreturn]] void unknown_setting(const ast::Assign& a) const {
    static const std::vector<std::string> opt_args = {"lr",       "momentum", "dampening", "weight_decay",
                                                      "nesterov", "betas",    "eps"};
    if (std::find(opt_args.begin(), opt_args.end(), a.name) != opt_args.end())
      fail(a.loc,
           fmt::format("'{}' is an optimizer argument; write it inside the optimizer, e.g. optimizer = sgd({}: ...)",
                       a.name, a.name));
    std::string hint = did_you_mean(a.name, kSettings);
    if (hint.empty()) hint = "; expected one of data, augment, batch, epochs, seed, optimizer, schedule, clip_grad_norm";
    fail(a.loc, fmt::format("unknown train setting '{}'{}", a.name, hint));
  }

  int64_t int_at_least(const ast::Assign& a, int64_t min) const {
    int64_t v = ev_.eval_int(*a.value, fmt::format("train setting '{}'", a.name));
    if (v < min) fail(expr_start(*a.value), fmt::format("{} must be at least {}, found {}", a.name, min, v));
    return v;
  }

  const Expr& expect_call(const Expr& e, const char* setting, const std::vector<std::string>& known,
                          const char* kind) const {
    if (e.kind != ExprKind::call) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k + "(...)";
      fail(expr_start(e), fmt::format("{} expects one of {}; found {}", setting, list, describe_expr(e)));
    }
    if (std::find(known.begin(), known.end(), e.name) == known.end()) {
      std::string hint = did_you_mean(e.name, known);
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(e.loc, fmt::format("unknown {} '{}'{}{}", kind, e.name, hint, hint.empty() ? "; known: " + list : ""));
    }
    return e;
  }

  // A value per channel: one value is used for every channel.
  std::vector<double> per_channel(const Expr& e, const std::string& what, const DataSet& ds, bool positive) const {
    std::vector<double> v = ev_.eval_floats(e, what);
    if (v.size() != 1 && static_cast<int64_t>(v.size()) != ds.channels) {
      std::string counts = ds.channels == 1 ? "1 value" : fmt::format("1 or {} values", ds.channels);
      fail(expr_start(e), fmt::format("{} needs {} ({} has {} channel{}), found {}", what, counts, ds.name, ds.channels,
                                      ds.channels == 1 ? "" : "s", v.size()));
    }
    if (v.size() == 1) v.assign(static_cast<size_t>(ds.channels), v[0]);
    for (double x : v)
      if (positive && !(x > 0)) fail(expr_start(e), fmt::format("{} values must be positive, found {}", what, x));
    return v;
  }

  /// data = mnist(normalize: mean M, std S) | fashion_mnist(...) | cifar10(...)
  void data(const Expr& e) {
    expect_call(e, "data", {"mnist", "fashion_mnist", "cifar10"}, "data set");
    const DataSet& ds =
        *std::find_if(kDataSets.begin(), kDataSets.end(), [&](const DataSet& d) { return d.name == e.name; });
    Bound b = bind_args(e, Signature{e.name, {"normalize"}, 0, false}, file_);
    ir::DataConfig& dc = m_.train.data;
    dc.dataset = ds.name;
    dc.mean.assign(static_cast<size_t>(ds.channels), 0.0);
    dc.std.assign(static_cast<size_t>(ds.channels), 1.0);
    if (const Expr* n = b.slots[0]) {
      if (n->kind != ExprKind::call || n->name != "normalize")
        fail(expr_start(*n), "normalize expects 'mean (...), std (...)'");
      dc.mean = per_channel(*n->args[0].value, "normalize mean", ds, false);
      dc.std = per_channel(*n->args[1].value, "normalize std", ds, true);
    }
    check_inputs(ds);
  }

  const ast::InputDecl* input_decl(const std::string& name) const {
    for (const auto& s : f_.model.stmts)
      if (s.input && s.input->name == name) return &*s.input;
    return nullptr;
  }

  // The data set feeds the first input (images, any shape with C*H*W values per sample) and
  // the second (labels, i64[N]); a model may leave the labels out (e.g. an autoencoder).
  void check_inputs(const DataSet& ds) const {
    const ir::Graph& g = *m_.graph("forward");
    const std::string& bs = m_.batch_symbol;
    int64_t per_sample = ds.channels * ds.height * ds.width;
    std::string image_type =
        ir::to_string(ir::TensorType{ir::DType::f32, {ir::kBatch, ds.channels, ds.height, ds.width}}, bs);
    if (g.inputs.size() > 2) {
      const ir::Value& v = g.value(g.inputs[2]);
      fail(input_decl(v.name)->loc, fmt::format("data set {} provides 2 inputs (images {} and labels i64[{}]), but the "
                                                "model declares {}",
                                                ds.name, image_type, bs, g.inputs.size()));
    }
    if (!g.inputs.empty()) {
      const ir::Value& v = g.value(g.inputs[0]);
      std::optional<int64_t> n = v.type.numel(1);
      if (v.type.dtype != ir::DType::f32 || n != per_sample)
        fail(
            input_decl(v.name)->loc,
            fmt::format("input '{}' is {}, but {} images are {}: expected f32 with {} values per sample, found {}",
                        v.name, ir::to_string(v.type, bs), ds.name, image_type, per_sample, ir::to_string(v.type, bs)));
    }
    if (g.inputs.size() == 2) {
      const ir::Value& v = g.value(g.inputs[1]);
      if (v.type != ir::TensorType{ir::DType::i64, {ir::kBatch}})
        fail(input_decl(v.name)->loc, fmt::format("input '{}' receives the {} labels: expected i64[{}], found {}",
                                                  v.name, ds.name, bs, ir::to_string(v.type, bs)));
    }
  }

  /// augment = random_crop(padding: P) | random_horizontal_flip(p: 0.5) | (one, other)
  void augment(const Expr& e) {
    std::vector<const Expr*> items;
    if (e.kind == ExprKind::tuple)
      for (const auto& x : e.elems) items.push_back(x.get());
    else
      items.push_back(&e);
    ir::DataConfig& dc = m_.train.data;
    std::map<std::string, const Expr*> seen;
    for (const Expr* x : items) {
      expect_call(*x, "augment", kAugmentations, "augmentation");
      auto [it, fresh] = seen.emplace(x->name, x);
      if (!fresh)
        fail(x->loc, fmt::format("augmentation {} is given twice (first at {}:{})", x->name, it->second->loc.line,
                                 it->second->loc.col));
      if (x->name == "random_crop") {
        Bound b = bind_args(*x, Signature{"random_crop", {"padding"}, 1, false}, file_);
        dc.crop_padding = ev_.eval_int(*b.slots[0], "argument 'padding' of random_crop");
        if (dc.crop_padding < 1)
          fail(expr_start(*b.slots[0]), fmt::format("padding of random_crop must be at least 1, found {}",
                                                    dc.crop_padding));
      } else {
        Bound b = bind_args(*x, Signature{"random_horizontal_flip", {"p"}, 0, false}, file_);
        dc.flip_p = b.slots[0] ? ev_.eval_float(*b.slots[0], "argument 'p' of random_horizontal_flip") : 0.5;
        if (!(dc.flip_p > 0 && dc.flip_p <= 1))
          fail(expr_start(*b.slots[0]),
               fmt::format("p of random_horizontal_flip must be in (0, 1], found {}", dc.flip_p));
      }
    }
  }

  /// schedule = step(step_size, gamma) | multistep(milestones, gamma) | cosine(t_max, eta_min)
  ///          | linear(start_factor, end_factor, total_iters)
  ///          | one_cycle(max_lr, pct_start, anneal_strategy, div_factor, final_div_factor, three_phase)
  /// Range checks are ir::LrSchedule's (PyTorch's), reported at the argument at fault.
  void schedule(const Expr& e) {
    std::vector<std::string> names;
    for (const auto& [k, args] : kSchedules) names.push_back(k);
    expect_call(e, "schedule", names, "schedule");
    const auto& args = std::find_if(kSchedules.begin(), kSchedules.end(), [&](const auto& k) { return k.first == e.name; })->second;
    std::vector<std::string> params;
    for (const ScheduleArg& a : args) params.push_back(a.name);
    size_t required = e.name == "step" || e.name == "multistep" || e.name == "one_cycle" ? 1 : 0;
    Bound b = bind_args(e, Signature{"schedule " + e.name, params, required, false}, file_);
    ir::ScheduleConfig& sc = m_.train.schedule;
    sc.kind = e.name;
    sc.attrs.clear();
    for (size_t i = 0; i < args.size(); ++i) {
      const Expr* x = b.slots[i];
      if (!x) continue;
      std::string what = fmt::format("argument '{}' of schedule {}", args[i].name, e.name);
      ir::AttrValue v;
      switch (args[i].kind) {
        case ArgKind::integer: v = ev_.eval_int(*x, what); break;
        case ArgKind::number: v = ev_.eval_float(*x, what); break;
        case ArgKind::integers: v = ev_.eval_ints(*x, what); break;
        case ArgKind::flag: v = ev_.eval_bool(*x, what); break;
        case ArgKind::name:
          if (x->kind != ExprKind::ident || (x->name != "cos" && x->name != "linear"))
            fail(expr_start(*x), fmt::format("{} expects cos or linear; found {}", what, describe_expr(*x)));
          v = x->name;
          break;
      }
      sc.attrs[args[i].name] = v;
    }
    try {
      ir::LrSchedule(sc, 1.0, std::max<int64_t>(1, m_.train.epochs), 1);
    } catch (const ir::ScheduleError& err) {
      ir::SourceLoc at = e.loc;
      for (size_t i = 0; i < args.size(); ++i)
        if (b.slots[i] && err.arg == args[i].name) at = expr_start(*b.slots[i]);
      fail(at, err.what());
    }
  }

  double number(const Expr* e, const std::string& opt, const char* arg, double def, double min) const {
    if (!e) return def;
    double v = ev_.eval_float(*e, fmt::format("argument '{}' of {}", arg, opt));
    if (!(v >= min)) fail(expr_start(*e), fmt::format("{} of {} must be at least {}, found {}", arg, opt, min, v));
    return v;
  }

  /// optimizer = sgd(lr, momentum, dampening, weight_decay, nesterov) | adam(lr, betas, eps, weight_decay) | adamw(...)
  void optimizer(const Expr& e) {
    expect_call(e, "optimizer", kOptimizers, "optimizer");
    ir::OptimizerConfig& oc = m_.train.optimizer;
    oc.kind = e.name;
    oc.attrs.clear();
    if (e.name == "sgd") {
      Bound b =
          bind_args(e, Signature{"sgd", {"lr", "momentum", "dampening", "weight_decay", "nesterov"}, 0, false}, file_);
      double momentum = number(b.slots[1], "sgd", "momentum", 0.0, 0.0);
      double dampening = b.slots[2] ? ev_.eval_float(*b.slots[2], "argument 'dampening' of sgd") : 0.0;
      bool nesterov = b.slots[4] ? ev_.eval_bool(*b.slots[4], "argument 'nesterov' of sgd") : false;
      if (nesterov && (momentum <= 0 || dampening != 0))
        fail(expr_start(*b.slots[4]),
             fmt::format("nesterov momentum needs momentum > 0 and dampening 0, found momentum {} "
                         "and dampening {}",
                         momentum, dampening));
      oc.attrs = {{"lr", number(b.slots[0], "sgd", "lr", 1e-3, 0.0)},
                  {"momentum", momentum},
                  {"dampening", dampening},
                  {"weight_decay", number(b.slots[3], "sgd", "weight_decay", 0.0, 0.0)},
                  {"nesterov", nesterov}};
      return;
    }
    const std::string& k = e.name;
    Bound b = bind_args(e, Signature{k, {"lr", "betas", "eps", "weight_decay"}, 0, false}, file_);
    double beta1 = 0.9, beta2 = 0.999;
    if (const Expr* betas = b.slots[1]) {
      std::vector<double> v = ev_.eval_floats(*betas, fmt::format("argument 'betas' of {}", k));
      if (v.size() != 2)
        fail(expr_start(*betas), fmt::format("betas of {} expects a pair (beta1, beta2), found {} value{}", k, v.size(),
                                             v.size() == 1 ? "" : "s"));
      for (double x : v)
        if (!(x >= 0 && x < 1)) fail(expr_start(*betas), fmt::format("betas of {} must be in [0, 1), found {}", k, x));
      beta1 = v[0];
      beta2 = v[1];
    }
    oc.attrs = {{"lr", number(b.slots[0], k, "lr", 1e-3, 0.0)},
                {"beta1", beta1},
                {"beta2", beta2},
                {"eps", number(b.slots[2], k, "eps", 1e-8, 0.0)},
                {"weight_decay", number(b.slots[3], k, "weight_decay", k == "adamw" ? 1e-2 : 0.0, 0.0)}};
  }
};

}  // namespace

void lower_train(const ast::File& f, ir::Module& m, const std::string& file) {
  if (!f.train) return;
  TrainLowering(f, m, file).run();
}

}  // namespace dnnc::frontend
