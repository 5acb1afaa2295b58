// Internal checks (ir/check.h): DNNC_CHECK runs in every build and raises an InternalError that
// names the innermost CheckScope; the pass manager names the pass that broke an invariant.
#include <catch2/catch.hpp>

#include "ir/check.h"

using Catch::Matchers::Contains;

namespace {

int checked_half(int x) {
  DNNC_CHECK(x % 2 == 0, "{} is odd", x);
  return x / 2;
}

}  // namespace

TEST_CASE("DNNC_CHECK passes a true condition and throws InternalError on a false one", "[check]") {
  CHECK(checked_half(4) == 2);
  try {
    checked_half(3);
    FAIL("no throw");
  } catch (const dnnc::InternalError& e) {
    CHECK(e.component() == "dnnc");
    CHECK(e.message() == "3 is odd");
    CHECK_THAT(e.what(), Contains("internal compiler error in dnnc: 3 is odd") && Contains("x % 2 == 0") &&
                             Contains("tests/ir/check_test.cpp:"));
  }
}

TEST_CASE("an InternalError names the innermost CheckScope, then the enclosing ones", "[check]") {
  dnnc::CheckScope outer("pass fuse");
  {
    dnnc::CheckScope inner("kernel k3_relu");
    CHECK(dnnc::check_scopes().size() == 2);
    try {
      checked_half(5);
      FAIL("no throw");
    } catch (const dnnc::InternalError& e) {
      CHECK(e.component() == "kernel k3_relu (in pass fuse)");
    }
  }
  CHECK(dnnc::check_scopes().size() == 1);
  CHECK_THROWS_WITH(checked_half(7), Contains("internal compiler error in pass fuse: 7 is odd"));
}

TEST_CASE("a scope unwound by an exception is closed", "[check]") {
  try {
    dnnc::CheckScope s("lowering");
    checked_half(1);
  } catch (const dnnc::InternalError&) {
  }
  CHECK(dnnc::check_scopes().empty());
}

TEST_CASE("DNNC_EXPENSIVE_CHECK runs only in expensive-check builds", "[check]") {
  bool ran = false;
  auto probe = [&] {
    ran = true;
    return true;
  };
  DNNC_EXPENSIVE_CHECK(probe(), "never fails");
  CHECK(ran == dnnc::kExpensiveChecks);
}
