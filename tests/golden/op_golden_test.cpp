// Per-op goldens: for every tests/golden/ops/*.safetensors, the op's forward on the reference
// interpreter and its gradient rule's backward graph, both held to PyTorch (rel err <= 1e-5).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compare.h"
#include "dynamic_tests.h"
#include "golden_file.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/grad_builder.h"
#include "passes/grad_rules.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::golden {
namespace {

namespace ref = runtime::reference;

constexpr double kOpTol = 1e-5;

// Operands that are module state in every model (never batch-carrying).
const std::set<std::string> kStateOperands = {"weight", "bias", "running_mean", "running_var"};

std::vector<std::string> json_strings(const nlohmann::json& j) { return j.get<std::vector<std::string>>(); }

// The IR types of the operands. The file's `batch` is the leading dim of the first operand; that
// dim is the symbolic batch (ir::kBatch) in every data operand (not weight/bias/running stats)
// whose leading dim has that size. matmul with transpose_a contracts over a's batch dim, so b's
// contracted dim is bound too (matmul_tt: b is [Nc, K] and K is the batch).
std::vector<ir::TensorType> operand_types(const GoldenFile& f, const std::string& op, const ir::Attrs& attrs,
                                          const std::vector<std::string>& operands) {
  int64_t batch = std::stoll(f.meta("batch"));
  std::vector<ir::TensorType> types;
  for (const std::string& name : operands) {
    const runtime::Tensor& t = f.tensor("in." + name);
    ir::TensorType ty{t.dtype(), t.shape(), ir::Layout::row_major};
    if (!kStateOperands.count(name) && ty.rank() >= 1 && ty.shape[0] == batch) ty.shape[0] = ir::kBatch;
    types.push_back(ty);
  }
  if (op == "matmul" && types.size() == 2 && ir::attr_bool(attrs, "transpose_a") && types[0].shape[0] == ir::kBatch) {
    size_t k = ir::attr_bool(attrs, "transpose_b") ? 1 : 0;
    if (types[1].shape[k] == batch) types[1].shape[k] = ir::kBatch;
  }
  return types;
}

struct OpCase {
  GoldenFile file;
  std::string name, op;
  std::vector<std::string> operands, outputs, grads;
  ir::Module module;  // graph "forward": the op alone; inputs = operands, outputs = every result
  std::map<std::string, runtime::Tensor> inputs;
};

OpCase build_forward(const std::string& path) {
  OpCase c;
  c.file = load_golden(path);
  c.name = case_name(path);
  c.op = c.file.meta("op");
  c.operands = json_strings(c.file.meta_json("operands"));
  c.outputs = json_strings(c.file.meta_json("outputs"));
  c.grads = json_strings(c.file.meta_json("grads"));
  const ir::OpDef* def = ir::find_op(c.op);
  if (!def) FAIL(c.name << ": op '" << c.op << "' is not in the registry");
  ir::Attrs attrs = ir::complete_attrs(*def, json_to_attrs(c.file.meta_json("attrs"), c.name + " attrs"));
  std::vector<ir::TensorType> types = operand_types(c.file, c.op, attrs, c.operands);

  c.module.name = c.name;
  c.module.source_file = display_path(path);
  ir::Graph g;
  g.name = "forward";
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    ins.push_back(g.add_input(c.operands[i], types[i]));
    c.inputs[c.operands[i]] = c.file.tensor("in." + c.operands[i]);
  }
  std::vector<ir::TensorType> out_types = ir::infer_types(*def, types, attrs);
  REQUIRE(out_types.size() == c.outputs.size());
  g.outputs = g.add_node(c.op, ins, attrs, out_types, {}, c.outputs);
  c.module.graphs.push_back(std::move(g));
  return c;
}

// Graph "backward": the forward node, then the op's gradient rule applied to the upstream
// gradient (input `grad_out`, or fill(1.0) for a scalar loss) with needs = the file's `grads`.
// Outputs: the gradients of `grads`, in that order.
void add_backward(OpCase& c) {
  ir::Graph g = c.module.graphs.at(0);
  g.name = "backward";
  g.outputs.clear();
  const ir::Node node = g.nodes.at(0);
  ir::ValueId y = node.outputs.at(0);
  passes::GradBuilder b(g, c.module);
  std::vector<ir::ValueId> douts(node.outputs.size(), ir::kNoValue);
  if (c.file.has("grad_out")) {
    douts[0] = g.add_input("grad_out", g.value(y).type);
    c.inputs["grad_out"] = c.file.tensor("grad_out");
  } else {
    REQUIRE(g.value(y).type.shape.empty());  // only scalar losses come without grad_out
    douts[0] = b.emit1("fill", {}, {{"value", 1.0}, {"shape", std::vector<int64_t>{}}}, "dloss");
  }
  std::vector<bool> needs;
  for (const std::string& name : c.operands)
    needs.push_back(std::find(c.grads.begin(), c.grads.end(), name) != c.grads.end());
  const passes::GradRule* rule = passes::find_grad_rule(c.op);
  if (!rule) FAIL(c.name << ": op '" << c.op << "' has no gradient rule");
  std::vector<ir::ValueId> dins = (*rule)(b, node, douts, needs);
  REQUIRE(dins.size() == c.operands.size());
  for (const std::string& name : c.grads) {
    size_t k = static_cast<size_t>(std::find(c.operands.begin(), c.operands.end(), name) - c.operands.begin());
    REQUIRE(k < c.operands.size());
    INFO(c.name << ": the gradient rule returned no gradient for operand '" << name << "'");
    REQUIRE(dins[k] != ir::kNoValue);
    g.outputs.push_back(dins[k]);
  }
  c.module.graphs.push_back(std::move(g));
}

void run_op_case(const std::string& path) {
  OpCase c = build_forward(path);
  INFO("op case " << c.name << " (op " << c.op << ")");
  ir::verify(c.module);
  ref::ParamStore no_params;
  std::vector<runtime::Tensor> outs = ref::run_reference(c.module, *c.module.graph("forward"), c.inputs, no_params);
  REQUIRE(outs.size() == c.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    check_close(fmt::format("{} out.{}", c.name, c.outputs[i]), outs[i], c.file.tensor("out." + c.outputs[i]), kOpTol);

  add_backward(c);
  ir::verify(c.module);
  std::vector<runtime::Tensor> grads = ref::run_reference(c.module, *c.module.graph("backward"), c.inputs, no_params);
  REQUIRE(grads.size() == c.grads.size());
  for (size_t i = 0; i < grads.size(); ++i)
    check_close(fmt::format("{} grad.in.{}", c.name, c.grads[i]), grads[i], c.file.tensor("grad.in." + c.grads[i]),
                kOpTol);
}

// One test case per op golden file, named "golden op <case>".
[[maybe_unused]] const bool registered = [] {
  for (const std::string& path : list_golden_files("ops"))
    register_test(CATCH_INTERNAL_LINEINFO, "golden op " + case_name(path), "[golden][op]",
                  [path] { run_op_case(path); });
  return true;
}();

}  // namespace
}  // namespace dnnc::golden
