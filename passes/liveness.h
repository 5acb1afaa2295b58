// Value lifetimes over the kernel schedule at the IR level: the peak `schedule` minimises (the
// executed arena is planned on the lowered program, codegen/lower/plan_memory.h).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace dnnc::passes {

/// A value that needs its own storage in the activation arena, live over steps [first, last]
/// of kernel_steps(g) (inclusive; graph outputs live to the end).
struct Lifetime {
  ir::ValueId value = ir::kNoValue;
  int first = 0, last = 0;
  int64_t bytes = 0;
};

struct Liveness {
  std::vector<Lifetime> buffers;  // arena buffers, in order of definition
  /// Per value: the value whose storage it uses (itself for buffers; the viewed value for
  /// views; the param for in-place optimizer updates); kNoValue if it needs none (inputs,
  /// params, values internal to a fused kernel).
  std::vector<ir::ValueId> storage;
  int num_steps = 0;
};

/// Batch size memory is planned for: the train block's batch, or 1 without one.
int64_t plan_batch(const ir::Module& m);

/// Lifetimes for the graph's current node order and fusion groups.
Liveness compute_liveness(const ir::Graph& g, int64_t batch);

/// Max over steps of the bytes of buffers live at that step: a lower bound on any arena.
int64_t max_live_bytes(const Liveness& l);

}  // namespace dnnc::passes
