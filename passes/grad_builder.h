// Helpers for emitting derived nodes (gradients, optimizer updates) with types from the op
// registry, used by autodiff's gradient rules and by the optimizer pass.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dnnc::passes {

class GradBuilder {
 public:
  GradBuilder(ir::Graph& g, const ir::Module& m) : g_(g), m_(m) {}

  /// Appends `op(inputs){attrs}` (attrs completed with defaults); result types come from the
  /// registry. Throws ir::CompileError at `loc` if the op rejects the operand types.
  std::vector<ir::ValueId> emit(const std::string& op, const std::vector<ir::ValueId>& inputs,
                                const ir::Attrs& attrs = {}, const std::string& name_hint = "");
  ir::ValueId emit1(const std::string& op, const std::vector<ir::ValueId>& inputs, const ir::Attrs& attrs = {},
                    const std::string& name_hint = "") {
    return emit(op, inputs, attrs, name_hint).at(0);
  }
  /// Sums a broadcast gradient back down to `target` (the operand's shape): leading extra
  /// dims and dims where target is 1 are reduced, then reshaped if needed.
  ir::ValueId sum_to(ir::ValueId grad, const ir::Shape& target, const std::string& name_hint = "");

  const ir::TensorType& type(ir::ValueId v) const { return g_.value(v).type; }
  ir::Graph& graph() { return g_; }
  void set_loc(ir::SourceLoc loc) { loc_ = loc; }
  /// Throws ir::CompileError in the module's source file at `loc`.
  [[noreturn]] void fail(ir::SourceLoc loc, const std::string& message) const {
    throw ir::CompileError(m_.source_file, loc, message);
  }

 private:
  ir::Graph& g_;
  const ir::Module& m_;
  ir::SourceLoc loc_;
};

}  // namespace dnnc::passes
