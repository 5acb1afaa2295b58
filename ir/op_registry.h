// The op registry: the single place where an op is defined (operands, attributes with
// defaults, output count, shape/type rule, fusion class). docs/ops.md is its reference.
// Gradient rules live in passes/grad_rules, reference kernels in runtime/reference, and
// tests check that every registered op has both.
#pragma once
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/types.h"

namespace dnnc::ir {

/// As in TVM: what a fuser may do with the op.
enum class FusionClass : uint8_t { elementwise, broadcast, injective, reduction, opaque };
const char* fusion_class_name(FusionClass c);

struct OperandSpec {
  std::string name;
  bool optional = false;  // optional operands are trailing; absent ones are simply omitted
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: required
};

/// A shape/type error found by an op's rule. `operand` is the index of the operand at
/// fault (-1 if none in particular), so callers can point the diagnostic at its source.
class ShapeError : public std::runtime_error {
 public:
  ShapeError(std::string message, int operand = -1)
      : std::runtime_error(std::move(message)), operand_(operand) {}
  int operand() const { return operand_; }

 private:
  int operand_;
};

/// Given operand types and complete attributes (defaults filled), returns the output types.
/// Throws ShapeError with an "expected X, found Y" message on a mismatch.
using ShapeRule = std::function<std::vector<TensorType>(const std::vector<TensorType>&, const Attrs&)>;

struct OpDef {
  std::string name;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  int num_outputs = 1;
  FusionClass fusion = FusionClass::opaque;
  ShapeRule infer;
  bool internal = false;  // produced by passes only (backward/optimizer ops), not callable from .dnn
  std::string summary;    // one line for docs and `dnnc ops`
};

/// The most operands a concat takes (its operands x0, x1 and the optional x2 .. x7).
inline constexpr int kMaxConcat = 8;

/// nullptr if no op has that name.
const OpDef* find_op(std::string_view name);
/// Every registered op, in registration order.
const std::vector<const OpDef*>& all_ops();

/// Returns `attrs` with schema defaults filled in. Throws ShapeError naming the attribute
/// if one is unknown, missing (required) or of the wrong kind (an int is accepted for a float).
Attrs complete_attrs(const OpDef& op, const Attrs& attrs);

/// Checks operand count (and optional operands) and runs the shape rule on completed attrs.
/// Throws ShapeError on any mismatch.
std::vector<TensorType> infer_types(const OpDef& op, const std::vector<TensorType>& operands,
                                    const Attrs& attrs);

}  // namespace dnnc::ir
