// The thread mapping of a CUDA kernel (cuda_mapping.h): the grid loop, the mapping kind and
// launch, and for team regions the role of every loop, the lane-0 stores and the barriers.
#include "codegen/cuda/cuda_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "ir/check.h"

namespace dnnc::codegen {

using namespace loops;

const char* cuda_mapping_name(CudaMapping m) {
  switch (m) {
    case CudaMapping::grid_thread:
      return "grid_thread";
    case CudaMapping::grid_vec4:
      return "grid_vec4";
    case CudaMapping::grid_warp:
      return "grid_warp";
    case CudaMapping::block:
      return "block";
  }
  return "?";
}

const char* cuda_loop_role_name(CudaLoopRole r) {
  switch (r) {
    case CudaLoopRole::sequential:
      return "sequential";
    case CudaLoopRole::spread:
      return "spread";
    case CudaLoopRole::reduction:
      return "reduction";
  }
  return "?";
}

const char* cuda_sync_name(CudaSync s) {
  switch (s) {
    case CudaSync::lane0_stores:
      return "lane0_stores";
    case CudaSync::before_overwrite:
      return "before_overwrite";
    case CudaSync::before_lane0:
      return "before_lane0";
    case CudaSync::after:
      return "after";
    case CudaSync::end_of_iteration:
      return "end_of_iteration";
  }
  return "?";
}

const CudaTeamStmt& CudaKernelPlan::at(const StmtNode& s) const {
  auto it = team.find(&s);
  DNNC_CHECK(it != team.end(), "a statement outside the kernel's team region");
  return it->second;
}

int64_t cuda_blocks_for(int64_t threads) {
  return std::clamp<int64_t>((threads + kCudaBlock - 1) / kCudaBlock, 1, kCudaMaxGrid);
}

namespace {

int64_t extent_of(const StmtNode& l) {
  int64_t b = 0, e = 0;
  if (is_int_const(l.begin, &b) && is_int_const(l.end, &e)) return std::max<int64_t>(e - b, 0);
  return int64_t{1} << 20;  // unknown: enough blocks to fill any GPU
}

// The single top-level loop a grid can share, if the kernel has the shape `prefix; loop`
// where the prefix stores nothing and reads nothing the kernel writes.
const StmtNode* grid_loop(const Kernel& k, const std::set<int>& written) {
  if (k.body.empty() || k.body.back()->kind != StmtKind::loop) return nullptr;
  const StmtNode& l = *k.body.back();
  if (!l.parallel && !distributable(l)) return nullptr;
  Block prefix(k.body.begin(), k.body.end() - 1);
  Effects fx = effects(prefix);
  if (!fx.stores.empty()) return nullptr;
  for (const ExprNode* ld : fx.loads)
    if (written.count(ld->param)) return nullptr;
  if (mentions(l.begin, l.var) || mentions(l.end, l.var)) return nullptr;
  return &l;
}

// True if, in statement order, no load of a buffer follows a store to it (a buffer updated
// in place is read before it is written), so float4 loads done first see the same values.
bool reads_before_writes(const Block& b, std::set<int>& stored) {
  for (const Stmt& sp : b) {
    const StmtNode& s = *sp;
    std::vector<const ExprNode*> loads;
    for (const Expr* e : {&s.begin, &s.end, &s.index, &s.value, &s.cond}) loads_of(*e, loads);
    for (const ExprNode* l : loads)
      if (stored.count(l->param)) return false;
    if (s.kind == StmtKind::store) stored.insert(s.param);
    if (!reads_before_writes(s.body, stored)) return false;
  }
  return true;
}

bool at_index(const Expr& index, const std::string& var) { return index->kind == ExprKind::var && index->name == var; }

// float4 form of a flat loop: every access at the loop index is to an f32 buffer, a buffer
// both read and written (in place) is read only at the loop index and before it is written,
// and every store is at the loop index.
bool vectorizable(const Kernel& k, const StmtNode& l) {
  int64_t b = -1, e = 0;
  if (!is_int_const(l.begin, &b) || b != 0 || !is_int_const(l.end, &e) || e < 4) return false;
  Effects fx = effects(l.body);
  if (fx.has_loop || fx.has_fail || fx.stores.empty()) return false;
  // Every store at the top of the body: one under an `if` would leave its float4 lane unset.
  size_t top_stores = 0;
  for (const Stmt& st : l.body) top_stores += st->kind == StmtKind::store;
  if (top_stores != fx.stores.size()) return false;
  std::set<int> stored;
  for (const StmtNode* s : fx.stores) {
    if (s->accumulate || !at_index(s->index, l.var)) return false;
    if (k.params[static_cast<size_t>(s->param)].type != ScalarType::f32) return false;
    stored.insert(s->param);
  }
  for (const ExprNode* ld : fx.loads) {
    if (!at_index(ld->args[0], l.var)) {
      if (stored.count(ld->param)) return false;
      continue;
    }
    if (k.params[static_cast<size_t>(ld->param)].type != ScalarType::f32) return false;
  }
  std::set<int> seen;
  return reads_before_writes(l.body, seen);
}

// Plans a team region the way it will be printed, line by line: `pending` is true while lane 0
// has stored without a team barrier since; `synced` is true when the last line printed is a
// barrier (so a second one right after it is not needed).
class TeamPlanner {
 public:
  TeamPlanner(CudaKernelPlan& plan) : plan_(plan) {}

  void region(const Block& b) {
    for (const Stmt& sp : b) statement(*sp);
  }

 private:
  void statement(const StmtNode& s) {
    CudaTeamStmt& t = plan_.team[&s];
    switch (s.kind) {
      case StmtKind::loop: {
        if (auto r = reduction_nest(s)) {
          t.role = CudaLoopRole::reduction;
          t.reduction = std::move(r);
          sync_pending(t);
          synced_ = false;  // the reduction's lines
          return;
        }
        // Spread the loop over the team, unless it is a strided loop around an inner loop
        // that can be spread with unit stride (coalesced accesses) instead (coalesced_inner).
        const bool inner_better = !unit_stride(s) && coalesced_inner(s) != nullptr;
        if (!inner_better && distributable(s)) {
          t.role = CudaLoopRole::spread;
          sync_pending(t);
          bool overwrites = false;
          for (const StmtNode* st : effects(s.body).stores) overwrites |= plan_.loaded.count(st->param) > 0;
          if (overwrites && !synced_) t.before.push_back(CudaSync::before_overwrite);
          t.after.push_back(CudaSync::after);
          synced_ = true;
          pending_ = false;
          return;
        }
        t.role = CudaLoopRole::sequential;
        synced_ = false;  // the loop's header
        region(s.body);
        // Lane 0's stores of this iteration before the next iteration's spread loops.
        if (pending_) {
          plan_.team[&s].after.push_back(CudaSync::end_of_iteration);
          pending_ = false;
        }
        synced_ = false;  // the loop's closing brace
        return;
      }
      case StmtKind::store: {
        // Lane 0 makes every such store, in program order, so it needs no barrier for its own
        // later reads; the others only see the buffer again through loads (barrier now) or
        // through a spread loop (barrier before it, lane0_stores).
        const bool read_back = plan_.loaded.count(s.param) > 0;
        if (read_back && !synced_) t.before.push_back(CudaSync::before_lane0);
        t.lane0 = true;
        if (read_back) {
          t.after.push_back(CudaSync::after);
          synced_ = true;
        } else {
          pending_ = true;
          synced_ = false;
        }
        return;
      }
      case StmtKind::let:
      case StmtKind::assign:
      case StmtKind::fail:
        synced_ = false;
        return;
      case StmtKind::if_:
        synced_ = false;
        region(s.body);
        synced_ = false;
        return;
    }
    DNNC_UNREACHABLE("statement kind {}", static_cast<int>(s.kind));
  }

  void sync_pending(CudaTeamStmt& t) {
    if (!pending_) return;
    t.before.push_back(CudaSync::lane0_stores);
    pending_ = false;
    synced_ = true;
  }

  CudaKernelPlan& plan_;
  bool pending_ = false, synced_ = false;
};

}  // namespace

CudaKernelPlan plan_cuda_kernel(const Kernel& k, int64_t index_range) {
  CudaKernelPlan plan;
  Effects fx = effects(k.body);
  for (const StmtNode* s : fx.stores) plan.written.insert(s->param);
  for (const ExprNode* l : fx.loads) plan.loaded.insert(l->param);
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& p = k.params[i];
    const int64_t bytes =
        p.numel * (p.type == ScalarType::i64 || p.type == ScalarType::u64 || p.type == ScalarType::f64 ? 8 : 4);
    plan.min_bytes +=
        (plan.loaded.count(static_cast<int>(i)) ? bytes : 0) + (plan.written.count(static_cast<int>(i)) ? bytes : 0);
  }

  plan.launch.block = kCudaBlock;
  if (const StmtNode* l = grid_loop(k, plan.written)) {
    plan.grid_loop = l;
    const int64_t n = extent_of(*l);
    if (effects(l->body).has_loop) {
      plan.mapping = CudaMapping::grid_warp;
      // Few warps: fewer per block, so that they spread over the SMs instead of filling a
      // few of them (64 warps in blocks of 8 ran on 8 of an H200's 132 SMs).
      const int64_t per_block = std::clamp<int64_t>((n + kCudaSpreadSMs - 1) / kCudaSpreadSMs, 1, kCudaBlock / 32);
      plan.launch.block = static_cast<int>(per_block * 32);
      plan.launch.grid = std::clamp<int64_t>((n + per_block - 1) / per_block, 1, kCudaMaxGrid);
      TeamPlanner(plan).region(l->body);
    } else if (vectorizable(k, *l)) {
      plan.mapping = CudaMapping::grid_vec4;
      plan.launch.grid = cuda_blocks_for((n + 3) / 4);
      Effects lx = effects(l->body);
      for (const ExprNode* ld : lx.loads)
        if (at_index(ld->args[0], l->var)) plan.vec4_loads.insert(ld->param);
      for (const StmtNode* s : lx.stores) plan.vec4_stores.insert(s->param);
    } else {
      plan.mapping = CudaMapping::grid_thread;
      plan.launch.grid = cuda_blocks_for(n);
    }
    if (index_range >= 0) plan.launch.grid = cuda_blocks_for(index_range);
  } else {
    plan.mapping = CudaMapping::block;
    plan.launch.grid = 1;
    TeamPlanner(plan).region(k.body);
  }
  if (plan.mapping == CudaMapping::block)
    for (const auto& [s, t] : plan.team)
      if (t.role == CudaLoopRole::reduction) plan.launch.shared_bytes = kCudaReductionSmem;
  return plan;
}

namespace {

void describe_region(const CudaKernelPlan& plan, const Block& b, int depth, std::string& out) {
  for (const Stmt& sp : b) {
    const StmtNode& s = *sp;
    auto it = plan.team.find(&s);
    if (it == plan.team.end()) continue;
    const CudaTeamStmt& t = it->second;
    auto syncs = [](const std::vector<CudaSync>& v) {
      std::string r;
      for (CudaSync x : v) r += (r.empty() ? "" : ",") + std::string(cuda_sync_name(x));
      return r;
    };
    std::string line;
    if (s.kind == StmtKind::loop) {
      line = fmt::format("loop {}: {}", s.var, cuda_loop_role_name(t.role));
      if (t.reduction) line += fmt::format(" ({} {})", t.reduction->var, binary_op_name(t.reduction->op));
    } else if (s.kind == StmtKind::store) {
      line = fmt::format("store {}", t.lane0 ? "lane0" : "all");
    } else if (t.before.empty() && t.after.empty()) {
      if (s.kind != StmtKind::if_) continue;
      line = "if";
    } else {
      line = "stmt";
    }
    if (!t.before.empty()) line += " sync before: " + syncs(t.before);
    if (!t.after.empty()) line += " sync after: " + syncs(t.after);
    out += std::string(static_cast<size_t>(depth) * 2, ' ') + line + "\n";
    if (t.role == CudaLoopRole::sequential && (s.kind == StmtKind::loop || s.kind == StmtKind::if_))
      describe_region(plan, s.body, depth + 1, out);
  }
}

}  // namespace

std::string describe_plan(const CudaKernelPlan& plan, const Kernel& k) {
  std::string out =
      fmt::format("mapping {} <<<{}, {}>>>", cuda_mapping_name(plan.mapping), plan.launch.grid, plan.launch.block);
  if (plan.launch.shared_bytes) out += fmt::format(" smem {}", plan.launch.shared_bytes);
  if (plan.grid_loop) out += " over " + plan.grid_loop->var;
  out += "\n";
  if (plan.mapping == CudaMapping::grid_vec4) {
    std::vector<std::string> l, s;
    for (int p : plan.vec4_loads) l.push_back(k.params[static_cast<size_t>(p)].name);
    for (int p : plan.vec4_stores) s.push_back(k.params[static_cast<size_t>(p)].name);
    out += fmt::format("  float4 loads: {}; stores: {}\n", fmt::join(l, ","), fmt::join(s, ","));
  }
  const Block* region = plan.mapping == CudaMapping::grid_warp ? &plan.grid_loop->body
                        : plan.mapping == CudaMapping::block   ? &k.body
                                                               : nullptr;
  if (region) describe_region(plan, *region, 1, out);
  return out;
}

KirNotes cuda_mapping_notes(const Program& p) {
  auto plans = std::make_shared<std::map<const Kernel*, CudaKernelPlan>>();
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::kernel) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.kernel));
      plans->emplace(&k, plan_cuda_kernel(k));
    } else if (s.gemm.epilogue >= 0) {
      const Kernel& k = p.kernels.at(static_cast<size_t>(s.gemm.epilogue));
      plans->emplace(&k, plan_cuda_kernel(k, s.gemm.batch * s.gemm.m * s.gemm.n));
    }
  }
  return [plans](const Kernel& k, const StmtNode* s) -> std::string {
    auto it = plans->find(&k);
    if (it == plans->end()) return "";
    const CudaKernelPlan& plan = it->second;
    if (!s) {
      std::string head = describe_plan(plan, k);
      return head.substr(0, head.find('\n'));  // the mapping line; the loops are annotated in place
    }
    if (s == plan.grid_loop) return plan.mapping == CudaMapping::grid_warp ? "a warp per iteration" : "the grid";
    auto t = plan.team.find(s);
    if (t == plan.team.end()) return "";
    std::string note;
    auto add = [&](const std::string& x) { note += (note.empty() ? "" : "; ") + x; };
    for (CudaSync y : t->second.before) add(fmt::format("barrier({})", cuda_sync_name(y)));
    if (s->kind == StmtKind::loop) add(cuda_loop_role_name(t->second.role));
    if (t->second.lane0) add("lane 0");
    for (CudaSync y : t->second.after) add(fmt::format("barrier({})", cuda_sync_name(y)));
    return note;
  };
}

}  // namespace dnnc::codegen
