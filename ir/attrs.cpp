// Attribute kinds, typed accessors and exact printing.
#include "ir/attrs.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "ir/check.h"

namespace dnnc::ir {

AttrKind attr_kind(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::int_:
      return "int";
    case AttrKind::float_:
      return "float";
    case AttrKind::bool_:
      return "bool";
    case AttrKind::string:
      return "string";
    case AttrKind::ints:
      return "ints";
    case AttrKind::floats:
      return "floats";
  }
  return "?";
}

namespace {
template <class T>
const T& get(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  DNNC_CHECK(it != a.end(), "attribute missing: the verifier should have caught this");
  const T* v = std::get_if<T>(&it->second);
  DNNC_CHECK(v, "attribute has the wrong kind: the verifier should have caught this");
  return *v;
}

// Shortest decimal that parses back to the same double ("0.001", "1e-08", "0.5").
std::string exact_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

int64_t attr_int(const Attrs& a, const std::string& key) { return get<int64_t>(a, key); }
double attr_float(const Attrs& a, const std::string& key) {
  auto it = a.find(key);
  if (it != a.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return get<double>(a, key);
}
bool attr_bool(const Attrs& a, const std::string& key) { return get<bool>(a, key); }
const std::string& attr_string(const Attrs& a, const std::string& key) { return get<std::string>(a, key); }
const std::vector<int64_t>& attr_ints(const Attrs& a, const std::string& key) {
  return get<std::vector<int64_t>>(a, key);
}
const std::vector<double>& attr_floats(const Attrs& a, const std::string& key) {
  return get<std::vector<double>>(a, key);
}

std::string attr_to_string(const AttrValue& v) {
  switch (attr_kind(v)) {
    case AttrKind::int_:
      return std::to_string(std::get<int64_t>(v));
    case AttrKind::float_:
      return exact_double(std::get<double>(v));
    case AttrKind::bool_:
      return std::get<bool>(v) ? "true" : "false";
    case AttrKind::string: {
      std::string out = "\"";
      for (char c : std::get<std::string>(v)) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
      return out + "\"";
    }
    case AttrKind::ints: {
      std::string out = "[";
      const auto& xs = std::get<std::vector<int64_t>>(v);
      for (size_t i = 0; i < xs.size(); ++i) out += (i ? "," : "") + std::to_string(xs[i]);
      return out + "]";
    }
    case AttrKind::floats: {
      std::string out = "[";
      const auto& xs = std::get<std::vector<double>>(v);
      for (size_t i = 0; i < xs.size(); ++i) out += (i ? "," : "") + exact_double(xs[i]);
      return out + "]";
    }
  }
  return "?";
}

}  // namespace dnnc::ir
