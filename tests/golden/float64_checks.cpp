// dnnc held to float64 (tests/golden/float64/*.safetensors, README.md "Float64 goldens"), on any
// backend (float64_test: reference, cpu, the emulated cuda kernels; cuda_gpu_tests: cuda):
// - every op case at a realistic size (long reductions: batchnorm statistics, conv/linear weight
//   and bias gradients, 10^5-10^6-element sums, softmax over 10 and 1000 classes): each output and
//   input gradient within 2x PyTorch fp32's own error against float64, plus kFloor;
// - resnet_mnist (batchnorm, residual adds, a stride-2 conv) trained 20 steps with SGD (Nesterov
//   momentum, weight decay) from PyTorch's init: every loss within 1e-5 of the float64 run, the
//   state_dict within 10x PyTorch fp32's distance from float64 (num_batches_tracked exact).
#include "float64_checks.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "dynamic_tests.h"
#include "frontend/frontend.h"
#include "golden_file.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/grad_builder.h"
#include "passes/grad_rules.h"
#include "runtime/reference/interpreter.h"
#include "runtime/trainer/checkpoint_io.h"

namespace dnnc::golden {
namespace {

using runtime::Tensor;

// About two fp32 roundings of the result (2^-24 each): the error a correctly rounded answer may
// still show after its last operation, so a near-exact PyTorch error does not demand the impossible.
constexpr double kFloor = 1.2e-7;
constexpr double kOpFactor = 2.0;        // op outputs and gradients: <= 2x PyTorch fp32's error + kFloor
constexpr double kLossTol = 1e-5;        // each trajectory loss against float64, relative
constexpr double kParamFactor = 10.0;    // final state_dict: <= 10x PyTorch fp32's distance (run_trajectory)

// make_input of golden_float64.py: splitmix64 of (seed << 32) + i, top 24 bits k; an f32 input is
// fl32(lo + span * k / 2^24) (exact in double, rounded once), an i64 one k mod classes.
Tensor make_input(const nlohmann::json& spec) {
  std::vector<int64_t> shape = spec.at("shape").get<std::vector<int64_t>>();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  uint64_t seed = spec.at("seed").get<uint64_t>();
  bool labels = spec.at("dtype").get<std::string>() == "i64";
  Tensor t(labels ? ir::DType::i64 : ir::DType::f32, shape);
  double lo = labels ? 0 : spec.at("lo").get<double>(), span = labels ? 0 : spec.at("span").get<double>();
  uint64_t classes = labels ? spec.at("classes").get<uint64_t>() : 1;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (seed << 32) + static_cast<uint64_t>(i) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    uint64_t k = z >> 40;
    if (labels)
      t.i64()[i] = static_cast<int64_t>(k % classes);
    else
      t.f32()[i] = static_cast<float>(lo + span * (static_cast<double>(k) * 0x1p-24));
  }
  return t;
}

// A float64 tensor stored as `<name>.hi` + `<name>.lo` (f32 each).
std::vector<double> f64_of(const GoldenFile& f, const std::string& name) {
  const Tensor& hi = f.tensor(name + ".hi");
  const Tensor& lo = f.tensor(name + ".lo");
  REQUIRE(hi.numel() == lo.numel());
  std::vector<double> out(static_cast<size_t>(hi.numel()));
  for (int64_t i = 0; i < hi.numel(); ++i)
    out[static_cast<size_t>(i)] = static_cast<double>(hi.f32()[i]) + static_cast<double>(lo.f32()[i]);
  return out;
}

// ‖got[::stride] − ref‖ / ‖ref‖ (‖·‖ alone for an all-zero ref).
double rel_error(const Tensor& got, const std::vector<double>& ref, int64_t stride) {
  REQUIRE(got.dtype() == ir::DType::f32);
  REQUIRE((got.numel() + stride - 1) / stride == static_cast<int64_t>(ref.size()));
  double d = 0, n = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = static_cast<double>(got.f32()[static_cast<int64_t>(i) * stride]) - ref[i];
    d += e * e;
    n += ref[i] * ref[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

std::vector<std::string> strings(const nlohmann::json& j) { return j.get<std::vector<std::string>>(); }
// ---- op cases ---------------------------------------------------------------------------------

struct OpCase {
  GoldenFile file;
  std::string name, op;
  std::vector<std::string> operands, outputs, grads;
  int64_t batch = 0;
  ir::Module module;  // graphs "forward" (the op, every result) and "backward" (the gradients of `grads`)
  std::map<std::string, Tensor> inputs;
};

// The op alone on its operands (the leading dim of data operands of the first operand's leading
// size is the symbolic batch), then its gradient rule on `grad_out` (fill(1) for a scalar loss).
OpCase build_case(const std::string& path) {
  OpCase c;
  c.file = load_golden(path);
  c.name = case_name(path);
  c.op = c.file.meta("op");
  c.operands = strings(c.file.meta_json("operands"));
  c.outputs = strings(c.file.meta_json("outputs"));
  c.grads = strings(c.file.meta_json("grads"));
  c.batch = std::stoll(c.file.meta("batch"));
  const ir::OpDef* def = ir::find_op(c.op);
  if (!def) FAIL(c.name << ": op '" << c.op << "' is not in the registry");
  ir::Attrs attrs = ir::complete_attrs(*def, json_to_attrs(c.file.meta_json("attrs"), c.name + " attrs"));
  nlohmann::json specs = c.file.meta_json("inputs");
  ir::Graph g;
  g.name = "forward";
  std::vector<ir::ValueId> ins;
  std::vector<ir::TensorType> types;
  for (const std::string& name : c.operands) {
    c.inputs[name] = make_input(specs.at(name));
    const Tensor& t = c.inputs[name];
    ir::TensorType ty{t.dtype(), t.shape(), ir::Layout::row_major};
    bool state = name == "weight" || name == "bias" || name == "running_mean" || name == "running_var";
    if (!state && ty.rank() >= 1 && ty.shape[0] == c.batch) ty.shape[0] = ir::kBatch;
    types.push_back(ty);
    ins.push_back(g.add_input(name, ty));
  }
  std::vector<ir::TensorType> out_types = ir::infer_types(*def, types, attrs);
  REQUIRE(out_types.size() >= c.outputs.size());
  std::vector<std::string> names = c.outputs;
  for (size_t i = names.size(); i < out_types.size(); ++i) names.push_back(fmt::format("unused{}", i));
  g.outputs = g.add_node(c.op, ins, attrs, out_types, {}, names);
  g.outputs.resize(c.outputs.size());
  c.module.name = c.name;
  c.module.source_file = display_path(path);
  c.module.batch_symbol = "N";
  c.module.graphs.push_back(g);
  if (c.grads.empty()) return c;

  g.name = "backward";
  g.outputs.clear();
  const ir::Node node = g.nodes.at(0);
  passes::GradBuilder b(g, c.module);
  std::vector<ir::ValueId> douts(node.outputs.size(), ir::kNoValue);
  nlohmann::json gspec = c.file.meta_json("grad_out");
  if (!gspec.is_null()) {
    douts[0] = g.add_input("grad_out", g.value(node.outputs[0]).type);
    c.inputs["grad_out"] = make_input(gspec);
  } else {
    douts[0] = b.emit1("fill", {}, {{"value", 1.0}, {"shape", std::vector<int64_t>{}}}, "dloss");
  }
  std::vector<bool> needs;
  for (const std::string& name : c.operands)
    needs.push_back(std::find(c.grads.begin(), c.grads.end(), name) != c.grads.end());
  const passes::GradRule* rule = passes::find_grad_rule(c.op);
  if (!rule) FAIL(c.name << ": op '" << c.op << "' has no gradient rule");
  std::vector<ir::ValueId> dins = (*rule)(b, node, douts, needs);
  for (const std::string& name : c.grads) {
    size_t k = static_cast<size_t>(std::find(c.operands.begin(), c.operands.end(), name) - c.operands.begin());
    REQUIRE(k < dins.size());
    REQUIRE(dins[k] != ir::kNoValue);
    g.outputs.push_back(dins[k]);
  }
  c.module.graphs.push_back(std::move(g));
  return c;
}

void check_op(const OpCase& c, const std::string& backend_name, const RunnerFactory& make, const std::string& graph,
              const std::vector<std::string>& names, const std::string& prefix) {
  runtime::ParamStore no_params;
  const ir::Graph& g = *c.module.graph(graph);
  std::map<std::string, Tensor> ins;
  for (ir::ValueId v : g.inputs) ins[g.value(v).name] = c.inputs.at(g.value(v).name);
  std::vector<Tensor> outs = make(c.module, graph, no_params, c.batch)(ins);
  REQUIRE(outs.size() == names.size());
  nlohmann::json torch_err = c.file.meta_json("torch_error"), stride = c.file.meta_json("stride");
  for (size_t i = 0; i < names.size(); ++i) {
    std::string t = prefix + names[i];
    double err = rel_error(outs[i], f64_of(c.file, "ref." + t), stride.at(t).get<int64_t>());
    double torch = torch_err.at(t).get<double>(), tol = kOpFactor * torch + kFloor;
    INFO(fmt::format("{} on {}: {} rel err {:.3e} vs float64; PyTorch fp32 {:.3e}; tolerance {:.3e}", c.name,
                     backend_name, t, err, torch, tol));
    CHECK(err <= tol);
  }
}

}  // namespace

// ---- the trajectory ---------------------------------------------------------------------------

void check_float64_trajectory(const std::string& path, const std::string& backend_name, const RunnerFactory& make) {
  GoldenFile f = load_golden(path);
  ir::Module m = frontend::compile_file(source_dir() + "/" + f.meta("model"));
  m.train.optimizer.kind = "sgd";
  m.train.optimizer.attrs = json_to_attrs(f.meta_json("optimizer"), "optimizer");
  passes::compile(m);
  runtime::ParamStore store = runtime::reference::init_params(m, std::stoull(f.meta("seed")));
  std::vector<std::string> keys = strings(f.meta_json("params"));
  for (const std::string& k : keys) {
    REQUIRE(store.find(k) != nullptr);
    store.tensors[k] = f.tensor("param." + k);
  }
  int64_t batch = std::stoll(f.meta("batch"));
  Runner step = make(m, "train_step", store, batch);
  std::vector<double> loss64 = f64_of(f, "f64.loss");
  int steps = std::stoi(f.meta("steps"));
  REQUIRE(static_cast<int>(loss64.size()) == steps);
  for (int i = 0; i < steps; ++i) {
    std::vector<Tensor> out = step({{"image", f.tensor(fmt::format("batch.{}.x", i))},
                                        {"label", f.tensor(fmt::format("batch.{}.y", i))}});
    double l = out.at(0).f32()[0], err = std::abs(l - loss64[static_cast<size_t>(i)]) / std::abs(loss64[static_cast<size_t>(i)]);
    double torch = std::abs(f.tensor("fp32.loss").f32()[i] - loss64[static_cast<size_t>(i)]) / loss64[static_cast<size_t>(i)];
    INFO(fmt::format("{} on {}: step {} loss {:.9g}, float64 {:.9g}: rel err {:.3e} (PyTorch fp32 {:.3e})",
                     f.meta("model"), backend_name, i + 1, l, loss64[static_cast<size_t>(i)], err, torch));
    CHECK(err <= kLossTol);
  }
  // The state_dict a checkpoint writes: PyTorch's keys in PyTorch's order, each close to float64.
  runtime::NamedTensors sd = runtime::state_dict(m, store);
  std::vector<std::string> sd_keys;
  for (const auto& [k, t] : sd) sd_keys.push_back(k);
  CHECK(sd_keys == keys);
  // Past a few steps, training amplifies each implementation's roundings along its own random
  // direction, so one key's distance from float64 varies several-fold between equally accurate
  // fp32 runs. Held to PyTorch's: the RMS over the float entries of their relative distances,
  // within kParamFactor of PyTorch's RMS; and no entry further than kParamFactor times
  // PyTorch's furthest entry.
  nlohmann::json torch_err = f.meta_json("torch_error");
  double ours2 = 0, torch2 = 0, torch_max = 0;
  int floats = 0;
  std::string worst;
  double worst_err = 0;
  for (const auto& [k, t] : sd) {
    INFO(f.meta("model") << " on " << backend_name << ": state_dict entry " << k);
    if (t.dtype() == ir::DType::i64) {  // num_batches_tracked
      const Tensor& want = f.tensor("f64.final." + k);
      REQUIRE(want.numel() == t.numel());
      CHECK(t.i64()[0] == want.i64()[0]);
      CHECK(t.i64()[0] == steps);
      continue;
    }
    double err = rel_error(t, f64_of(f, "f64.final." + k), 1), torch = torch_err.at(k).get<double>();
    ours2 += err * err;
    torch2 += torch * torch;
    torch_max = std::max(torch_max, torch);
    ++floats;
    if (err > worst_err) worst_err = err, worst = k;
  }
  REQUIRE(floats > 0);
  double ours_rms = std::sqrt(ours2 / floats), torch_rms = std::sqrt(torch2 / floats);
  INFO(fmt::format("{} on {}: state_dict RMS rel distance from float64 {:.3e} (PyTorch fp32 {:.3e}); furthest entry "
                   "{} at {:.3e} (PyTorch's furthest {:.3e})",
                   f.meta("model"), backend_name, ours_rms, torch_rms, worst, worst_err, torch_max));
  CHECK(ours_rms <= kParamFactor * torch_rms);
  CHECK(worst_err <= kParamFactor * torch_max);
}

void check_float64_op(const std::string& path, const std::string& backend, const RunnerFactory& make) {
  OpCase c = build_case(path);
  ir::verify(c.module);
  check_op(c, backend, make, "forward", c.outputs, "out.");
  if (!c.grads.empty()) check_op(c, backend, make, "backward", c.grads, "grad.in.");
}

void register_float64_tests(const std::string& backend, const std::string& tags, RunnerFactory make,
                            const std::function<bool(const std::string&)>& skip) {
  for (const std::string& path : list_golden_files("float64")) {
    std::string name = case_name(path), kind, problem;
    if (skip && skip(name)) continue;
    try {
      std::map<std::string, std::string> meta = read_golden_metadata(path);
      problem = version_problem(path, meta);
      kind = meta["kind"];
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (problem.empty() && kind != "float64_op" && kind != "float64_model")
      problem = fmt::format("golden file {} has kind '{}', expected float64_op or float64_model: regenerate with {}",
                            display_path(path), kind, kRegenerate);
    std::string test = fmt::format("float64 {} {} {}", kind == "float64_model" ? "model" : "op", name, backend);
    if (!problem.empty())
      register_test(CATCH_INTERNAL_LINEINFO, test, tags, [problem] { FAIL(problem); });
    else if (kind == "float64_op")
      register_test(CATCH_INTERNAL_LINEINFO, test, tags + "[op]",
                    [path, backend, make] { check_float64_op(path, backend, make); });
    else
      register_test(CATCH_INTERNAL_LINEINFO, test, tags + "[trajectory]",
                    [path, backend, make] { check_float64_trajectory(path, backend, make); });
  }
}

}  // namespace dnnc::golden
