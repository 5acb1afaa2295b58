// Loop analyses of KernelIR (loop_analysis.h).
#include "codegen/kir/loop_analysis.h"

#include <algorithm>
#include <map>

namespace dnnc::codegen::loops {

bool mentions(const Expr& e, const std::string& name) {
  if (!e) return false;
  if (e->kind == ExprKind::var && e->name == name) return true;
  for (const Expr& a : e->args)
    if (mentions(a, name)) return true;
  return false;
}

bool same_expr(const Expr& a, const Expr& b) {
  if (!a || !b) return !a && !b;
  const ExprNode &x = *a, &y = *b;
  if (x.kind != y.kind || x.type != y.type || x.int_value != y.int_value || x.name != y.name || x.param != y.param ||
      x.unary != y.unary || x.binary != y.binary || x.args.size() != y.args.size())
    return false;
  if (x.kind == ExprKind::float_const && !(x.float_value == y.float_value)) return false;
  for (size_t i = 0; i < x.args.size(); ++i)
    if (!same_expr(x.args[i], y.args[i])) return false;
  return true;
}

void loads_of(const Expr& e, std::vector<const ExprNode*>& out) {
  if (!e) return;
  if (e->kind == ExprKind::load) out.push_back(&*e);
  for (const Expr& a : e->args) loads_of(a, out);
}

namespace {

void collect(const Block& b, Effects& fx) {
  for (const Stmt& sp : b) {
    const StmtNode& s = *sp;
    for (const Expr* e : {&s.begin, &s.end, &s.index, &s.value, &s.cond}) loads_of(*e, fx.loads);
    switch (s.kind) {
      case StmtKind::loop:
        fx.has_loop = true;
        fx.declared.insert(s.var);
        break;
      case StmtKind::store:
        fx.stores.push_back(&s);
        break;
      case StmtKind::let:
        fx.declared.insert(s.var);
        break;
      case StmtKind::assign:
        fx.assigned.insert(s.var);
        break;
      case StmtKind::if_:
        break;
      case StmtKind::fail:
        fx.has_fail = true;
        break;
    }
    collect(s.body, fx);
  }
}

}  // namespace

Effects effects(const Block& b) {
  Effects fx;
  collect(b, fx);
  return fx;
}

namespace {

// The additive terms of an i64 index (a + b, a - b: b negated, kept as a term).
void add_terms(const Expr& e, std::vector<Expr>& terms, bool& ok, const std::string& v) {
  if (e->kind == ExprKind::binary && e->binary == BinaryOp::add) {
    add_terms(e->args[0], terms, ok, v);
    add_terms(e->args[1], terms, ok, v);
    return;
  }
  if (e->kind == ExprKind::binary && e->binary == BinaryOp::sub) {
    add_terms(e->args[0], terms, ok, v);
    if (mentions(e->args[1], v)) ok = false;
    return;
  }
  terms.push_back(e);
}

// Which elements one iteration of a loop (variable v) touches. An index is read as
//   k*v + (terms fixed over the loop) + off,  off in [lo, hi]
// where off sums the int constants and the terms in the body's own loop variables (w times a
// constant, with bounded bounds, see interval()); a local the body declares (and never reassigns) stands for
// its value, and products with constants distribute over sums. Any other term in v or in a
// name the body declares defeats the analysis (it varies unknowably).
struct IndexForm {
  int64_t k = 0;
  int found = 0;                                // terms in v (k sums their coefficients)
  std::vector<std::pair<Expr, int64_t>> fixed;  // term, coefficient
  int64_t lo = 0, hi = 0;
};

struct BodyNames {
  std::set<std::string> declared;                             // varying from one iteration to the next
  std::map<std::string, Expr> lets;                           // locals never reassigned
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;  // loop variables with bounded bounds
};

// The values an i64 expression of constants, the body's loop variables and its locals can take
// (sums, differences, products with a constant, min and max), if bounded.
std::optional<std::pair<int64_t, int64_t>> interval(const Expr& e, const BodyNames& n, int depth = 0) {
  using Range = std::pair<int64_t, int64_t>;
  if (depth > 32) return std::nullopt;
  int64_t c = 0;
  if (is_int_const(e, &c)) return Range{c, c};
  if (e->kind == ExprKind::var) {
    if (auto r = n.ranges.find(e->name); r != n.ranges.end()) return r->second;
    if (auto l = n.lets.find(e->name); l != n.lets.end()) return interval(l->second, n, depth + 1);
    return std::nullopt;
  }
  if (e->kind != ExprKind::binary) return std::nullopt;
  auto a = interval(e->args[0], n, depth + 1), b = interval(e->args[1], n, depth + 1);
  if (!a || !b) return std::nullopt;
  switch (e->binary) {
    case BinaryOp::add:
      return Range{a->first + b->first, a->second + b->second};
    case BinaryOp::sub:
      return Range{a->first - b->second, a->second - b->first};
    case BinaryOp::min:
      return Range{std::min(a->first, b->first), std::min(a->second, b->second)};
    case BinaryOp::max:
      return Range{std::max(a->first, b->first), std::max(a->second, b->second)};
    case BinaryOp::mul:
      if (a->first == a->second || b->first == b->second) {
        int64_t p[4] = {a->first * b->first, a->first * b->second, a->second * b->first, a->second * b->second};
        return Range{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void body_names(const Block& b, BodyNames& n, const std::set<std::string>& assigned) {
  for (const Stmt& sp : b) {
    const StmtNode& s = *sp;
    if (s.kind == StmtKind::let) {
      n.declared.insert(s.var);
      if (!assigned.count(s.var)) n.lets[s.var] = s.value;
    } else if (s.kind == StmtKind::loop) {
      n.declared.insert(s.var);
      auto lo = interval(s.begin, n), hi = interval(s.end, n);
      if (lo && hi && hi->second > lo->first) n.ranges[s.var] = {lo->first, hi->second - 1};
    }
    body_names(s.body, n, assigned);
  }
}

bool mentions_any(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& w : names)
    if (mentions(e, w)) return true;
  return false;
}

// Adds coef * e to f. Products with an int constant distribute over sums.
bool index_terms(const Expr& e, int64_t coef, const std::string& v, const BodyNames& n, IndexForm& f, int depth) {
  if (depth > 32) return false;
  int64_t c = 0;
  if (e->kind == ExprKind::binary && (e->binary == BinaryOp::add || e->binary == BinaryOp::sub))
    return index_terms(e->args[0], coef, v, n, f, depth + 1) &&
           index_terms(e->args[1], e->binary == BinaryOp::sub ? -coef : coef, v, n, f, depth + 1);
  if (e->kind == ExprKind::binary && e->binary == BinaryOp::mul) {
    if (is_int_const(e->args[1], &c)) return index_terms(e->args[0], coef * c, v, n, f, depth + 1);
    if (is_int_const(e->args[0], &c)) return index_terms(e->args[1], coef * c, v, n, f, depth + 1);
  }
  if (is_int_const(e, &c)) {
    f.lo += coef * c;
    f.hi += coef * c;
    return true;
  }
  if (coef == 0) return !mentions(e, v);
  if (e->kind == ExprKind::var) {
    if (e->name == v) {
      f.k += coef;
      ++f.found;
      return true;
    }
    if (auto r = n.ranges.find(e->name); r != n.ranges.end()) {
      int64_t a = coef * r->second.first, b = coef * r->second.second;
      f.lo += std::min(a, b);
      f.hi += std::max(a, b);
      return true;
    }
    if (auto l = n.lets.find(e->name); l != n.lets.end()) return index_terms(l->second, coef, v, n, f, depth + 1);
  }
  // A fixed term must be the same in every iteration: no name of the body, no load (the loop
  // may store to what it reads).
  std::vector<const ExprNode*> loads;
  loads_of(e, loads);
  if (mentions(e, v) || mentions_any(e, n.declared) || !loads.empty()) return false;
  f.fixed.emplace_back(e, coef);
  return true;
}

std::optional<IndexForm> index_form(const Expr& index, const std::string& v, const BodyNames& n) {
  IndexForm f;
  if (!index_terms(index, 1, v, n, f, 0) || f.found < 1 || f.k == 0) return std::nullopt;
  return f;
}

bool same_fixed(const IndexForm& a, const IndexForm& b) {
  if (a.fixed.size() != b.fixed.size()) return false;
  std::vector<bool> used(b.fixed.size(), false);
  for (const auto& [e, sign] : a.fixed) {
    bool hit = false;
    for (size_t j = 0; j < b.fixed.size() && !hit; ++j)
      if (!used[j] && b.fixed[j].second == sign && same_expr(b.fixed[j].first, e)) used[j] = hit = true;
    if (!hit) return false;
  }
  return true;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The iteration count of `loop` if known: constant bounds, or `end` written as `begin + c`.
std::optional<int64_t> trip_count(const StmtNode& loop) {
  int64_t b = 0, e = 0, c = 0;
  if (is_int_const(loop.begin, &b) && is_int_const(loop.end, &e)) return std::max<int64_t>(e - b, 0);
  const Expr& end = loop.end;
  if (end->kind == ExprKind::binary && end->binary == BinaryOp::add && is_int_const(end->args[1], &c) &&
      same_expr(end->args[0], loop.begin))
    return std::max<int64_t>(c, 0);
  return std::nullopt;
}

// True if iterations v1 != v2 of a loop of `trips` iterations can never reach one element
// through the two accesses: k*v1 + off1 == k*v2 + off2 needs k*m in off2 - off1 for some
// m = v1 - v2 with 0 < |m| < trips.
bool disjoint_across(const IndexForm& a, const IndexForm& b, std::optional<int64_t> trips) {
  if (a.k != b.k || !same_fixed(a, b)) return false;
  const int64_t K = a.k < 0 ? -a.k : a.k;
  const int64_t d_lo = b.lo - a.hi, d_hi = b.hi - a.lo;
  int64_t m_lo = -floor_div(-d_lo, K), m_hi = floor_div(d_hi, K);  // ceil(d_lo/K), floor(d_hi/K)
  if (trips) {
    m_lo = std::max(m_lo, 1 - *trips);
    m_hi = std::min(m_hi, *trips - 1);
  }
  if (m_lo > m_hi) return true;
  return m_lo == 0 && m_hi == 0;
}

}  // namespace

// A loop whose iterations may run on different threads at once: no failure inside, no local
// declared outside it assigned, and for every buffer the loop stores to, each iteration's
// stores and loads of it stay in elements no other iteration stores to (IndexForm). Buffers
// the loop only reads may have been written before it: the printer separates a spread loop
// from earlier writes of its team with a barrier, and other teams run other iterations of an
// enclosing loop, which is itself checked here.
bool distributable(const StmtNode& loop) {
  Effects fx = effects(loop.body);
  if (fx.has_fail) return false;
  for (const std::string& a : fx.assigned)
    if (!fx.declared.count(a)) return false;
  BodyNames names;
  body_names(loop.body, names, fx.assigned);
  const std::optional<int64_t> trips = trip_count(loop);
  std::map<int, std::vector<IndexForm>> stores, loads;
  for (const StmtNode* s : fx.stores) {
    auto f = index_form(s->index, loop.var, names);
    if (!f) return false;
    stores[s->param].push_back(*f);
  }
  for (const ExprNode* l : fx.loads) {
    if (!stores.count(l->param)) continue;
    auto f = index_form(l->args[0], loop.var, names);
    if (!f) return false;
    loads[l->param].push_back(*f);
  }
  for (const auto& [param, st] : stores) {
    for (size_t i = 0; i < st.size(); ++i) {
      for (size_t j = i; j < st.size(); ++j)
        if (!disjoint_across(st[i], st[j], trips)) return false;
      for (const IndexForm& ld : loads[param])
        if (!disjoint_across(st[i], ld, trips)) return false;
    }
  }
  return true;
}

// True if every store in the loop's body moves by exactly one element per iteration (v has
// coefficient 1 in its IndexForm, also through locals): neighbouring threads then touch
// neighbouring elements (coalesced).
bool unit_stride(const StmtNode& loop) {
  Effects fx = effects(loop.body);
  BodyNames names;
  body_names(loop.body, names, fx.assigned);
  for (const StmtNode* s : fx.stores) {
    auto f = index_form(s->index, loop.var, names);
    if (!f || (f->k != 1 && f->k != -1)) return false;
  }
  return true;
}

// Following bodies that hold only locals and one loop, the first loop that may be spread and
// moves its stores by one element per iteration, if it has at least min(16, outer's trips)
// iterations (fewer lanes than that would cost more than uncoalesced accesses do).
const StmtNode* coalesced_inner(const StmtNode& outer) {
  const std::optional<int64_t> outer_trips = trip_count(outer);
  const int64_t want = std::min<int64_t>(16, outer_trips.value_or(16));
  const StmtNode* cur = &outer;
  for (int depth = 0; depth < 8; ++depth) {
    const StmtNode* inner = nullptr;
    for (const Stmt& sp : cur->body) {
      if (sp->kind == StmtKind::loop) {
        if (inner) return nullptr;
        inner = sp.get();
      } else if (sp->kind != StmtKind::let) {
        return nullptr;
      }
    }
    if (!inner) return nullptr;
    if (distributable(*inner) && unit_stride(*inner)) {
      std::optional<int64_t> trips = trip_count(*inner);
      return trips && *trips >= want ? inner : nullptr;
    }
    cur = inner;
  }
  return nullptr;
}

std::optional<Reduction> reduction_nest(const StmtNode& loop) {
  Reduction r;
  const StmtNode* cur = &loop;
  r.loops.push_back(cur);
  while (cur->body.size() == 1 && cur->body[0]->kind == StmtKind::loop) {
    cur = cur->body[0].get();
    r.loops.push_back(cur);
  }
  if (cur->body.size() != 1 || cur->body[0]->kind != StmtKind::assign) return std::nullopt;
  const StmtNode& a = *cur->body[0];
  const Expr& v = a.value;
  if (v->kind != ExprKind::binary) return std::nullopt;
  if (v->binary != BinaryOp::add && v->binary != BinaryOp::max && v->binary != BinaryOp::min) return std::nullopt;
  auto is_x = [&](const Expr& e) { return e->kind == ExprKind::var && e->name == a.var; };
  if (is_x(v->args[0]) && !mentions(v->args[1], a.var))
    r.term = v->args[1];
  else if (v->binary == BinaryOp::add && is_x(v->args[1]) && !mentions(v->args[0], a.var))
    r.term = v->args[0];
  else
    return std::nullopt;
  for (const StmtNode* l : r.loops)
    if (mentions(l->begin, a.var) || mentions(l->end, a.var)) return std::nullopt;
  r.var = a.var;
  r.op = v->binary;
  return r;
}

}  // namespace dnnc::codegen::loops
