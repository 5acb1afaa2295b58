// concat (torch.cat) and slice (its gradient) as copy loops: the row-major tensors are
// [outer, axis, inner], so each operand is `outer` contiguous runs of axis x inner elements.
#include "codegen/lower/lower_ctx.h"
#include "ir/op_registry.h"

namespace dnnc::codegen {
namespace {

// (outer, inner): the element counts before and after `axis` of `s`.
std::pair<int64_t, int64_t> around(const Dims& s, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  return {outer, inner};
}

int64_t axis_of(const LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a, size_t rank) {
  int64_t axis = ir::attr_int(a, "axis");
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) ctx.fail(n, "axis out of range");
  return axis;
}

void lower_concat(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  const Dims out = ctx.shape(n.outputs[0]);
  const int64_t axis = axis_of(ctx, n, a, out.size());
  auto [outer, inner] = around(out, axis);
  const int64_t row = out[static_cast<size_t>(axis)] * inner;  // elements of one outer index
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  std::vector<int> in;
  for (ir::ValueId v : n.inputs) in.push_back(d.read(ctx.buffer(v)));
  int w = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  kb.loop("o", outer, ctx.parallel(outer * row) && outer > 1, [&](Expr o) {
    int64_t offset = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int64_t len = ctx.shape(n.inputs[k])[static_cast<size_t>(axis)] * inner;
      kb.loop("i", len, false, [&](Expr i) {
        kb.store(w, o * i64c(row) + i64c(offset) + i, kb.load(in[k], o * i64c(len) + i));
      });
      offset += len;
    }
  });
  ctx.emit(std::move(d));
}

void lower_slice(LowerCtx& ctx, const ir::Node& n, const ir::Attrs& a) {
  const Dims x = ctx.shape(n.inputs[0]);
  const int64_t axis = axis_of(ctx, n, a, x.size());
  auto [outer, inner] = around(x, axis);
  const int64_t row = x[static_cast<size_t>(axis)] * inner;
  const int64_t start = ir::attr_int(a, "start") * inner, len = ir::attr_int(a, "length") * inner;
  if (start < 0 || len < 1 || start + len > row) ctx.fail(n, "slice outside its axis");
  KernelDraft d(ctx, ctx.kernel_name(n.op));
  int r = d.read(ctx.buffer(n.inputs[0]));
  int w = d.write(ctx.define(n.outputs[0]));
  KernelBuilder& kb = d.kb;
  kb.loop("o", outer, ctx.parallel(outer * len) && outer > 1, [&](Expr o) {
    kb.loop("i", len, false, [&](Expr i) {
      kb.store(w, o * i64c(len) + i, kb.load(r, o * i64c(row) + i64c(start) + i));
    });
  });
  ctx.emit(std::move(d));
}

}  // namespace

void register_concat_lowerings(LowerTable& t) {
  t["concat"] = lower_concat;
  t["slice"] = lower_slice;
}

}  // namespace dnnc::codegen
