// The table of functional ops callable from .dnn files and their argument conversion.
#include "frontend/op_surface.h"

#include <fmt/format.h>

#include "ir/types.h"

namespace dnnc::frontend {

static const std::vector<OpSurface>& table() {
  using C = AttrConv;
  static const std::vector<OpSurface> t = {
      {"relu", {"x"}, {}},
      {"tanh", {"x"}, {}},
      {"sigmoid", {"x"}, {}},
      {"gelu", {"x"}, {}},
      {"leaky_relu", {"x"}, {{"negative_slope", C::float_}}},
      {"softmax", {"x"}, {{"axis", C::int_}}},
      {"log_softmax", {"x"}, {{"axis", C::int_}}},
      {"flatten", {"x"}, {{"start_dim", C::int_}, {"end_dim", C::int_}}},
      {"reshape", {"x"}, {{"shape", C::dims}}, true},
      {"transpose", {"x"}, {{"perm", C::dims}}, true},
      {"matmul", {"a", "b"}, {{"transpose_a", C::bool_}, {"transpose_b", C::bool_}}},
      {"add", {"a", "b"}, {}},
      {"sub", {"a", "b"}, {}},
      {"mul", {"a", "b"}, {}},
      {"div", {"a", "b"}, {}},
      {"add_scalar", {"x"}, {{"value", C::float_}}},
      {"mul_scalar", {"x"}, {{"value", C::float_}}},
      {"div_scalar", {"x"}, {{"value", C::float_}}},
      {"dropout", {"x"}, {{"p", C::float_}, {"seed", C::int_}}},
      {"maxpool2d", {"x"}, {{"kernel", C::pair}, {"stride", C::pair}, {"padding", C::pair}}},
      {"avgpool2d",
       {"x"},
       {{"kernel", C::pair}, {"stride", C::pair}, {"padding", C::pair}, {"count_include_pad", C::bool_}}},
      {"cross_entropy", {"logits", "target"}, {{"label_smoothing", C::float_}}},
      {"concat", {"tensors"}, {{"axis", C::int_}}},  // concat((a, b, ...), axis: 1), as torch.cat
      {"mse_loss", {"pred", "target"}, {}},
  };
  return t;
}

const OpSurface* find_surface(const std::string& name) {
  for (const auto& s : table())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> surface_names() {
  std::vector<std::string> out;
  for (const auto& s : table()) out.push_back(s.name);
  return out;
}

Signature signature_of(const OpSurface& s) {
  Signature sig{s.name, s.operands, s.operands.size(), s.varargs};
  for (const auto& a : s.attrs) sig.params.push_back(a.name);
  return sig;
}

static std::vector<int64_t> eval_dims(const std::vector<const ast::Expr*>& given, const std::string& what,
                                      const ConstEval& ev, const std::string& batch_symbol, bool allow_batch,
                                      const std::string& file) {
  // A single tuple lists the dims; otherwise each argument is one dim.
  std::vector<const ast::Expr*> items;
  if (given.size() == 1 && given[0]->kind == ast::ExprKind::tuple) {
    for (const auto& e : given[0]->elems) items.push_back(e.get());
  } else {
    items = given;
  }
  std::vector<int64_t> out;
  for (const ast::Expr* e : items) {
    if (allow_batch && e->kind == ast::ExprKind::ident && e->name == batch_symbol) {
      out.push_back(ir::kBatch);
      continue;
    }
    int64_t v = ev.eval_int(*e, what);
    if (allow_batch && v < 1)
      throw ir::CompileError(
          file, expr_start(*e),
          fmt::format("{} expects sizes >= 1 or the batch symbol '{}', found {}", what, batch_symbol, v));
    out.push_back(v);
  }
  return out;
}

ir::Attrs convert_attrs(const OpSurface& s, const Bound& b, const ConstEval& ev, const std::string& batch_symbol,
                        const std::string& file) {
  ir::Attrs attrs;
  size_t first = s.operands.size();
  for (size_t i = 0; i < s.attrs.size(); ++i) {
    const AttrArg& a = s.attrs[i];
    const ast::Expr* e = b.slots[first + i];
    bool last = i + 1 == s.attrs.size();
    std::string what = fmt::format("argument '{}' of {}", a.name, s.name);
    if (a.conv == AttrConv::dims) {
      std::vector<const ast::Expr*> given;
      if (e) given.push_back(e);
      if (last) given.insert(given.end(), b.rest.begin(), b.rest.end());
      if (given.empty()) continue;
      attrs[a.name] = eval_dims(given, what, ev, batch_symbol, a.name == "shape", file);
      continue;
    }
    if (!e) continue;
    switch (a.conv) {
      case AttrConv::int_: attrs[a.name] = ev.eval_int(*e, what); break;
      case AttrConv::float_: attrs[a.name] = ev.eval_float(*e, what); break;
      case AttrConv::bool_: attrs[a.name] = ev.eval_bool(*e, what); break;
      case AttrConv::pair: attrs[a.name] = ev.eval_pair(*e, what); break;
      case AttrConv::dims: break;
    }
  }
  return attrs;
}

}  // namespace dnnc::frontend
