// Tests of the Graphviz output: well-formed statements, escaped names, params drawn distinctly.
#include "ir/dot.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "fixtures.h"
#include "test_types.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;
using Catch::Matchers::Contains;

namespace {
// Checks dot syntax as far as we emit it: a `digraph "..." {` header, a closing `}`, and every line
// in between a statement ending in ';' whose double quotes (outside \-escapes) are balanced.
void check_well_formed(const std::string& dot) {
  std::stringstream in(dot);
  std::string line;
  std::getline(in, line);
  CHECK(std::regex_match(line, std::regex(R"(digraph "([^"\\]|\\.)*" \{)")));
  std::vector<std::string> body;
  while (std::getline(in, line)) body.push_back(line);
  REQUIRE(!body.empty());
  CHECK(body.back() == "}");
  body.pop_back();
  for (const std::string& l : body) {
    INFO(l);
    CHECK(l.rfind("  ", 0) == 0);
    CHECK(l.back() == ';');
    int quotes = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == '\\')
        ++i;
      else if (l[i] == '"')
        ++quotes;
    }
    CHECK(quotes % 2 == 0);
  }
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("dot: every node, input and param is drawn and every use is an edge", "[ir][dot]") {
  Module m = mlp_module();
  const Graph& g = m.graphs[0];
  std::string dot = to_dot(g, m);
  check_well_formed(dot);
  size_t uses = 0;
  for (const Node& n : g.nodes) uses += n.inputs.size();
  CHECK(count(dot, " -> n") == uses);
  CHECK(count(dot, " -> ret") == g.outputs.size());
  CHECK(count(dot, "shape=box") == g.nodes.size());
  CHECK(count(dot, "shape=cylinder") == 4);       // the four params
  CHECK(count(dot, "shape=parallelogram") == 2);  // the two inputs
  CHECK_THAT(dot, Contains("label=\"linear\\n%h : f32[N,128]\""));
  CHECK_THAT(dot, Contains("label=\"@fc1.weight\\nf32[128,784]\""));
}

TEST_CASE("dot: multi-output nodes list every result and updates are dashed edges", "[ir][dot]") {
  Module m = rich_module();
  std::string dot = to_dot(m.graphs[0], m);
  check_well_formed(dot);
  CHECK_THAT(dot, Contains("label=\"batchnorm2d\\n%bn.y : f32[B,8,16,16]{nhwc}\\n%bn.mean : f32[8]\\n"));
  CHECK(count(dot, "[style=dashed, label=\"update\"]") == m.graphs[0].updates.size());
}

TEST_CASE("dot: quotes and backslashes in names are escaped", "[ir][dot]") {
  Module m;
  m.name = "q";
  Graph g;
  g.name = "say \"hi\"";
  ValueId x = g.add_input("x\\\"y", ty("f32[2]"));
  g.outputs = {g.add_node("relu", {x}, {}, {ty("f32[2]")}, {}, {"r\"1"})[0]};
  std::string dot = to_dot(g, m);
  check_well_formed(dot);
  CHECK(dot.rfind("digraph \"say \\\"hi\\\"\" {", 0) == 0);
  CHECK_THAT(dot, Contains("%x\\\\\\\"y"));
  CHECK_THAT(dot, Contains("%r\\\"1 : f32[2]"));
}

TEST_CASE("dot: bad value ids are drawn, not dereferenced", "[ir][dot]") {
  Module m = mlp_module();
  Graph g = m.graphs[0];
  g.nodes[2].inputs = {42};
  std::string dot = to_dot(g, m);
  check_well_formed(dot);
  CHECK_THAT(dot, Contains("label=\"bad value 42\""));
}

TEST_CASE("dot: Graphviz accepts the output when it is installed", "[ir][dot]") {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    WARN("Graphviz `dot` not installed; only the structural checks ran");
    return;
  }
  Module m = rich_module();
  std::string path = "ir_dot_test_rich.dot";
  std::ofstream(path) << to_dot(m.graphs[0], m);
  CHECK(std::system(("dot -Tsvg " + path + " -o /dev/null").c_str()) == 0);
  std::remove(path.c_str());
}
