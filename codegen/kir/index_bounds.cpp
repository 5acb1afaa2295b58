// Bounds of i64 index expressions over a kernel's loop nest (index_bounds.h).
#include "codegen/kir/index_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/kir/kir_printer.h"
#include "ir/check.h"

namespace dnnc::codegen {

namespace {

using i128 = __int128;

i128 gcd(i128 a, i128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// An exact rational n/d, d > 0. Arithmetic that would leave 100 bits marks it `overflow`, and
// every bound computed from it is then unknown.
struct Rat {
  i128 n = 0, d = 1;
  bool overflow = false;
};

constexpr i128 kLimit = i128{1} << 100;

Rat rat(i128 n, i128 d = 1) {
  Rat r;
  if (d < 0) {
    n = -n;
    d = -d;
  }
  i128 g = gcd(n, d);
  if (g > 1) {
    n /= g;
    d /= g;
  }
  r.n = n;
  r.d = d;
  r.overflow = n > kLimit || n < -kLimit || d > kLimit;
  return r;
}

Rat operator+(const Rat& a, const Rat& b) {
  Rat r = rat(a.n * b.d + b.n * a.d, a.d * b.d);
  r.overflow |= a.overflow || b.overflow;
  return r;
}
Rat operator-(const Rat& a) {
  Rat r = a;
  r.n = -r.n;
  return r;
}
Rat operator*(const Rat& a, const Rat& b) {
  Rat r = rat(a.n * b.n, a.d * b.d);
  r.overflow |= a.overflow || b.overflow;
  return r;
}
Rat operator/(const Rat& a, const Rat& b) {
  Rat r = rat(a.n * b.d, a.d * b.n);
  r.overflow |= a.overflow || b.overflow || b.n == 0;
  return r;
}
bool operator<(const Rat& a, const Rat& b) { return a.n * b.d < b.n * a.d; }
bool is_zero(const Rat& a) { return a.n == 0; }

int64_t floor_of(const Rat& r) {
  i128 q = r.n / r.d;
  if (r.n % r.d != 0 && r.n < 0) --q;
  return static_cast<int64_t>(q);
}
int64_t ceil_of(const Rat& r) { return -floor_of(-r); }

// A linear form: sum of coefficient · atom, plus a constant.
struct Lin {
  std::map<int, Rat> c;
  Rat k;
};

Lin constant(i128 v) {
  Lin l;
  l.k = rat(v);
  return l;
}
Lin atom_lin(int a) {
  Lin l;
  l.c[a] = rat(1);
  return l;
}
void add_to(Lin& l, const Lin& x, const Rat& s) {
  for (const auto& [a, v] : x.c) {
    Rat t = l.c.count(a) ? l.c[a] + v * s : v * s;
    if (is_zero(t) && !t.overflow)
      l.c.erase(a);
    else
      l.c[a] = t;
  }
  l.k = l.k + x.k * s;
}
Lin sum(const Lin& a, const Lin& b, const Rat& sb) {
  Lin r = a;
  add_to(r, b, sb);
  return r;
}
Lin scaled(const Lin& a, const Rat& s) {
  Lin r;
  add_to(r, a, s);
  return r;
}
bool is_const(const Lin& l) { return l.c.empty(); }

// d·atom <= u (an upper bound) or d·atom >= u (a lower bound), d > 0.
struct Bound {
  Rat d;
  Lin u;
  bool fact = false;  // assumed from a condition (holds only in its scope)
};

struct Atom {
  std::string key;
  std::vector<Bound> lo, hi;
};

constexpr int kBudget = 200000;  // bound substitutions per query

}  // namespace

struct IndexBounds::Impl {
  const Kernel& k;
  std::set<std::string> mutables;
  std::set<int> written;
  std::vector<Atom> atoms;
  std::map<std::string, int> atom_of;
  std::map<std::string, Lin> lets;
  std::vector<std::pair<int, bool>> trail;  // facts: (atom, upper?) in the order assumed
  // x / c and x % c atoms by (text of x, c): c·(x / c) + x % c == x recombines them.
  std::map<std::pair<std::string, int64_t>, std::pair<int, int>> divmod;  // -> (div atom, mod atom), -1 if unseen
  std::map<int, Lin> divmod_x;                                            // div or mod atom -> x
  bool use_facts = true;
  int budget = 0;

  Impl(const Kernel& kernel, std::vector<std::string> m, std::vector<int> w)
      : k(kernel), mutables(m.begin(), m.end()), written(w.begin(), w.end()) {}

  std::string key(const Expr& e) const { return print_expr_kir(e, k); }

  int new_atom(const std::string& key) {
    atoms.push_back({key, {}, {}});
    const int id = static_cast<int>(atoms.size()) - 1;
    atom_of[key] = id;
    return id;
  }

  void add_bound(int a, bool upper, Rat d, Lin u, bool fact = false) {
    (upper ? atoms[static_cast<size_t>(a)].hi : atoms[static_cast<size_t>(a)].lo).push_back({d, std::move(u), fact});
    if (fact) trail.emplace_back(a, upper);
  }
  void add_const_bound(int a, bool upper, std::optional<int64_t> v) {
    if (v) add_bound(a, upper, rat(1), constant(*v));
  }

  // ---- queries ------------------------------------------------------------------------------

  std::optional<Rat> ub(const Lin& l) {
    if (--budget < 0) return std::nullopt;
    if (l.k.overflow) return std::nullopt;
    if (l.c.empty()) return l.k;
    const auto& [a, coef] = *l.c.rbegin();
    if (coef.overflow) return std::nullopt;
    const Atom& atom = atoms[static_cast<size_t>(a)];
    const std::vector<Bound>& list = is_zero(coef) ? atom.hi : (rat(0) < coef ? atom.hi : atom.lo);
    std::optional<Rat> best;
    Lin rest = l;
    rest.c.erase(a);
    const bool upper = !(coef < rat(0));
    for (size_t i = 0; i < list.size(); ++i) {
      const Bound& b = list[i];
      if (b.fact && !use_facts) continue;
      // The atom is an integer: a constant bound u/d rounds inwards (floor above, ceil below).
      if (is_const(b.u)) {
        const Rat v = b.u.k / b.d;
        if (v.overflow) continue;
        const Lin c = constant(upper ? floor_of(v) : ceil_of(v));
        std::optional<Rat> r = ub(sum(rest, c, coef));
        if (r && !r->overflow && (!best || *r < *best)) best = r;
        continue;
      }
      std::optional<Rat> r = ub(recombine(sum(rest, b.u, coef / b.d)));
      if (r && !r->overflow && (!best || *r < *best)) best = r;
    }
    return best;
  }

  // Eliminates the atoms deeper than `stop` by their bounds (upper bounds of l), every
  // alternative: the forms left, over atoms up to `stop`.
  void collect(const Lin& l, int stop, std::vector<Lin>& out) {
    if (--budget < 0 || out.size() > 64 || l.k.overflow) return;
    if (l.c.empty() || l.c.rbegin()->first <= stop) {
      out.push_back(l);
      return;
    }
    const auto& [a, coef] = *l.c.rbegin();
    if (coef.overflow) return;
    const Atom& atom = atoms[static_cast<size_t>(a)];
    const bool upper = !(coef < rat(0));
    Lin rest = l;
    rest.c.erase(a);
    for (const Bound& b : upper ? atom.hi : atom.lo) {
      if (b.fact && !use_facts) continue;
      if (is_const(b.u)) {
        const Rat v = b.u.k / b.d;
        if (!v.overflow) collect(sum(rest, constant(upper ? floor_of(v) : ceil_of(v)), coef), stop, out);
        continue;
      }
      collect(recombine(sum(rest, b.u, coef / b.d)), stop, out);
    }
  }

  std::optional<int64_t> upper_of(const Lin& l) {
    budget = kBudget;
    std::optional<Rat> r = ub(l);
    if (!r) return std::nullopt;
    return floor_of(*r);
  }
  std::optional<int64_t> lower_of(const Lin& l) {
    budget = kBudget;
    std::optional<Rat> r = ub(scaled(l, rat(-1)));
    if (!r) return std::nullopt;
    return ceil_of(-*r);
  }
  // Fact-free bounds: for properties of an atom that must hold in every scope it appears in.
  std::optional<int64_t> lower_structural(const Lin& l) {
    bool saved = use_facts;
    use_facts = false;
    auto r = lower_of(l);
    use_facts = saved;
    return r;
  }
  std::optional<int64_t> upper_structural(const Lin& l) {
    bool saved = use_facts;
    use_facts = false;
    auto r = upper_of(l);
    use_facts = saved;
    return r;
  }

  // ---- linear forms of expressions ----------------------------------------------------------

  // The atom standing for `e` (created with its structural bounds on first sight).
  int opaque(const Expr& e) {
    const std::string kk = key(e);
    if (auto it = atom_of.find(kk); it != atom_of.end()) return it->second;
    const ExprNode& n = *e;
    int64_t c = 0;
    if (n.kind == ExprKind::binary && (n.binary == BinaryOp::div || n.binary == BinaryOp::mod) &&
        is_int_const(n.args[1], &c) && c > 0) {
      Lin x = lin(n.args[0]);
      const std::optional<int64_t> lx = lower_structural(x), ux = upper_structural(x);
      const bool nonneg = lx.value_or(-1) >= 0;
      const int q = new_atom(kk);
      auto& dm = divmod.try_emplace({key(n.args[0]), c}, -1, -1).first->second;
      (n.binary == BinaryOp::div ? dm.first : dm.second) = q;
      divmod_x[q] = x;
      if (n.binary == BinaryOp::div) {
        // Truncating division: c·q lies within c - 1 of x, and at most x when x >= 0; q itself
        // lies between the quotients of x's extremes.
        add_bound(q, false, rat(c), sum(x, constant(1 - c), rat(1)));
        add_bound(q, true, rat(c), nonneg ? x : sum(x, constant(c - 1), rat(1)));
        if (lx) add_const_bound(q, false, *lx / c);
        if (ux) add_const_bound(q, true, *ux / c);
      } else {
        add_bound(q, false, rat(1), constant(nonneg ? 0 : 1 - c));
        add_bound(q, true, rat(1), constant(c - 1));
        if (nonneg) add_bound(q, true, rat(1), x);
      }
      return q;
    }
    if (n.kind == ExprKind::binary && (n.binary == BinaryOp::min || n.binary == BinaryOp::max)) {
      Lin a = lin(n.args[0]), b = lin(n.args[1]);
      const bool is_min = n.binary == BinaryOp::min;
      std::optional<int64_t> ea, eb;  // the other side's extreme of each argument
      if (is_min) {
        ea = lower_structural(a);
        eb = lower_structural(b);
      } else {
        ea = upper_structural(a);
        eb = upper_structural(b);
      }
      const int m = new_atom(kk);
      // min is at most each argument; its least value is the lesser of theirs (max: mirrored).
      add_bound(m, is_min, rat(1), a);
      add_bound(m, is_min, rat(1), b);
      if (ea && eb) add_const_bound(m, !is_min, is_min ? std::min(*ea, *eb) : std::max(*ea, *eb));
      return m;
    }
    if (n.kind == ExprKind::select) {
      Lin a = lin(n.args[1]), b = lin(n.args[2]);
      auto la = lower_structural(a), lb = lower_structural(b);
      auto ua = upper_structural(a), ubb = upper_structural(b);
      const int s = new_atom(kk);
      if (la && lb) add_const_bound(s, false, std::min(*la, *lb));
      if (ua && ubb) add_const_bound(s, true, std::max(*ua, *ubb));
      return s;
    }
    if (n.kind == ExprKind::binary && n.binary == BinaryOp::mul) {
      Lin a = lin(n.args[0]), b = lin(n.args[1]);
      auto la = lower_structural(a), ua = upper_structural(a), lb = lower_structural(b), ubb = upper_structural(b);
      const int p = new_atom(kk);
      if (la && ua && lb && ubb) {
        const i128 v[4] = {i128{*la} * *lb, i128{*la} * *ubb, i128{*ua} * *lb, i128{*ua} * *ubb};
        const i128 lo = *std::min_element(v, v + 4), hi = *std::max_element(v, v + 4);
        if (lo > -kLimit && hi < kLimit) {
          add_bound(p, false, rat(1), constant(lo));
          add_bound(p, true, rat(1), constant(hi));
        }
      }
      return p;
    }
    return new_atom(kk);  // a load, a cast, a mutable local: unknown unless a fact says more
  }

  // A·(x / c) + B·(x % c) == B·x + (A - B·c)·(x / c): where both atoms of one x and c appear,
  // the remainder goes (so v / 2 · 16 + v % 2 · 8 reads as 8·v, exactly).
  Lin recombine(Lin l) {
    for (const auto& [xc, atoms] : divmod) {
      const auto [q, r] = atoms;
      if (q < 0 || r < 0 || !l.c.count(q) || !l.c.count(r)) continue;
      const Rat a = l.c[q], b = l.c[r];
      l.c.erase(r);
      const Rat rest = a + (-(b * rat(xc.second)));
      if (is_zero(rest))
        l.c.erase(q);
      else
        l.c[q] = rest;
      add_to(l, divmod_x[q], b);
    }
    return l;
  }

  Lin lin(const Expr& e) { return recombine(lin_raw(e)); }

  Lin lin_raw(const Expr& e) {
    const ExprNode& n = *e;
    int64_t c = 0;
    switch (n.kind) {
      case ExprKind::int_const:
        return constant(n.int_value);
      case ExprKind::var: {
        if (auto it = lets.find(n.name); it != lets.end()) return it->second;
        auto it = atom_of.find(n.name);
        return atom_lin(it != atom_of.end() ? it->second : new_atom(n.name));
      }
      case ExprKind::unary:
        if (n.unary == UnaryOp::neg) return scaled(lin(n.args[0]), rat(-1));
        break;
      case ExprKind::binary:
        if (n.binary == BinaryOp::add) return sum(lin(n.args[0]), lin(n.args[1]), rat(1));
        if (n.binary == BinaryOp::sub) return sum(lin(n.args[0]), lin(n.args[1]), rat(-1));
        if (n.binary == BinaryOp::mul) {
          if (is_int_const(n.args[1], &c)) return scaled(lin(n.args[0]), rat(c));
          if (is_int_const(n.args[0], &c)) return scaled(lin(n.args[1]), rat(c));
        }
        break;
      default:
        break;
    }
    return atom_lin(opaque(e));
  }

  // ---- facts --------------------------------------------------------------------------------

  // True if a fact about `e` could go stale in its scope: it reads a local that is assigned, or
  // a buffer the kernel writes.
  bool volatile_expr(const Expr& e) const {
    if (!e) return false;
    if (e->kind == ExprKind::var && mutables.count(e->name)) return true;
    if (e->kind == ExprKind::load && written.count(e->param)) return true;
    for (const Expr& a : e->args)
      if (volatile_expr(a)) return true;
    return false;
  }

  // l <= 0, attached to the deepest atom of l.
  void assume_nonpositive(const Lin& l) {
    if (l.c.empty()) return;
    const auto& [a, coef] = *l.c.rbegin();
    Lin rest = l;
    rest.c.erase(a);
    if (rat(0) < coef)
      add_bound(a, true, coef, scaled(rest, rat(-1)), true);  // coef·a <= -rest
    else
      add_bound(a, false, -coef, rest, true);  // -coef·a >= rest
  }

  void assume(const Expr& cond, bool holds) {
    const ExprNode& n = *cond;
    if (n.kind == ExprKind::unary && n.unary == UnaryOp::logical_not) return assume(n.args[0], !holds);
    if (n.kind != ExprKind::binary) return;
    if ((n.binary == BinaryOp::logical_and && holds) || (n.binary == BinaryOp::logical_or && !holds)) {
      assume(n.args[0], holds);
      assume(n.args[1], holds);
      return;
    }
    if (n.args.size() != 2 || n.args[0].type() != ScalarType::i64 || volatile_expr(cond)) return;
    BinaryOp op = n.binary;
    if (!holds) {
      switch (op) {
        case BinaryOp::lt:
          op = BinaryOp::ge;
          break;
        case BinaryOp::le:
          op = BinaryOp::gt;
          break;
        case BinaryOp::gt:
          op = BinaryOp::le;
          break;
        case BinaryOp::ge:
          op = BinaryOp::lt;
          break;
        case BinaryOp::eq:
          op = BinaryOp::ne;
          break;
        case BinaryOp::ne:
          op = BinaryOp::eq;
          break;
        default:
          return;
      }
    }
    const Lin a = lin(n.args[0]), b = lin(n.args[1]);
    switch (op) {
      case BinaryOp::lt:  // a - b + 1 <= 0
        return assume_nonpositive(sum(sum(a, b, rat(-1)), constant(1), rat(1)));
      case BinaryOp::le:
        return assume_nonpositive(sum(a, b, rat(-1)));
      case BinaryOp::gt:
        return assume_nonpositive(sum(sum(b, a, rat(-1)), constant(1), rat(1)));
      case BinaryOp::ge:
        return assume_nonpositive(sum(b, a, rat(-1)));
      case BinaryOp::eq:
        assume_nonpositive(sum(a, b, rat(-1)));
        return assume_nonpositive(sum(b, a, rat(-1)));
      default:
        return;
    }
  }
};

IndexBounds::IndexBounds(const Kernel& k, std::vector<std::string> mutable_vars, std::vector<int> written)
    : impl_(std::make_unique<Impl>(k, std::move(mutable_vars), std::move(written))) {}

IndexBounds::~IndexBounds() = default;

void IndexBounds::bind(const std::string& name, int64_t lo, int64_t hi) {
  const int a = impl_->new_atom(name);
  impl_->add_const_bound(a, false, lo);
  impl_->add_const_bound(a, true, hi);
}

void IndexBounds::enter_loop(const StmtNode& loop) {
  // Each argument of a max in begin is a lower bound, each of a min in end an upper one.
  std::vector<Lin> lo, hi;
  std::vector<Expr> pending{loop.begin};
  while (!pending.empty()) {
    Expr e = pending.back();
    pending.pop_back();
    if (e->kind == ExprKind::binary && e->binary == BinaryOp::max) {
      pending.push_back(e->args[0]);
      pending.push_back(e->args[1]);
    } else {
      lo.push_back(impl_->lin(e));
    }
  }
  pending = {loop.end};
  while (!pending.empty()) {
    Expr e = pending.back();
    pending.pop_back();
    if (e->kind == ExprKind::binary && e->binary == BinaryOp::min) {
      pending.push_back(e->args[0]);
      pending.push_back(e->args[1]);
    } else {
      hi.push_back(sum(impl_->lin(e), constant(-1), rat(1)));
    }
  }
  const int v = impl_->new_atom(loop.var);
  for (Lin& l : lo) impl_->add_bound(v, false, rat(1), std::move(l));
  for (Lin& l : hi) impl_->add_bound(v, true, rat(1), std::move(l));
}

void IndexBounds::define_let(const StmtNode& let, std::optional<std::pair<int64_t, int64_t>> range) {
  if (let.type != ScalarType::i64 || impl_->mutables.count(let.var)) {
    const int a = impl_->new_atom(let.var);
    if (range) {
      impl_->add_const_bound(a, false, range->first);
      impl_->add_const_bound(a, true, range->second);
    }
    return;
  }
  impl_->lets[let.var] = impl_->lin(let.value);
}

size_t IndexBounds::assume(const Expr& cond, bool holds) {
  const size_t mark = impl_->trail.size();
  impl_->assume(cond, holds);
  return mark;
}

void IndexBounds::pop_facts(size_t mark) {
  while (impl_->trail.size() > mark) {
    const auto [a, upper] = impl_->trail.back();
    impl_->trail.pop_back();
    auto& list = upper ? impl_->atoms[static_cast<size_t>(a)].hi : impl_->atoms[static_cast<size_t>(a)].lo;
    DNNC_CHECK(!list.empty() && list.back().fact, "index bounds: facts popped out of order");
    list.pop_back();
  }
}

std::optional<IndexBounds::PerIteration> IndexBounds::per_iteration(const Expr& e, const std::string& var,
                                                                    int64_t trips) {
  auto it = impl_->atom_of.find(var);
  if (it == impl_->atom_of.end()) return std::nullopt;
  const int v = it->second;
  Lin l = impl_->lin(e);
  // Inner terms whose integer coefficients share a factor M >= |k|·trips go to the modulus.
  int64_t modulus = 0;
  if (auto kv = l.c.find(v); kv != l.c.end() && kv->second.d == 1 && trips > 0) {
    const i128 k = kv->second.n < 0 ? -kv->second.n : kv->second.n;
    i128 m = 0;
    std::vector<int> big;
    for (const auto& [a, coef] : l.c) {
      if (a <= v || coef.d != 1) continue;
      const i128 c = coef.n < 0 ? -coef.n : coef.n;
      if (c < k * trips) continue;
      const i128 g = gcd(m, c);
      if (g < k * trips) continue;
      m = g;
      big.push_back(a);
    }
    if (m > 0 && m < kLimit) {
      for (int a : big) l.c.erase(a);
      modulus = static_cast<int64_t>(m);
    }
  }
  // Upper forms of l and (negated) lower forms, over the loop variable and atoms outside it.
  std::vector<Lin> ups, downs;
  impl_->budget = kBudget;
  impl_->collect(l, v, ups);
  impl_->budget = kBudget;
  impl_->collect(scaled(l, rat(-1)), v, downs);
  // Each form as (k, fixed, constant): the best constant per (k, fixed), lowest above and highest below.
  using Shape = std::pair<std::string, std::string>;  // k, fixed (as text)
  auto shape_of = [&](const Lin& f, Rat sign, Rat* k, Rat* c) {
    std::string fixed;
    *k = rat(0);
    for (const auto& [a, coef] : f.c) {
      const Rat x = coef * sign;
      if (a == v) {
        *k = x;
        continue;
      }
      fixed += fmt::format("{}*{}/{}+", impl_->atoms[static_cast<size_t>(a)].key, static_cast<int64_t>(x.n),
                           static_cast<int64_t>(x.d));
    }
    *c = f.k * sign;
    return Shape{fmt::format("{}/{}", static_cast<int64_t>(k->n), static_cast<int64_t>(k->d)), fixed};
  };
  std::map<Shape, std::pair<Rat, Rat>> hi, lo;  // shape -> (k, best constant)
  for (const Lin& f : ups) {
    Rat k, c;
    Shape sh = shape_of(f, rat(1), &k, &c);
    auto [at, fresh] = hi.try_emplace(sh, k, c);
    if (!fresh && c < at->second.second) at->second.second = c;
  }
  for (const Lin& f : downs) {
    Rat k, c;
    Shape sh = shape_of(f, rat(-1), &k, &c);
    auto [at, fresh] = lo.try_emplace(sh, k, c);
    if (!fresh && at->second.second < c) at->second.second = c;
  }
  std::optional<PerIteration> best;
  for (const auto& [sh, kc] : hi) {
    auto l2 = lo.find(sh);
    if (l2 == lo.end() || kc.first.d != 1 || kc.first.n == 0) continue;
    PerIteration r;
    r.k = static_cast<int64_t>(kc.first.n);
    r.fixed = sh.second;
    r.modulus = modulus;
    r.hi = floor_of(kc.second);
    r.lo = ceil_of(l2->second.second);
    if (!best || r.hi - r.lo < best->hi - best->lo) best = r;
  }
  return best;
}

std::optional<int64_t> IndexBounds::lower(const Expr& e) { return impl_->lower_of(impl_->lin(e)); }
std::optional<int64_t> IndexBounds::upper(const Expr& e) { return impl_->upper_of(impl_->lin(e)); }

}  // namespace dnnc::codegen
