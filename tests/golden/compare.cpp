// Tensor comparison for the golden tests (see compare.h).
#include "compare.h"

#include <fmt/format.h>

#include <cmath>

namespace dnnc::golden {

namespace {

double element(const runtime::Tensor& t, int64_t i) {
  return t.dtype() == ir::DType::f32 ? static_cast<double>(t.f32()[i]) : static_cast<double>(t.i64()[i]);
}

}  // namespace

Comparison compare_tensors(const std::string& what, const runtime::Tensor& got, const runtime::Tensor& want,
                           double tol) {
  Comparison c;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    c.report = fmt::format("{}: got {}, expected {}", what, runtime::describe(got), runtime::describe(want));
    return c;
  }
  c.shape_ok = true;
  int64_t n = want.numel();
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = element(got, i), b = element(want, i), d = a - b;
    num += d * d;
    den += b * b;
    if (std::isnan(d) ? !std::isnan(c.max_abs) : std::abs(d) > c.max_abs) {  // a NaN, once seen, stays
      c.max_abs = std::abs(d);
      c.max_abs_at = i;
    }
  }
  c.zero_ref = den == 0;
  c.error = c.zero_ref ? std::sqrt(num) : std::sqrt(num / den);
  c.ok = c.error <= tol;  // false for NaN
  std::string kind = c.zero_ref ? "abs err (golden is all zero)" : "rel err";
  c.report = fmt::format("{}: {} {:.3g} (tol {:.0e}), {}", what, kind, c.error, tol, runtime::describe(want));
  if (c.ok) return c;

  double rms = n > 0 ? std::sqrt(den / static_cast<double>(n)) : 0;
  std::string firsts;
  int shown = 0;
  for (int64_t i = 0; i < n && shown < 5; ++i) {
    double a = element(got, i), b = element(want, i);
    double limit = c.zero_ref ? tol : tol * std::max(std::abs(b), rms);
    if (std::abs(a - b) <= limit) continue;
    firsts += fmt::format("\n  [{}] got {:.9g}, expected {:.9g}", i, a, b);
    ++shown;
  }
  c.report += " FAILED; first mismatching elements (index, got, expected):" + firsts;
  if (c.max_abs_at >= 0)
    c.report += fmt::format("\n  largest abs difference {:.3g} at [{}]: got {:.9g}, expected {:.9g}", c.max_abs,
                            c.max_abs_at, element(got, c.max_abs_at), element(want, c.max_abs_at));
  return c;
}

runtime::Tensor vector_tensor(const std::vector<float>& v) {
  return runtime::Tensor::from_f32({static_cast<int64_t>(v.size())}, v);
}

}  // namespace dnnc::golden
