// The CUDA C printer: the KernelIR kernels of a codegen::Program as one NVRTC translation unit
// (one `extern "C" __global__` per kernel). GEMM steps are not printed: the runtime runs them
// with cuBLASLt; only a bias fill for GEMMs whose bias does not fit a cuBLASLt epilogue is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_mapping.h"
#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// One `__global__` function of the generated source and how to launch it. Its parameters are
/// `scalars` (i64, by value), the buffers `args` (device pointers, in order), then `int* dnnc_err, int dnnc_err_base`:
/// a failed check stores `dnnc_err_base + code` into *dnnc_err (first failure wins), which is
/// 1 + an index into program_errors(p), as the C++ backend's dnnc_run returns.
struct CudaKernel {
  std::string name;
  int step = -1;                 // the Program step it belongs to
  bool gemm_bias = false;        // a bias fill of GEMM step `step` (args: bias, c)
  std::vector<int> args;         // buffer ids
  std::vector<int64_t> scalars;  // values of the kernel's i64 index params, passed first
  int error_base = 0;
  CudaMapping mapping = CudaMapping::block;
  CudaLaunch launch;
  /// The least memory traffic the kernel needs: every buffer it loads from read once, every
  /// buffer it stores to written once, whole (bytes). Its time over this at the device's
  /// memory bandwidth is how far it is from its bandwidth floor (dnnc_gpu_bench --kernels).
  int64_t min_bytes = 0;
};

/// A cuBLASLt epilogue doing a GEMM step's activation (GemmCall::act), and its bias-gradient
/// column sums, instead of the generated kernels:
///   relu:        C = relu(product [+ bias])                 RELU, RELU_BIAS
///   relu_aux:    the same, and writes C's ReLU bit mask      RELU_AUX, RELU_AUX_BIAS
///   drelu:       C = product where that mask is set, else 0  DRELU
///   drelu_bgrad: the same, and col_sums = C's column sums    DRELU_BGRAD
/// The runtime asks cuBLASLt for each; where it finds no algorithm, the step runs its generated
/// epilogue (and column-sum) kernels instead, and so does a drelu whose mask was not written.
enum class CudaLtAct : uint8_t { none, relu, relu_aux, drelu, drelu_bgrad };
const char* cuda_lt_act_name(CudaLtAct a, bool bias);

/// A ReLU bit mask of a relu_aux GEMM's C, laid out as cuBLASLt sees C (column-major: `rows` =
/// C's columns n, `cols` = C's rows m), one bit per element, `ld` bits per column (rows rounded
/// up to 128, as cuBLASLt requires).
struct CudaReluMask {
  int64_t rows = 0, cols = 0, ld = 0;
  int producer = -1;  // the relu_aux step that writes it
  int64_t bytes() const { return ld / 8 * cols; }
};

struct CudaGemmAct {
  CudaLtAct act = CudaLtAct::none;
  int mask = -1;  // relu_aux, drelu, drelu_bgrad: index into CudaProgram::relu_masks
};

struct CudaProgram {
  std::string source;               // one translation unit for NVRTC, no #include
  std::vector<CudaKernel> kernels;  // in launch order
  /// Per Program step: the index into `kernels` of its kernel (kernel steps) or of its bias fill
  /// (GEMM steps whose bias is not an epilogue); -1 otherwise.
  std::vector<int> step_kernel;
  /// Per Program step: the index into `kernels` of a GEMM step's epilogue kernel (a map over C
  /// launched right after the product), or -1.
  std::vector<int> step_epilogue;
  /// Per Program step: the index into `kernels` of a GEMM step's column-sum kernel (GemmCall::
  /// col_sums, launched after the epilogue), or -1.
  std::vector<int> step_col_sums;
  /// Per Program step: the cuBLASLt activation epilogue planned for a GEMM step.
  std::vector<CudaGemmAct> step_act;
  std::vector<CudaReluMask> relu_masks;
};

/// What to ask cuBLASLt for after `act` if it has no algorithm for it, in order, ending with
/// none: relu_aux → relu → none, drelu_bgrad → drelu → none, relu → none, drelu → none.
std::vector<CudaLtAct> cuda_act_fallbacks(CudaLtAct act);

/// The activation epilogue to ask cuBLASLt for at GEMM step `step`: the planned one, except a
/// drelu (with or without bgrad) whose mask no earlier GEMM wrote (`mask_written[mask]` false:
/// cuBLASLt refused that relu_aux), which asks for none.
CudaLtAct cuda_act_request(const CudaProgram& cp, size_t step, const std::vector<bool>& mask_written);

/// One launch on the stream: a generated kernel, or GEMM step `index` with the activation
/// epilogue cuBLASLt runs for it.
struct CudaStreamOp {
  enum class Kind : uint8_t { kernel, gemm };
  Kind kind = Kind::kernel;
  int index = -1;  // kernel: into CudaProgram::kernels; gemm: the Program step
  CudaLtAct act = CudaLtAct::none;
};

/// A step's launches in order, given the activation epilogue cuBLASLt took for each GEMM step
/// (`taken[step]`, none where it took none): each kernel step's kernel; for each GEMM step its
/// bias fill, the GEMM, then its epilogue and column-sum kernels unless the taken epilogue does
/// their work. The cuda backend enqueues exactly this (and the CPU emulator runs it).
std::vector<CudaStreamOp> cuda_launch_sequence(const Program& p, const CudaProgram& cp,
                                               const std::vector<CudaLtAct>& taken);

/// The cuBLASLt activation epilogues for program `p`'s GEMM steps (print_program_cuda fills
/// CudaProgram::step_act and relu_masks with this). A relu_backward GEMM gets drelu[_bgrad] when
/// its mask buffer is the C of an earlier relu GEMM of the same shape that no step in between
/// writes; that GEMM becomes relu_aux.
void plan_cuda_gemm_acts(const Program& p, std::vector<CudaGemmAct>& step_act, std::vector<CudaReluMask>& masks);

/// True if GEMM `g`'s bias is applied by cuBLASLt's BIAS epilogue (per-column bias of one
/// problem with beta 0: C = A·B + bias); otherwise a generated bias fill runs first and the
/// GEMM accumulates into it (beta 1).
bool cuda_gemm_bias_epilogue(const GemmCall& g);

struct CDialect;
/// CUDA's spellings for the C-family renderer (codegen/c): device math without a prefix,
/// specials through __int_as_float / __longlong_as_double.
const CDialect& cuda_dialect();

/// An exact CUDA C literal for a float (`0x1.99999ap-4f`; inf/nan through __int_as_float).
std::string cuda_float_literal(float v);
std::string cuda_double_literal(double v);

/// What `dnnc compile --emit=cuda` writes: the source of print_program_cuda(p), preceded by a
/// comment listing the launch order (each kernel with its grid, block and mapping, each GEMM
/// with the cuBLASLt epilogue planned for it and the kernels that epilogue may replace).
std::string print_cuda_file(const Program& p);

/// The CUDA source of program `p`, each kernel rendered from its thread mapping
/// (plan_cuda_kernel). Deterministic. A KernelIR node kind this printer does not know, or a
/// program the cuda lowering options would not make (a step-dependent GEMM scaling), is an
/// InternalError naming the kernel or step: never silent.
CudaProgram print_program_cuda(const Program& p);

}  // namespace dnnc::codegen
