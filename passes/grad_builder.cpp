// Emitting derived nodes with registry-inferred types.
#include "passes/grad_builder.h"

#include <fmt/format.h>

#include "ir/check.h"
#include "ir/op_registry.h"

namespace dnnc::passes {

std::vector<ir::ValueId> GradBuilder::emit(const std::string& op, const std::vector<ir::ValueId>& inputs,
                                           const ir::Attrs& attrs, const std::string& name_hint) {
  const ir::OpDef* def = ir::find_op(op);
  DNNC_CHECK(def, "derived node uses an unregistered op");
  std::vector<ir::TensorType> in;
  for (ir::ValueId v : inputs) in.push_back(g_.value(v).type);
  ir::Attrs full;
  std::vector<ir::TensorType> out;
  try {
    full = ir::complete_attrs(*def, attrs);
    out = ir::infer_types(*def, in, full);
  } catch (const ir::ShapeError& e) {
    throw ir::CompileError(m_.source_file, loc_, fmt::format("while deriving {}: {}", op, e.what()));
  }
  std::vector<std::string> names;
  if (!name_hint.empty()) names.push_back(name_hint);
  return g_.add_node(op, inputs, std::move(full), out, loc_, names);
}

ir::ValueId GradBuilder::sum_to(ir::ValueId grad, const ir::Shape& target, const std::string& name_hint) {
  const ir::Shape shape = g_.value(grad).type.shape;
  if (shape == target) return grad;
  std::vector<int64_t> axes;
  size_t lead = shape.size() - target.size();
  DNNC_CHECK(shape.size() >= target.size(), "broadcast result has lower rank than its operand");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      axes.push_back(static_cast<int64_t>(i));
      continue;
    }
    if (target[i - lead] == 1 && shape[i] != 1) axes.push_back(static_cast<int64_t>(i));
  }
  ir::ValueId r = grad;
  if (!axes.empty()) r = emit1("reduce_sum", {grad}, {{"axes", axes}, {"keepdim", false}}, name_hint);
  if (g_.value(r).type.shape != target) r = emit1("reshape", {r}, {{"shape", std::vector<int64_t>(target)}}, name_hint);
  return r;
}

}  // namespace dnnc::passes
