// A concrete race check of a parallel loop, for the kernel IR verifier's expensive checks: runs
// the loop's index arithmetic for every iteration (no data: only i64 values computed from loop
// variables, index params and constants) and looks for an element two iterations both reach
// where one of them stores. It decides the loops whose element windows are not a linear
// function of the loop variable (IndexBounds::per_iteration), such as bands of rows where the
// last band takes the leftover rows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "codegen/kir/kernel_ir.h"

namespace dnnc::codegen {

struct RaceVerdict {
  bool decided = false;  // false: an index, a loop bound or a condition depends on data, or the
                         // loop is too large to run (`budget` index evaluations)
  std::string conflict;  // decided: empty if no two iterations meet, else the first meeting
};

/// Loop `loop` must be a top-level statement of `k` (the statements before it are run first).
RaceVerdict concrete_race_check(const Kernel& k, const StmtNode& loop, int64_t budget = 4'000'000);

}  // namespace dnnc::codegen
