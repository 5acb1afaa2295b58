// Structural module comparison for round-trip and pass tests.
#include "ir/compare.h"

#include <fmt/format.h>

#include <cstring>

namespace dnnc::ir {
namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

std::string attrs_diff(const Attrs& a, const Attrs& b) {
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) return fmt::format("attribute '{}' only on the left", k);
    if (!attr_equal(v, it->second))
      return fmt::format("attribute '{}': {} vs {}", k, attr_to_string(v), attr_to_string(it->second));
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) return fmt::format("attribute '{}' only on the right", k);
  return {};
}

std::string loc_str(SourceLoc l) { return fmt::format("{}:{}", l.line, l.col); }

// "%x: f32[N,3]" / "@w: f32[3]"; out-of-range ids print as such.
std::string value_str(const Graph& g, ValueId id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return fmt::format("<bad id {}>", id);
  const Value& v = g.value(id);
  return fmt::format("{}{}: {}{}", v.kind == ValueKind::param ? "@" : "%", v.name, to_string(v.type),
                     v.kind == ValueKind::input ? " (input)" : "");
}

std::string ids_diff(const Graph& ga, const std::vector<ValueId>& a, const Graph& gb, const std::vector<ValueId>& b,
                     const std::string& what) {
  if (a.size() != b.size()) return fmt::format("{}: {} vs {} values", what, a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::string va = value_str(ga, a[i]), vb = value_str(gb, b[i]);
    if (va != vb) return fmt::format("{} {}: {} vs {}", what, i, va, vb);
  }
  return {};
}

std::string graph_diff(const Graph& a, const Graph& b) {
  if (a.name != b.name) return fmt::format("name '{}' vs '{}'", a.name, b.name);
  if (auto d = ids_diff(a, a.inputs, b, b.inputs, "input"); !d.empty()) return d;
  if (a.nodes.size() != b.nodes.size()) return fmt::format("{} vs {} nodes", a.nodes.size(), b.nodes.size());
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const Node &x = a.nodes[n], &y = b.nodes[n];
    std::string where = fmt::format("node {} ({})", n, x.op);
    if (x.op != y.op) return fmt::format("{}: op {} vs {}", where, x.op, y.op);
    if (auto d = ids_diff(a, x.inputs, b, y.inputs, where + " operand"); !d.empty()) return d;
    if (auto d = ids_diff(a, x.outputs, b, y.outputs, where + " result"); !d.empty()) return d;
    if (auto d = attrs_diff(x.attrs, y.attrs); !d.empty()) return where + ": " + d;
    if (!(x.loc == y.loc)) return fmt::format("{}: loc {} vs {}", where, loc_str(x.loc), loc_str(y.loc));
    if (x.group != y.group) return fmt::format("{}: fusion group {} vs {}", where, x.group, y.group);
    if (x.role != y.role) return fmt::format("{}: fusion role '{}' vs '{}'", where, x.role, y.role);
  }
  if (auto d = ids_diff(a, a.outputs, b, b.outputs, "output"); !d.empty()) return d;
  if (a.groups.size() != b.groups.size()) return fmt::format("{} vs {} fusion groups", a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i)
    if (a.groups[i].kind != b.groups[i].kind)
      return fmt::format("fusion group {}: '{}' vs '{}'", i, a.groups[i].kind, b.groups[i].kind);
  if (a.updates.size() != b.updates.size()) return fmt::format("{} vs {} updates", a.updates.size(), b.updates.size());
  for (size_t i = 0; i < a.updates.size(); ++i) {
    if (a.updates[i].first != b.updates[i].first)
      return fmt::format("update {}: @{} vs @{}", i, a.updates[i].first, b.updates[i].first);
    if (auto d = ids_diff(a, {a.updates[i].second}, b, {b.updates[i].second}, "update value"); !d.empty()) return d;
  }
  return {};
}

std::string params_diff(const Module& a, const Module& b) {
  if (a.params.size() != b.params.size()) return fmt::format("{} vs {} params", a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const Param &x = a.params[i], &y = b.params[i];
    std::string where = fmt::format("param {} (@{})", i, x.name);
    if (x.name != y.name) return fmt::format("{}: name @{} vs @{}", where, x.name, y.name);
    if (x.type != y.type) return fmt::format("{}: type {} vs {}", where, to_string(x.type), to_string(y.type));
    if (x.role != y.role)
      return fmt::format("{}: role {} vs {}", where, param_role_name(x.role), param_role_name(y.role));
    if (x.init.kind != y.init.kind || !same_bits(x.init.bound, y.init.bound))
      return fmt::format("{}: init {}({}) vs {}({})", where, x.init.kind, attr_to_string(x.init.bound), y.init.kind,
                         attr_to_string(y.init.bound));
    if (!(x.loc == y.loc)) return fmt::format("{}: loc {} vs {}", where, loc_str(x.loc), loc_str(y.loc));
  }
  return {};
}

std::string train_diff(const TrainConfig& a, const TrainConfig& b) {
  if (a.present != b.present) return fmt::format("train present {} vs {}", a.present, b.present);
  if (!a.present) return {};
  if (a.data.dataset != b.data.dataset) return fmt::format("train data '{}' vs '{}'", a.data.dataset, b.data.dataset);
  if (!same_bits(a.data.mean, b.data.mean) || !same_bits(a.data.std, b.data.std))
    return fmt::format("train normalisation mean={} std={} vs mean={} std={}", attr_to_string(a.data.mean),
                       attr_to_string(a.data.std), attr_to_string(b.data.mean), attr_to_string(b.data.std));
  if (a.data.crop_padding != b.data.crop_padding || !same_bits(a.data.flip_p, b.data.flip_p))
    return fmt::format("train augmentation crop_padding={} flip_p={} vs crop_padding={} flip_p={}", a.data.crop_padding,
                       a.data.flip_p, b.data.crop_padding, b.data.flip_p);
  if (a.batch != b.batch || a.epochs != b.epochs || a.seed != b.seed)
    return fmt::format("train batch/epochs/seed {}/{}/{} vs {}/{}/{}", a.batch, a.epochs, a.seed, b.batch, b.epochs,
                       b.seed);
  if (!same_bits(a.clip_grad_norm, b.clip_grad_norm))
    return fmt::format("train clip_grad_norm {} vs {}", a.clip_grad_norm, b.clip_grad_norm);
  if (a.optimizer.kind != b.optimizer.kind)
    return fmt::format("optimizer '{}' vs '{}'", a.optimizer.kind, b.optimizer.kind);
  if (auto d = attrs_diff(a.optimizer.attrs, b.optimizer.attrs); !d.empty()) return "optimizer " + d;
  if (a.schedule.kind != b.schedule.kind)
    return fmt::format("schedule '{}' vs '{}'", a.schedule.kind, b.schedule.kind);
  if (auto d = attrs_diff(a.schedule.attrs, b.schedule.attrs); !d.empty()) return "schedule " + d;
  if (!(a.loc == b.loc)) return fmt::format("train loc {} vs {}", loc_str(a.loc), loc_str(b.loc));
  return {};
}

}  // namespace

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) return same_bits(*x, std::get<double>(b));
  if (auto* x = std::get_if<std::vector<double>>(&a)) return same_bits(*x, std::get<std::vector<double>>(b));
  return a == b;
}

std::string module_diff(const Module& a, const Module& b) {
  if (a.name != b.name) return fmt::format("module name '{}' vs '{}'", a.name, b.name);
  if (a.source_file != b.source_file) return fmt::format("source '{}' vs '{}'", a.source_file, b.source_file);
  if (a.batch_symbol != b.batch_symbol) return fmt::format("batch symbol {} vs {}", a.batch_symbol, b.batch_symbol);
  if (auto d = params_diff(a, b); !d.empty()) return d;
  if (auto d = train_diff(a.train, b.train); !d.empty()) return d;
  if (a.graphs.size() != b.graphs.size()) return fmt::format("{} vs {} graphs", a.graphs.size(), b.graphs.size());
  for (size_t i = 0; i < a.graphs.size(); ++i)
    if (auto d = graph_diff(a.graphs[i], b.graphs[i]); !d.empty())
      return fmt::format("graph '{}': {}", a.graphs[i].name, d);
  return {};
}

}  // namespace dnnc::ir
