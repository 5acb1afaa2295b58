// codegen::Program helpers: buffer sizes, the run's error table and a text summary.
#include "codegen/kir/program.h"

#include <fmt/format.h>

#include <algorithm>

namespace dnnc::codegen {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::input:
      return "input";
    case BufferKind::param:
      return "param";
    case BufferKind::intermediate:
      return "intermediate";
    case BufferKind::scratch:
      return "scratch";
    case BufferKind::alias:
      return "alias";
  }
  return "?";
}

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Buffer::bytes() const { return numel() * static_cast<int64_t>(scalar_type_bytes(dtype)); }

bool in_arena(const Buffer& b) { return b.kind == BufferKind::intermediate || b.kind == BufferKind::scratch; }

int root_buffer(const Program& p, int b) {
  const Buffer& buf = p.buffers.at(static_cast<size_t>(b));
  return buf.kind == BufferKind::alias ? buf.alias_of : b;
}

int64_t arena_align(int64_t x) { return (x + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

std::vector<int> step_times(const Program& p) {
  std::vector<int> t(p.steps.size(), 0);
  int now = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    t[i] = now;
    if (!p.steps[i].with_next) ++now;
  }
  return t;
}

std::vector<BufferLife> buffer_lives(const Program& p) {
  std::vector<BufferLife> life(p.buffers.size());
  auto touch = [&](int b, int t) {
    BufferLife& l = life.at(static_cast<size_t>(root_buffer(p, b)));
    if (l.first < 0 || t < l.first) l.first = t;
    l.last = std::max(l.last, t);
  };
  const std::vector<int> times = step_times(p);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    StepAccess a = step_access(p, p.steps[i]);
    for (int b : a.reads) touch(b, times[i]);
    for (int b : a.writes) touch(b, times[i]);
  }
  const int end = p.steps.empty() ? 0 : times.back() + 1;
  for (int b : p.outputs) touch(b, end);
  for (const auto& [name, b] : p.updates) touch(b, end);
  return life;
}

namespace {

bool meets(const std::set<int>& a, const std::set<int>& b) {
  for (int x : a)
    if (b.count(x)) return true;
  return false;
}

}  // namespace

StepAccess step_access(const Program& p, const Step& s) {
  StepAccess acc;
  auto add = [&](int b, bool written) {
    if (b < 0) return;
    (written ? acc.writes : acc.reads).insert(root_buffer(p, b));
  };
  auto add_kernel_args = [&](const Kernel& k) {
    for (size_t i = 0; i < s.args.size() && i < k.params.size(); ++i) {
      add(s.args[i], k.params[i].written);
      add(s.args[i], false);
    }
  };
  if (s.kind == Step::Kind::kernel) {
    add_kernel_args(p.kernels.at(static_cast<size_t>(s.kernel)));
    return acc;
  }
  const GemmCall& g = s.gemm;
  add(g.a, false);
  add(g.b, false);
  add(g.bias, false);
  add(g.first_step, false);
  add(g.c, false);
  add(g.c, true);
  add(g.col_sums, true);
  add(g.act_mask, false);
  if (g.epilogue >= 0) add_kernel_args(p.kernels.at(static_cast<size_t>(g.epilogue)));
  return acc;
}

bool independent(const StepAccess& x, const StepAccess& y) {
  return !meets(x.writes, y.reads) && !meets(x.writes, y.writes) && !meets(y.writes, x.reads);
}

std::vector<std::string> program_errors(const Program& p) {
  std::vector<std::string> out;
  for (const Step& s : p.steps) {
    if (s.kind != Step::Kind::kernel) continue;
    const std::string where = s.comment.empty() ? std::string("?") : s.comment.front();
    for (const auto& e : p.kernels.at(static_cast<size_t>(s.kernel)).errors) out.push_back(where + ": " + e);
  }
  return out;
}

const char* gemm_act_name(GemmCall::Act a) {
  switch (a) {
    case GemmCall::Act::none:
      return "none";
    case GemmCall::Act::relu:
      return "relu";
    case GemmCall::Act::relu_backward:
      return "relu_backward";
  }
  return "?";
}

}  // namespace dnnc::codegen
