// Fusions across fuse groups that the C++ printer implements (LowerOptions::optimizer_in_gemm):
// an SGD-momentum update fused into the GEMM that produces its weight gradient. The GEMM runs
// where the update would (after the step counter's increment) and computes straight into the
// momentum buffer, buf = β·buf + α·(Aᵀ·B) with β = momentum, α = 1 - dampening (β = 0, α = 1
// on the first step, when PyTorch sets buf = grad), and its epilogue applies the update on each
// thread's rows while they are in cache (weight decay: buf += α·wd·w; then w -= lr·buf). The
// gradient is never stored. Nesterov momentum (which needs the gradient itself) and momentum 0
// keep the separate update kernel.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/lower/lower_ctx.h"
#include "ir/op_registry.h"

namespace dnnc::codegen {

namespace {

ir::Attrs attrs_of(const ir::Node& n) {
  const ir::OpDef* def = ir::find_op(n.op);
  return def ? ir::complete_attrs(*def, n.attrs) : n.attrs;
}

// Whether value v is read by any node but `only`, or is a graph output or an update value.
bool read_elsewhere(const ir::Graph& g, ir::ValueId v, const ir::Node* only) {
  for (const ir::Node& n : g.nodes)
    if (&n != only && std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return true;
  if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return true;
  for (const auto& u : g.updates)
    if (u.second == v) return true;
  return false;
}

}  // namespace

std::map<const ir::Node*, const ir::Node*> plan_optimizer_gemms(const LowerCtx& ctx) {
  std::map<const ir::Node*, const ir::Node*> out;
  if (!ctx.options.optimizer_in_gemm || !ctx.options.gemm_epilogues) return out;
  const ir::Graph& g = ctx.graph;
  std::vector<const ir::Node*> producer(g.values.size(), nullptr);
  for (const ir::Node& n : g.nodes)
    for (ir::ValueId o : n.outputs) producer[static_cast<size_t>(o)] = &n;
  for (const ir::Node& u : g.nodes) {
    // (param, grad, momentum_buf, step[, lr]): momentum SGD, its lr fixed or scheduled.
    if (u.op != "sgd_update" || u.inputs.size() < 4 || u.outputs.size() != 2) continue;
    ir::Attrs a = attrs_of(u);
    if (ir::attr_float(a, "momentum") == 0 || ir::attr_bool(a, "nesterov")) continue;
    if (!ctx.in_place.count(u.outputs[0]) || !ctx.in_place.count(u.outputs[1])) continue;
    ir::ValueId grad = u.inputs[1];
    const ir::Node* m = producer[static_cast<size_t>(grad)];
    if (!m || m->op != "matmul" || m->outputs.size() != 1 || read_elsewhere(g, grad, &u)) continue;
    if (g.value(grad).type.dtype != ir::DType::f32 || ctx.shape(grad).size() != 2) continue;
    if (ctx.shape(u.inputs[3]).size() != 0 || g.value(u.inputs[3]).type.dtype != ir::DType::f32) continue;
    // The GEMM moves down to the update: its operands must not be storage that an in-place
    // update may write in between (params and update values).
    bool movable = true;
    for (ir::ValueId v : m->inputs) movable &= g.value(v).kind != ir::ValueKind::param && !ctx.in_place.count(v);
    if (movable) out[&u] = m;
  }
  return out;
}

void lower_optimizer_gemm(LowerCtx& ctx, const ir::Node& update, const ir::Node& gemm,
                          const std::function<void(const ir::Node&)>& lower_one, std::set<int>& checked_steps) {
  ir::Attrs a = attrs_of(update);
  const double lr = ir::attr_float(a, "lr"), momentum = ir::attr_float(a, "momentum");
  const double dampening = ir::attr_float(a, "dampening"), wd = ir::attr_float(a, "weight_decay");
  const int step = ctx.buffer(update.inputs[3]);

  // The step check of sgd_update (a kernel of its own: nothing fails inside a GEMM's threads),
  // once per step counter.
  if (checked_steps.insert(ctx.root(step)).second) {
    KernelDraft check(ctx, ctx.kernel_name("sgd_step_check"));
    int sp = check.read(step);
    check.kb.fail(unary(UnaryOp::logical_not, ge(check.kb.load(sp, i64c(0)), f32c(1))),
                  "sgd_update: step must be >= 1");
    ctx.comment = {ctx.node_text(update)};
    ctx.emit(std::move(check));
  }

  // The GEMM, computing into the momentum buffer (updated in place).
  ctx.share_buffer(gemm.outputs[0], ctx.define(update.outputs[1]));
  ctx.comment = {ctx.node_text(gemm)};
  lower_one(gemm);
  GemmCall& g = ctx.prog.steps.back().gemm;
  g.alpha = static_cast<float>(1.0 - dampening);
  g.beta = static_cast<float>(momentum);
  g.first_step = step;
  g.alpha_first = 1.0f;
  g.beta_first = 0.0f;
  if (g.threads != GemmCall::Threads::single) g.threads = GemmCall::Threads::split;

  // The epilogue: the update of the param on C's rows [begin, end).
  ctx.comment = {ctx.node_text(update)};
  KernelDraft d(ctx, fmt::format("g{}_epilogue", ctx.prog.steps.size() - 1));
  int buf = wd != 0 ? d.write(ctx.buffer(update.outputs[1])) : d.read(ctx.buffer(update.outputs[1]));
  int w = d.write(ctx.define(update.outputs[0]));
  // The scheduled lr, when the update has one, is read once per epilogue call.
  Expr neg_lr = f32c(-lr);
  if (update.inputs.size() == 5) {
    int lp = d.read(ctx.buffer(update.inputs[4]));
    neg_lr = d.kb.let("neg_lr", -d.kb.load(lp, i64c(0)));
  }
  Expr keep;
  if (wd != 0) {
    int s = d.read(step);
    keep = d.kb.let("keep", select(eq(d.kb.load(s, i64c(0)), f32c(1)), f32c(1), f32c(1.0 - dampening)));
  }
  Expr begin = d.kb.index_param("begin"), end = d.kb.index_param("end");
  d.kb.loop("i", begin, end, false, [&](Expr i) {
    Expr b = d.kb.load(buf, i);
    if (wd != 0) {
      b = d.kb.let("buf", b + keep * f32c(wd) * d.kb.load(w, i));
      d.kb.store(buf, i, b);
    }
    d.kb.store(w, i, d.kb.load(w, i) + neg_lr * b);
  });
  ctx.attach_epilogue(std::move(d));
}

}  // namespace dnnc::codegen
