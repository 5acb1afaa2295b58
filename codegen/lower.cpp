// The lowering driver: binds buffers to the graph's values, walks the groups in order and
// dispatches each node to its family's lowering (lower_*.cpp).
#include "codegen/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <stdexcept>

#include "codegen/lower_ctx.h"
#include "ir/op_registry.h"
#include "ir/printer.h"

namespace dnnc::codegen {

Dims strides_of(const Dims& shape) {
  Dims st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

int64_t product(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr floordiv(Expr a, int64_t s, int64_t min_a) {
  assert(s > 0 && "floordiv by a non-positive number");
  int64_t shift = min_a < 0 ? (-min_a + s - 1) / s : 0;
  if (shift == 0) return a / i64c(s);
  return (a + i64c(shift * s)) / i64c(s) - i64c(shift);
}

namespace {

// A C identifier from an IR name: [A-Za-z0-9_] kept, anything else becomes '_'.
std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out.empty() ? "x" : out;
}

// Comment text: no control characters and no backslashes (a trailing one would continue a //).
std::string comment_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == '\\') ? ' ' : c;
  return out;
}

ScalarType scalar_of(ir::DType t) { return t == ir::DType::i64 ? ScalarType::i64 : ScalarType::f32; }

const LowerTable& lower_table() {
  static const LowerTable table = [] {
    LowerTable t;
    register_map_lowerings(t);
    register_reduce_lowerings(t);
    register_gemm_lowerings(t);
    register_conv_lowerings(t);
    register_pool_lowerings(t);
    register_norm_lowerings(t);
    // Views: the result shares its operand's storage.
    auto view = [](LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
      if (ctx.numel(n.outputs[0]) != ctx.numel(n.inputs[0])) ctx.fail(n, "view changes the element count");
      ctx.define_alias(n.outputs[0], n.inputs[0]);
    };
    t["flatten"] = view;
    t["reshape"] = view;
    return t;
  }();
  return table;
}

}  // namespace

bool has_lowering(const std::string& op) { return lower_table().count(op) > 0; }

// ---- KernelDraft -----------------------------------------------------------------------------

KernelDraft::KernelDraft(LowerCtx& ctx, const std::string& name) : kb(name), ctx_(ctx) {}

int KernelDraft::add(int buffer, bool written) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == buffer) {
      assert(!written && "a buffer bound twice as a kernel output");
      return static_cast<int>(i);
    }
  const Buffer& b = ctx_.prog.buffers.at(static_cast<size_t>(buffer));
  int p = kb.param(b.name, b.dtype, written, b.numel());
  args.push_back(buffer);
  assert(p == static_cast<int>(args.size()) - 1 && "params and args out of step");
  return p;
}

int KernelDraft::read(int buffer) { return add(buffer, false); }
int KernelDraft::write(int buffer) { return add(buffer, true); }

// ---- LowerCtx --------------------------------------------------------------------------------

LowerCtx::LowerCtx(const ir::Module& m, const ir::Graph& g, int64_t b, const LowerOptions& o)
    : module(m), graph(g), batch(b), options(o), value_buffer_(g.values.size(), -1) {
  prog.module_name = m.name;
  prog.graph_name = g.name;
  prog.batch = b;
}

void LowerCtx::fail(const ir::Node& n, const std::string& msg) const {
  throw std::runtime_error(fmt::format("codegen: graph '{}', node {}: {}", graph.name, node_text(n), msg));
}

std::string LowerCtx::node_text(const ir::Node& n) const {
  auto name = [&](ir::ValueId id) {
    const ir::Value& v = graph.value(id);
    return ir::print_value_name(v.name, v.kind == ir::ValueKind::param ? '@' : '%');
  };
  std::string out;
  for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + name(n.outputs[i]);
  out += " = " + n.op + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) out += (i ? ", " : "") + name(n.inputs[i]);
  out += ")";
  if (!n.attrs.empty()) {
    out += " {";
    bool first = true;
    for (const auto& [k, v] : n.attrs) {
      out += (first ? "" : ", ") + k + "=" + ir::attr_to_string(v);
      first = false;
    }
    out += "}";
  }
  return comment_safe(out);
}

Dims LowerCtx::shape(ir::ValueId v) const {
  Dims s;
  for (ir::Dim d : graph.value(v).type.shape) s.push_back(d == ir::kBatch ? batch : d);
  return s;
}

int64_t LowerCtx::numel(ir::ValueId v) const { return product(shape(v)); }

int LowerCtx::buffer(ir::ValueId v) const {
  int b = value_buffer_.at(static_cast<size_t>(v));
  assert(b >= 0 && "value used before its buffer was created");
  return b;
}

std::string LowerCtx::unique_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; std::find(names_.begin(), names_.end(), name) != names_.end(); ++i)
    name = base + "_" + std::to_string(i);
  names_.push_back(name);
  return name;
}

int LowerCtx::define(ir::ValueId v) {
  const ir::Value& val = graph.value(v);
  Buffer b;
  const char* prefix = val.kind == ir::ValueKind::input ? "in_" : val.kind == ir::ValueKind::param ? "p_" : "v_";
  b.name = unique_name(prefix + sanitize(val.name));
  b.value_name = val.name;
  b.kind = val.kind == ir::ValueKind::input   ? BufferKind::input
           : val.kind == ir::ValueKind::param ? BufferKind::param
                                              : BufferKind::intermediate;
  b.dtype = scalar_of(val.type.dtype);
  b.shape = shape(v);
  prog.buffers.push_back(std::move(b));
  value_buffer_.at(static_cast<size_t>(v)) = static_cast<int>(prog.buffers.size()) - 1;
  return value_buffer_[static_cast<size_t>(v)];
}

void LowerCtx::define_alias(ir::ValueId v, ir::ValueId src) {
  int s = buffer(src);
  const Buffer& sb = prog.buffers[static_cast<size_t>(s)];
  int root = sb.kind == BufferKind::alias ? sb.alias_of : s;
  const ir::Value& val = graph.value(v);
  Buffer b;
  b.name = unique_name("v_" + sanitize(val.name));
  b.value_name = val.name;
  b.kind = BufferKind::alias;
  b.alias_of = root;
  b.dtype = scalar_of(val.type.dtype);
  b.shape = shape(v);
  prog.buffers.push_back(std::move(b));
  value_buffer_.at(static_cast<size_t>(v)) = static_cast<int>(prog.buffers.size()) - 1;
}

int LowerCtx::scratch(const std::string& base, int64_t n) {
  Buffer b;
  b.name = unique_name("s_" + sanitize(base));
  b.kind = BufferKind::scratch;
  b.shape = {n};
  prog.buffers.push_back(std::move(b));
  return static_cast<int>(prog.buffers.size()) - 1;
}

std::string LowerCtx::kernel_name(const std::string& op) const {
  return fmt::format("k{}_{}", prog.steps.size(), sanitize(op));
}

void LowerCtx::emit(KernelDraft&& d) {
  Step s;
  s.kind = Step::Kind::kernel;
  s.comment = comment;
  s.kernel = static_cast<int>(prog.kernels.size());
  s.args = std::move(d.args);
  prog.kernels.push_back(d.kb.finish());
  prog.steps.push_back(std::move(s));
}

void LowerCtx::emit_gemm(const GemmCall& call) {
  Step s;
  s.kind = Step::Kind::gemm;
  s.comment = comment;
  s.gemm = call;
  prog.steps.push_back(std::move(s));
}

// ---- the driver ------------------------------------------------------------------------------

namespace {

std::vector<std::vector<int>> check_groups(const ir::Graph& g, const std::vector<std::vector<int>>& groups) {
  if (groups.empty()) {
    std::vector<std::vector<int>> one;
    for (size_t i = 0; i < g.nodes.size(); ++i) one.push_back({static_cast<int>(i)});
    return one;
  }
  int next = 0;
  for (const auto& grp : groups) {
    if (grp.empty()) throw std::runtime_error(fmt::format("codegen: graph '{}': an empty node group", g.name));
    for (int i : grp) {
      if (i != next)
        throw std::runtime_error(fmt::format(
            "codegen: graph '{}': node groups must list every node once, in graph order; expected node {}, found {}",
            g.name, next, i));
      ++next;
    }
  }
  if (next != static_cast<int>(g.nodes.size()))
    throw std::runtime_error(
        fmt::format("codegen: graph '{}': node groups cover {} of {} nodes", g.name, next, g.nodes.size()));
  return groups;
}

ir::Attrs completed(const LowerCtx& ctx, const ir::Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  if (!def) ctx.fail(n, "unknown op");
  try {
    return ir::complete_attrs(*def, n.attrs);
  } catch (const std::exception& e) {
    ctx.fail(n, e.what());
  }
}

// Whether node n is a map op all of whose results have shape `out` and which reads every value
// of `run` (computed earlier in the same loop nest) at its own element.
bool joins_run(const LowerCtx& ctx, const ir::Node& n, const Dims& out, const std::vector<const ir::Node*>& run) {
  MapOp op;
  if (!map_op_of(ctx, n, completed(ctx, n), &op)) return false;
  for (ir::ValueId o : n.outputs)
    if (ctx.shape(o) != out) return false;
  Dims contiguous = strides_of(out);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    bool in_run = false;
    for (const ir::Node* r : run)
      for (ir::ValueId o : r->outputs) in_run |= o == n.inputs[i];
    bool at_element =
        i >= op.operand_strides.size() || op.operand_strides[i].empty() || op.operand_strides[i] == contiguous;
    if (in_run && !at_element) return false;
  }
  return true;
}

// The node groups of pass `fuse` (Node::group): consecutive nodes with the same group index
// form one group; nodes outside any group are groups of one.
std::vector<std::vector<int>> groups_of(const ir::Graph& g) {
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int32_t grp = g.nodes[i].group;
    if (grp >= 0 && i > 0 && g.nodes[i - 1].group == grp)
      out.back().push_back(static_cast<int>(i));
    else
      out.push_back({static_cast<int>(i)});
  }
  return out;
}

}  // namespace

Program lower_graph(const ir::Module& m, const ir::Graph& g, int64_t batch, const LowerOptions& options,
                    const std::vector<std::vector<int>>& groups) {
  if (batch < 1)
    throw std::runtime_error(fmt::format("codegen: graph '{}': batch must be >= 1, found {}", g.name, batch));
  LowerCtx ctx(m, g, batch, options);
  for (const ir::Value& v : g.values) {
    if (v.type.layout != ir::Layout::row_major)
      throw std::runtime_error(
          fmt::format("codegen: graph '{}': value '{}' is {}; the cpu backend lowers row_major values only", g.name,
                      v.name, ir::to_string(v.type, m.batch_symbol)));
  }
  for (ir::ValueId id : g.inputs) ctx.define(id);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == ir::ValueKind::param) ctx.define(static_cast<ir::ValueId>(i));

  // Within a group, each maximal run of map ops sharing one result shape becomes one loop nest;
  // every other node is lowered on its own.
  for (const auto& grp : check_groups(g, groups.empty() ? groups_of(g) : groups)) {
    std::vector<const ir::Node*> nodes;
    for (int i : grp) nodes.push_back(&g.nodes[static_cast<size_t>(i)]);
    for (size_t i = 0; i < nodes.size();) {
      Dims out = ctx.shape(nodes[i]->outputs.at(0));
      std::vector<const ir::Node*> run{nodes[i]};
      size_t j = i + 1;
      if (joins_run(ctx, *nodes[i], out, {}))
        for (; j < nodes.size() && joins_run(ctx, *nodes[j], out, run); ++j) run.push_back(nodes[j]);
      ctx.comment.clear();
      for (const ir::Node* n : run) ctx.comment.push_back(ctx.node_text(*n));
      if (run.size() > 1) {
        lower_map_group(ctx, run);
      } else {
        auto it = lower_table().find(run[0]->op);
        if (it == lower_table().end()) ctx.fail(*run[0], "the cpu backend has no lowering for op '" + run[0]->op + "'");
        it->second(ctx, *run[0], completed(ctx, *run[0]));
      }
      i = j;
    }
  }
  for (ir::ValueId id : g.outputs) ctx.prog.outputs.push_back(ctx.buffer(id));
  for (const auto& [name, id] : g.updates) ctx.prog.updates.emplace_back(name, ctx.buffer(id));
  return std::move(ctx.prog);
}

}  // namespace dnnc::codegen
