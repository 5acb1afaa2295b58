// The kernel IR verifier (kir_verifier.h).
#include "codegen/kir/kir_verifier.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "codegen/kir/index_bounds.h"
#include "codegen/kir/kir_printer.h"
#include "codegen/kir/race_check.h"
#include "ir/check.h"

namespace dnnc::codegen {

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InternalError("kernel IR verifier, " + where, what, "");
}

// The assignments of a block: locals that change after their let.
void assigned_vars(const Block& b, std::set<std::string>& out) {
  for (const Stmt& s : b) {
    if (s->kind == StmtKind::assign) out.insert(s->var);
    assigned_vars(s->body, out);
  }
}

// The names of the i64 locals of a block.
void i64_lets(const Block& b, std::set<std::string>& out) {
  for (const Stmt& s : b) {
    if (s->kind == StmtKind::let && s->type == ScalarType::i64) out.insert(s->var);
    i64_lets(s->body, out);
  }
}

// Checks one kernel bound to `args` (buffer ids of `p`); `defined` holds the buffer roots written
// before the step (updated with the ones it writes). `index_range`: the values of the kernel's
// index params (a GEMM epilogue's [begin, end) of C), or -1 if it may have none.
class KernelVerifier {
 public:
  // The values a mutable i64 local takes: the hull of its let's value and of every assignment
  // (unknown if any of them is unbounded where it happens).
  using Ranges = std::map<std::string, std::optional<std::pair<int64_t, int64_t>>>;

  KernelVerifier(const Program& p, const Kernel& k, const std::vector<int>& args, std::string where,
                 std::set<int>& defined, int64_t index_range, bool prove_parallel)
      : KernelVerifier(p, k, args, std::move(where), defined, index_range, nullptr) {
    prove_parallel_ = prove_parallel;
  }

  // Pass 1 (`collect` set): walks the kernel only to find the ranges of its mutable locals.
  KernelVerifier(const Program& p, const Kernel& k, const std::vector<int>& args, std::string where,
                 std::set<int>& defined, int64_t index_range, Ranges* collect)
      : p_(p),
        k_(k),
        args_(args),
        where_(std::move(where)),
        defined_(defined),
        index_range_(index_range),
        collect_(collect) {
    if (args.size() != k.params.size())
      fail(where_, fmt::format("{} arguments for {} params", args.size(), k.params.size()));
    std::vector<int> written;
    for (size_t i = 0; i < k.params.size(); ++i) {
      const KernelParam& kp = k.params[i];
      if (args[i] < 0 || args[i] >= static_cast<int>(p.buffers.size()))
        fail(where_, fmt::format("param {} is bound to no buffer ({})", kp.name, args[i]));
      const Buffer& b = p.buffers[static_cast<size_t>(args[i])];
      if (b.dtype != kp.type || b.numel() != kp.numel)
        fail(where_, fmt::format("param {} is {}[{}], its buffer {} is {}[{}]", kp.name, scalar_type_name(kp.type),
                                 kp.numel, b.name, scalar_type_name(b.dtype), b.numel()));
      if (kp.written) written.push_back(static_cast<int>(i));
      stored_.push_back(defined_.count(root_buffer(p, args[i])) > 0);
    }
    assigned_vars(k.body, mutables_);
    i64_lets(k.body, i64_locals_);
    bounds_ = std::make_unique<IndexBounds>(k, std::vector<std::string>(mutables_.begin(), mutables_.end()), written);
    scopes_.emplace_back();
    if (index_range < 0 && !k.index_params.empty())
      fail(where_, fmt::format("a kernel step's kernel takes index params ({})", k.index_params.size()));
    for (const std::string& ip : k.index_params) {
      bounds_->bind(ip, 0, index_range);
      declare(ip, ScalarType::i64);
    }
  }

  void run() {
    bool mutable_index = false;
    for (const std::string& v : mutables_) mutable_index |= i64_locals_.count(v) > 0;
    if (!collect_ && mutable_index) {
      std::set<int> scratch = defined_;
      KernelVerifier(p_, k_, args_, where_, scratch, index_range_, &ranges_).block(k_.body);
    }
    block(k_.body);
    if (collect_) return;
    for (size_t i = 0; i < k_.params.size(); ++i)
      if (k_.params[i].written) defined_.insert(root_buffer(p_, args_[i]));
  }

 private:
  std::string at(const StmtNode* s) const { return s ? fmt::format("{} (statement `{}`)", where_, brief(*s)) : where_; }

  std::string brief(const StmtNode& s) const {
    switch (s.kind) {
      case StmtKind::loop:
        return fmt::format("for {} in [{}, {})", s.var, print_expr_kir(s.begin, k_), print_expr_kir(s.end, k_));
      case StmtKind::store:
        return fmt::format("{}[{}] {}= ...", param_name(s.param), print_expr_kir(s.index, k_), s.accumulate ? "+" : "");
      case StmtKind::let:
        return "let " + s.var;
      case StmtKind::assign:
        return s.var + " = ...";
      case StmtKind::if_:
        return "if " + print_expr_kir(s.cond, k_);
      case StmtKind::fail:
        return fmt::format("fail {}", s.code);
    }
    return "?";
  }

  std::string param_name(int p) const {
    return p >= 0 && p < static_cast<int>(k_.params.size()) ? k_.params[static_cast<size_t>(p)].name : "?";
  }

  void declare(const std::string& name, ScalarType t) {
    for (const auto& sc : scopes_)
      if (sc.count(name)) fail(where_, fmt::format("local {} is declared twice", name));
    scopes_.back()[name] = t;
  }

  const ScalarType* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return &f->second;
    return nullptr;
  }

  // The param an access reaches, checked; the index in bounds under the current facts.
  void access(int param, const Expr& index, bool store, const StmtNode* s) {
    if (param < 0 || param >= static_cast<int>(k_.params.size()))
      fail(at(s), fmt::format("{} of param {}, the kernel has {}", store ? "store" : "load", param, k_.params.size()));
    if (!index || index.type() != ScalarType::i64) fail(at(s), "an index that is not i64");
    const KernelParam& kp = k_.params[static_cast<size_t>(param)];
    if (collect_) return;
    auto lo = bounds_->lower(index), hi = bounds_->upper(index);
    if (!lo || !hi || *lo < 0 || *hi >= kp.numel)
      fail(at(s), fmt::format("{} {}[{}]: the index is not provably inside the buffer of {} elements "
                              "(it takes values in [{}, {}])",
                              store ? "store to" : "load of", kp.name, print_expr_kir(index, k_), kp.numel,
                              lo ? std::to_string(*lo) : "-inf", hi ? std::to_string(*hi) : "+inf"));
    if (prove_parallel_ && parallel_ && !collect_) {
      int64_t b = 0, e = 0;
      const int64_t trips = is_int_const(parallel_->begin, &b) && is_int_const(parallel_->end, &e) ? e - b : 0;
      auto it = bounds_->per_iteration(index, parallel_->var, trips);
      race_[param].push_back({store, print_expr_kir(index, k_), it});
    }
    if (!store && !stored_[static_cast<size_t>(param)])
      fail(at(s), fmt::format("load of {} (buffer {}) before anything writes it", kp.name,
                              p_.buffers[static_cast<size_t>(args_[static_cast<size_t>(param)])].name));
  }

  // Checks `e` (vars in scope, types, loads in bounds; a branch of a select, or the right side
  // of && and ||, under the condition that selects it).
  void expr(const Expr& e, const StmtNode* s) {
    if (!e) fail(at(s), "an empty expression");
    const ExprNode& n = *e;
    switch (n.kind) {
      case ExprKind::int_const:
      case ExprKind::float_const:
        return;
      case ExprKind::var: {
        const ScalarType* t = lookup(n.name);
        if (!t) fail(at(s), fmt::format("{} is used outside the scope that defines it", n.name));
        if (*t != n.type)
          fail(at(s), fmt::format("{} is {}, read as {}", n.name, scalar_type_name(*t), scalar_type_name(n.type)));
        return;
      }
      case ExprKind::load:
        if (n.args.size() != 1) fail(at(s), "a load without an index");
        expr(n.args[0], s);
        access(n.param, n.args[0], false, s);
        if (n.type != k_.params[static_cast<size_t>(n.param)].type)
          fail(at(s), "a load of another type than its buffer");
        return;
      case ExprKind::select: {
        if (n.args.size() != 3 || n.args[0].type() != ScalarType::boolean) fail(at(s), "a select without a bool");
        if (n.args[1].type() != n.type || n.args[2].type() != n.type) fail(at(s), "select branches of another type");
        expr(n.args[0], s);
        size_t mark = bounds_->assume(n.args[0], true);
        expr(n.args[1], s);
        bounds_->pop_facts(mark);
        mark = bounds_->assume(n.args[0], false);
        expr(n.args[2], s);
        bounds_->pop_facts(mark);
        return;
      }
      case ExprKind::binary: {
        if (n.args.size() != 2 || n.args[0].type() != n.args[1].type())
          fail(at(s), fmt::format("operands of {} of different types", binary_op_name(n.binary)));
        expr(n.args[0], s);
        if (n.binary == BinaryOp::logical_and || n.binary == BinaryOp::logical_or) {
          size_t mark = bounds_->assume(n.args[0], n.binary == BinaryOp::logical_and);
          expr(n.args[1], s);
          bounds_->pop_facts(mark);
          return;
        }
        expr(n.args[1], s);
        return;
      }
      case ExprKind::unary:
      case ExprKind::cast:
        if (n.args.size() != 1) fail(at(s), "a unary node without its operand");
        expr(n.args[0], s);
        return;
    }
    fail(at(s), fmt::format("an expression of unknown kind {}", static_cast<int>(n.kind)));
  }

  void block(const Block& b) {
    scopes_.emplace_back();
    std::vector<size_t> marks;  // facts of failed checks, until the block ends
    for (const Stmt& sp : b) {
      if (!sp) fail(where_, "an empty statement");
      stmt(*sp, marks);
    }
    for (size_t i = marks.size(); i-- > 0;) bounds_->pop_facts(marks[i]);
    scopes_.pop_back();
  }

  void stmt(const StmtNode& s, std::vector<size_t>& marks) {
    switch (s.kind) {
      case StmtKind::loop: {
        expr(s.begin, &s);
        expr(s.end, &s);
        if (s.begin.type() != ScalarType::i64 || s.end.type() != ScalarType::i64) fail(at(&s), "loop bounds not i64");
        if (s.parallel && parallel_depth_ > 0) fail(at(&s), "a parallel loop inside a parallel loop");
        bounds_->enter_loop(s);
        scopes_.emplace_back();
        declare(s.var, ScalarType::i64);
        parallel_depth_ += s.parallel;
        if (s.parallel) parallel_ = &s;
        block(s.body);
        if (s.parallel) {
          if (prove_parallel_) check_independent(s);
          parallel_ = nullptr;
          race_.clear();
        }
        parallel_depth_ -= s.parallel;
        scopes_.pop_back();
        return;
      }
      case StmtKind::store: {
        if (s.param < 0 || s.param >= static_cast<int>(k_.params.size())) fail(at(&s), "a store to no param");
        const KernelParam& kp = k_.params[static_cast<size_t>(s.param)];
        if (!kp.written) fail(at(&s), fmt::format("a store to {}, a param not marked written", kp.name));
        expr(s.index, &s);
        expr(s.value, &s);
        if (s.value.type() != kp.type) fail(at(&s), "a stored value of another type than its buffer");
        if (s.accumulate) access(s.param, s.index, false, &s);  // += reads the element first
        access(s.param, s.index, true, &s);
        stored_[static_cast<size_t>(s.param)] = true;
        return;
      }
      case StmtKind::let:
        expr(s.value, &s);
        if (s.value.type() != s.type) fail(at(&s), "a let whose value has another type");
        declare(s.var, s.type);
        record(s.var, s.value);
        bounds_->define_let(s, collect_ || !ranges_.count(s.var) ? std::nullopt : ranges_[s.var]);
        return;
      case StmtKind::assign: {
        expr(s.value, &s);
        const ScalarType* t = lookup(s.var);
        if (!t) fail(at(&s), fmt::format("an assignment to {}, which no let in scope declares", s.var));
        if (*t != s.value.type()) fail(at(&s), "an assignment of another type");
        record(s.var, s.value);
        return;
      }
      case StmtKind::if_: {
        expr(s.cond, &s);
        if (s.cond.type() != ScalarType::boolean) fail(at(&s), "an if without a bool condition");
        size_t mark = bounds_->assume(s.cond, true);
        block(s.body);
        bounds_->pop_facts(mark);
        return;
      }
      case StmtKind::fail:
        expr(s.cond, &s);
        if (s.cond.type() != ScalarType::boolean) fail(at(&s), "a failed check without a bool condition");
        if (parallel_depth_ > 0) fail(at(&s), "a failed check inside a parallel loop");
        if (s.code < 1 || s.code > static_cast<int>(k_.errors.size()))
          fail(at(&s), fmt::format("fail code {}, the kernel has {} messages", s.code, k_.errors.size()));
        marks.push_back(bounds_->assume(s.cond, false));  // past it, the check passed
        return;
    }
    fail(at(&s), fmt::format("a statement of unknown kind {}", static_cast<int>(s.kind)));
  }

  // Expensive checks: the iterations of parallel loop `s` touch disjoint elements of every
  // buffer they store to. Each access of such a buffer reaches k·v + fixed + M·j + [lo, hi] in
  // iteration v (IndexBounds::per_iteration); with one k, fixed part and M for all of them,
  // hi - lo < |k| over their union, and (if M) M > |k|·(trips - 1) + hi - lo, no two
  // iterations meet: the index modulo M tells v apart.
  void check_independent(const StmtNode& s) {
    std::string problem = symbolic_independence(s);
    if (problem.empty()) return;
    // Beyond the linear model (bands of rows with a leftover band): run the index arithmetic.
    RaceVerdict v = concrete_race_check(k_, s);
    if (!v.decided) fail(at(&s), problem);
    if (!v.conflict.empty()) fail(at(&s), "parallel loop " + s.var + ": " + v.conflict);
  }

  // The window model: "" if it proves the iterations independent, else why it cannot.
  std::string symbolic_independence(const StmtNode& s) {
    for (const auto& [param, accesses] : race_) {
      bool stored = false;
      for (const Access& a : accesses) stored |= a.store;
      if (!stored) continue;
      const std::string& name = k_.params[static_cast<size_t>(param)].name;
      const Access* first = nullptr;
      int64_t lo = 0, hi = 0;
      for (const Access& a : accesses) {
        if (!a.range)
          return (
              fmt::format("parallel loop {}: which elements {} {}[{}] reaches in one iteration is not "
                          "provably k·{} + a bounded offset",
                          s.var, a.store ? "store to" : "load of", name, a.index, s.var));
        if (!first) {
          first = &a;
          lo = a.range->lo;
          hi = a.range->hi;
        }
        if (a.range->k != first->range->k || a.range->fixed != first->range->fixed ||
            a.range->modulus != first->range->modulus)
          return (fmt::format("parallel loop {}: {}[{}] and {}[{}] move differently with {}", s.var, name, first->index,
                              name, a.index, s.var));
        lo = std::min(lo, a.range->lo);
        hi = std::max(hi, a.range->hi);
      }
      const int64_t k = first->range->k < 0 ? -first->range->k : first->range->k;
      int64_t b = 0, e = 0;
      const int64_t trips = is_int_const(s.begin, &b) && is_int_const(s.end, &e) ? e - b : 0;
      const int64_t m = first->range->modulus;
      if (m > 0 && m <= k * (trips - 1) + hi - lo)
        return (fmt::format("parallel loop {}: {}'s accesses span {} within a period of {}", s.var, name,
                            k * (trips - 1) + hi - lo + 1, m));
      if (hi - lo >= k)
        return (
            fmt::format("parallel loop {}: one iteration reaches {} elements of {} ({}·{} + [{}, {}]), more "
                        "than the {} between iterations: two iterations may write one element",
                        s.var, hi - lo + 1, name, first->range->k, s.var, lo, hi, k));
    }
    return {};
  }

  // Pass 1: widens the range of mutable i64 local `var` by `value` where it is assigned.
  void record(const std::string& var, const Expr& value) {
    if (!collect_ || !mutables_.count(var) || value.type() != ScalarType::i64) return;
    auto lo = bounds_->lower(value), hi = bounds_->upper(value);
    auto [it, fresh] = collect_->emplace(var, std::nullopt);
    if (!lo || !hi) {
      it->second.reset();
      (*collect_)[var + "#unbounded"] = std::nullopt;
      return;
    }
    if (collect_->count(var + "#unbounded")) return;
    if (fresh || !it->second)
      it->second = std::pair{*lo, *hi};
    else
      it->second = std::pair{std::min(it->second->first, *lo), std::max(it->second->second, *hi)};
  }

  const Program& p_;
  const Kernel& k_;
  const std::vector<int>& args_;
  std::string where_;
  std::set<int>& defined_;
  int64_t index_range_ = -1;
  Ranges* collect_ = nullptr;  // pass 1: where the ranges go
  Ranges ranges_;              // pass 2: the ranges pass 1 found
  std::set<std::string> i64_locals_;
  std::vector<bool> stored_;  // per param: written before this point (or before the step)
  std::set<std::string> mutables_;
  std::unique_ptr<IndexBounds> bounds_;
  std::vector<std::map<std::string, ScalarType>> scopes_;
  int parallel_depth_ = 0;
  // Expensive checks: the open parallel loop and each access of a param inside it.
  struct Access {
    bool store = false;
    std::string index;
    std::optional<IndexBounds::PerIteration> range;
  };
  bool prove_parallel_ = false;
  const StmtNode* parallel_ = nullptr;
  std::map<int, std::vector<Access>> race_;
};

int64_t numel_of(const Program& p, int b) { return p.buffers.at(static_cast<size_t>(b)).numel(); }

// The extent a strided matrix operand reaches: `batch` copies `stride` apart of rows x cols with
// leading dimension ld; checks ld >= cols.
void check_operand(const Program& p, const std::string& where, const char* name, int b, int64_t rows, int64_t cols,
                   int64_t ld, int64_t batch, int64_t stride) {
  if (b < 0 || b >= static_cast<int>(p.buffers.size())) fail(where, fmt::format("GEMM operand {} is no buffer", name));
  const Buffer& buf = p.buffers[static_cast<size_t>(b)];
  if (buf.dtype != ScalarType::f32) fail(where, fmt::format("GEMM operand {} ({}) is not f32", name, buf.name));
  if (rows < 1 || cols < 1 || ld < cols || batch < 1 || stride < 0)
    fail(where, fmt::format("GEMM operand {} ({}): {} x {} with leading dimension {}, batch {}, stride {}", name,
                            buf.name, rows, cols, ld, batch, stride));
  const int64_t last = (batch - 1) * stride + (rows - 1) * ld + cols - 1;
  if (last >= buf.numel())
    fail(where,
         fmt::format("GEMM operand {} ({}) reaches element {}, the buffer has {}", name, buf.name, last, buf.numel()));
}

void check_gemm(const Program& p, const Step& s, const std::string& where, std::set<int>& defined,
                const KirVerifyOptions& options) {
  const GemmCall& g = s.gemm;
  check_operand(p, where, "A", g.a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch, g.stride_a);
  check_operand(p, where, "B", g.b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch, g.stride_b);
  check_operand(p, where, "C", g.c, g.m, g.n, g.ldc, g.accumulate_batches ? 1 : g.batch, g.stride_c);
  if (g.accumulate_batches && g.stride_c != 0) fail(where, "summed GEMM batches with a C stride");
  auto need = [&](int b, int64_t n, const char* what) {
    if (b < 0) return;
    if (b >= static_cast<int>(p.buffers.size()) || numel_of(p, b) < n)
      fail(where, fmt::format("the GEMM's {} buffer holds fewer than the {} elements it takes", what, n));
  };
  if (g.bias_kind != GemmCall::Bias::none && g.bias < 0) fail(where, "a GEMM bias kind without a bias buffer");
  need(g.bias, g.bias_kind == GemmCall::Bias::per_row ? g.m : g.n, "bias");
  need(g.col_sums, g.n, "column-sum");
  need(g.first_step, 1, "step");
  need(g.act_mask, g.m * g.n, "activation mask");
  for (int r : {g.a, g.b, g.bias, g.first_step, g.act_mask}) {
    if (r >= 0 && !defined.count(root_buffer(p, r)))
      fail(where, fmt::format("the GEMM reads {} before anything writes it", p.buffers[static_cast<size_t>(r)].name));
  }
  // C is read unless the product overwrites it (beta 0) or a bias fill writes it first.
  const bool reads_c = g.bias_kind == GemmCall::Bias::none && (g.beta != 0.0f || g.first_step >= 0);
  if (reads_c && !defined.count(root_buffer(p, g.c)))
    fail(where, fmt::format("the GEMM accumulates into {} before anything writes it",
                            p.buffers[static_cast<size_t>(g.c)].name));
  defined.insert(root_buffer(p, g.c));
  if (g.epilogue >= 0) {
    if (g.epilogue >= static_cast<int>(p.kernels.size())) fail(where, "a GEMM epilogue that is no kernel");
    const Kernel& k = p.kernels[static_cast<size_t>(g.epilogue)];
    KernelVerifier(p, k, s.args, where + ", epilogue " + k.name, defined, g.batch * g.m * g.n,
                   options.prove_parallel_loops)
        .run();
  }
  if (g.col_sums >= 0) defined.insert(root_buffer(p, g.col_sums));
}

// The buffers a step writes (roots).
std::set<int> writes_of(const Program& p, const Step& s) { return step_access(p, s).writes; }

// The activation arena (plan_memory): every arena buffer at an aligned offset inside it, no
// other buffer with one, and no two buffers whose lifetimes meet sharing a byte.
void check_arena(const Program& p, const std::string& prog) {
  const ArenaPlan& a = p.arena;
  const std::vector<BufferLife> life = buffer_lives(p);
  std::vector<size_t> arena;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    if (!in_arena(b)) {
      if (b.offset != -1) fail(prog, fmt::format("{} buffer {} has an arena offset", buffer_kind_name(b.kind), b.name));
      continue;
    }
    if (!a.planned) {
      if (b.offset != -1) fail(prog, fmt::format("buffer {} has an offset, but the program has no arena plan", b.name));
      continue;
    }
    if (b.offset < 0 || b.offset % kArenaAlign != 0 || b.offset + b.bytes() > a.bytes)
      fail(prog, fmt::format("buffer {} ({} bytes) at offset {} is not an aligned place in the {}-byte arena", b.name,
                             b.bytes(), b.offset, a.bytes));
    arena.push_back(i);
  }
  for (size_t x = 0; x < arena.size(); ++x)
    for (size_t y = x + 1; y < arena.size(); ++y) {
      const Buffer &b = p.buffers[arena[x]], &c = p.buffers[arena[y]];
      const BufferLife &lb = life[arena[x]], &lc = life[arena[y]];
      const bool at_once = lb.first >= 0 && lc.first >= 0 && lb.first <= lc.last && lc.first <= lb.last;
      const bool share = b.offset < c.offset + c.bytes() && c.offset < b.offset + b.bytes();
      if (at_once && share)
        fail(prog, fmt::format("arena buffers {} [{}, {}) and {} [{}, {}) overlap while both are live (times {}..{} "
                               "and {}..{})",
                               b.name, b.offset, b.offset + b.bytes(), c.name, c.offset, c.offset + c.bytes(), lb.first,
                               lb.last, lc.first, lc.last));
    }
}

}  // namespace

void verify_program(const Program& p, const KirVerifyOptions& options) {
  const std::string prog = fmt::format("program {}.{} at batch {}", p.module_name, p.graph_name, p.batch);
  check_arena(p, prog);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    for (int64_t d : b.shape)
      if (d < 0) fail(prog, fmt::format("buffer {} has a negative dim", b.name));
    if (b.kind != BufferKind::alias) continue;
    if (b.alias_of < 0 || b.alias_of >= static_cast<int>(p.buffers.size()) ||
        p.buffers[static_cast<size_t>(b.alias_of)].kind == BufferKind::alias)
      fail(prog, fmt::format("alias {} does not view a root buffer", b.name));
    const Buffer& root = p.buffers[static_cast<size_t>(b.alias_of)];
    if (b.alias_offset < 0 || b.alias_offset + b.numel() > root.numel() || b.dtype != root.dtype)
      fail(prog, fmt::format("alias {} ({}[{}] at {}) views {} ({}[{}])", b.name, scalar_type_name(b.dtype), b.numel(),
                             b.alias_offset, root.name, scalar_type_name(root.dtype), root.numel()));
  }
  std::set<int> update_roots;
  for (const auto& [name, b] : p.updates) {
    if (b < 0 || b >= static_cast<int>(p.buffers.size())) fail(prog, fmt::format("update of {} is no buffer", name));
    update_roots.insert(root_buffer(p, b));
  }
  std::set<int> defined;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].kind == BufferKind::input || p.buffers[i].kind == BufferKind::param)
      defined.insert(static_cast<int>(i));

  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    std::string where = fmt::format("{}, step {}", prog, i);
    if (s.kind == Step::Kind::kernel) {
      if (s.kernel < 0 || s.kernel >= static_cast<int>(p.kernels.size())) fail(where, "a kernel step without a kernel");
      const Kernel& k = p.kernels[static_cast<size_t>(s.kernel)];
      where += ", kernel " + k.name;
      CheckScope scope("kernel IR verifier, " + where);
      KernelVerifier(p, k, s.args, where, defined, -1, options.prove_parallel_loops).run();
    } else {
      where += ", GEMM";
      CheckScope scope("kernel IR verifier, " + where);
      check_gemm(p, s, where, defined, options);
    }
    for (int w : writes_of(p, s)) {
      const Buffer& b = p.buffers[static_cast<size_t>(w)];
      if (b.kind == BufferKind::input) fail(where, fmt::format("a write to input {}", b.name));
      if (b.kind == BufferKind::param && !update_roots.count(w))
        fail(where, fmt::format("a write to param {}, which no update of the program names", b.name));
    }
  }
  for (int o : p.outputs) {
    if (o < 0 || o >= static_cast<int>(p.buffers.size())) fail(prog, "an output that is no buffer");
    if (!defined.count(root_buffer(p, o)))
      fail(prog, fmt::format("output {} is never written", p.buffers[static_cast<size_t>(o)].name));
  }
}

}  // namespace dnnc::codegen
