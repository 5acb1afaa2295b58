// A codegen::GemmCall as cuBLASLt sees it. cuBLASLt is column-major; a row-major C[M,N] is the
// column-major Cᵀ[N,M] with the same leading dimension, and Cᵀ = op(B)ᵀ·op(A)ᵀ, so cuBLASLt's
// "A" is our B and its "B" our A, each with its own transpose flag: transposes stay flags and
// nothing is copied. Target-free (no CUDA headers): runtime/cuda/gemm_lt.cpp turns it into
// cuBLASLt descriptors, and a CPU test runs it through a column-major reference.
#pragma once
#include <cstdint>

#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// One cuBLASLt matrix layout: column-major `rows` × `cols` with leading dimension `ld`, and
/// `batch` matrices `stride` elements apart (batch 1: stride unused).
struct LtMatrix {
  int64_t rows = 0, cols = 0, ld = 0;
  int64_t batch = 1, stride = 0;
};

/// D = alpha · op(A)·op(B) + beta · C in cuBLASLt's terms, C and D the same matrix.
struct LtProblem {
  bool trans_a = false, trans_b = false;  // cuBLASLt's TRANSA / TRANSB
  LtMatrix a, b, c;                       // cuBLASLt's A (our B), B (our A), C = D (our C)
  /// Matmuls enqueued one after another: 1, or the GemmCall's batch when its problems are
  /// summed into one C (accumulate_batches), the i-th reading A at +i·a_step and B at +i·b_step
  /// elements, with beta `beta_first` for the first and 1 for the rest.
  int64_t matmuls = 1;
  int64_t a_step = 0, b_step = 0;
  float alpha = 1.0f, beta_first = 0.0f;
  /// The alignment cuBLASLt may assume of each operand's pointer, in bytes (its preference
  /// MIN_ALIGNMENT_*, default 256): buffers start 256-byte aligned, but the later matmuls of a
  /// summed batch and the later matrices of a strided batch start `step`/`stride` floats on,
  /// so this is the largest power of two, at most 256, dividing every such offset.
  int a_align = 256, b_align = 256, c_align = 256;
  /// The GEMM's per-column bias is cuBLASLt's BIAS epilogue (cuda_gemm_bias_epilogue); else a
  /// generated kernel wrote any bias into C first and beta_first is 1.
  bool bias_epilogue = false;
};

/// The cuBLASLt problem for `g`.
LtProblem lt_problem(const GemmCall& g);

}  // namespace dnnc::codegen
