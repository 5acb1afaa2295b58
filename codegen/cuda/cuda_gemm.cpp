// See cuda_gemm.h.
#include "codegen/cuda/cuda_gemm.h"

#include <initializer_list>

#include "codegen/cuda/cuda_printer.h"

namespace dnnc::codegen {

LtProblem lt_problem(const GemmCall& g) {
  LtProblem p;
  p.bias_epilogue = cuda_gemm_bias_epilogue(g);
  // A generated kernel wrote the bias into C when the epilogue cannot apply it.
  p.beta_first = g.bias_kind != GemmCall::Bias::none && !p.bias_epilogue ? 1.0f : g.beta;
  p.alpha = g.alpha;
  // Problems summed into one C run one matmul each (beta 1 after the first): batch 1 layouts.
  const int64_t batch = g.accumulate_batches ? 1 : g.batch;
  p.matmuls = g.accumulate_batches ? g.batch : 1;
  p.a_step = g.accumulate_batches ? g.stride_b : 0;
  p.b_step = g.accumulate_batches ? g.stride_a : 0;
  // cuBLASLt's A is our B as stored: row-major op(B) is K×N, i.e. B is K×N (not transposed) or
  // N×K (transposed) row-major = N×K or K×N column-major with leading dimension ldb.
  p.trans_a = g.trans_b;
  p.trans_b = g.trans_a;
  p.a = g.trans_b ? LtMatrix{g.k, g.n, g.ldb, batch, g.stride_b} : LtMatrix{g.n, g.k, g.ldb, batch, g.stride_b};
  p.b = g.trans_a ? LtMatrix{g.m, g.k, g.lda, batch, g.stride_a} : LtMatrix{g.k, g.m, g.lda, batch, g.stride_a};
  p.c = LtMatrix{g.n, g.m, g.ldc, batch, g.stride_c};
  auto align = [](std::initializer_list<int64_t> floats_apart) {
    int a = 256;
    for (int64_t f : floats_apart)
      while (f != 0 && (4 * f) % a != 0) a /= 2;
    return a;
  };
  p.a_align = align({p.a_step, batch > 1 ? p.a.stride : 0});
  p.b_align = align({p.b_step, batch > 1 ? p.b.stride : 0});
  p.c_align = align({batch > 1 ? p.c.stride : 0});
  return p;
}

}  // namespace dnnc::codegen
