// The thread mapping of a CUDA kernel: how a KernelIR kernel's work is spread over the GPU,
// decided from the IR alone (cuda_loop_analysis.h proves which loops may be spread) before any
// source is printed. The CUDA printer renders exactly this plan (docs/cuda.md, "Mapping").
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/kir/kernel_ir.h"
#include "codegen/kir/kir_printer.h"
#include "codegen/kir/loop_analysis.h"
#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// How a kernel's work is spread over the GPU:
///   grid_thread: one thread per iteration of the kernel's single parallel loop (grid-stride);
///   grid_vec4:   the same, four contiguous f32 elements per thread through float4 loads/stores;
///   grid_warp:   one warp per iteration (inner loops spread over lanes, warp-shuffle reductions);
///   block:       one block runs the whole kernel (several phases; __syncthreads between them).
enum class CudaMapping : uint8_t { grid_thread, grid_vec4, grid_warp, block };
const char* cuda_mapping_name(CudaMapping m);

struct CudaLaunch {
  int64_t grid = 1;      // blocks (x)
  int block = 256;       // threads per block (x)
  int shared_bytes = 0;  // static shared memory the kernel declares
};

/// Threads per block of the generated kernels (warp-per-iteration kernels with few iterations
/// get fewer, kCudaSpreadSMs).
inline constexpr int kCudaBlock = 256;
/// The most blocks a grid-stride kernel is launched with.
inline constexpr int64_t kCudaMaxGrid = 65535;
/// A warp-per-iteration kernel with few iterations gets blocks of fewer warps, to spread them
/// over this many multiprocessors (an H200 has 132).
inline constexpr int64_t kCudaSpreadSMs = 132;
/// Bytes of shared memory a kernel with block-wide reductions declares (32 slots of 8 bytes).
inline constexpr int kCudaReductionSmem = 32 * 8;

/// How a team (the lanes of a warp in grid_warp, the threads of the block in block) runs a loop
/// of the region it executes together.
///   sequential: every lane runs every iteration (the loop's body is again a team region);
///   spread:     the iterations are dealt out to the lanes (they are independent, distributable);
///   reduction:  `x = x op term` in a nest: each lane folds a strided part of the innermost loop,
///               the team combines the parts (shuffles, and shared memory across warps).
enum class CudaLoopRole : uint8_t { sequential, spread, reduction };
const char* cuda_loop_role_name(CudaLoopRole r);

/// A team barrier and why it is there.
///   lane0_stores:    lane 0's stores before the team's spread loops or reductions read them
///   before_overwrite: the team's earlier reads before a spread loop overwrites what they read
///   before_lane0:    the team's earlier reads before lane 0 overwrites what they read
///   after:           a spread loop's writes, or a store the kernel reads, before the team goes on
///   end_of_iteration: lane 0's stores of an iteration before the next iteration's team work
enum class CudaSync : uint8_t { lane0_stores, before_overwrite, before_lane0, after, end_of_iteration };
const char* cuda_sync_name(CudaSync s);

/// What one statement of a team region does.
struct CudaTeamStmt {
  CudaLoopRole role = CudaLoopRole::sequential;  // loops only
  std::optional<loops::Reduction> reduction;     // role == reduction
  bool lane0 = false;                            // a store made by lane 0 alone (every lane has the value)
  std::vector<CudaSync> before;                  // barriers printed before the statement, in order
  std::vector<CudaSync> after;                   // barriers after it (after), or at the end of each
                                                 // iteration of a sequential loop (end_of_iteration)
};

/// The thread mapping of one kernel: the result of plan_cuda_kernel.
struct CudaKernelPlan {
  CudaMapping mapping = CudaMapping::block;
  CudaLaunch launch;
  /// grid_*: the kernel's last top-level statement, a loop whose iterations the grid shares;
  /// the statements before it run on every thread with the same values.
  const StmtNode* grid_loop = nullptr;
  /// grid_vec4: the params loaded at the loop index (each as one float4 per thread) and stored.
  std::set<int> vec4_loads, vec4_stores;
  /// grid_warp and block: every statement of the team region, by node.
  std::map<const StmtNode*, CudaTeamStmt> team;
  /// Params the kernel loads from / stores to anywhere.
  std::set<int> loaded, written;
  /// The least memory traffic the kernel needs: every buffer it loads from read once, every
  /// buffer it stores to written once, whole (bytes).
  int64_t min_bytes = 0;

  /// The team statement of `s` (which must be in the team region).
  const CudaTeamStmt& at(const StmtNode& s) const;
};

/// Maps kernel `k` onto the GPU:
///   - `prefix; loop` where the loop may be spread (marked parallel by the lowering or proved
///     distributable) and the prefix stores nothing and reads nothing the kernel writes: the
///     grid shares the loop. A warp per iteration if the body has loops (grid_warp: blocks of
///     fewer warps when there are few iterations, to reach kCudaSpreadSMs multiprocessors),
///     else float4 lanes where every access at the loop index is to an f32 buffer and in-place
///     buffers are read before they are written (grid_vec4), else a thread per iteration.
///   - anything else runs as one block (block).
/// In a team region, a reduction nest is split; a loop the IR proves distributable is spread,
/// unless it is a strided loop around a unit-stride inner loop that can be spread instead
/// (coalesced accesses); other loops are sequential; stores are lane 0's. Barriers go where a
/// lane could otherwise read or overwrite what another has not finished with.
/// `index_range`: for a kernel with index params (a GEMM epilogue, launched over all of C), how
/// many iterations its loop has (the grid is sized for them); -1 otherwise.
CudaKernelPlan plan_cuda_kernel(const Kernel& k, int64_t index_range = -1);

/// The plan as text, one line per decision ("mapping grid_warp <<<960, 32>>>", then per team
/// loop "loop ow: spread, sync before: lane0_stores"), for tests and --emit=kir dumps.
std::string describe_plan(const CudaKernelPlan& plan, const Kernel& k);

/// Kernel IR text annotations with the thread mapping of each kernel of `p` (as the CUDA printer
/// maps it: GEMM epilogues over all of C): the mapping and launch above each kernel, the role
/// of each team loop and the barriers beside its statements (`dnnc compile --emit=kir
/// --target=cuda`). The notes keep pointers into `p`, which must outlive them.
KirNotes cuda_mapping_notes(const Program& p);

/// Blocks of kCudaBlock threads for `threads` grid-stride threads (at least 1, at most kCudaMaxGrid).
int64_t cuda_blocks_for(int64_t threads);

}  // namespace dnnc::codegen
