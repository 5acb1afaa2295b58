// Helpers shared by the reference-kernel tests: seeded random buffers, relative error,
// central finite differences and a Catch2 matcher-style check for buffers.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "runtime/reference/buf.h"

namespace dnnc::runtime::reference::testing {

using BufD = Buf<double>;
using BufF = Buf<float>;

/// Uniform random values in [lo, hi) from a seeded generator.
inline BufD random_buf(Shape shape, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  BufD b(std::move(shape));
  for (auto& v : b.data) v = u(rng);
  return b;
}

/// ‖a−b‖₂/‖b‖₂ (‖a−b‖₂ if b is zero). Fails the test if the shapes differ.
template <class T, class U>
double rel_err(const Buf<T>& a, const Buf<U>& b) {
  REQUIRE(a.shape == b.shape);
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    num += d * d;
    den += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

/// Σ a·b over equal shapes (the scalar objective of a gradient check).
inline double dot(const BufD& a, const BufD& b) {
  REQUIRE(a.shape == b.shape);
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a[i] * b[i];
  return s;
}

/// Central-difference gradient of the scalar function f at x, one coordinate at a time.
inline BufD numeric_grad(BufD x, const std::function<double(const BufD&)>& f, double h = 1e-6) {
  BufD g(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double fp = f(x);
    x[i] = saved - h;
    double fm = f(x);
    x[i] = saved;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

/// A buffer from a shape and literal values (double precision for hand-computed expectations).
template <class T = double>
Buf<T> make(Shape shape, std::vector<double> values) {
  std::vector<T> d(values.begin(), values.end());
  return Buf<T>(std::move(shape), std::move(d));
}

/// Requires equal shapes and every element within `tol` of the expectation (absolute).
template <class T>
void require_close(const Buf<T>& got, const BufD& want, double tol = 1e-6) {
  REQUIRE(got.shape == want.shape);
  for (int64_t i = 0; i < got.numel(); ++i) {
    INFO("element " << i << ": got " << static_cast<double>(got[i]) << ", want " << want[i]);
    REQUIRE(std::abs(static_cast<double>(got[i]) - want[i]) <= tol);
  }
}

}  // namespace dnnc::runtime::reference::testing
