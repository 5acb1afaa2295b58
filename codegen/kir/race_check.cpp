// The concrete race check of a parallel loop (race_check.h).
#include "codegen/kir/race_check.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

namespace dnnc::codegen {

namespace {

using Env = std::map<std::string, std::optional<int64_t>>;

class Runner {
 public:
  Runner(const Kernel& k, int64_t budget, std::set<int> stored) : k_(k), budget_(budget), stored_(std::move(stored)) {}

  // The i64 (or bool, as 0/1) value of `e`, if it does not depend on data.
  std::optional<int64_t> eval(const Expr& e, const Env& env) {
    if (--budget_ < 0) throw Stop{};
    const ExprNode& n = *e;
    switch (n.kind) {
      case ExprKind::int_const:
        if (n.type == ScalarType::i64) return n.int_value;
        return std::nullopt;
      case ExprKind::var: {
        auto it = env.find(n.name);
        return it == env.end() ? std::nullopt : it->second;
      }
      case ExprKind::select: {
        auto c = eval(n.args[0], env);
        if (!c) return std::nullopt;
        return eval(n.args[*c ? 1 : 2], env);
      }
      case ExprKind::unary: {
        auto a = eval(n.args[0], env);
        if (!a) return std::nullopt;
        if (n.unary == UnaryOp::neg && n.type == ScalarType::i64) return -*a;
        if (n.unary == UnaryOp::logical_not) return *a ? 0 : 1;
        return std::nullopt;
      }
      case ExprKind::binary: {
        if (n.args[0].type() != ScalarType::i64 && n.args[0].type() != ScalarType::boolean) return std::nullopt;
        auto a = eval(n.args[0], env);
        if (n.binary == BinaryOp::logical_and && a && !*a) return 0;
        if (n.binary == BinaryOp::logical_or && a && *a) return 1;
        auto b = eval(n.args[1], env);
        if (!a || !b) return std::nullopt;
        switch (n.binary) {
          case BinaryOp::add:
            return *a + *b;
          case BinaryOp::sub:
            return *a - *b;
          case BinaryOp::mul:
            return *a * *b;
          case BinaryOp::div:
            return *b ? std::optional<int64_t>(*a / *b) : std::nullopt;
          case BinaryOp::mod:
            return *b ? std::optional<int64_t>(*a % *b) : std::nullopt;
          case BinaryOp::min:
            return *b < *a ? *b : *a;
          case BinaryOp::max:
            return *a < *b ? *b : *a;
          case BinaryOp::lt:
            return *a < *b;
          case BinaryOp::le:
            return *a <= *b;
          case BinaryOp::gt:
            return *a > *b;
          case BinaryOp::ge:
            return *a >= *b;
          case BinaryOp::eq:
            return *a == *b;
          case BinaryOp::ne:
            return *a != *b;
          case BinaryOp::logical_and:
            return *a && *b;
          case BinaryOp::logical_or:
            return *a || *b;
          default:
            return std::nullopt;
        }
      }
      default:
        return std::nullopt;  // loads, floats, casts: data
    }
  }

  // Runs `b` for iteration `it` of the parallel loop (-1: before it), recording accesses.
  void block(const Block& b, Env& env, int64_t it) {
    for (const Stmt& sp : b) stmt(*sp, env, it);
  }

  void stmt(const StmtNode& s, Env& env, int64_t it) {
    switch (s.kind) {
      case StmtKind::loop: {
        auto lo = eval(s.begin, env), hi = eval(s.end, env);
        if (!lo || !hi) throw Stop{};
        for (int64_t v = *lo; v < *hi; ++v) {
          env[s.var] = v;
          block(s.body, env, it);
        }
        env.erase(s.var);
        return;
      }
      case StmtKind::store:
        access(s.param, s.index, env, it, true);
        if (s.accumulate) access(s.param, s.index, env, it, false);
        loads(s.value, env, it);
        loads(s.index, env, it);
        return;
      case StmtKind::let:
      case StmtKind::assign:
        loads(s.value, env, it);
        env[s.var] = s.type == ScalarType::i64 || s.value.type() == ScalarType::i64 ? eval(s.value, env) : std::nullopt;
        return;
      case StmtKind::if_: {
        loads(s.cond, env, it);
        auto c = eval(s.cond, env);
        if (c) {
          if (*c) block(s.body, env, it);
          return;
        }
        // Data decides: the body may or may not run; what it assigns is unknown after.
        Env inner = env;
        block(s.body, inner, it);
        for (auto& [name, value] : env)
          if (auto f = inner.find(name); f == inner.end() || f->second != value) value.reset();
        return;
      }
      case StmtKind::fail:
        loads(s.cond, env, it);
        return;
    }
  }

  // Every load in `e` (both branches of a select whose condition depends on data).
  void loads(const Expr& e, const Env& env, int64_t it) {
    if (!e || it < 0) return;
    if (e->kind == ExprKind::load) access(e->param, e->args[0], env, it, false);
    for (const Expr& a : e->args) loads(a, env, it);
  }

  void access(int param, const Expr& index, const Env& env, int64_t it, bool store) {
    if (it < 0 || !stored_.count(param)) return;  // before the loop (one thread), or read-only: no race
    auto i = eval(index, env);
    if (!i) throw Stop{};
    auto& cells = store ? stores_[param] : loads_[param];
    auto [at, fresh] = cells.emplace(*i, it);
    if (!fresh && at->second != it) at->second = kMany;
  }

  // The first element one iteration stores to and another reaches.
  std::string conflict(const std::string& var) const {
    for (const auto& [param, cells] : stores_) {
      const std::string& name = k_.params[static_cast<size_t>(param)].name;
      for (const auto& [elem, it] : cells) {
        if (it == kMany) return fmt::format("two iterations of {} store to {}[{}]", var, name, elem);
        if (auto l = loads_.find(param); l != loads_.end())
          if (auto c = l->second.find(elem); c != l->second.end() && c->second != it)
            return fmt::format("iteration {} of {} stores to {}[{}], which another iteration reads", it, var, name,
                               elem);
      }
    }
    return {};
  }

  struct Stop {};
  static constexpr int64_t kMany = -2;  // reached by more than one iteration

 private:
  const Kernel& k_;
  int64_t budget_;
  std::set<int> stored_;                                                // params the loop stores to
  std::map<int, std::unordered_map<int64_t, int64_t>> stores_, loads_;  // param -> element -> iteration
};

}  // namespace

static void stored_params(const Block& b, std::set<int>& out) {
  for (const Stmt& s : b) {
    if (s->kind == StmtKind::store) out.insert(s->param);
    stored_params(s->body, out);
  }
}

RaceVerdict concrete_race_check(const Kernel& k, const StmtNode& loop, int64_t budget) {
  std::set<int> stored;
  stored_params(loop.body, stored);
  Runner r(k, budget, std::move(stored));
  Env env;
  for (const std::string& ip : k.index_params) env[ip] = std::nullopt;
  RaceVerdict v;
  try {
    for (const Stmt& s : k.body) {
      if (s.get() == &loop) {
        auto lo = r.eval(loop.begin, env), hi = r.eval(loop.end, env);
        if (!lo || !hi) return v;
        for (int64_t i = *lo; i < *hi; ++i) {
          Env iter = env;
          iter[loop.var] = i;
          r.block(loop.body, iter, i);
        }
        v.decided = true;
        v.conflict = r.conflict(loop.var);
        return v;
      }
      r.stmt(*s, env, -1);
    }
  } catch (const Runner::Stop&) {
    return v;
  }
  return v;  // not a top-level loop of k
}

}  // namespace dnnc::codegen
