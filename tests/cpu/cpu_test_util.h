// Shared helpers for cpu backend tests: the test cache (models, random inputs and comparisons:
// tests/support/).
#pragma once
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/reference/interpreter.h"
#include "tests/support/inputs.h"
#include "tests/support/models.h"

namespace dnnc::test {

/// Options of a cpu backend whose cache is the build tree's shared test cache.
inline runtime::cpu::CpuOptions cpu_test_options() {
  runtime::cpu::CpuOptions o;
  o.jit.cache_dir = DNNC_TEST_CACHE_DIR;
  o.poison_arena = true;  // every cpu test runs in the arena checking mode
  return o;
}

}  // namespace dnnc::test
