// Op definitions: injective shape ops (flatten, reshape, transpose) and fill.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "ir/op_defs.h"
#include "ir/shape_check.h"

namespace dnnc::ir::detail {
namespace {

using Types = std::vector<TensorType>;

Types flatten_rule(const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  expect_row_major("flatten", "input", x, 0);
  int64_t rank = x.rank();
  int64_t start = normalize_axis("flatten", "start_dim", attr_int(attrs, "start_dim"), rank);
  int64_t end = normalize_axis("flatten", "end_dim", attr_int(attrs, "end_dim"), rank);
  if (rank == 0) return {TensorType{x.dtype, {1}, Layout::row_major}};
  if (start > end)
    throw ShapeError(
        fmt::format("flatten: start_dim cannot come after end_dim; expected start_dim <= {}, found {}", end, start));
  if (start == end) return {TensorType{x.dtype, x.shape, Layout::row_major}};
  for (int64_t i = start; i <= end; ++i)
    if (x.shape[static_cast<size_t>(i)] == kBatch)
      throw ShapeError(fmt::format("flatten: dims {}..{} of {} include the batch dim (index {}), which cannot be "
                                   "flattened into another dim; expected start_dim > {}, found {}",
                                   start, end, shape_to_string(x.shape), i, i, start),
                       0);
  Shape out(x.shape.begin(), x.shape.begin() + start);
  out.push_back(concrete_numel(x.shape, static_cast<size_t>(start), static_cast<size_t>(end + 1)));
  out.insert(out.end(), x.shape.begin() + end + 1, x.shape.end());
  return {TensorType{x.dtype, out, Layout::row_major}};
}

// Index of the batch dim, or -1; throws if there is more than one.
int64_t batch_index(const std::string& op, const std::string& what, const Shape& s, int operand) {
  int64_t at = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != kBatch) continue;
    if (at >= 0)
      throw ShapeError(
          fmt::format("{}: {} has the batch dim twice; expected at most one, found {}", op, what, shape_to_string(s)),
          operand);
    at = static_cast<int64_t>(i);
  }
  return at;
}

Types reshape_rule(const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  expect_row_major("reshape", "input", x, 0);
  const auto& target_attr = attr_ints(attrs, "shape");
  Shape target(target_attr.begin(), target_attr.end());
  for (Dim d : target)
    if (d < kBatch)
      throw ShapeError(
          fmt::format("reshape: shape entries must be sizes >= 0 or -1 (the batch dim); expected >= -1, "
                      "found {}",
                      d));
  int64_t bi = batch_index("reshape", "input", x.shape, 0);
  int64_t bt = batch_index("reshape", "attribute 'shape'", target, -1);
  auto count = [](const Shape& s) { return concrete_numel(s, 0, s.size()); };
  if (bi < 0 && bt >= 0)
    throw ShapeError(
        fmt::format("reshape: -1 in 'shape' stands for the batch dim but the input {} has none; "
                    "expected no -1, found {}",
                    shape_to_string(x.shape), attr_to_string(target_attr)));
  if (bi >= 0 && bt < 0)
    throw ShapeError(
        fmt::format("reshape: the input {} has the batch dim, which cannot be reshaped into another "
                    "dim; expected one -1 in 'shape', found {}",
                    shape_to_string(x.shape), attr_to_string(target_attr)));
  if (count(x.shape) != count(target))
    throw ShapeError(
        fmt::format("reshape: cannot reshape {} into {}; expected {} elements{}, found {}", shape_to_string(x.shape),
                    shape_to_string(target), count(x.shape), bi >= 0 ? " per batch item" : "", count(target)),
        0);
  if (bi >= 0) {
    // The batch dim must stay an axis of its own: equal element counts on each side of it.
    int64_t before_in = concrete_numel(x.shape, 0, static_cast<size_t>(bi));
    int64_t before_t = concrete_numel(target, 0, static_cast<size_t>(bt));
    if (before_in != before_t)
      throw ShapeError(fmt::format("reshape: cannot reshape {} into {}: the batch dim would be mixed with other "
                                   "dims; expected {} elements before it, found {}",
                                   shape_to_string(x.shape), shape_to_string(target), before_in, before_t),
                       0);
  }
  return {TensorType{x.dtype, target, Layout::row_major}};
}

// The input may be in any layout (the kernel reads it through its index map); attribute
// `layout` is the storage of the result, so transpose(x, perm=identity, layout="nhwc") is a
// layout conversion (select-layout makes those at the edges of an nhwc region).
Types transpose_rule(const Types& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  const std::string& layout_attr = attr_string(attrs, "layout");
  std::optional<Layout> layout = parse_layout(layout_attr);
  if (!layout)
    throw ShapeError(
        fmt::format("transpose: attribute 'layout' must be row_major, nhwc or col_major; expected a "
                    "layout, found \"{}\"",
                    layout_attr));
  const auto& perm = attr_ints(attrs, "perm");
  if (static_cast<int64_t>(perm.size()) != x.rank())
    throw ShapeError(fmt::format("transpose: 'perm' must list every dim of {}; expected {} entries, found {}",
                                 shape_to_string(x.shape), x.rank(), perm.size()),
                     0);
  std::vector<bool> seen(perm.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)])
      throw ShapeError(fmt::format("transpose: 'perm' must be a permutation of 0..{}; expected each once, found {}",
                                   x.rank() - 1, attr_to_string(perm)));
    seen[static_cast<size_t>(p)] = true;
    out.push_back(x.shape[static_cast<size_t>(p)]);
  }
  if (*layout == Layout::nhwc && out.size() != 4)
    throw ShapeError(
        fmt::format("transpose: layout nhwc needs a rank-4 result; expected rank 4, found rank {}", out.size()));
  if (*layout == Layout::col_major && out.size() != 2)
    throw ShapeError(
        fmt::format("transpose: layout col_major needs a rank-2 result; expected rank 2, found rank {}", out.size()));
  return {TensorType{x.dtype, out, *layout}};
}

// concat: 2 to kMaxConcat row-major f32 tensors of one rank, equal but along `axis` (never
// the batch dim); the result's `axis` is the sum.
Types concat_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "concat";
  const TensorType& first = in[0];
  for (size_t i = 0; i < in.size(); ++i) {
    expect_dtype(op, fmt::format("operand {}", i), in[i], DType::f32, static_cast<int>(i));
    expect_row_major(op, fmt::format("operand {}", i), in[i], static_cast<int>(i));
  }
  const int64_t rank = static_cast<int64_t>(first.rank());
  if (rank < 2) throw ShapeError(fmt::format("concat: operands need a rank of at least 2, found {}", rank), 0);
  int64_t axis = normalize_axis(op, "axis", attr_int(attrs, "axis"), rank);
  Shape out = first.shape;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (static_cast<int64_t>(s.size()) != rank)
      throw ShapeError(fmt::format("concat: operand {} has rank {}; expected {} (operand 0's), found {}", i, s.size(),
                                   rank, s.size()),
                       static_cast<int>(i));
    if (s[static_cast<size_t>(axis)] == kBatch)
      throw ShapeError(fmt::format("concat: axis {} is the batch dim; expected another axis", axis), static_cast<int>(i));
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && s[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
        throw ShapeError(fmt::format("concat: operand {} is {} but operand 0 is {}; expected equal dims but along axis "
                                     "{}, found {} at dim {}",
                                     i, shape_to_string(s), shape_to_string(first.shape), axis,
                                     dim_to_string(s[static_cast<size_t>(d)]), d),
                         static_cast<int>(i));
    if (i > 0) out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return {TensorType{DType::f32, out}};
}

// slice: the `length` entries of x from `start` along `axis` (concat's gradient).
Types slice_rule(const Types& in, const Attrs& attrs) {
  const std::string op = "slice";
  const TensorType& x = in[0];
  expect_dtype(op, "x", x, DType::f32, 0);
  expect_row_major(op, "x", x, 0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(op, "axis", attr_int(attrs, "axis"), rank);
  Dim n = x.shape[static_cast<size_t>(axis)];
  int64_t start = attr_int(attrs, "start"), length = attr_int(attrs, "length");
  if (n == kBatch) throw ShapeError(fmt::format("slice: axis {} is the batch dim; expected another axis", axis), 0);
  if (start < 0 || length < 1 || start + length > n)
    throw ShapeError(fmt::format("slice: [{}, {}) is not inside axis {} of {}; expected 0 <= start < start + length "
                                 "<= {}",
                                 start, start + length, axis, shape_to_string(x.shape), n),
                     0);
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = length;
  return {TensorType{DType::f32, out}};
}

Types fill_rule(const Types&, const Attrs& attrs) {
  const auto& s = attr_ints(attrs, "shape");
  Shape shape(s.begin(), s.end());
  for (Dim d : shape)
    if (d < kBatch)
      throw ShapeError(
          fmt::format("fill: shape entries must be sizes >= 0 or -1 (the batch dim); expected >= -1, found {}", d));
  batch_index("fill", "attribute 'shape'", shape, -1);
  return {TensorType{DType::f32, shape, Layout::row_major}};
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t.add({.name = "flatten",
         .operands = {operand("x")},
         .attrs = {opt_int("start_dim", 1), opt_int("end_dim", -1)},
         .num_outputs = 1,
         .fusion = FusionClass::injective,
         .infer = flatten_rule,
         .summary = "merges dims start_dim..end_dim into one (never the batch dim)"});
  t.add({.name = "reshape",
         .operands = {operand("x")},
         .attrs = {required("shape", AttrKind::ints)},
         .num_outputs = 1,
         .fusion = FusionClass::injective,
         .infer = reshape_rule,
         .summary = "same elements in a new shape; -1 in shape is the batch dim"});
  t.add({.name = "transpose",
         .operands = {operand("x")},
         .attrs = {required("perm", AttrKind::ints), opt_string("layout", "row_major")},
         .num_outputs = 1,
         .fusion = FusionClass::injective,
         .infer = transpose_rule,
         .summary = "permutes dims: out.shape[i] = x.shape[perm[i]], stored in `layout`"});
  std::vector<OperandSpec> concat_operands = {operand("x0"), operand("x1")};
  for (int i = 2; i < kMaxConcat; ++i) concat_operands.push_back(optional_operand(fmt::format("x{}", i)));
  t.add({.name = "concat",
         .operands = concat_operands,
         .attrs = {opt_int("axis", 1)},
         .num_outputs = 1,
         .fusion = FusionClass::injective,
         .infer = concat_rule,
         .summary = fmt::format("torch.cat of 2 to {} tensors along axis (not the batch dim)", kMaxConcat)});
  t.add({.name = "slice",
         .operands = {operand("x")},
         .attrs = {required("axis", AttrKind::int_), required("start", AttrKind::int_),
                   required("length", AttrKind::int_)},
         .num_outputs = 1,
         .fusion = FusionClass::injective,
         .infer = slice_rule,
         .internal = true,
         .summary = "x.narrow(axis, start, length), contiguous (concat's gradient)"});
  t.add({.name = "fill",
         .operands = {},
         .attrs = {required("value", AttrKind::float_), required("shape", AttrKind::ints)},
         .num_outputs = 1,
         .fusion = FusionClass::elementwise,
         .infer = fill_rule,
         .internal = true,
         .summary = "f32 tensor of the given shape (-1 = batch dim) filled with value"});
}

}  // namespace dnnc::ir::detail
