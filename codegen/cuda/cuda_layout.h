// Where the cuda backend puts a program in device memory: one allocation holding the inputs and
// params, the activation arena exactly as plan-memory laid it out (Program::arena, every
// intermediate and scratch buffer at its offset), the update snapshots, the error flag, the
// resident trainer's step counter and loss ring, the cuBLASLt workspace and the ReLU bit masks
// of relu_aux GEMMs. Host-side and CUDA-free, so the layout is tested without a GPU and the CPU
// emulator of the tests runs programs in it.
#pragma once
#include <cstdint>
#include <vector>

#include "codegen/cuda/cuda_printer.h"
#include "codegen/kir/program.h"

namespace dnnc::codegen {

struct CudaDeviceLayout {
  /// Per buffer id: the byte offset of its storage (an alias: its root's).
  std::vector<int64_t> buffer;
  int64_t arena_offset = 0;  // the activation arena starts here ...
  int64_t arena_bytes = 0;   // ... and is Program::arena.bytes long
  /// Per Program update: the param buffer it is copied into after the step (-1: a param the
  /// graph does not read; it is downloaded from `home`), where it is copied first when its value
  /// is another param's (-1: no snapshot), and where the new value is read from after the step.
  struct Update {
    int target = -1;
    int64_t snapshot = -1;
    int64_t home = 0;
  };
  std::vector<Update> updates;
  int64_t err = 0, counter = 0, ring = 0, workspace = 0;
  std::vector<int64_t> masks;  // per CudaProgram::relu_masks
  int64_t bytes = 0;           // the whole allocation (the resident sample order goes after it)
};

/// The layout of `p` (printed as `cp`) with a cuBLASLt workspace of `workspace_bytes` and a loss
/// ring of `ring_floats`. Every region starts at a multiple of kArenaAlign. Throws InternalError
/// if `p` has no arena plan.
CudaDeviceLayout cuda_device_layout(const Program& p, const CudaProgram& cp, int64_t workspace_bytes,
                                    int64_t ring_floats);

}  // namespace dnnc::codegen
