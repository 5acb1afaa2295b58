// Codegen replay: a small set of generated sources per target (tests/codegen/replay/<target>/
// <model>.<graph>.cpp|.cu, at the train block's batch) must equal what dnnc generates now, byte
// for byte, so that a printer change shows in a diff. Lowering patterns are tested on the kernel
// IR instead (tests/codegen/check/); scripts/codegen-replay.sh dumps every model's sources for
// a before/after diff of a refactor. Regenerate the set (then review the diff) with
//   DNNC_UPDATE_GOLDEN=1 build/tests/codegen/codegen_tests '[replay]'
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cpp/cpp_printer.h"
#include "codegen/cuda/cuda_printer.h"
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

TEST_CASE("generated sources of the replay set equal the committed ones", "[codegen][replay]") {
  int files = 0;
  for (const char* target : {"cpp", "cuda"}) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(fs::path("tests/codegen/replay") / target)) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    CHECK(paths.size() >= 2);
    for (const fs::path& path : paths) {
      // <model>.<graph>.<ext>
      const std::string stem = path.stem().string();
      const std::string model = stem.substr(0, stem.find('.')), graph = stem.substr(stem.find('.') + 1);
      INFO(path.string());
      ir::Module m = test::compiled_model("models/" + model + ".dnn");
      const ir::Graph* g = m.graph(graph);
      REQUIRE(g);
      const int64_t batch = std::max<int64_t>(m.train.batch, 1);
      const std::string got =
          std::string(target) == "cpp"
              ? codegen::print_program_cpp(codegen::lower_graph(m, *g, batch))
              : codegen::print_cuda_file(codegen::lower_graph(m, *g, batch, codegen::cuda_lower_options()));
      if (std::getenv("DNNC_UPDATE_GOLDEN")) {
        std::ofstream(path, std::ios::binary) << got;
        WARN("rewrote " << path.string());
      }
      const std::string want = test::read_file(path.string());
      INFO(
          "if the change is intended: DNNC_UPDATE_GOLDEN=1 build/tests/codegen/codegen_tests '[replay]', then "
          "review the diff\n"
          << first_difference(want, got));
      CHECK(got == want);
      ++files;
    }
  }
  CHECK(files >= 4);
}
