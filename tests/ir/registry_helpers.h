// Test helpers for op shape rules: run infer_types by op name, capture the ShapeError.
#pragma once
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "test_types.h"

namespace dnnc::ir::test {

/// Output types of `op` (which must be registered) on the given operand types and attrs.
inline std::vector<TensorType> infer(const std::string& op, const std::vector<std::string>& operands,
                                     const Attrs& attrs = {}) {
  const OpDef* def = find_op(op);
  REQUIRE(def != nullptr);
  std::vector<TensorType> types;
  for (const auto& s : operands) types.push_back(ty(s));
  return infer_types(*def, types, attrs);
}

/// The types as strings, for readable comparisons.
inline std::vector<std::string> infer_str(const std::string& op, const std::vector<std::string>& operands,
                                          const Attrs& attrs = {}) {
  std::vector<std::string> out;
  for (const auto& t : infer(op, operands, attrs)) out.push_back(to_string(t));
  return out;
}

/// The ShapeError that infer() throws, or nullopt if it succeeds.
inline std::optional<ShapeError> shape_error(const std::string& op, const std::vector<std::string>& operands,
                                             const Attrs& attrs = {}) {
  try {
    infer(op, operands, attrs);
  } catch (const ShapeError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace dnnc::ir::test

/// Requires infer(op, operands, attrs) to throw a ShapeError containing `text` that blames `operand`.
#define REQUIRE_SHAPE_ERROR(op, operands, attrs, text, operand_index)       \
  do {                                                                      \
    auto err_ = ::dnnc::ir::test::shape_error(op, operands, attrs);         \
    REQUIRE(err_.has_value());                                              \
    CHECK_THAT(std::string(err_->what()), Catch::Matchers::Contains(text)); \
    CHECK(err_->operand() == (operand_index));                              \
  } while (0)
