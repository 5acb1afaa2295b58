// Bounds of the i64 index expressions of a kernel, proved over its loop nest: what the kernel
// IR verifier (kir_verifier.h) uses to show that every load and store stays inside its buffer.
//
// An index is read as a linear form over atoms (loop variables, index params, and opaque terms
// such as x / c, x % c, min, max, loads) with rational coefficients. Each atom carries bounds
// of the form d·atom <= u or d·atom >= u, u a linear form over atoms defined before it: a
// loop variable those of its begin and end (each argument of a max/min bound is one bound), a
// division x / c that c·q lies within c - 1 of x, a min that it is at most each argument, and
// conditions of enclosing ifs, selects, && and || and earlier failed checks add theirs while
// they hold. An upper bound of a form eliminates its deepest atom by each of that atom's
// bounds in turn and keeps the least result (Fourier–Motzkin style, on a budget); this proves
// a conv's `ih = oh·s - p + kh` in range where `oh` runs over max(0, ⌈(p-kh)/s⌉) ... , which
// interval arithmetic cannot, since `oh`'s bounds depend on `kh`.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kir/kernel_ir.h"

namespace dnnc::codegen {

class IndexBounds {
 public:
  /// Bounds over kernel `k` (which must outlive this). `mutable_vars` are locals the kernel
  /// assigns after their let: they have no value to reason with, and no condition on them holds
  /// for long; `written` are the params the kernel stores to (a condition on one of their
  /// loads may not hold after a store).
  IndexBounds(const Kernel& k, std::vector<std::string> mutable_vars, std::vector<int> written);
  ~IndexBounds();
  IndexBounds(const IndexBounds&) = delete;
  IndexBounds& operator=(const IndexBounds&) = delete;

  /// An index param taking values in [lo, hi].
  void bind(const std::string& name, int64_t lo, int64_t hi);
  /// A loop variable running over [loop.begin, loop.end), from here on.
  void enter_loop(const StmtNode& loop);
  /// An immutable local: its value is what the let assigns. A mutable one is unknown, or within
  /// `range` if given (the hull of every value it is ever assigned).
  void define_let(const StmtNode& let, std::optional<std::pair<int64_t, int64_t>> range = std::nullopt);

  /// Assumes `cond` is true (`holds`) or false from here until the matching pop_facts(); only
  /// its conjuncts (of !cond: the negated disjuncts) that are comparisons of i64 values count.
  /// Returns a mark for pop_facts.
  size_t assume(const Expr& cond, bool holds);
  /// Forgets the facts assumed since `mark`.
  void pop_facts(size_t mark);

  /// The least and greatest value `e` (i64) can take where the facts hold, if bounded.
  std::optional<int64_t> lower(const Expr& e);
  std::optional<int64_t> upper(const Expr& e);

  /// The values `e` takes within one iteration of the enclosing loop over `var` (of `trips`
  /// iterations), as k·var + fixed + M·(integers) + [lo, hi]: `fixed` (a canonical text) stands
  /// for the terms that stay the same over that loop's iterations, and the multiples of M
  /// (`modulus`, 0 if none) for inner terms whose coefficients are multiples of an M of at least
  /// |k|·trips (an inner loop over images outside one over channels). Empty if e's bounds there
  /// do not take this form.
  struct PerIteration {
    int64_t k = 0;
    std::string fixed;
    int64_t modulus = 0;
    int64_t lo = 0, hi = 0;
  };
  std::optional<PerIteration> per_iteration(const Expr& e, const std::string& var, int64_t trips);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dnnc::codegen
