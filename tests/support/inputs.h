// Shared test helpers: seeded random inputs for a graph (runtime/data/random_inputs.h), and
// tensor comparison.
#pragma once
#include <catch2/catch.hpp>
#include <string>

#include "runtime/data/random_inputs.h"
#include "runtime/tensor.h"

namespace dnnc::test {

using runtime::Fill;
using runtime::random_inputs;

/// Checks rel_error(got, want) <= tol (and equality for i64 tensors), naming `what`.
inline void check_close(const runtime::Tensor& got, const runtime::Tensor& want, const std::string& what,
                        double tol = 1e-5) {
  INFO(what << ": got " << runtime::describe(got) << ", want " << runtime::describe(want));
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (got.dtype() == ir::DType::i64) {
    for (int64_t i = 0; i < got.numel(); ++i) REQUIRE(got.i64()[i] == want.i64()[i]);
    return;
  }
  double err = runtime::rel_error(got, want);
  INFO("relative error " << err);
  CHECK(err <= tol);
}

}  // namespace dnnc::test
