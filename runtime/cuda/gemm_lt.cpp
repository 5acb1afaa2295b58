// cuBLASLt matmul plans for codegen::GemmCall (gemm_lt.h).
#include "runtime/cuda/gemm_lt.h"

#include <algorithm>
#include <utility>

#include "runtime/cuda/cuda_check.h"

namespace dnnc::runtime::cuda {

namespace {

using codegen::CudaLtAct;

cublasLtMatrixLayout_t layout(const codegen::LtMatrix& m) {
  cublasLtMatrixLayout_t l = nullptr;
  DNNC_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, static_cast<uint64_t>(m.rows), static_cast<uint64_t>(m.cols), m.ld));
  if (m.batch > 1) {
    int32_t count = static_cast<int32_t>(m.batch);
    int64_t stride = m.stride;
    DNNC_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    DNNC_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return l;
}

cublasLtEpilogue_t epilogue_of(CudaLtAct act, bool bias) {
  switch (act) {
    case CudaLtAct::none:
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case CudaLtAct::relu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case CudaLtAct::relu_aux:
      return bias ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_AUX;
    case CudaLtAct::drelu:
      return CUBLASLT_EPILOGUE_DRELU;
    case CudaLtAct::drelu_bgrad:
      return CUBLASLT_EPILOGUE_DRELU_BGRAD;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

GemmPlan::GemmPlan(cublasLtHandle_t lt, const codegen::GemmCall& g, const GemmOptions& options,
                   const GemmActRequest& act)
    : lt_(lt), g_(g), p_(codegen::lt_problem(g)) {
  epilogue_bias_ = p_.bias_epilogue;
  try {
    for (CudaLtAct a : codegen::cuda_act_fallbacks(options.activation_epilogues ? act.act : CudaLtAct::none)) {
      if (build(a, act, options)) {
        act_ = a;
        return;
      }
      refused_.push_back(a);
    }
  } catch (...) {
    destroy();  // (no destructor runs for a constructor that throws)
    throw;
  }
}

bool GemmPlan::build(CudaLtAct act, const GemmActRequest& req, const GemmOptions& options) {
  const codegen::GemmCall& g = g_;
  // The plain product must work (its failure is an error); an activation epilogue may not be
  // available (this cuBLASLt, this GPU, these shapes): then the caller runs the kernels.
  const bool optional = act != CudaLtAct::none;
  auto ok = [&](cublasStatus_t s, const char* call, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    if (!optional) cublas_check(s, call, __FILE__, line);
    destroy();
    return false;
  };
#define DNNC_LT_TRY(call) \
  if (!ok((call), #call, __LINE__)) return false
  DNNC_LT_TRY(
      cublasLtMatmulDescCreate(&desc_, options.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Column-major D[n, m] = op(our B) · op(our A): codegen/cuda/cuda_gemm.h.
  cublasOperation_t ta = p_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = p_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  DNNC_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  DNNC_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const bool bias = epilogue_bias_ && act != CudaLtAct::drelu && act != CudaLtAct::drelu_bgrad;
  if (cublasLtEpilogue_t e = epilogue_of(act, bias); e != CUBLASLT_EPILOGUE_DEFAULT)
    DNNC_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
  if (act == CudaLtAct::relu_aux || act == CudaLtAct::drelu || act == CudaLtAct::drelu_bgrad) {
    DNNC_LT_TRY(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &req.mask, sizeof(req.mask)));
    DNNC_LT_TRY(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &req.mask_ld, sizeof(req.mask_ld)));
  }
  if (act == CudaLtAct::drelu_bgrad)
    DNNC_LT_TRY(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &req.bgrad, sizeof(req.bgrad)));
  la_ = layout(p_.a);
  lb_ = layout(p_.b);
  lc_ = layout(p_.c);

  cublasLtMatmulPreference_t pref = nullptr;
  DNNC_LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  const int want = std::max(1, options.candidates);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(want));
  int found = 0;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &options.workspace_bytes, sizeof(options.workspace_bytes));
  // Pointers of later summed or batched problems may be less than 256-byte aligned.
  for (auto [attr, bytes] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p_.a_align},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p_.b_align},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p_.c_align},
                             std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p_.c_align}}) {
    uint32_t v = static_cast<uint32_t>(bytes);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof(v));
  }
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(lt_, desc_, la_, lb_, lc_, lc_, pref, want, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  DNNC_LT_TRY(st);
#undef DNNC_LT_TRY
  candidates_.clear();
  for (int i = 0; i < found; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      candidates_.push_back(results[static_cast<size_t>(i)]);
  if (candidates_.empty()) {
    if (optional) {
      destroy();
      return false;
    }
    throw std::runtime_error(fmt::format("cuBLASLt has no algorithm for C[{},{}] = A{}·B{} (k {}, batch {})", g.m, g.n,
                                         g.trans_a ? "ᵀ" : "", g.trans_b ? "ᵀ" : "", g.k, g.batch));
  }
  algo_ = candidates_[0].algo;
  workspace_ = candidates_[0].workspaceSize;
  chosen_ = 0;
  return true;
}

void GemmPlan::destroy() {
  if (la_) cublasLtMatrixLayoutDestroy(la_);
  if (lb_) cublasLtMatrixLayoutDestroy(lb_);
  if (lc_) cublasLtMatrixLayoutDestroy(lc_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  la_ = lb_ = lc_ = nullptr;
  desc_ = nullptr;
}

GemmPlan::~GemmPlan() { destroy(); }

void GemmPlan::run(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c,
                   void* workspace) const {
  DNNC_CUBLAS_CHECK(enqueue(stream, a, b, bias, c, workspace));
}

cublasStatus_t GemmPlan::enqueue(cudaStream_t stream, const float* a, const float* b, const float* bias, float* c,
                                 void* workspace) const {
  const bool drelu = act_ == CudaLtAct::drelu || act_ == CudaLtAct::drelu_bgrad;
  if (epilogue_bias_ && !drelu) {
    cublasStatus_t st = cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (st != CUBLAS_STATUS_SUCCESS) return st;
  }
  const float alpha = p_.alpha;
  for (int64_t i = 0; i < p_.matmuls; ++i) {  // cuBLASLt's A is our B, its B our A
    float beta = i == 0 ? p_.beta_first : 1.0f;
    cublasStatus_t st = cublasLtMatmul(lt_, desc_, &alpha, b + i * p_.a_step, la_, a + i * p_.b_step, lb_, &beta, c,
                                       lc_, c, lc_, &algo_, workspace, workspace_, stream);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// Each candidate is timed as the step runs it: `reps` matmuls captured into one CUDA graph,
// launched once to warm up, then three times between events; the median launch over `reps`.
// (Single launches timed alone measure the launch, 10-30 us, not the matmul.)
std::vector<GemmAlgoTime> GemmPlan::tune(cudaStream_t stream, const float* a, const float* b, const float* bias,
                                         float* c, void* workspace, int reps) {
  std::vector<GemmAlgoTime> times;
  cudaEvent_t start = nullptr, stop = nullptr;
  DNNC_CUDA_CHECK(cudaEventCreate(&start));
  DNNC_CUDA_CHECK(cudaEventCreate(&stop));
  int best = -1;
  float best_us = 0.0f;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    algo_ = candidates_[i].algo;
    workspace_ = candidates_[i].workspaceSize;
    GemmAlgoTime t;
    t.rank = static_cast<int>(i);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    bool ok = enqueue(stream, a, b, bias, c, workspace) == CUBLAS_STATUS_SUCCESS &&
              cudaStreamSynchronize(stream) == cudaSuccess;
    if (ok) {
      DNNC_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int r = 0; ok && r < reps; ++r) ok = enqueue(stream, a, b, bias, c, workspace) == CUBLAS_STATUS_SUCCESS;
      ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok;
      ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    }
    std::vector<float> us;
    for (int r = 0; ok && r < 4; ++r) {
      DNNC_CUDA_CHECK(cudaEventRecord(start, stream));
      DNNC_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      DNNC_CUDA_CHECK(cudaEventRecord(stop, stream));
      DNNC_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.0f;
      DNNC_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (r > 0) us.push_back(ms * 1000.0f / static_cast<float>(reps));  // r 0: warm-up
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // a refused candidate's capture error is not the step's
    if (ok && !us.empty()) {
      std::sort(us.begin(), us.end());
      t.us = us[us.size() / 2];
      if (best < 0 || t.us < best_us) {
        best = static_cast<int>(i);
        best_us = t.us;
      }
    }
    times.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  chosen_ = best < 0 ? 0 : best;
  algo_ = candidates_[static_cast<size_t>(chosen_)].algo;
  workspace_ = candidates_[static_cast<size_t>(chosen_)].workspaceSize;
  return times;
}

}  // namespace dnnc::runtime::cuda
