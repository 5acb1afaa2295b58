// The lowering driver: binds buffers to the graph's values, walks the groups in order and
// dispatches each node to its family's lowering (lower_*.cpp).
#include "codegen/lower/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <stdexcept>

#include "codegen/kir/kir_verifier.h"
#include "codegen/lower/coschedule.h"
#include "codegen/lower/plan_memory.h"
#include "codegen/lower/lower_ctx.h"
#include "ir/check.h"
#include "ir/op_registry.h"
#include "ir/printer.h"

namespace dnnc::codegen {

Dims strides_of(const Dims& shape) {
  Dims st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

bool at_element(const Dims& strides, const Dims& shape) {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;
  const Dims own = strides_of(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && strides[i] != own[i]) return false;
  return true;
}

int64_t product(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr floordiv(Expr a, int64_t s, int64_t min_a) {
  DNNC_CHECK(s > 0, "floordiv by a non-positive number");
  int64_t shift = min_a < 0 ? (-min_a + s - 1) / s : 0;
  if (shift == 0) return a / i64c(s);
  return (a + i64c(shift * s)) / i64c(s) - i64c(shift);
}

ir::Attrs completed_attrs(const LowerCtx& ctx, const ir::Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  if (!def) ctx.fail(n, "unknown op");
  try {
    return ir::complete_attrs(*def, n.attrs);
  } catch (const std::exception& e) {
    ctx.fail(n, e.what());
  }
}

bool used_outside(const ir::Graph& g, ir::ValueId v, const std::vector<const ir::Node*>& inside) {
  for (const ir::Node& n : g.nodes) {
    if (std::find(inside.begin(), inside.end(), &n) != inside.end()) continue;
    if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return true;
  }
  if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return true;
  for (const auto& u : g.updates)
    if (u.second == v) return true;
  return false;
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
    register_concat_lowerings(t);
    // Views: the result shares its operand's storage.
    auto view = [](LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
      if (ctx.numel(n.outputs[0]) != ctx.numel(n.inputs[0])) ctx.fail(n, "view changes the element count");
      ctx.define_alias(n.outputs[0], n.inputs[0]);
    };
    // x + 1 on an i64 counter (batchnorm's num_batches_tracked): one sequential loop.
    t["increment"] = [](LowerCtx& ctx, const ir::Node& n, const ir::Attrs&) {
      KernelDraft d(ctx, ctx.kernel_name(n.op));
      int x = d.read(ctx.buffer(n.inputs[0]));
      int y = d.write(ctx.define(n.outputs[0]));
      d.kb.loop("i", ctx.numel(n.outputs[0]), false, [&](Expr i) { d.kb.store(y, i, d.kb.load(x, i) + i64c(1)); });
      ctx.emit(std::move(d));
    };
    t["flatten"] = view;
    t["reshape"] = view;
    return t;
  }();
  return table;
}

// Ops whose lowering takes `{nhwc}` operands and results: the map ops (their loop nest indexes
// every tensor through its own strides) and the conv, pool and batchnorm families.
bool lowers_nhwc(const std::string& op) {
  static const std::set<std::string> families = {
      "conv2d",    "conv2d_backward_input", "conv2d_backward_weight", "maxpool2d",   "maxpool2d_backward",
      "avgpool2d", "avgpool2d_backward",    "batchnorm2d",            "batchnorm2d_backward"};
  if (families.count(op)) return true;
  return is_map_op(op);
}

}  // namespace

bool has_lowering(const std::string& op) { return lower_table().count(op) > 0; }

// ---- KernelDraft -----------------------------------------------------------------------------

KernelDraft::KernelDraft(LowerCtx& ctx, const std::string& name) : kb(name), ctx_(ctx) {}

int KernelDraft::add(int buffer, bool written) {
  // One param per storage: a buffer read and written (in place) or seen through an alias is
  // passed once, so no two __restrict__ params ever point to the same memory.
  for (size_t i = 0; i < args.size(); ++i)
    if (ctx_.root(args[i]) == ctx_.root(buffer)) {
      DNNC_CHECK(ctx_.prog.buffers[static_cast<size_t>(args[i])].alias_offset ==
                     ctx_.prog.buffers[static_cast<size_t>(buffer)].alias_offset,
                 "a kernel binds two views of {} at different offsets", ctx_.prog.buffers[static_cast<size_t>(buffer)].name);
      if (written) kb.set_written(static_cast<int>(i));
      return static_cast<int>(i);
    }
  const Buffer& b = ctx_.prog.buffers.at(static_cast<size_t>(buffer));
  int p = kb.param(b.name, b.dtype, written, b.numel());
  args.push_back(buffer);
  DNNC_CHECK(p == static_cast<int>(args.size()) - 1, "params and args out of step");
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

bool LowerCtx::nhwc(ir::ValueId v) const { return graph.value(v).type.layout == ir::Layout::nhwc; }

Dims LowerCtx::strides(ir::ValueId v) const {
  Dims s = shape(v);
  if (!nhwc(v)) return strides_of(s);
  DNNC_CHECK(s.size() == 4, "value '{}' is {{nhwc}} but not 4-d", graph.value(v).name);
  return {s[2] * s[3] * s[1], 1, s[3] * s[1], s[1]};
}

int LowerCtx::buffer(ir::ValueId v) const {
  int b = value_buffer_.at(static_cast<size_t>(v));
  DNNC_CHECK(b >= 0, "value '{}' is used before its buffer was created", graph.value(v).name);
  return b;
}

std::string LowerCtx::unique_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; std::find(names_.begin(), names_.end(), name) != names_.end(); ++i)
    name = base + "_" + std::to_string(i);
  names_.push_back(name);
  return name;
}

int LowerCtx::root(int buffer) const { return root_buffer(prog, buffer); }

void LowerCtx::share_buffer(ir::ValueId v, int buffer) {
  DNNC_CHECK(!has_buffer(v), "share_buffer: value '{}' has a buffer already", graph.value(v).name);
  value_buffer_.at(static_cast<size_t>(v)) = buffer;
}

int LowerCtx::define(ir::ValueId v) {
  if (has_buffer(v)) return buffer(v);
  if (auto it = in_place.find(v); it != in_place.end()) {
    const ir::Value& val = graph.value(v);
    Buffer b;
    b.name = unique_name("v_" + sanitize(val.name));
    b.value_name = val.name;
    b.kind = BufferKind::alias;
    b.alias_of = it->second;
    b.dtype = scalar_of(val.type.dtype);
    b.shape = shape(v);
    prog.buffers.push_back(std::move(b));
    value_buffer_.at(static_cast<size_t>(v)) = static_cast<int>(prog.buffers.size()) - 1;
    return value_buffer_[static_cast<size_t>(v)];
  }
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
  int root = root_buffer(prog, s);
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

int LowerCtx::view(int buffer, int64_t offset, const Dims& shape) {
  const Buffer& src = prog.buffers.at(static_cast<size_t>(buffer));
  Buffer b;
  b.name = unique_name(src.name + "_at" + std::to_string(offset));
  b.value_name = src.value_name;
  b.kind = BufferKind::alias;
  b.alias_of = root_buffer(prog, buffer);
  b.alias_offset = (src.kind == BufferKind::alias ? src.alias_offset : 0) + offset;
  b.dtype = src.dtype;
  b.shape = shape;
  prog.buffers.push_back(std::move(b));
  return static_cast<int>(prog.buffers.size()) - 1;
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

int LowerCtx::emit(KernelDraft&& d) {
  Step s;
  s.kind = Step::Kind::kernel;
  s.comment = comment;
  s.kernel = static_cast<int>(prog.kernels.size());
  s.args = std::move(d.args);
  prog.kernels.push_back(d.kb.finish());
  prog.steps.push_back(std::move(s));
  return prog.steps.back().kernel;
}

void LowerCtx::emit_again(int kernel, std::vector<int> args) {
  const Kernel& k = prog.kernels.at(static_cast<size_t>(kernel));
  DNNC_CHECK(args.size() == k.params.size(), "kernel {} takes {} buffers, given {}", k.name, k.params.size(), args.size());
  for (size_t i = 0; i < args.size(); ++i)
    DNNC_CHECK(prog.buffers.at(static_cast<size_t>(args[i])).numel() == k.params[i].numel,
               "kernel {} param {} has {} elements, its buffer {}", k.name, k.params[i].name, k.params[i].numel,
               prog.buffers.at(static_cast<size_t>(args[i])).numel());
  Step s;
  s.kind = Step::Kind::kernel;
  s.comment = comment;
  s.kernel = kernel;
  s.args = std::move(args);
  prog.steps.push_back(std::move(s));
}

void LowerCtx::attach_epilogue(KernelDraft&& d) {
  DNNC_CHECK(!prog.steps.empty() && prog.steps.back().kind == Step::Kind::gemm && prog.steps.back().gemm.epilogue < 0,
             "an epilogue needs a GEMM step before it");
  Step& s = prog.steps.back();
  s.gemm.epilogue = static_cast<int>(prog.kernels.size());
  s.args = std::move(d.args);
  s.comment.insert(s.comment.end(), comment.begin(), comment.end());
  prog.kernels.push_back(d.kb.finish());
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

// Update values that a map op can write straight into their param's storage: the op reads the
// param at its own element and nothing after it (in a later group) reads the param's old value.
std::map<ir::ValueId, int> in_place_updates(const LowerCtx& ctx, const std::vector<std::vector<int>>& groups) {
  const ir::Graph& g = ctx.graph;
  std::vector<int> group_of(g.nodes.size(), -1), producer(g.values.size(), -1);
  for (size_t k = 0; k < groups.size(); ++k)
    for (int n : groups[k]) group_of[static_cast<size_t>(n)] = static_cast<int>(k);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ir::ValueId o : g.nodes[n].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(n);
  std::map<std::string, int> updates_of_param;
  std::map<ir::ValueId, int> updates_of_value;
  for (const auto& [name, v] : g.updates) {
    ++updates_of_param[name];
    ++updates_of_value[v];
  }
  std::map<ir::ValueId, int> out;
  for (const auto& [name, v] : g.updates) {
    if (updates_of_param[name] != 1 || updates_of_value[v] != 1) continue;
    int pn = producer.at(static_cast<size_t>(v));
    if (pn < 0) continue;
    ir::ValueId param = ir::kNoValue;
    for (size_t i = 0; i < g.values.size(); ++i)
      if (g.values[i].kind == ir::ValueKind::param && g.values[i].name == name) param = static_cast<ir::ValueId>(i);
    if (param == ir::kNoValue || ctx.shape(param) != ctx.shape(v) || g.value(param).type.dtype != g.value(v).type.dtype)
      continue;
    if (std::find(g.outputs.begin(), g.outputs.end(), param) != g.outputs.end() || updates_of_value.count(param))
      continue;
    const ir::Node& n = g.nodes[static_cast<size_t>(pn)];
    MapOp op;
    if (!map_op_of(ctx, n, completed_attrs(ctx, n), &op)) continue;
    bool reads_param = false, ok = true;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == param) {
        reads_param = true;
        ok &= reads_at_element(op, i, ctx.shape(v));
      }
    for (size_t m = 0; m < g.nodes.size() && ok; ++m) {
      if (static_cast<int>(m) == pn) continue;
      const auto& in = g.nodes[m].inputs;
      if (std::find(in.begin(), in.end(), param) == in.end()) continue;
      ok = static_cast<int>(m) < pn && group_of[m] < group_of[static_cast<size_t>(pn)];
    }
    if (reads_param && ok) out[v] = ctx.buffer(param);
  }
  return out;
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

Program lower_graph(const ir::Module& m, const ir::Graph& g, int64_t batch, const LowerOptions& options) {
  if (batch < 1)
    throw std::runtime_error(fmt::format("codegen: graph '{}': batch must be >= 1, found {}", g.name, batch));
  LowerCtx ctx(m, g, batch, options);
  for (const ir::Value& v : g.values) {
    bool ok = v.type.layout == ir::Layout::row_major || (v.type.layout == ir::Layout::nhwc && v.type.rank() == 4);
    if (!ok)
      throw std::runtime_error(
          fmt::format("codegen: graph '{}': value '{}' is {}; codegen lowers row_major values and 4-d nhwc activations",
                      g.name, v.name, ir::to_string(v.type, m.batch_symbol)));
  }
  for (ir::ValueId id : g.inputs) ctx.define(id);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].kind == ir::ValueKind::param) ctx.define(static_cast<ir::ValueId>(i));

  std::vector<std::vector<int>> all_groups = groups_of(g);
  ctx.in_place = in_place_updates(ctx, all_groups);
  GroupLowering gl{ctx, {}, {}, {}, {}};
  gl.lower_one = [&](const ir::Node& n) {
    auto it = lower_table().find(n.op);
    if (it == lower_table().end()) ctx.fail(n, "the cpu backend has no lowering for op '" + n.op + "'");
    if (!lowers_nhwc(n.op))
      for (const auto* vs : {&n.inputs, &n.outputs})
        for (ir::ValueId v : *vs)
          if (ctx.nhwc(v)) ctx.fail(n, fmt::format("op '{}' has no lowering for {{nhwc}} value '{}' (select-layout "
                                                   "put it in a region it cannot join)",
                                                   n.op, g.value(v).name));
    it->second(ctx, n, completed_attrs(ctx, n));
  };
  // Weight-gradient GEMMs that run later, fused with their optimizer update (lower_fused.cpp).
  gl.fused_updates = plan_optimizer_gemms(ctx);
  for (const auto& [u, gemm] : gl.fused_updates) gl.deferred.insert(gemm);

  CheckScope graph_scope(fmt::format("codegen lowering of graph '{}'", g.name));
  for (const auto& grp : all_groups) {
    std::vector<const ir::Node*> nodes;
    for (int i : grp) nodes.push_back(&g.nodes[static_cast<size_t>(i)]);
    const int32_t id = nodes.front()->group;
    const std::string kind = id >= 0 ? g.groups.at(static_cast<size_t>(id)).kind : std::string();
    CheckScope group_scope(id >= 0 ? fmt::format("fusion group {} ('{}', {} nodes from {})", id, kind, nodes.size(),
                                                 ctx.node_text(*nodes.front()))
                                   : fmt::format("node {}", ctx.node_text(*nodes.front())));
    lower_group(gl, kind, nodes);
  }
  for (ir::ValueId id : g.outputs) ctx.prog.outputs.push_back(ctx.buffer(id));
  for (const auto& [name, id] : g.updates) ctx.prog.updates.emplace_back(name, ctx.buffer(id));
  if (options.coschedule_gemms) coschedule_gemms(ctx.prog);
  plan_memory(ctx.prog);  // last: every buffer and the step order are final
  verify_program(ctx.prog);  // every build: a broken program is a compiler bug, named here
  return std::move(ctx.prog);
}

}  // namespace dnnc::codegen
