// Tests of the op registry machinery: coverage of docs/ops.md, attribute completion, operand counts.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "ir/op_docs.h"
#include "ir/op_registry.h"
#include "registry_helpers.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;

namespace {
struct DocOp {
  std::string fusion;
  bool internal = false;
};

// Every op row of docs/ops.md: "| `a`, `b` | ... | class |", keyed by op name.
std::map<std::string, DocOp> documented_ops() {
  std::ifstream in("docs/ops.md");
  REQUIRE(in.good());
  std::map<std::string, DocOp> out;
  bool internal = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## Internal", 0) == 0) internal = true;
    if (line.rfind("| `", 0) != 0) continue;
    std::string first = line.substr(1, line.find('|', 1) - 1);
    std::string cls = line.substr(0, line.find_last_of('|'));
    cls = cls.substr(cls.find_last_of('|') + 1);
    cls.erase(0, cls.find_first_not_of(' '));
    cls.erase(cls.find_last_not_of(' ') + 1);
    std::regex name_re("`([a-z0-9_]+)`");
    for (std::sregex_iterator it(first.begin(), first.end(), name_re), end; it != end; ++it)
      out[(*it)[1]] = DocOp{cls, internal};
  }
  return out;
}
}  // namespace

TEST_CASE("every op in docs/ops.md is registered with the documented fusion class and visibility", "[ir][registry]") {
  auto docs = documented_ops();
  REQUIRE(docs.size() >= 40);  // the table parse found the rows
  for (const auto& [name, doc] : docs) {
    INFO(name);
    const OpDef* def = find_op(name);
    REQUIRE(def != nullptr);
    CHECK(fusion_class_name(def->fusion) == doc.fusion);
    CHECK(def->internal == doc.internal);
  }
}

TEST_CASE("every registered op is documented in docs/ops.md and complete", "[ir][registry]") {
  auto docs = documented_ops();
  CHECK(all_ops().size() == docs.size());
  for (const OpDef* def : all_ops()) {
    INFO(def->name);
    CHECK(docs.count(def->name) == 1);
    CHECK(def->infer);
    CHECK(!def->summary.empty());
    CHECK(def->num_outputs >= 1);
    CHECK(find_op(def->name) == def);
  }
}

TEST_CASE("find_op returns nullptr for an unknown op", "[ir][registry]") {
  CHECK(find_op("conv3d") == nullptr);
  CHECK(find_op("") == nullptr);
}

TEST_CASE("complete_attrs fills every documented default", "[ir][registry]") {
  Attrs conv = complete_attrs(*find_op("conv2d"), {});
  CHECK(attr_ints(conv, "stride") == std::vector<int64_t>{1, 1});
  CHECK(attr_ints(conv, "padding") == std::vector<int64_t>{0, 0});
  CHECK(attr_ints(conv, "dilation") == std::vector<int64_t>{1, 1});
  CHECK(attr_int(conv, "groups") == 1);
  Attrs adam = complete_attrs(*find_op("adam_update"), {});
  CHECK(attr_float(adam, "lr") == 0.001);
  CHECK(attr_float(adam, "beta1") == 0.9);
  CHECK(attr_float(adam, "beta2") == 0.999);
  CHECK(attr_float(adam, "eps") == 1e-8);
  CHECK(attr_bool(adam, "decoupled") == false);
  Attrs bn = complete_attrs(*find_op("batchnorm2d"), {});
  CHECK(attr_float(bn, "eps") == 1e-5);
  CHECK(attr_float(bn, "momentum") == 0.1);
  CHECK(attr_float(complete_attrs(*find_op("leaky_relu"), {}), "negative_slope") == 0.01);
  CHECK(attr_float(complete_attrs(*find_op("dropout"), {}), "p") == 0.5);
  CHECK(attr_int(complete_attrs(*find_op("softmax"), {}), "axis") == -1);
  Attrs flat = complete_attrs(*find_op("flatten"), {});
  CHECK(attr_int(flat, "start_dim") == 1);
  CHECK(attr_int(flat, "end_dim") == -1);
  CHECK(attr_ints(complete_attrs(*find_op("maxpool2d"), {{"kernel", std::vector<int64_t>{2, 2}}}), "stride").empty());
}

TEST_CASE("complete_attrs keeps given values and converts ints given for floats", "[ir][registry]") {
  Attrs a = complete_attrs(*find_op("sgd_update"), {{"lr", int64_t{1}}, {"nesterov", true}});
  CHECK(attr_kind(a.at("lr")) == AttrKind::float_);
  CHECK(std::get<double>(a.at("lr")) == 1.0);
  CHECK(attr_bool(a, "nesterov"));
  CHECK(a.size() == find_op("sgd_update")->attrs.size());
}

TEST_CASE("complete_attrs rejects unknown, missing and wrongly typed attributes", "[ir][registry]") {
  const OpDef& pool = *find_op("maxpool2d");
  auto message = [&](const Attrs& attrs) {
    try {
      complete_attrs(pool, attrs);
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message({}), Catch::Matchers::Contains("missing required attribute 'kernel'"));
  CHECK_THAT(message({{"kernel", std::vector<int64_t>{2, 2}}, {"kernal", int64_t{2}}}),
             Catch::Matchers::Contains("unknown attribute 'kernal'"));
  CHECK_THAT(message({{"kernel", 2.5}}),
             Catch::Matchers::Contains("attribute 'kernel' has the wrong kind; expected ints, found float"));
}

TEST_CASE("infer_types checks the operand count, counting optional operands", "[ir][registry]") {
  REQUIRE_SHAPE_ERROR("relu", (std::vector<std::string>{"f32[2]", "f32[2]"}), {},
                      "relu: wrong number of operands; expected 1, found 2", -1);
  REQUIRE_SHAPE_ERROR("linear", (std::vector<std::string>{"f32[N,4]"}), {},
                      "linear: wrong number of operands; expected 2 to 3, found 1", -1);
  CHECK(infer_str("linear", {"f32[N,4]", "f32[3,4]"}) == std::vector<std::string>{"f32[N,3]"});
  CHECK(infer_str("linear", {"f32[N,4]", "f32[3,4]", "f32[3]"}) == std::vector<std::string>{"f32[N,3]"});
}

TEST_CASE("render_ops_markdown has one row per op with its defaults", "[ir][registry]") {
  std::string md = render_ops_markdown();
  size_t rows = 0;
  for (size_t p = md.find("\n| `"); p != std::string::npos; p = md.find("\n| `", p + 1)) ++rows;
  CHECK(rows == all_ops().size());
  CHECK_THAT(md,
             Catch::Matchers::Contains(
                 "| `conv2d` | x, weight, bias? | stride ints ([1,1]), padding ints ([0,0]), dilation ints ([1,1]), "
                 "groups int (1) | 1 | opaque | no |"));
  CHECK_THAT(md, Catch::Matchers::Contains("| `sgd_update` | param, grad, momentum_buf?, step?, lr? | lr float (required)"));
}
