// Pass `infer-shapes`: recompute every result type from the op registry's shape rules.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "passes/passes.h"

namespace dnnc::passes {

bool infer_shapes(ir::Module& m) {
  bool changed = false;
  for (auto& g : m.graphs) {
    for (auto& node : g.nodes) {
      const ir::OpDef* def = ir::find_op(node.op);
      if (!def) throw ir::CompileError(m.source_file, node.loc, fmt::format("unknown op '{}'", node.op));
      std::vector<ir::TensorType> in;
      for (ir::ValueId v : node.inputs) in.push_back(g.value(v).type);
      std::vector<ir::TensorType> out;
      try {
        out = ir::infer_types(*def, in, node.attrs);
      } catch (const ir::ShapeError& e) {
        throw ir::CompileError(m.source_file, node.loc, e.what());
      }
      if (out.size() != node.outputs.size())
        throw ir::CompileError(m.source_file, node.loc,
                               fmt::format("{} has {} results, expected {}", node.op, node.outputs.size(), out.size()));
      for (size_t i = 0; i < out.size(); ++i) {
        ir::TensorType& t = g.value(node.outputs[i]).type;
        out[i].layout = t.layout;  // layout is chosen by select-layout, not by shape rules
        if (!(t == out[i])) {
          t = out[i];
          changed = true;
        }
      }
    }
  }
  return changed;
}

}  // namespace dnnc::passes
