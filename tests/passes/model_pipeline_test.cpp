// Every model through the default pipeline: verified after each pass, IR text round-trips
// losslessly after each pass, and the final IR equals the committed golden text
// (regenerate: scripts/update-ir-goldens.sh).
#include <catch2/catch.hpp>
#include <filesystem>

#include "ir/compare.h"
#include "pass_test_util.h"

using namespace dnnc;
namespace fs = std::filesystem;

static std::vector<std::string> model_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("models"))
    if (e.path().extension() == ".dnn") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("every model's IR round-trips through text after every pass", "[passes][roundtrip]") {
  auto files = model_files();
  REQUIRE(files.size() >= 5);
  for (const auto& f : files) {
    ir::Module m = frontend::compile_file(f);
    passes::PipelineOptions o;
    o.verify_each = true;
    int checked = 0;
    auto check = [&](const std::string& stage, const ir::Module& mod) {
      INFO(f << " after " << stage);
      std::string text = ir::print(mod);
      ir::Module back = ir::parse_module(text, f + ".ir");
      CHECK(ir::print(back) == text);
      CHECK(ir::module_diff(mod, back).empty());
      ++checked;
    };
    check("frontend", m);
    o.after_pass = [&](const std::string& p, const ir::Module& mod, bool) { check(p, mod); };
    passes::compile(m, {.pipeline = o});
    CHECK(checked == 1 + static_cast<int>(passes::default_pipeline().size()));
  }
}

TEST_CASE("every model's optimized IR equals its golden text", "[passes][golden]") {
  for (const auto& f : model_files()) {
    ir::Module m = frontend::compile_file(f);
    test::run_passes(m);
    std::string golden_path = "tests/passes/golden/" + fs::path(f).stem().string() + ".ir";
    INFO("golden " << golden_path << " (regenerate with scripts/update-ir-goldens.sh and review the diff)");
    REQUIRE(fs::exists(golden_path));
    CHECK(ir::print(m) == test::read_file(golden_path));
  }
}
