// Markdown rendering of the op registry.
#include "ir/op_docs.h"

#include <fmt/format.h>

#include "ir/op_registry.h"

namespace dnnc::ir {
namespace {
// A table cell: `|` would end the cell, so it is escaped.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}
}  // namespace

std::string render_ops_markdown() {
  std::string out =
      "| op | operands | attributes (default) | results | class | internal | summary |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const OpDef* op : all_ops()) {
    std::string operands, attrs;
    for (const OperandSpec& o : op->operands)
      operands += (operands.empty() ? "" : ", ") + o.name + (o.optional ? "?" : "");
    for (const AttrSpec& a : op->attrs)
      attrs += fmt::format("{}{} {} ({})", attrs.empty() ? "" : ", ", a.name, attr_kind_name(a.kind),
                           a.default_value ? attr_to_string(*a.default_value) : "required");
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", op->name, cell(operands.empty() ? "—" : operands),
                       cell(attrs.empty() ? "—" : attrs), op->num_outputs, fusion_class_name(op->fusion),
                       op->internal ? "yes" : "no", cell(op->summary));
  }
  return out;
}

}  // namespace dnnc::ir
