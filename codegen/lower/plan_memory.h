// plan-memory: the activation arena of a lowered program. Runs last in lower_graph, where every
// buffer the backends will touch is known (the values codegen materialises and the scratch of
// its kernels: im2col columns, partial sums, pool argmax rows), so the plan is exactly the
// memory the backends allocate and the offsets are where they place each buffer.
#pragma once
#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// Assigns every intermediate and scratch buffer of `p` an offset in one arena and fills
/// p.arena. Lifetimes are buffer_lives(p) (over step times: co-scheduled GEMMs share one);
/// each buffer goes into the best-fitting gap among the already placed buffers whose lifetimes
/// overlap its own, at multiples of kArenaAlign (TFLite's arena planner, XLA's heap simulator).
/// The placement is tried in four orders (largest first; largest size x lifetime first;
/// longest-lived first; first-born first) and the smallest arena kept. Throws InternalError for an arena
/// buffer no step reads or writes (a lowering bug).
void plan_memory(Program& p);

}  // namespace dnnc::codegen
