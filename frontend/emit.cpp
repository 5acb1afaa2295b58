// Node emission through ir::complete_attrs / ir::infer_types.
#include "frontend/emit.h"

#include "ir/check.h"
#include "ir/op_registry.h"

namespace dnnc::frontend {

TypedNode type_node(const std::string& op, const std::vector<ir::TensorType>& inputs, const ir::Attrs& attrs) {
  const ir::OpDef* def = ir::find_op(op);
  DNNC_CHECK(def, "the frontend only emits registered ops");
  TypedNode t;
  t.attrs = ir::complete_attrs(*def, attrs);
  t.outputs = ir::infer_types(*def, inputs, t.attrs);
  return t;
}

std::vector<ir::TensorType> types_of(const ir::Graph& g, const std::vector<ir::ValueId>& ids) {
  std::vector<ir::TensorType> out;
  for (ir::ValueId id : ids) out.push_back(g.value(id).type);
  return out;
}

std::vector<std::string> ValueNamer::names(const std::string& name, size_t count,
                                           const std::vector<std::string>& suffixes) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (name.empty())
      out.push_back(std::to_string(next_++));
    else if (i == 0)
      out.push_back(name);
    else
      out.push_back(name + (i - 1 < suffixes.size() ? suffixes[i - 1] : "." + std::to_string(i)));
  }
  return out;
}

std::vector<ir::ValueId> add_typed(ir::Graph& g, ValueNamer& namer, const std::string& op,
                                   const std::vector<ir::ValueId>& inputs, TypedNode typed, ir::SourceLoc loc,
                                   const std::string& name, const std::vector<std::string>& suffixes) {
  std::vector<std::string> names = namer.names(name, typed.outputs.size(), suffixes);
  return g.add_node(op, inputs, std::move(typed.attrs), typed.outputs, loc, names);
}

std::vector<ir::ValueId> emit_node(ir::Graph& g, ValueNamer& namer, const std::string& op,
                                   const std::vector<ir::ValueId>& inputs, const ir::Attrs& attrs, ir::SourceLoc loc,
                                   const std::string& name, const std::vector<std::string>& suffixes,
                                   const std::string& file) {
  TypedNode typed;
  try {
    typed = type_node(op, types_of(g, inputs), attrs);
  } catch (const ir::ShapeError& e) {
    throw ir::CompileError(file, loc, e.what());
  }
  return add_typed(g, namer, op, inputs, std::move(typed), loc, name, suffixes);
}

}  // namespace dnnc::frontend
