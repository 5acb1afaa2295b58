// FileCheck-style tests of the lowering (tests/codegen/check/*.dnn): each file is a model, a
// `# RUN: graph=G batch=B target=cpu|cuda` line and CHECK lines that the kernel IR text of
// that graph, lowered for that target (with the CUDA thread mapping as comments for cuda),
// must match. The lowering patterns are tested here at the kernel IR level rather than on
// generated source; tests/codegen/replay/ keeps a few generated sources byte for byte.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "codegen/cuda/cuda_mapping.h"
#include "codegen/kir/kir_printer.h"
#include "codegen/lower/lower.h"
#include "tests/support/filecheck.h"
#include "tests/support/files.h"
#include "tests/support/models.h"

using namespace dnnc;
using namespace dnnc::codegen;
namespace fs = std::filesystem;

namespace {

// The kernel IR `f`'s RUN line asks for, of model `path`.
std::string kir_of(const std::string& path, const test::CheckFile& f) {
  ir::Module m = test::compiled_model(path);
  const std::string graph = f.run.count("graph") ? f.run.at("graph") : "train_step";
  const int64_t batch = f.run.count("batch") ? std::stoll(f.run.at("batch")) : std::max<int64_t>(m.train.batch, 1);
  const ir::Graph* g = m.graph(graph);
  REQUIRE(g);
  const bool cuda = f.target == "cuda";
  Program p = lower_graph(m, *g, batch, cuda ? cuda_lower_options() : LowerOptions{});
  return print_kir(p, cuda ? cuda_mapping_notes(p) : KirNotes{});
}

}  // namespace

TEST_CASE("CHECK-style lowering tests in tests/codegen/check", "[codegen][kir][filecheck]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator("tests/codegen/check"))
    if (e.path().extension() == ".dnn") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);
  for (const fs::path& path : files) {
    INFO(path.string());
    test::CheckFile f = test::parse_check_file(test::read_file(path.string()));
    REQUIRE(f.run.count("graph"));
    REQUIRE(f.checks.size() >= 5);
    std::string out = kir_of(path.string(), f);
    INFO("kernel IR:\n" << out);
    CHECK(test::filecheck(out, f.checks) == "");
  }
}

TEST_CASE("filecheck: CHECK continues on the matched line, CHECK-SAME stays on it, CHECK-NOT is bounded",
          "[filecheck]") {
  std::string out = "a b c\nd e\nf\n";
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK", "c"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "b"}, {"CHECK-SAME", "c"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "b"}, {"CHECK-SAME", "a"}}) != "");  // before the match
  CHECK(test::filecheck(out, {{"CHECK", "b"}, {"CHECK-SAME", "e"}}) != "");  // another line
  CHECK(test::filecheck(out, {{"CHECK", "c"}, {"CHECK-NEXT", "d"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK-NOT", "e"}, {"CHECK", "f"}}) != "");
  CHECK(test::filecheck(out, {{"CHECK", "a"}, {"CHECK-NOT", "e"}, {"CHECK", "d"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "d"}, {"CHECK-NOT", "z"}}) == "");
  CHECK(test::filecheck(out, {{"CHECK", "d"}, {"CHECK-NOT", "f"}}) != "");
  test::CheckFile f = test::parse_check_file("# RUN: graph=infer batch=4\nx\n# CHECK: y\n// CHECK-NOT: z\n");
  CHECK(f.run.at("graph") == "infer");
  CHECK(f.run.at("batch") == "4");
  CHECK(f.input == "\nx\n\n\n");
  CHECK(f.checks == std::vector<std::pair<std::string, std::string>>{{"CHECK", "y"}, {"CHECK-NOT", "z"}});
}
