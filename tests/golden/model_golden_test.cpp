// Per-model goldens: for every tests/golden/models/*.safetensors, dnnc's compiled model (frontend,
// infer-shapes, autodiff, optimizer) on the reference interpreter against PyTorch: the first
// step's loss, logits and every gradient (rel err <= 1e-5), then each optimizer run's 20-step
// loss trajectory and final parameters (rel err <= 1e-4).
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "compare.h"
#include "dynamic_tests.h"
#include "frontend/frontend.h"
#include "golden_file.h"
#include "passes/compile.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::golden {
namespace {

namespace ref = runtime::reference;

constexpr double kStepTol = 1e-5;        // step1.loss, step1.logits, grad.<key>
constexpr double kTrajectoryTol = 1e-4;  // <run>.loss as a vector, <run>.final.<key>

// Runs `names` with the verifier before the first pass and after each one.
void run_passes(ir::Module& m, const std::vector<std::string>& names) {
  passes::compile(m, {.pipeline = {.passes = names, .verify_each = true}});
}

std::vector<std::string> param_keys(const GoldenFile& f) {
  return f.meta_json("params").get<std::vector<std::string>>();
}

ir::Module compile_model(const GoldenFile& f) { return frontend::compile_file(source_dir() + "/" + f.meta("model")); }

// init_params (zeros for optimizer state, the module's own init elsewhere), then every `param.*`
// of the golden over it. Fails if dnnc and PyTorch disagree on the trainable params or a shape.
ref::ParamStore golden_params(const ir::Module& m, const GoldenFile& f) {
  ref::ParamStore store = ref::init_params(m, std::stoull(f.meta("seed")));
  std::vector<std::string> keys = param_keys(f);
  for (const ir::Param& p : m.params) {
    if (p.role != ir::ParamRole::weight) continue;
    INFO("dnnc param '" << p.name << "' of " << f.meta("model") << " is not in the golden's params");
    CHECK(std::find(keys.begin(), keys.end(), p.name) != keys.end());
  }
  for (const std::string& key : keys) {
    const runtime::Tensor& t = f.tensor("param." + key);
    const runtime::Tensor* have = store.find(key);
    INFO("golden param '" << key << "' " << runtime::describe(t));
    REQUIRE(have != nullptr);
    REQUIRE(have->shape() == t.shape());
    store.tensors[key] = t;
  }
  return store;
}

// batch.<i>.x and batch.<i>.y bound to the graph's f32 and i64 inputs.
std::map<std::string, runtime::Tensor> batch_inputs(const ir::Graph& g, const GoldenFile& f, int i) {
  std::map<std::string, runtime::Tensor> inputs;
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.value(id);
    const char* part = v.type.dtype == ir::DType::f32 ? "x" : "y";
    REQUIRE(inputs.count(v.name) == 0);
    inputs[v.name] = f.tensor(fmt::format("batch.{}.{}", i, part));
  }
  REQUIRE(inputs.size() == 2);
  return inputs;
}

std::string model_name(const GoldenFile& f) { return case_name(f.path); }

void run_first_step(const std::string& path) {
  GoldenFile f = load_golden(path);
  std::string name = model_name(f);
  ir::Module m = compile_model(f);
  run_passes(m, {"infer-shapes", "autodiff"});
  ref::ParamStore store = golden_params(m, f);
  const ir::Graph& g = *m.graph("train_step");
  std::vector<runtime::Tensor> outs = ref::run_reference(m, g, batch_inputs(g, f, 0), store);
  REQUIRE(outs.size() >= 2);
  check_close(name + " step1.loss", outs[0], f.tensor("step1.loss"), kStepTol);
  check_close(name + " step1.logits", outs[1], f.tensor("step1.logits"), kStepTol);
  for (const std::string& key : param_keys(f)) {
    if (!f.has("grad." + key)) continue;  // a buffer (running statistics): no gradient
    const runtime::Tensor* grad = nullptr;
    for (size_t i = 2; i < g.outputs.size(); ++i)
      if (g.value(g.outputs[i]).name == key + ".grad") grad = &outs[i];
    INFO("train_step has no output '" << key << ".grad'");
    REQUIRE(grad != nullptr);
    check_close(name + " grad." + key, *grad, f.tensor("grad." + key), kStepTol);
  }
}

// optimizer.<run> (dnnc's sgd_update / adam_update attribute names) as the module's optimizer;
// its clip_grad_norm, if any, as the train config's.
ir::OptimizerConfig optimizer_config(const GoldenFile& f, const std::string& run, double* clip_grad_norm) {
  nlohmann::json j = f.meta_json("optimizer." + run);
  *clip_grad_norm = 0;
  if (j.contains("clip_grad_norm")) {
    *clip_grad_norm = j.at("clip_grad_norm").get<double>();
    j.erase("clip_grad_norm");
  }
  ir::OptimizerConfig cfg;
  if (j.contains("decoupled")) {
    cfg.kind = j.at("decoupled").get<bool>() ? "adamw" : "adam";
    j.erase("decoupled");
  } else {
    cfg.kind = "sgd";
  }
  cfg.attrs = json_to_attrs(j, "optimizer." + run);
  return cfg;
}

void run_trajectory(const std::string& path, const std::string& run) {
  GoldenFile f = load_golden(path);
  std::string name = model_name(f);
  ir::Module m = compile_model(f);
  m.train.optimizer = optimizer_config(f, run, &m.train.clip_grad_norm);
  run_passes(m, {"infer-shapes", "autodiff", "optimizer"});
  ref::ParamStore store = golden_params(m, f);
  const ir::Graph& g = *m.graph("train_step");
  int steps = std::stoi(f.meta("steps"));
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    std::vector<runtime::Tensor> outs = ref::run_reference(m, g, batch_inputs(g, f, i), store);
    REQUIRE(!outs.empty());
    losses.push_back(outs[0].f32()[0]);
  }
  check_close(fmt::format("{} {}.loss ({} steps, optimizer {})", name, run, steps, m.train.optimizer.kind),
              vector_tensor(losses), f.tensor(run + ".loss"), kTrajectoryTol);
  int finals = 0;
  for (const std::string& key : param_keys(f)) {
    std::string golden = run + ".final." + key;
    if (!f.has(golden)) continue;
    ++finals;
    check_close(name + " " + golden, store.tensors.at(key), f.tensor(golden), kTrajectoryTol);
  }
  if (run == "sgd" || run == "adam" || m.train.clip_grad_norm > 0) CHECK(finals == static_cast<int>(param_keys(f).size()));
}

// Per model file: "golden model <model> step1" and one "golden model <model> <run>" per
// trajectory named in its metadata (read from the header only). A file that cannot be read or
// has the wrong version still gets a test, which fails with the regeneration command.
[[maybe_unused]] const bool registered = [] {
  for (const std::string& path : list_golden_files("models")) {
    std::string model = case_name(path);
    std::vector<std::string> runs;
    std::string problem;
    try {
      std::map<std::string, std::string> meta = read_golden_metadata(path);
      problem = version_problem(path, meta);
      if (problem.empty()) runs = nlohmann::json::parse(meta["trajectories"]).get<std::vector<std::string>>();
    } catch (const std::exception& e) {
      problem = e.what();
      if (problem.find(kRegenerate) == std::string::npos)
        problem = fmt::format("golden file {}: bad 'trajectories' metadata ({}): regenerate with {}",
                              display_path(path), problem, kRegenerate);
    }
    if (!problem.empty()) {
      register_test(CATCH_INTERNAL_LINEINFO, "golden model " + model, "[golden][model]", [problem] { FAIL(problem); });
      continue;
    }
    register_test(CATCH_INTERNAL_LINEINFO, "golden model " + model + " step1", "[golden][model]",
                  [path] { run_first_step(path); });
    for (const std::string& run : runs)
      register_test(CATCH_INTERNAL_LINEINFO, "golden model " + model + " " + run, "[golden][model][trajectory]",
                    [path, run] { run_trajectory(path, run); });
  }
  return true;
}();

}  // namespace
}  // namespace dnnc::golden
