// Test helper: writes tensor types tersely, ty("f32[N,3,32,32]{nhwc}").
#pragma once
#include <cassert>
#include <sstream>
#include <string>

#include "ir/types.h"

namespace dnnc::ir::test {

/// Parses "dtype[d0,d1,...]" with an optional "{layout}" suffix; `N` is the batch dim.
inline TensorType ty(const std::string& s) {
  TensorType t;
  size_t open = s.find('['), close = s.find(']');
  assert(open != std::string::npos && close != std::string::npos && "bad test type");
  t.dtype = *parse_dtype(s.substr(0, open));
  std::stringstream dims(s.substr(open + 1, close - open - 1));
  for (std::string d; std::getline(dims, d, ',');) t.shape.push_back(d == "N" ? kBatch : std::stoll(d));
  if (close + 1 < s.size()) t.layout = *parse_layout(s.substr(close + 2, s.size() - close - 3));
  return t;
}

}  // namespace dnnc::ir::test
