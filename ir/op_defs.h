// Internal to dnnc_ir: the op table the registry is built from, the per-family registration
// functions (ops_*.cpp) and small helpers for writing OpDefs. Not for use outside ir/.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/op_registry.h"

namespace dnnc::ir::detail {

/// Owns the OpDefs in registration order. add() asserts the name is new and the def is complete.
class OpTable {
 public:
  void add(OpDef def);
  const std::vector<const OpDef*>& ops() const { return view_; }

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
  std::vector<const OpDef*> view_;
};

/// The one explicit registration function (called once, lazily, by find_op/all_ops).
void register_all_ops(OpTable& table);
void register_nn_ops(OpTable& table);           // ops_nn.cpp: linear, conv, pooling, norms, losses, dropout
void register_elementwise_ops(OpTable& table);  // ops_elementwise.cpp: maps, broadcasts, softmax, reductions
void register_shape_ops(OpTable& table);        // ops_shape.cpp: flatten, reshape, transpose, fill
void register_backward_ops(OpTable& table);     // ops_backward.cpp: *_backward
void register_optim_ops(OpTable& table);        // ops_optim.cpp: sgd_update, adam_update

inline AttrSpec required(std::string name, AttrKind kind) { return AttrSpec{std::move(name), kind, std::nullopt}; }
inline AttrSpec opt_int(std::string name, int64_t v) { return AttrSpec{std::move(name), AttrKind::int_, AttrValue{v}}; }
inline AttrSpec opt_float(std::string name, double v) {
  return AttrSpec{std::move(name), AttrKind::float_, AttrValue{v}};
}
inline AttrSpec opt_bool(std::string name, bool v) { return AttrSpec{std::move(name), AttrKind::bool_, AttrValue{v}}; }
inline AttrSpec opt_string(std::string name, std::string v) {
  return AttrSpec{std::move(name), AttrKind::string, AttrValue{std::move(v)}};
}
inline AttrSpec opt_ints(std::string name, std::vector<int64_t> v) {
  return AttrSpec{std::move(name), AttrKind::ints, AttrValue{std::move(v)}};
}

inline OperandSpec operand(std::string name) { return OperandSpec{std::move(name), false}; }
inline OperandSpec optional_operand(std::string name) { return OperandSpec{std::move(name), true}; }

}  // namespace dnnc::ir::detail
