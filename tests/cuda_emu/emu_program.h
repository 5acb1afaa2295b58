// Runs a codegen::Program the way the cuda backend does (runtime/cuda/cuda_backend.cpp: the
// printer's kernels in launch order, GEMMs as cuBLASLt computes them, then the param updates),
// with the device emulated on the CPU: the generated CUDA C is compiled with the system C++
// compiler against cuda_emu.h and its kernels run as fibers. GEMMs run as cuBLASLt's
// column-major matmul of codegen::lt_problem, with the activation epilogues as cuBLASLt
// documents them (RELU_AUX writes a bit mask that DRELU reads; DRELU_BGRAD sums D's columns
// into the bias gradient). Which epilogues the emulated cuBLASLt "has" is the caller's choice,
// and the launch sequence is the backend's own (codegen::cuda_launch_sequence). Memory is the
// backend's layout (codegen::cuda_device_layout): one block, the activation arena at
// plan-memory's offsets, in the arena checking mode (NaN bytes in every buffer whose life ended).
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_layout.h"
#include "codegen/cuda/cuda_printer.h"
#include "codegen/kir/program.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace dnnc::test {

class EmuProgram {
 public:
  /// Prints `p` as CUDA C and compiles it for the emulator (cached under `cache_dir` by source).
  /// Throws std::runtime_error with the compiler's output if it does not compile.
  /// `refused`: the activation epilogues the emulated cuBLASLt has no algorithm for (all but
  /// none: as DNNC_CUBLASLT_EPILOGUES=off).
  /// `reverse`: threads of a block run highest first (see cuda_emu.h).
  EmuProgram(codegen::Program p, const std::string& cache_dir, const std::set<codegen::CudaLtAct>& refused = {},
             bool reverse = false);
  ~EmuProgram();
  EmuProgram(const EmuProgram&) = delete;
  EmuProgram& operator=(const EmuProgram&) = delete;

  /// One run: inputs and params in, outputs back, the updated params written into `params`.
  /// Throws std::runtime_error naming the kernel for an emulator error (a barrier nobody can
  /// pass), or with the program's message when a kernel sets the error flag.
  std::vector<runtime::Tensor> run(const std::map<std::string, runtime::Tensor>& inputs,
                                   runtime::reference::ParamStore& params);

  const codegen::CudaProgram& cuda() const { return cp_; }
  /// The activation epilogue the emulated cuBLASLt runs for each step (none for kernel steps).
  const std::vector<codegen::CudaLtAct>& taken() const { return taken_; }
  /// The device layout the program runs in, and the block it is in.
  const codegen::CudaDeviceLayout& layout() const { return layout_; }
  const char* block() const { return block_.get(); }
  /// Where buffer `b` lives.
  const char* address(int b) const;

 private:
  void launch(size_t kernel);
  void gemm(size_t step, codegen::CudaLtAct act);
  char* buf(int b);

  codegen::Program p_;
  codegen::CudaProgram cp_;
  void* lib_ = nullptr;
  using LaunchFn = const char* (*)(void (*)(void**), void**, unsigned, unsigned);
  LaunchFn launch_ = nullptr;
  void (*set_reverse_)(int) = nullptr;
  bool reverse_ = false;
  std::vector<void (*)(void**)> calls_;
  codegen::CudaDeviceLayout layout_;
  std::unique_ptr<char, void (*)(void*)> block_{nullptr, std::free};  // layout_.bytes, 256-byte aligned
  std::vector<std::vector<int>> poison_after_;  // per op of ops_: the arena buffers whose life ends with it
  std::vector<std::vector<uint8_t>> masks_;                       // per CudaReluMask
  std::vector<codegen::CudaLtAct> taken_;
  std::vector<codegen::CudaStreamOp> ops_;
  int err_ = 0;
};

/// Compiles `source` (CUDA C from the printer plus extern "C" wrappers) into a shared object for
/// the emulator under `cache_dir`, returning its path.
std::string compile_for_emulator(const std::string& source, const std::string& cache_dir);

}  // namespace dnnc::test
