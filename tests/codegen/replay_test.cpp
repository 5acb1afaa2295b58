// Codegen replay: the C++ generated for every model in models/ (train_step and infer at the
// train block's batch) must equal the committed sources in tests/codegen/golden/ byte for byte,
// so a refactor shows whether it changed any kernel. Regenerate (then review the diff):
//   for f in models/*.dnn; do build/dnnc compile "$f" --emit=cpp -o tests/codegen/golden; done
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "codegen/cpp/cpp_printer.h"
#include "codegen/lower/lower.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
namespace fs = std::filesystem;

namespace {

// "line N: golden `...` / generated `...`" for the first differing line.
std::string first_difference(const std::string& golden, const std::string& got) {
  std::istringstream a(golden), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    if (ea && eb) return "no line differs (trailing bytes?)";
    if (ea || eb || la != lb)
      return "first difference at line " + std::to_string(line) + ":\n  golden:    " + (ea ? "<end of file>" : la) +
             "\n  generated: " + (eb ? "<end of file>" : lb);
  }
}

}  // namespace

TEST_CASE("generated C++ of every model equals the committed golden sources", "[codegen][replay]") {
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator("models"))
    if (e.path().extension() == ".dnn") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  REQUIRE(models.size() >= 5);
  for (const fs::path& model : models) {
    ir::Module m = test::compiled_model(model.string());
    int64_t batch = m.train.batch > 0 ? m.train.batch : 1;
    for (const char* graph : {"train_step", "infer"}) {
      const ir::Graph* g = m.graph(graph);
      REQUIRE(g);
      std::string got = codegen::print_program_cpp(codegen::lower_graph(m, *g, batch));
      fs::path golden = fs::path("tests/codegen/golden") / (model.stem().string() + "." + graph + ".cpp");
      INFO("golden " << golden.string() << " — if the change is intended, regenerate with: build/dnnc compile "
                     << model.string() << " --emit=cpp -o tests/codegen/golden, and review the diff");
      REQUIRE(fs::exists(golden));
      std::string want = test::read_file(golden.string());
      INFO(first_difference(want, got));
      CHECK(got == want);
    }
  }
}
