// Tensor type helpers: names, printing, element counts.
#include "ir/types.h"

#include <fmt/format.h>

namespace dnnc::ir {

bool TensorType::has_batch() const {
  for (Dim d : shape)
    if (d == kBatch) return true;
  return false;
}

std::optional<int64_t> TensorType::numel(int64_t batch) const {
  int64_t n = 1;
  for (Dim d : shape) {
    int64_t v = d == kBatch ? batch : d;
    if (v < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, v, &n)) return std::nullopt;
  }
  return n;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i64: return "i64";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "i64") return DType::i64;
  return std::nullopt;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::row_major: return "row_major";
    case Layout::nhwc: return "nhwc";
    case Layout::col_major: return "col_major";
  }
  return "?";
}

std::optional<Layout> parse_layout(const std::string& s) {
  if (s == "row_major") return Layout::row_major;
  if (s == "nhwc") return Layout::nhwc;
  if (s == "col_major") return Layout::col_major;
  return std::nullopt;
}

std::string shape_to_string(const Shape& s, const std::string& batch_symbol) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += s[i] == kBatch ? batch_symbol : std::to_string(s[i]);
  }
  return out + "]";
}

std::string to_string(const TensorType& t, const std::string& batch_symbol) {
  std::string out = fmt::format("{}{}", dtype_name(t.dtype), shape_to_string(t.shape, batch_symbol));
  if (t.layout != Layout::row_major) out += fmt::format("{{{}}}", layout_name(t.layout));
  return out;
}

}  // namespace dnnc::ir
