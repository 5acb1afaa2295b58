// The memory-plan checker: proves that no two simultaneously live buffers overlap.
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::passes {

/// Recomputes lifetimes over the graph's current schedule and checks the graph's MemoryPlan:
/// every materialised value has a slot of the right size inside the arena, and any two slots
/// whose lifetimes overlap (and that are not aliases of one another) occupy disjoint bytes.
/// Returns "" if the plan is sound, else a message naming the two values and their ranges.
std::string check_memory_plan(const ir::Graph& g);

}  // namespace dnnc::passes
