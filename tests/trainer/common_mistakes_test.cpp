// docs/common-mistakes.md is checked, not just written: every `$ dnnc ...` transcript in it is
// run and its output (stdout and stderr, in order) and exit status compared line for line.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/trainer/checkpoint_io.h"
#include "trainer_test_util.h"

namespace fs = std::filesystem;
using namespace dnnc;

namespace {

struct Command {
  std::string line;                   // after "$ "
  std::vector<std::string> expected;  // the lines shown after it ("..." matches any run of lines)
  int doc_line = 0;                   // where it is in the doc
};

// The ```console blocks of the doc, as commands with their expected output.
std::vector<std::vector<Command>> transcripts(const std::string& doc) {
  std::vector<std::vector<Command>> out;
  std::istringstream in(doc);
  std::string line;
  bool inside = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!inside) {
      if (line == "```console") inside = true, out.emplace_back();
      continue;
    }
    if (line == "```") {
      inside = false;
      continue;
    }
    if (line.starts_with("$ ")) {
      out.back().push_back({line.substr(2), {}, n});
      continue;
    }
    if (out.back().empty()) FAIL("docs/common-mistakes.md:" << n << ": output before the first $ command");
    out.back().back().expected.push_back(line);
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// `want` against `got`, where a "..." line in `want` matches any run (also empty) of lines.
bool matches(const std::vector<std::string>& want, size_t w, const std::vector<std::string>& got, size_t g) {
  if (w == want.size()) return g == got.size();
  if (want[w] == "...") {
    for (size_t k = g; k <= got.size(); ++k)
      if (matches(want, w + 1, got, k)) return true;
    return false;
  }
  return g < got.size() && want[w] == got[g] && matches(want, w + 1, got, g + 1);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The checkout the doc describes: models/ and tests/ of this one, run/mlp.safetensors saved
// from the Adam MLP after its 10 epochs (8,000 images at batch 128: 63 steps each), and
// run/done.safetensors from the seed MLP after all 5 of its epochs.
void make_checkout(const test::TempDir& dir) {
  fs::create_symlink(fs::absolute("models"), dir.path / "models");
  fs::create_symlink(fs::absolute("tests"), dir.path / "tests");
  fs::create_directories(dir.path / "run");
  ir::Module adam = test::compile_for_training("models/mnist_mlp_adam.dnn");
  runtime::save_checkpoint(dir.file("run/mlp.safetensors"), adam, runtime::reference::init_params(adam, 1),
                           {10, 0, 630}, {128, 1, true});
  ir::Module mlp = test::compile_for_training("models/mnist_mlp.dnn");
  runtime::save_checkpoint(dir.file("run/done.safetensors"), mlp, runtime::reference::init_params(mlp, 1),
                           {5, 0, 315}, {128, 1, true});
}

}  // namespace

TEST_CASE("every transcript of docs/common-mistakes.md is what dnnc prints", "[trainer][cli][docs]") {
  std::string doc = test::read_file("docs/common-mistakes.md");
  REQUIRE(!doc.empty());
  test::TempDir dir("common_mistakes");
  make_checkout(dir);
  int commands = 0, statuses = 0;
  for (const std::vector<Command>& t : transcripts(doc)) {
    int last_status = -1;
    for (const Command& c : t) {
      INFO("docs/common-mistakes.md:" << c.doc_line << ": $ " << c.line);
      if (c.line == "echo $?") {
        REQUIRE(c.expected.size() == 1);
        CHECK(std::to_string(last_status) == c.expected[0]);
        ++statuses;
        continue;
      }
      REQUIRE(c.line.starts_with("dnnc "));
      // stdout and stderr into one file, in the order written (dnnc flushes stdout before it
      // writes to stderr); no terminal, so no progress redraws.
      std::string out = dir.file("out.txt");
      std::string cmd = "cd " + dir.path.string() + " && DNNC_POISON_ARENA=1 " + DNNC_BINARY + c.line.substr(4) +
                        " >" + out + " 2>&1";
      int status = std::system(cmd.c_str());
      last_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      std::vector<std::string> got = lines_of(test::read_file(out));
      INFO("dnnc printed:\n" << joined(got) << "the doc shows:\n" << joined(c.expected));
      CHECK(matches(c.expected, 0, got, 0));
      ++commands;
    }
  }
  // The doc keeps its entries: a transcript lost in an edit would otherwise pass unnoticed.
  CHECK(commands >= 22);
  CHECK(statuses >= 21);
}
