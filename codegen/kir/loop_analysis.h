// Loop analyses of KernelIR: what a loop's iterations read and write, whether they may run at
// once (no two reach one element they store), and which loops are reductions. The CUDA thread
// mapping spreads loops with them (codegen/cuda/cuda_mapping.h); the kernel IR verifier proves
// the lowering's parallel loops with them in expensive-check builds.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/kir/kernel_ir.h"

namespace dnnc::codegen::loops {

/// True if `e` mentions variable `name`.
bool mentions(const Expr& e, const std::string& name);
/// Structural equality of two expressions.
bool same_expr(const Expr& a, const Expr& b);
/// Appends every load in `e`.
void loads_of(const Expr& e, std::vector<const ExprNode*>& out);

/// Everything a block does, recursively.
struct Effects {
  std::vector<const StmtNode*> stores;
  std::vector<const ExprNode*> loads;
  std::set<std::string> assigned, declared;
  bool has_fail = false, has_loop = false;
};
Effects effects(const Block& b);

/// A loop whose iterations may run on different threads at once: no failure inside, no local
/// declared outside it assigned, and for every buffer it stores to, no two iterations reach one
/// element (each index read as k*v + fixed terms + a bounded offset, through the body's locals
/// and loop bounds). Buffers it only reads may have been written before it: the caller orders
/// those writes with a team barrier.
bool distributable(const StmtNode& loop);
/// True if every store in the loop's body moves by exactly one element per iteration.
bool unit_stride(const StmtNode& loop);
/// The loop to spread instead of the strided loop `outer`, for coalesced accesses: through
/// bodies of locals and one loop, the first spreadable unit-stride loop, if it has at least
/// min(16, outer's trips) iterations; nullptr if none.
const StmtNode* coalesced_inner(const StmtNode& outer);

/// `x = x op term` nested in single-statement loops: a reduction the team can split.
struct Reduction {
  std::string var;
  BinaryOp op = BinaryOp::add;
  Expr term;
  std::vector<const StmtNode*> loops;  // outermost first
};
std::optional<Reduction> reduction_nest(const StmtNode& loop);

}  // namespace dnnc::codegen::loops
