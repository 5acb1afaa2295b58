// Tests of the IR verifier: valid modules pass; each kind of broken invariant is reported
// with the graph, node index, op and types.
#include "ir/verifier.h"

#include <catch2/catch.hpp>

#include "fixtures.h"
#include "test_types.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;
using Catch::Matchers::Contains;

namespace {
std::string verify_error(const Module& m) {
  try {
    verify(m);
  } catch (const VerifyError& e) {
    return e.what();
  }
  return "";
}
Graph& fwd(Module& m) { return m.graphs.at(0); }
}  // namespace

TEST_CASE("verify accepts well-formed modules", "[ir][verify]") {
  CHECK_NOTHROW(verify(mlp_module()));
  CHECK_NOTHROW(verify(rich_module()));
}

TEST_CASE("verify rejects an unknown op", "[ir][verify]") {
  Module m = mlp_module();
  fwd(m).nodes[2].op = "relu6";
  CHECK_THAT(verify_error(m), Contains("graph 'forward', node 2 (%a: f32[N,128] = relu6(%h: f32[N,128])): unknown op "
                                       "'relu6'"));
}

TEST_CASE("verify rejects incomplete attributes, unknown ones and wrong kinds", "[ir][verify]") {
  Module m = mlp_module();
  fwd(m).nodes[0].attrs.erase("start_dim");
  CHECK_THAT(verify_error(m), Contains("node 0 (%0: f32[N,784] = flatten(%x: f32[N,1,28,28])): attribute 'start_dim' "
                                       "is missing (attrs must be complete); expected 1, found none"));
  m = mlp_module();
  fwd(m).nodes[0].attrs["start"] = int64_t{1};
  CHECK_THAT(verify_error(m), Contains("flatten: unknown attribute 'start'"));
  m = mlp_module();
  fwd(m).nodes[0].attrs["start_dim"] = 1.0;
  CHECK_THAT(verify_error(m), Contains("attribute 'start_dim' has the wrong kind; expected int, found float"));
}

TEST_CASE("verify rejects an int attribute where the schema says float", "[ir][verify]") {
  Module m = rich_module();
  Graph& g = m.graphs[0];
  for (Node& n : g.nodes)
    if (n.op == "leaky_relu") n.attrs["negative_slope"] = int64_t{0};
  CHECK_THAT(verify_error(m), Contains("leaky_relu"));
  CHECK_THAT(verify_error(m), Contains("attribute 'negative_slope' has the wrong kind; expected float, found int"));
}

TEST_CASE("verify rejects a wrong operand count", "[ir][verify]") {
  Module m = mlp_module();
  fwd(m).nodes[2].inputs.push_back(fwd(m).nodes[2].inputs[0]);
  CHECK_THAT(verify_error(m), Contains("node 2 (%a: f32[N,128] = relu(%h: f32[N,128], %h: f32[N,128])): relu: wrong "
                                       "number of operands; expected 1, found 2"));
}

TEST_CASE("verify rejects a result type that differs from the op's rule", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.value(g.find_value("a")).type = ty("f32[N,127]");
  CHECK_THAT(verify_error(m), Contains("node 2 (%a: f32[N,127] = relu(%h: f32[N,128])): result 0 (%a) has the wrong "
                                       "type; expected f32[N,128], found f32[N,127]"));
}

TEST_CASE("verify reports shape errors of the op's rule", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  m.params[2].type = ty("f32[10,64]");
  g.value(g.find_value("fc2.weight")).type = ty("f32[10,64]");
  CHECK_THAT(verify_error(m), Contains("node 3 (%logits: f32[N,10] = linear(%a: f32[N,128], @fc2.weight: f32[10,64], "
                                       "@fc2.bias: f32[10])): linear: input has 128 features but weight expects 64"));
}

TEST_CASE("verify rejects a wrong number of results", "[ir][verify]") {
  Module m = rich_module();
  Graph& g = m.graphs[0];
  for (Node& n : g.nodes)
    if (n.op == "sgd_update") n.outputs.pop_back();
  CHECK_THAT(verify_error(m), Contains("sgd_update(@fc.weight"));
  CHECK_THAT(verify_error(m), Contains("wrong number of results; expected 2, found 1"));
}

TEST_CASE("verify rejects a use before the definition", "[ir][verify]") {
  Module m = mlp_module();
  std::swap(fwd(m).nodes[1], fwd(m).nodes[2]);
  CHECK_THAT(verify_error(m), Contains("node 1 (%a: f32[N,128] = relu(%h: f32[N,128])): operand %h is used before it "
                                       "is defined"));
}

TEST_CASE("verify rejects a value defined twice", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.nodes[2].outputs = g.nodes[1].outputs;
  CHECK_THAT(verify_error(m), Contains("node 2 (%h: f32[N,128] = relu(%h: f32[N,128])): result %h is defined twice"));
}

TEST_CASE("verify rejects a node that defines an input or a param", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.nodes[0].outputs = {g.find_value("label")};
  CHECK_THAT(verify_error(m), Contains("node 0"));
  CHECK_THAT(verify_error(m), Contains("result %label is a graph input, which nodes may not define"));
  m = mlp_module();
  fwd(m).nodes[4].outputs = {fwd(m).find_value("fc1.bias")};
  CHECK_THAT(verify_error(m), Contains("result @fc1.bias is a graph param, which nodes may not define"));
}

TEST_CASE("verify rejects a node value that no node defines", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.values.push_back(Value{"orphan", ty("f32[3]"), ValueKind::node});
  g.outputs.push_back(static_cast<ValueId>(g.values.size() - 1));
  CHECK_THAT(verify_error(m), Contains("graph 'forward': value %orphan (kind node) is not defined by any node"));
}

TEST_CASE("verify rejects out-of-range value ids", "[ir][verify]") {
  Module m = mlp_module();
  fwd(m).outputs.push_back(99);
  CHECK_THAT(verify_error(m), Contains("graph output refers to value id 99, but the graph has"));
}

TEST_CASE("verify rejects param reads that disagree with the params table", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.value(g.find_value("fc1.bias")).type = ty("f32[129]");
  CHECK_THAT(verify_error(m), Contains("value @fc1.bias has type f32[129] but the module param has f32[128]"));
  m = mlp_module();
  m.params.pop_back();
  CHECK_THAT(verify_error(m), Contains("value @fc2.bias reads a param the module does not have"));
}

TEST_CASE("verify rejects bad updates", "[ir][verify]") {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.updates.push_back({"fc3.weight", g.find_value("h")});
  CHECK_THAT(verify_error(m), Contains("update of @fc3.weight: no such param in the module"));
  g.updates = {{"fc2.bias", g.find_value("h")}};
  CHECK_THAT(verify_error(m), Contains("update of @fc2.bias: expected type f32[10], found f32[N,128] (%h)"));
  g.updates = {{"fc2.bias", g.find_value("fc2.bias")}, {"fc2.bias", g.find_value("fc2.bias")}};
  CHECK_THAT(verify_error(m), Contains("update of @fc2.bias: the param is updated twice"));
}

TEST_CASE("verify rejects malformed types, batch dims in params and duplicates", "[ir][verify]") {
  Module m = mlp_module();
  m.params[3].type.shape = {kBatch};
  CHECK_THAT(verify_error(m), Contains("param @fc2.bias has the batch dim; expected a concrete shape, found f32[N]"));
  m = mlp_module();
  m.params[3].type.layout = Layout::nhwc;
  CHECK_THAT(verify_error(m), Contains("param @fc2.bias has a malformed type f32[10]{nhwc}: layout nhwc needs rank 4"));
  m = mlp_module();
  m.params.push_back(m.params[0]);
  CHECK_THAT(verify_error(m), Contains("param @fc1.weight is declared twice"));
  m = mlp_module();
  m.graphs.push_back(m.graphs[0]);
  CHECK_THAT(verify_error(m), Contains("graph 'forward' appears twice"));
  m = mlp_module();
  fwd(m).value(fwd(m).find_value("a")).name = "h";
  CHECK_THAT(verify_error(m), Contains("value name %h is used twice"));
}

TEST_CASE("verify rejects an input value missing from the input list", "[ir][verify]") {
  Module m = mlp_module();
  fwd(m).inputs.pop_back();
  CHECK_THAT(verify_error(m), Contains("input value %label is not in the graph's input list"));
}

namespace {
// fc1 + relu as the linear_epilogue group pass fuse forms.
Module grouped_mlp() {
  Module m = mlp_module();
  Graph& g = fwd(m);
  g.groups.push_back(FusionGroup{"linear_epilogue"});
  g.nodes[1].group = g.nodes[2].group = 0;
  g.nodes[1].role = "head";
  g.nodes[2].role = "chain";
  return m;
}
}  // namespace

TEST_CASE("verify checks fusion groups: kind, roles, the first node and the head", "[ir][verify]") {
  CHECK_NOTHROW(verify(grouped_mlp()));
  Module m = grouped_mlp();
  fwd(m).groups[0].kind = "gemm_soup";
  CHECK_THAT(verify_error(m), Contains("fusion group 0 has an unknown kind 'gemm_soup'"));
  m = grouped_mlp();
  fwd(m).nodes[2].role = "loss";
  CHECK_THAT(verify_error(m), Contains("node 2 (relu) in fusion group 0 ('linear_epilogue') has the role 'loss'; "
                                       "expected one of head, chain, pool, bias_grad"));
  m = grouped_mlp();
  fwd(m).nodes[1].role = "chain";
  CHECK_THAT(verify_error(m), Contains("fusion group 0 ('linear_epilogue') starts with node 1 (linear) of role "
                                       "'chain'; it must start with its head"));
  m = grouped_mlp();
  fwd(m).groups[0].kind = "matmul_epilogue";
  CHECK_THAT(verify_error(m), Contains("node 1 (linear) is the head of fusion group 0 ('matmul_epilogue'), whose "
                                       "head must be a matmul"));
  m = grouped_mlp();
  fwd(m).nodes[3].role = "chain";
  CHECK_THAT(verify_error(m), Contains("node 3 (linear) has the fusion role 'chain' but is in no group"));
  m = grouped_mlp();
  fwd(m).nodes[3].group = 0;
  fwd(m).nodes[3].role = "chain";
  fwd(m).nodes[2].group = -1;
  fwd(m).nodes[2].role = "";
  CHECK_THAT(verify_error(m), Contains("fusion group 0 is not contiguous (node 3)"));
}
