// Comparing a computed tensor with a golden one: ‖a−b‖/‖b‖ (absolute error when the golden is all
// zero) and a failure report with the first mismatching elements and the largest difference.
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace dnnc::golden {

struct Comparison {
  bool ok = false;
  bool shape_ok = false;
  bool zero_ref = false;   // the golden is all zero: `error` is then ‖a−b‖₂ (absolute)
  double error = 0;        // ‖a−b‖₂/‖b‖₂, or ‖a−b‖₂ for an all-zero golden
  double max_abs = 0;      // largest |a_i − b_i|
  int64_t max_abs_at = -1; // its flat index
  std::string report;      // one line on success; details (first mismatches, largest diff) on failure
};

/// Compares `got` with `want` (both f32, or both i64) under `tol`. `what` names the pair in the
/// report ("conv2d_stride2 out.y"). A shape or dtype difference is a failure, never an exception.
/// An element counts as mismatching when |a_i − b_i| > tol·max(|b_i|, rms(b)) (tol alone for a zero
/// golden); the report lists the first few as (index, got, expected).
Comparison compare_tensors(const std::string& what, const runtime::Tensor& got, const runtime::Tensor& want,
                           double tol);

/// An f32 tensor of shape [n] holding `v` (to compare loss trajectories as vectors).
runtime::Tensor vector_tensor(const std::vector<float>& v);

/// Records the comparison as a Catch2 check: the report is attached to the assertion (shown on
/// failure, and for passing checks with `-s`). Returns whether it passed.
inline bool check_close(const std::string& what, const runtime::Tensor& got, const runtime::Tensor& want, double tol) {
  Comparison c = compare_tensors(what, got, want, tol);
  INFO(c.report);
  CHECK(c.ok);
  return c.ok;
}

}  // namespace dnnc::golden
