// Node attributes: a small, ordered, typed key/value map printed as `{k=v, ...}`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace dnnc::ir {

/// Attribute values. Shapes inside attributes (e.g. reshape targets) are int lists in
/// which kBatch (-1) stands for the symbolic batch dimension.
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

enum class AttrKind : uint8_t { int_, float_, bool_, string, ints, floats };

AttrKind attr_kind(const AttrValue& v);
const char* attr_kind_name(AttrKind k);  // "int", "float", "bool", "string", "ints", "floats"

/// Ordered by key so printing is deterministic.
using Attrs = std::map<std::string, AttrValue>;

/// Typed accessors. They assert (broken invariant) if the key is missing or has another kind:
/// the verifier guarantees attributes match the op's schema before anyone reads them.
int64_t attr_int(const Attrs& a, const std::string& key);
double attr_float(const Attrs& a, const std::string& key);
bool attr_bool(const Attrs& a, const std::string& key);
const std::string& attr_string(const Attrs& a, const std::string& key);
const std::vector<int64_t>& attr_ints(const Attrs& a, const std::string& key);
const std::vector<double>& attr_floats(const Attrs& a, const std::string& key);

/// Prints a value exactly (floats round-trip bit-exactly through parse).
std::string attr_to_string(const AttrValue& v);

}  // namespace dnnc::ir
