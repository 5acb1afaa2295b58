// Analyses shared by fuse and schedule: uses of values, kernel steps, sizes.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace dnnc::passes {

/// For each value, the indices of the nodes that read it (in node order, one entry per use).
std::vector<std::vector<int>> value_users(const ir::Graph& g);

/// For each value, whether it leaves the graph (an output or an update).
std::vector<bool> escapes(const ir::Graph& g);

/// True for nodes that only reinterpret their input's memory (flatten, reshape of a
/// row-major tensor): they launch no kernel and their result aliases their input.
bool is_view(const ir::Node& n);

/// The launch sequence: one entry per kernel, holding the indices of its nodes (a fusion
/// group's nodes, or a single unfused node). Views appear in no entry.
std::vector<std::vector<int>> kernel_steps(const ir::Graph& g);

/// Kernel launches of the graph (GEMMs and library calls included): kernel_steps().size().
int kernel_count(const ir::Graph& g);

/// Bytes of a value with the batch dim bound to `batch` (asserts on overflow: shapes were
/// checked by the frontend).
int64_t value_bytes(const ir::Graph& g, ir::ValueId v, int64_t batch);

/// Drops values no node defines or reads (left behind by DCE, CSE, folding) and renumbers the
/// rest, keeping their order.
void compact_values(ir::Graph& g);

}  // namespace dnnc::passes
