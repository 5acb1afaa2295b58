// Every complete model in docs/dsl.md's code blocks compiles, so the docs cannot drift
// from the language.
#include <catch2/catch.hpp>

#include "frontend/frontend.h"

using namespace dnnc;

TEST_CASE("docs/dsl.md: every code block that starts with 'model' compiles", "[frontend][docs]") {
  std::string doc = frontend::read_source("docs/dsl.md");
  int compiled = 0;
  size_t pos = 0;
  while ((pos = doc.find("```\n", pos)) != std::string::npos) {
    size_t begin = pos + 4;
    size_t end = doc.find("```\n", begin);
    REQUIRE(end != std::string::npos);
    std::string block = doc.substr(begin, end - begin);
    pos = end + 4;
    size_t first = block.find_first_not_of(" \n");
    while (first != std::string::npos && block[first] == '#')
      first = block.find_first_not_of(" \n", block.find('\n', first));
    if (first == std::string::npos || block.compare(first, 6, "model ") != 0) continue;
    INFO("block:\n" << block);
    ir::Module m;
    try {
      m = frontend::compile_source(block, "docs/dsl.md");
    } catch (const ir::CompileError& e) {
      FAIL(ir::format_diagnostic(e, block));
    }
    CHECK(m.graph("forward") != nullptr);
    ++compiled;
  }
  CHECK(compiled == 5);  // the introduction and the four of section 8
}
