// The pass manager: registry, pipeline options, unknown names, verify-each, unchanged passes.
#include <catch2/catch.hpp>

#include "ir/check.h"
#include "ir/op_registry.h"
#include "pass_test_util.h"
#include "passes/grad_rules.h"

using namespace dnnc;

TEST_CASE("every pass of the default pipeline is registered, with a summary", "[passes]") {
  passes::PassRegistry r;
  passes::register_all_passes(r);
  for (const auto& name : passes::default_pipeline()) {
    const passes::PassInfo* p = r.find(name);
    REQUIRE(p != nullptr);
    CHECK_FALSE(p->summary.empty());
  }
}

TEST_CASE("unknown pass names are rejected with the list of known passes", "[passes]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::PipelineOptions o;
  o.passes = {"autodiff", "fusee"};
  CHECK_THROWS_WITH(passes::run_pipeline(m, r, o), Catch::Contains("unknown pass 'fusee'") && Catch::Contains("autodiff"));
  o.passes = {};
  o.disabled = {"nope"};
  CHECK_THROWS_WITH(passes::run_pipeline(m, r, o), Catch::Contains("--disable-pass"));
}

TEST_CASE("stop_after runs the pipeline up to and including that pass", "[passes]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::PipelineOptions o;
  o.stop_after = "autodiff";
  std::vector<std::string> ran;
  o.after_pass = [&](const std::string& p, const ir::Module&, bool) { ran.push_back(p); };
  passes::run_pipeline(m, r, o);
  CHECK(ran == std::vector<std::string>{"infer-shapes", "autodiff"});
  CHECK(m.graph("train_step") != nullptr);
  CHECK(m.graph("infer") == nullptr);
}

TEST_CASE("a disabled pass does not run", "[passes]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  passes::PassRegistry r;
  passes::register_all_passes(r);
  passes::PipelineOptions o;
  o.disabled = {"optimizer"};
  passes::run_pipeline(m, r, o);
  REQUIRE(m.graph("train_step") != nullptr);
  CHECK(m.graph("train_step")->updates.empty());
  CHECK(m.graph("train_step")->outputs.size() == 2 + 6);  // loss, logits, six gradients
}

TEST_CASE("a pass that reports no change leaves the printed IR byte-identical", "[passes]") {
  ir::Module m = frontend::compile_file("models/cifar_cnn.dnn");
  test::run_passes(m);
  std::string before = ir::print(m);
  passes::PassRegistry r;
  passes::register_all_passes(r);
  for (const auto& p : r.all()) {
    bool changed = p.run(m);
    INFO("pass " << p.name);
    CHECK_FALSE(changed);
    CHECK(ir::print(m) == before);
  }
}

TEST_CASE("every differentiable user op has a gradient rule", "[passes][autodiff]") {
  auto with_rules = passes::ops_with_grad_rules();
  for (const ir::OpDef* op : ir::all_ops()) {
    if (op->internal || op->name == "batchnorm2d_infer") continue;
    INFO("op " << op->name);
    CHECK(passes::find_grad_rule(op->name) != nullptr);
  }
  for (const auto& name : with_rules) CHECK(ir::find_op(name) != nullptr);
}

TEST_CASE("a pass that breaks the IR or an internal check is reported as an internal error naming it",
          "[passes][check]") {
  ir::Module m = frontend::compile_file("models/mnist_mlp.dnn");
  passes::PassRegistry r;
  r.add({"break-types", "sets a value's type wrong", [](ir::Module& mod) {
           mod.graphs.front().values.back().type.shape.push_back(7);
           return true;
         }});
  r.add({"fail-check", "fails an internal check", [](ir::Module&) {
           DNNC_CHECK(false, "the check {} failed", 42);
           return false;
         }});
  passes::PipelineOptions o;
  o.verify_each = true;
  o.passes = {"break-types"};
  try {
    passes::run_pipeline(m, r, o);
    FAIL("no throw");
  } catch (const InternalError& e) {
    CHECK(e.component() == "pass break-types");
    CHECK_THAT(e.what(), Catch::Contains("does not verify after it"));
  }
  o.passes = {"fail-check"};
  m = frontend::compile_file("models/mnist_mlp.dnn");
  CHECK_THROWS_WITH(passes::run_pipeline(m, r, o), Catch::Contains("internal compiler error in pass fail-check: "
                                                                   "the check 42 failed"));
}
