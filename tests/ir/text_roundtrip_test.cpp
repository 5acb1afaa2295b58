// Tests of the IR text form: lossless print/parse round trips and the golden text of a small module.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "fixtures.h"
#include "ir/compare.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "test_types.h"
#include "tests/support/files.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;

namespace {
std::string read_file(const std::string& path) {
  REQUIRE(std::filesystem::exists(path));
  return dnnc::test::read_file(path);
}

// Compares `actual` with the golden file byte-exactly; DNNC_UPDATE_GOLDEN=1 rewrites the file instead.
void check_golden(const std::string& path, const std::string& actual) {
  if (std::getenv("DNNC_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    WARN("rewrote " << path);
  }
  CHECK(actual == read_file(path));
}

// print -> parse -> print gives the same text and a module equal in content.
void check_round_trip(const Module& m) {
  std::string text = print(m);
  INFO(text);
  Module back = parse_module(text, "roundtrip.ir");
  CHECK(print(back) == text);
  CHECK(module_diff(m, back) == "");
}
}  // namespace

TEST_CASE("the MLP module round-trips through text", "[ir][text]") { check_round_trip(mlp_module()); }

TEST_CASE("a module with every param role, layouts, multi-output nodes and updates round-trips", "[ir][text]") {
  Module m = rich_module();
  check_round_trip(m);
  Module back = parse_module(print(m), "rich.ir");
  CHECK_NOTHROW(verify(back));
  const Graph* g = back.graph("train_step");
  REQUIRE(g != nullptr);
  CHECK(g->updates.size() == 8);
  CHECK(back.param("optimizer step") != nullptr);
  CHECK(back.param("fc.weight")->type == ty("f32[10,512]{col_major}"));
  CHECK(back.params[6].role == ParamRole::optimizer_state);
  CHECK(std::signbit(back.params[6].init.bound));
}

TEST_CASE("the train config's augmentation round-trips, and is absent from the text when unset", "[ir][text]") {
  Module m = mlp_module();
  m.train.present = true;
  m.train.optimizer.kind = "sgd";
  CHECK(print(m).find("crop_padding") == std::string::npos);
  m.train.data.crop_padding = 4;
  m.train.data.flip_p = 0.3;
  CHECK(print(m).find(", crop_padding=4, flip_p=0.3, batch=") != std::string::npos);
  check_round_trip(m);
}

TEST_CASE("the train config's lr schedule round-trips, and is absent from the text when unset", "[ir][text]") {
  Module m = mlp_module();
  m.train.present = true;
  m.train.optimizer = {"sgd", {{"lr", 0.1}}};
  CHECK(print(m).find("schedule") == std::string::npos);
  m.train.schedule = {"multistep", {{"milestones", std::vector<int64_t>{2, 5}}, {"gamma", 0.25}}};
  CHECK(print(m).find("optimizer \"sgd\" {lr=0.1} schedule \"multistep\" {gamma=0.25, milestones=[2,5]}") !=
        std::string::npos);
  check_round_trip(m);
  m.train.clip_grad_norm = 0.75;
  CHECK(print(m).find(", seed=1, clip_grad_norm=0.75} optimizer") != std::string::npos);
  check_round_trip(m);
  Module n = m;
  n.train.schedule.attrs["gamma"] = 0.5;
  CHECK(module_diff(m, n) == "schedule attribute 'gamma': 0.25 vs 0.5");
}

TEST_CASE("float attributes round-trip bit-exactly", "[ir][text]") {
  const std::vector<double> values = {0.1,
                                      1.0 / 3.0,
                                      1e-300,
                                      5e-324,
                                      -0.0,
                                      1.7976931348623157e308,
                                      1e-8,
                                      0.001,
                                      123456789.125,
                                      -2.5,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};
  Module m;
  m.name = "floats";
  Graph g;
  g.name = "g";
  ValueId x = g.add_input("x", ty("f32[N,2]"));
  for (double v : values) x = g.add_node("mul_scalar", {x}, {{"value", v}}, {ty("f32[N,2]")})[0];
  g.outputs = {x};
  m.train.present = true;
  m.train.data.mean = values;
  m.train.optimizer.attrs = {{"all", values}};
  m.graphs.push_back(g);
  Module back = parse_module(print(m), "floats.ir");
  CHECK(module_diff(m, back) == "");
  for (size_t i = 0; i < values.size(); ++i) {
    double got = attr_float(back.graphs[0].nodes[i].attrs, "value");
    CHECK(std::memcmp(&got, &values[i], sizeof got) == 0);
  }
}

TEST_CASE("attributes of every kind round-trip, including on ops the registry does not know", "[ir][text]") {
  Module m;
  m.name = "attrs";
  Graph g;
  g.name = "g";
  ValueId x = g.add_input("x", ty("f32[3]"));
  Attrs all{{"i", int64_t{-7}},
            {"f", 2.5},
            {"b", true},
            {"s", std::string("quote \" backslash \\ done")},
            {"is", std::vector<int64_t>{1, -1, 3}},
            {"fs", std::vector<double>{0.5, -1e-20}},
            {"empty_is", std::vector<int64_t>{}},
            {"odd key", false}};
  ValueId y = g.add_node("custom_op", {x, x}, all, {ty("f32[3]"), ty("i64[]")}, {4, 2}, {"y", "z"})[0];
  g.add_node("sink", {y}, {}, {});
  g.outputs = {y};
  m.graphs.push_back(g);
  check_round_trip(m);
}

TEST_CASE("value and module names with unusual characters are quoted and round-trip", "[ir][text]") {
  Module m;
  m.name = "my model";
  m.source_file = "dir with space/\"odd\".dnn";
  m.params.push_back(Param{"layer 1.weight", ty("f32[2]"), ParamRole::weight, {"uniform", 0.5}, {}});
  Graph g;
  g.name = "2nd graph";
  ValueId x = g.add_input("in-put", ty("f32[2]"));
  ValueId s = g.add_node("add", {x, g.param("layer 1.weight", ty("f32[2]"))}, {}, {ty("f32[2]")}, {}, {"a+b"})[0];
  g.outputs = {s};
  m.graphs.push_back(g);
  std::string text = print(m);
  CHECK_THAT(text, Catch::Matchers::Contains("%\"a+b\" = add(%\"in-put\", @\"layer 1.weight\")"));
  check_round_trip(m);
}

TEST_CASE("a module without a train config or graphs round-trips", "[ir][text]") {
  Module m;
  m.name = "empty";
  check_round_trip(m);
  CHECK(print(m) == "module empty {\n  batch N\n}\n");
}

TEST_CASE("print(graph) prints one unindented graph block", "[ir][text]") {
  Module m = mlp_module();
  std::string g = print(m.graphs[0], m);
  CHECK(g.rfind("graph forward(%x: f32[N,1,28,28], %label: i64[N]) {\n", 0) == 0);
  CHECK_THAT(g, Catch::Matchers::Contains("\n  %h = linear(%0, @fc1.weight, @fc1.bias) : f32[N,128] loc(10:12)\n"));
  CHECK_THAT(g, Catch::Matchers::EndsWith("  return %loss, %logits\n}\n"));
}

TEST_CASE("the MLP module prints exactly as tests/ir/golden/mnist_mlp.ir", "[ir][text][golden]") {
  check_golden("tests/ir/golden/mnist_mlp.ir", print(mlp_module()));
  std::string golden = read_file("tests/ir/golden/mnist_mlp.ir");
  CHECK(print(parse_module(golden, "tests/ir/golden/mnist_mlp.ir")) == golden);
}

TEST_CASE("the rich module prints exactly as tests/ir/golden/rich.ir", "[ir][text][golden]") {
  check_golden("tests/ir/golden/rich.ir", print(rich_module()));
  std::string golden = read_file("tests/ir/golden/rich.ir");
  CHECK(module_diff(parse_module(golden, "tests/ir/golden/rich.ir"), rich_module()) == "");
}

TEST_CASE("the parser accepts comments, free spacing and omitted optional parts", "[ir][text]") {
  const char* text = R"(// a hand-written module
module M {   param @w : f32[4] weight   // no init, no loc
  graph g(%x: f32[N,4]) {
    %y = mul(%x, @w) : f32[N,4]
    return %y
  }
})";
  Module m = parse_module(text, "hand.ir");
  CHECK(m.params.at(0).init.kind == "zeros");
  CHECK_FALSE(m.graphs.at(0).nodes.at(0).loc.known());
  CHECK_NOTHROW(verify(m));
}

TEST_CASE("module_diff reports the first difference", "[ir][text]") {
  Module a = mlp_module(), b = mlp_module();
  CHECK(module_diff(a, b) == "");
  b.graphs[0].nodes[1].attrs["x"] = int64_t{1};
  CHECK(module_diff(a, b) == "graph 'forward': node 1 (linear): attribute 'x' only on the right");
  b = mlp_module();
  b.train.optimizer.attrs["lr"] = 0.0010000000000000002;
  CHECK(module_diff(a, b) == "optimizer attribute 'lr': 0.001 vs 0.0010000000000000002");
}
