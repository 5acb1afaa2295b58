// The kernel IR verifier: the invariants a lowered Program must hold before any printer sees it.
// lower_graph() runs it on every program it returns, in every build; a violation is a compiler
// bug and throws dnnc::InternalError naming the program, the step and the kernel.
#pragma once
#include "codegen/kir/program.h"
#include "ir/check.h"

namespace dnnc::codegen {

/// Checks `p`:
///   - buffers: an alias views a root buffer of at least its size;
///   - the arena (once plan_memory ran): every intermediate and scratch buffer at an aligned
///     offset inside it, no other buffer with one, and no two buffers live at the same time
///     (buffer_lives) sharing a byte;
///   - steps: kernels exist, each param is bound to a buffer of its type and element count,
///     GEMM operands are f32 buffers their sizes, leading dimensions and batch strides fit,
///     bias, column sums and activation masks have the sizes the call reads;
///   - every index of every load and store stays in its buffer (index_bounds.h proves it over
///     the loop nest, the conditions that guard the access and earlier failed checks);
///   - every buffer is written before it is read (inputs and params are written at the start;
///     within a kernel, a store comes before the loads it feeds, in statement order);
///   - no step writes an input, and params are written only through the program's updates;
///   - within kernels: variables are defined before use and in scope, assignments go to locals
///     of their type, stores to params marked written, loads and stores at i64 indices with the
///     buffer's element type, no parallel loop inside another, no failed check inside a
///     parallel loop, fail codes name the kernel's messages;
///   - in expensive-check builds (DNNC_EXPENSIVE_CHECKS), every parallel loop is one whose
///     iterations provably touch disjoint elements of what they store: by the window each
///     iteration's accesses reach (IndexBounds::per_iteration), or else by running the loop's
///     index arithmetic (race_check.h).
/// Throws InternalError on the first violation.
struct KirVerifyOptions {
  bool prove_parallel_loops = kExpensiveChecks;  // the last check above
};
void verify_program(const Program& p, const KirVerifyOptions& options = {});

}  // namespace dnnc::codegen
