// The op registry machinery: lookup, attribute completion and checked type inference.
// The ops themselves are defined in ops_*.cpp and registered from register_all_ops().
#include "ir/op_registry.h"

#include <fmt/format.h>

#include "ir/check.h"
#include "ir/op_defs.h"

namespace dnnc::ir {

const char* fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::elementwise:
      return "elementwise";
    case FusionClass::broadcast:
      return "broadcast";
    case FusionClass::injective:
      return "injective";
    case FusionClass::reduction:
      return "reduction";
    case FusionClass::opaque:
      return "opaque";
  }
  return "?";
}

namespace detail {

void OpTable::add(OpDef def) {
  DNNC_CHECK(!def.name.empty() && def.infer, "an op needs a name and a shape rule");
  for ([[maybe_unused]] const OpDef* d : view_) DNNC_CHECK(d->name != def.name, "op registered twice");
  bool seen_optional = false;
  for (const OperandSpec& o : def.operands) {
    DNNC_CHECK((!seen_optional || o.optional), "optional operands must be trailing");
    seen_optional = seen_optional || o.optional;
  }
  for ([[maybe_unused]] const AttrSpec& a : def.attrs)
    DNNC_CHECK((!a.default_value || attr_kind(*a.default_value) == a.kind), "default of the wrong kind");
  defs_.push_back(std::make_unique<OpDef>(std::move(def)));
  view_.push_back(defs_.back().get());
}

void register_all_ops(OpTable& table) {
  register_nn_ops(table);
  register_elementwise_ops(table);
  register_shape_ops(table);
  register_backward_ops(table);
  register_optim_ops(table);
}

}  // namespace detail

namespace {
const detail::OpTable& table() {
  static const detail::OpTable t = [] {
    detail::OpTable built;
    detail::register_all_ops(built);
    return built;
  }();
  return t;
}
}  // namespace

const OpDef* find_op(std::string_view name) {
  for (const OpDef* d : table().ops())
    if (d->name == name) return d;
  return nullptr;
}

const std::vector<const OpDef*>& all_ops() { return table().ops(); }

Attrs complete_attrs(const OpDef& op, const Attrs& attrs) {
  Attrs out;
  for (const auto& [key, value] : attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : op.attrs)
      if (s.name == key) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : op.attrs) known += (known.empty() ? "" : ", ") + s.name;
      throw ShapeError(
          fmt::format("{}: unknown attribute '{}'; expected one of {{{}}}, found '{}'", op.name, key, known, key));
    }
    AttrKind kind = attr_kind(value);
    if (kind == spec->kind) {
      out.emplace(key, value);
    } else if (spec->kind == AttrKind::float_ && kind == AttrKind::int_) {
      out.emplace(key, static_cast<double>(std::get<int64_t>(value)));
    } else if (spec->kind == AttrKind::floats && kind == AttrKind::ints) {
      const auto& xs = std::get<std::vector<int64_t>>(value);
      out.emplace(key, std::vector<double>(xs.begin(), xs.end()));
    } else {
      throw ShapeError(fmt::format("{}: attribute '{}' has the wrong kind; expected {}, found {} ({})", op.name, key,
                                   attr_kind_name(spec->kind), attr_kind_name(kind), attr_to_string(value)));
    }
  }
  for (const AttrSpec& s : op.attrs) {
    if (out.count(s.name)) continue;
    if (!s.default_value)
      throw ShapeError(fmt::format("{}: missing required attribute '{}'; expected a {} value, found none", op.name,
                                   s.name, attr_kind_name(s.kind)));
    out.emplace(s.name, *s.default_value);
  }
  return out;
}

std::vector<TensorType> infer_types(const OpDef& op, const std::vector<TensorType>& operands, const Attrs& attrs) {
  size_t required = 0;
  for (const OperandSpec& o : op.operands) required += o.optional ? 0 : 1;
  size_t total = op.operands.size();
  if (operands.size() < required || operands.size() > total) {
    std::string expected = required == total ? std::to_string(total) : fmt::format("{} to {}", required, total);
    throw ShapeError(
        fmt::format("{}: wrong number of operands; expected {}, found {}", op.name, expected, operands.size()));
  }
  std::vector<TensorType> out = op.infer(operands, complete_attrs(op, attrs));
  DNNC_CHECK(!out.empty() && static_cast<int>(out.size()) <= op.num_outputs,
             "a shape rule returned more results than the op's num_outputs");
  return out;
}

}  // namespace dnnc::ir
